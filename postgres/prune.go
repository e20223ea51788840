package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// deleteSessions removes sessions (stored ids) with their messages and
// usage rows (which cascade); children outside the set are orphaned;
// unreferenced system prompts are collected.
func deleteSessions(ctx context.Context, tx pgx.Tx, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ANY($1) AND NOT (id = ANY($1))", keys); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "DELETE FROM sessions WHERE id = ANY($1)", keys); err != nil {
		return err
	}
	return gcPrompts(ctx, tx)
}

// gcPrompts deletes the system prompts no session refers to (tool_names
// may also name a prompt row, as in Hermes).
func gcPrompts(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `DELETE FROM system_prompts p WHERE NOT EXISTS
		(SELECT 1 FROM sessions s WHERE s.system_prompt_hash = p.hash OR s.tool_names = p.hash)`)
	return err
}

// deleteTargetsSQL selects $1 and, recursively, its delegate (subagent)
// children, which are deleted with it.
var deleteTargetsSQL = `WITH RECURSIVE d(id) AS (
		SELECT $1::text
		UNION
		SELECT s.id FROM sessions s JOIN d ON s.parent_session_id = d.id
		WHERE ` + marker("s", "_delegate_from") + ` IS NOT NULL)
	SELECT id FROM d`

// DeleteSession deletes a session, its messages and its delegate children
// (recursively); other children (branches, continuations) are kept and
// orphaned. It returns the ids deleted.
func (db *DB) DeleteSession(ctx context.Context, id string) ([]string, error) {
	var ids []string
	err := db.write(ctx, fmt.Sprintf("delete session %q", id), func(tx pgx.Tx) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return err
		}
		var err error
		if ids, err = collect(ctx, tx, deleteTargetsSQL, toPG(id)); err != nil {
			return err
		}
		return deleteSessions(ctx, tx, textList(ids))
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// DeleteTargets returns what DeleteSession(id) would delete.
func (db *DB) DeleteTargets(ctx context.Context, id string) ([]string, error) {
	if _, err := db.Session(ctx, id); err != nil {
		return nil, err
	}
	ids, err := collect(ctx, db.pool, deleteTargetsSQL, toPG(id))
	if err != nil {
		return nil, db.mapErr("delete targets", err)
	}
	return ids, nil
}

// chainSQL selects every session of a compression chain reached from the
// seed rows: parents that ended with 'compression' and their children.
// UNION drops rows already found, so a cycle ends the walk.
func chainSQL(seed string) string {
	return `WITH RECURSIVE chain(id) AS (
		` + seed + `
		UNION
		SELECT n.id FROM chain CROSS JOIN LATERAL (
			SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
				WHERE p.id = chain.id AND p.end_reason = 'compression'
			UNION ALL
			SELECT p.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
				WHERE c.id = chain.id AND p.end_reason = 'compression') n)
	SELECT id FROM chain`
}

// Prune deletes ended sessions whose last activity is older than
// o.Before, as the SQLite store does: open sessions are never touched;
// pinned sessions and every session of a pinned compression chain are kept
// unless IncludePinned; a compression ancestor goes only together with its
// whole later lineage (sessiondb.KeepCompressionLineages); children of
// pruned sessions that stay are orphaned. With DryRun it returns exactly
// what would go and deletes nothing. One transaction: the candidates' rows
// are locked and the choice made again under the locks, so a writer
// appending to one meanwhile either lands first (and the session may stay)
// or finds it gone.
func (db *DB) Prune(ctx context.Context, o sessiondb.PruneOptions) ([]sessiondb.PruneCandidate, error) {
	if o.Before <= 0 {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "prune: an age limit is required")
	}
	var out []sessiondb.PruneCandidate
	err := db.write(ctx, "prune sessions", func(tx pgx.Tx) error {
		locked := map[string]bool{}
		for {
			var err error
			if out, err = pruneCandidates(ctx, tx, o); err != nil || o.DryRun {
				return err
			}
			var lock []string
			for _, c := range out {
				if !locked[c.ID] {
					lock = append(lock, toPG(c.ID))
				}
			}
			if len(lock) == 0 {
				break
			}
			if _, err := tx.Exec(ctx, "SELECT 1 FROM sessions WHERE id = ANY($1) ORDER BY id FOR UPDATE", lock); err != nil {
				return err
			}
			for _, k := range lock {
				locked[fromPG(k)] = true
			}
		}
		keys := make([]string, len(out))
		for i, c := range out {
			keys[i] = toPG(c.ID)
		}
		return deleteSessions(ctx, tx, keys)
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []sessiondb.PruneCandidate{}
	}
	return out, nil
}

func pruneCandidates(ctx context.Context, tx pgx.Tx, o sessiondb.PruneOptions) ([]sessiondb.PruneCandidate, error) {
	where := []string{"s.ended_at IS NOT NULL", lastActiveSQL + " < $1"}
	args := []any{o.Before}
	if len(o.Sources) > 0 {
		where = append(where, "s.source = ANY($2)")
		args = append(args, textList(o.Sources))
	}
	pinned := map[string]bool{}
	if !o.IncludePinned {
		// keep pinned rows and every segment of a chain with a pinned segment
		ids, err := collect(ctx, tx, chainSQL("SELECT id FROM sessions WHERE COALESCE(pinned, 0) = 1"))
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			pinned[id] = true
		}
	}
	rows, err := tx.Query(ctx, `SELECT s.id, s.source, s.title, s.model, s.started_at, `+lastActiveSQL+`,
		s.ended_at, COALESCE(s.message_count, 0), COALESCE(s.archived, 0) <> 0, s.end_reason = 'compression'
		FROM sessions s WHERE `+strings.Join(where, " AND ")+` ORDER BY 6, s.id COLLATE "C"`, args...)
	if err != nil {
		return nil, err
	}
	var cands []sessiondb.PruneCandidate
	compressed := map[string]bool{}
	var c sessiondb.PruneCandidate
	var compression bool
	_, err = pgx.ForEachRow(rows, []any{&c.ID, &c.Source, &c.Title, &c.Model, &c.StartedAt, &c.LastActive, &c.EndedAt,
		&c.MessageCount, &c.Archived, &compression}, func() error {
		cand := c
		fromPGStruct(&cand)
		if pinned[cand.ID] {
			return nil
		}
		cands = append(cands, cand)
		if compression {
			compressed[cand.ID] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sessiondb.KeepCompressionLineages(cands, compressed, func(id string) (string, error) {
		next, err := continuation(ctx, tx, toPG(id))
		return fromPG(next), err
	})
}

// setChainFlag sets a flag column on every session of id's compression
// chain (archive, pin and hide apply to a whole conversation).
func (db *DB) setChainFlag(ctx context.Context, id string, u sessiondb.FlagUpdate) error {
	return db.write(ctx, fmt.Sprintf("%s session %q", u.Verb, id), func(tx pgx.Tx) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE sessions SET "+u.Assignments()+" WHERE id IN ("+chainSQL("SELECT $1::text")+")", toPG(id))
		return err
	})
}

// SetArchived archives (or unarchives) a session's whole compression chain
// (sessiondb.ArchiveUpdate).
func (db *DB) SetArchived(ctx context.Context, id string, archived bool) error {
	return db.setChainFlag(ctx, id, sessiondb.ArchiveUpdate(archived))
}

// SetPinned pins (or unpins) a session's whole compression chain
// (sessiondb.PinUpdate).
func (db *DB) SetPinned(ctx context.Context, id string, pinned bool) error {
	return db.setChainFlag(ctx, id, sessiondb.PinUpdate(pinned))
}

// ClearMessages deletes a session's messages and resets its counters; the
// session stays.
func (db *DB) ClearMessages(ctx context.Context, id string) (int64, error) {
	var n int64
	err := db.write(ctx, fmt.Sprintf("clear session %q", id), func(tx pgx.Tx) error {
		if err := lockSession(ctx, tx, id); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, "DELETE FROM messages WHERE session_id = $1", toPG(id))
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = $1", toPG(id))
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// lockSession locks session id's row until the transaction ends (its
// counters change); ENOTFOUND when it does not exist.
func lockSession(ctx context.Context, tx pgx.Tx, id string) error {
	var one int
	err := tx.QueryRow(ctx, "SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", toPG(id)).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(id)
	}
	return err
}
