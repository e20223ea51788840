package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
)

// inChunks runs fn over ids in slices of at most 900 (SQLite's bound
// parameter limit is far above, but Hermes keeps IN lists this short).
func inChunks(ids []string, fn func(chunk []any, marks string) error) error {
	for start := 0; start < len(ids); start += 900 {
		end := min(start+900, len(ids))
		chunk := make([]any, end-start)
		for i, id := range ids[start:end] {
			chunk[i] = id
		}
		if err := fn(chunk, placeholders(len(chunk))); err != nil {
			return err
		}
	}
	return nil
}

// inIDs runs fn with a list of ids for an IN (...) clause and its
// arguments: all of them as one JSON array that json_each reads, which
// SQLite handles far faster than IN lists of 900 parameters (parsing and
// binding those cost more than the rows they delete), or in chunks as
// Hermes does when an id could not travel through JSON unchanged (not
// valid UTF-8, or a NUL).
func inIDs(ids []string, fn func(list string, args []any) error) error {
	for _, id := range ids {
		if !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
			return inChunks(ids, func(chunk []any, marks string) error { return fn(marks, chunk) })
		}
	}
	set, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	return fn("SELECT value FROM json_each(?)", []any{string(set)})
}

// deleteSessions removes sessions with their messages (whose FTS entries the
// triggers remove), usage and lock rows; children outside the set are
// orphaned; unreferenced system prompts are collected. One transaction. A
// bulk delete rebuilds the search indexes (rebuildCheaper) and the b-tree
// indexes of messages and sessions (dropIndexes) from what remains.
func deleteSessions(ctx context.Context, tx *sql.Tx, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	var gone, total, sessions int64
	if err := inIDs(ids, func(list string, args []any) error {
		var n int64
		err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM messages WHERE session_id IN ("+list+")", args...).Scan(&n)
		gone += n
		return err
	}); err != nil {
		return err
	}
	if gone >= rebuildMin {
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM messages").Scan(&total); err != nil {
			return err
		}
	}
	if len(ids) >= rebuildMin {
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM sessions").Scan(&sessions); err != nil {
			return err
		}
	}
	after, err := rebuildCheaper(ctx, tx, gone, total)
	if err != nil {
		return err
	}
	// The deletes search messages and sessions by session id and parent (so
	// do the foreign-key checks): those indexes stay.
	for _, t := range []struct {
		table, keep, events string
		gone, total         int64
	}{
		{"messages", "idx_messages_session_id", "DELETE", gone, total},
		{"sessions", "idx_sessions_parent", "DELETE UPDATE", int64(len(ids)), sessions},
	} {
		stmts, err := dropIndexes(ctx, tx, t.table, t.keep, t.events, t.gone, t.total)
		if err != nil {
			return err
		}
		after = append(after, stmts...)
	}
	stmts := []string{
		"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN (%s)",
		"DELETE FROM messages WHERE session_id IN (%s)",
		"DELETE FROM session_model_usage WHERE session_id IN (%s)",
		"DELETE FROM compression_locks WHERE session_id IN (%s)",
		"DELETE FROM sessions WHERE id IN (%s)",
	}
	for _, stmt := range stmts {
		if err := inIDs(ids, func(list string, args []any) error {
			_, err := tx.ExecContext(ctx, fmt.Sprintf(stmt, list), args...)
			return err
		}); err != nil {
			return err
		}
	}
	if err := exec(ctx, tx, after...); err != nil {
		return err
	}
	return gcPrompts(ctx, tx)
}

// rebuildMin is the smallest number of deleted rows for which
// deleteSessions considers rebuilding an index instead of deleting its
// entries one row at a time.
const rebuildMin = 2000

// bulk reports whether a delete of gone of total rows is one for which
// rebuilding an index from the rows that remain is cheaper: at least
// rebuildMin rows go, and more go than remain.
func bulk(gone, total int64) bool {
	return gone >= rebuildMin && total-gone < gone
}

// rebuildCheaper handles deletes that remove most of the messages (gone of
// total; a prune of an old history): FTS5 must re-tokenize every deleted row
// to remove it from an external-content index, while a 'rebuild' tokenizes
// only the rows that remain. When bulk, and every FTS delete trigger is the
// one this package installs, it drops those triggers for the rest of the
// transaction and returns the statements to run after the delete: rebuild
// each index from what remains (which also completes any pending backfill,
// so its markers are cleared) and reinstall the triggers exactly as they
// were. Outside the transaction the file never lacks a trigger. The caller
// deletes whole sessions, messages and all.
func rebuildCheaper(ctx context.Context, tx *sql.Tx, gone, total int64) ([]string, error) {
	if !bulk(gone, total) {
		return nil, nil
	}
	objs, err := readSchema(ctx, tx)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(objs["messages_fts"], "messages_fts_src") {
		return nil, nil // legacy layout: deletes by rowid are cheap there
	}
	var after []string
	for _, ix := range []struct{ table, trigger, ddl, keys string }{
		{"messages_fts", "messages_fts_delete", ddlFTS, ""},
		{"messages_fts_trigram", "messages_fts_trigram_delete", ddlTrigram, "'" + keyHighWater + "', '" + keyProgress + "'"},
		{"messages_fts_cjk", "messages_fts_cjk_delete", ddlCJKTriggers, "'" + keyCJKHighWater + "', '" + keyCJKProgress + "'"},
	} {
		got, ok := objs[ix.trigger]
		if !ok {
			if ix.table == "messages_fts_cjk" {
				continue // a stale CJK index (no triggers) is left to RestoreCJK
			}
			return nil, nil
		}
		if normSQL(got) != normSQL(storedTrigger(ix.ddl, ix.trigger)) {
			return nil, nil // a newer process's trigger: let it do the work
		}
		after = append(after, "INSERT INTO "+ix.table+"("+ix.table+") VALUES('rebuild')", got)
		if ix.keys != "" {
			after = append(after, "DELETE FROM state_meta WHERE key IN ("+ix.keys+")")
		}
	}
	drop := []string{"messages_fts_delete", "messages_fts_trigram_delete", "messages_fts_cjk_delete"}
	// The display-order trigger renumbers the deleted row's peers in its
	// session; whole sessions go here, so it has nothing left to renumber.
	const display = "messages_display_identity_delete"
	if got := objs[display]; got != "" && normSQL(got) == normSQL(storedTrigger(ddlDeferred, display)) {
		drop = append(drop, display)
		after = append(after, got)
	}
	if err := dropTriggers(ctx, tx, drop...); err != nil {
		return nil, err
	}
	return after, nil
}

// dropIndexes does for the b-tree indexes of table what rebuildCheaper does
// for the search indexes. When the delete is bulk (gone of total rows),
// removing every entry one row at a time costs more than building the index
// again from what remains (one sorted pass), and it dirties every page of
// the index, each written at the commit, while a dropped index's pages are
// only freed. It drops the indexes of table for the rest of the transaction
// but keep (which the deletes and the foreign-key checks search by) and the
// unique ones (a foreign key's parent key may need them), and returns the
// statements to run after the delete: drop those too, then create every
// index again exactly as SQLite stored it and in the same order (the planner
// breaks ties between indexes by that order). Outside the transaction the
// file never lacks one. It leaves the indexes alone when keep is missing,
// when a trigger on table fires on one of events (a trigger of a newer
// process might search by a dropped index), and in a file with statistics
// (DROP INDEX would delete the index's sqlite_stat rows).
func dropIndexes(ctx context.Context, tx *sql.Tx, table, keep, events string, gone, total int64) ([]string, error) {
	if !bulk(gone, total) {
		return nil, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT type, name, COALESCE(sql, '') FROM sqlite_master
		WHERE (type IN ('index', 'trigger') AND tbl_name = ?) OR name LIKE 'sqlite\_stat%' ESCAPE '\'`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var drop, stay, after []string
	kept := false
	for rows.Next() {
		var typ, name, ddl string
		if err := rows.Scan(&typ, &name, &ddl); err != nil {
			return nil, err
		}
		switch {
		case typ == "table": // sqlite_stat1 (or 2, 3, 4)
			return nil, nil
		case typ == "trigger":
			// the events a trigger fires on are named before its body
			head, _, _ := strings.Cut(" "+strings.ToUpper(normSQL(ddl))+" ", " BEGIN ")
			for _, ev := range strings.Fields(events) {
				if strings.Contains(head, " "+ev+" ") {
					return nil, nil
				}
			}
		case ddl == "": // a UNIQUE or PRIMARY KEY constraint's own index
		case name == keep || strings.HasPrefix(ddl, "CREATE UNIQUE "):
			kept = kept || name == keep
			stay = append(stay, "DROP INDEX "+quoteIdent(name))
			after = append(after, ddl)
		default:
			drop = append(drop, name)
			after = append(after, ddl)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if !kept {
		return nil, nil
	}
	for _, name := range drop {
		if err := exec(ctx, tx, "DROP INDEX "+quoteIdent(name)); err != nil {
			return nil, err
		}
	}
	return append(stay, after...), nil
}

// deleteTargets returns id and, recursively, its delegate (subagent)
// children, which are deleted with it.
func deleteTargets(ctx context.Context, q querier, id string) ([]string, error) {
	return collect(ctx, q, `WITH RECURSIVE d(id) AS (
			SELECT ?
			UNION
			SELECT s.id FROM sessions s JOIN d ON s.parent_session_id = d.id
			WHERE `+jsonMarker("_delegate_from")+` IS NOT NULL)
		SELECT id FROM d`, id)
}

// DeleteSession deletes a session, its messages and its delegate children
// (recursively); other children (branches, continuations) are kept and
// orphaned. It returns the ids deleted.
func (db *DB) DeleteSession(ctx context.Context, id string) ([]string, error) {
	var ids []string
	err := db.writeTx(ctx, 0, fmt.Sprintf("delete session %q", id), func(tx *sql.Tx) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return err
		}
		var err error
		if ids, err = deleteTargets(ctx, tx, id); err != nil {
			return err
		}
		return deleteSessions(ctx, tx, ids)
	})
	return ids, err
}

// DeleteTargets returns what DeleteSession(id) would delete.
func (db *DB) DeleteTargets(ctx context.Context, id string) ([]string, error) {
	if _, err := db.Session(ctx, id); err != nil {
		return nil, err
	}
	ids, err := deleteTargets(ctx, db.read, id)
	return ids, db.mapErr("delete targets", err)
}

// Prune deletes ended sessions whose last activity is older than
// o.Before, as Hermes does: open sessions are never touched; pinned
// sessions and every session of a pinned compression chain are kept unless
// IncludePinned; a compression ancestor goes only together with its whole
// later lineage; children of pruned sessions that stay are orphaned. With
// DryRun it returns exactly what would go and deletes nothing. One
// transaction.
func (db *DB) Prune(ctx context.Context, o sessiondb.PruneOptions) ([]sessiondb.PruneCandidate, error) {
	if o.Before <= 0 {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "prune: an age limit is required")
	}
	var out []sessiondb.PruneCandidate
	err := db.writeTx(ctx, 0, "prune sessions", func(tx *sql.Tx) error {
		var err error
		if out, err = pruneCandidates(ctx, tx, o); err != nil || o.DryRun {
			return err
		}
		ids := make([]string, len(out))
		for i, c := range out {
			ids[i] = c.ID
		}
		return deleteSessions(ctx, tx, ids)
	})
	return out, err
}

func pruneCandidates(ctx context.Context, tx *sql.Tx, o sessiondb.PruneOptions) ([]sessiondb.PruneCandidate, error) {
	where := []string{"s.ended_at IS NOT NULL", lastActiveSQL + " < ?"}
	args := []any{o.Before}
	if len(o.Sources) > 0 {
		where = append(where, "s.source IN ("+placeholders(len(o.Sources))+")")
		for _, v := range o.Sources {
			args = append(args, v)
		}
	}
	pinned := map[string]bool{}
	if !o.IncludePinned {
		// keep pinned rows and every segment of a chain with a pinned segment
		ids, err := collect(ctx, tx, `WITH RECURSIVE chain(id, depth) AS (
				SELECT id, 0 FROM sessions WHERE COALESCE(pinned, 0) = 1
				UNION SELECT c.id, chain.depth + 1 FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
					JOIN chain ON p.id = chain.id WHERE p.end_reason = 'compression' AND chain.depth < 1000
				UNION SELECT p.id, chain.depth + 1 FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
					JOIN chain ON c.id = chain.id WHERE p.end_reason = 'compression' AND chain.depth < 1000)
			SELECT DISTINCT id FROM chain`)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			pinned[id] = true
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT s.id, s.source, s.title, s.model, s.started_at, `+lastActiveSQL+`,
		s.ended_at, COALESCE(s.message_count, 0), COALESCE(s.archived, 0), s.end_reason
		FROM sessions s WHERE `+strings.Join(where, " AND ")+` ORDER BY 6, s.id`, args...)
	if err != nil {
		return nil, err
	}
	var cands []sessiondb.PruneCandidate
	compressed := map[string]bool{}
	for rows.Next() {
		var c sessiondb.PruneCandidate
		var endReason sql.NullString
		if err := rows.Scan(&c.ID, &c.Source, &c.Title, &c.Model, &c.StartedAt, &c.LastActive, &c.EndedAt,
			&c.MessageCount, &c.Archived, &endReason); err != nil {
			rows.Close()
			return nil, err
		}
		if pinned[c.ID] {
			continue
		}
		cands = append(cands, c)
		if endReason.String == sessiondb.EndReasonCompression {
			compressed[c.ID] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// A compression ancestor stays unless its whole later lineage goes too.
	return sessiondb.KeepCompressionLineages(cands, compressed, func(id string) (string, error) {
		var next string
		err := tx.QueryRowContext(ctx, continuationSQL, id).Scan(&next)
		if err == sql.ErrNoRows {
			return "", nil
		}
		return next, err
	})
}

// chainIDs returns every session of id's compression chain.
func chainIDs(ctx context.Context, q querier, id string) ([]string, error) {
	return collect(ctx, q, `WITH RECURSIVE chain(id, depth) AS (
			SELECT ?, 0
			UNION SELECT c.id, chain.depth + 1 FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
				JOIN chain ON p.id = chain.id WHERE p.end_reason = 'compression' AND chain.depth < 1000
			UNION SELECT p.id, chain.depth + 1 FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
				JOIN chain ON c.id = chain.id WHERE p.end_reason = 'compression' AND chain.depth < 1000)
		SELECT DISTINCT id FROM chain`, id)
}

// collect runs a query returning one text column and collects it.
func collect(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	return collectOf[string](ctx, q, query, args...)
}

// collectOf returns the first column of every row of query, as T.
func collectOf[T any](ctx context.Context, q querier, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var s T
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// setChainFlag sets a flag column on every session of id's compression
// chain (archive, pin and hide apply to a whole conversation).
func (db *DB) setChainFlag(ctx context.Context, id string, u sessiondb.FlagUpdate) error {
	return db.writeTx(ctx, 0, fmt.Sprintf("%s session %q", u.Verb, id), func(tx *sql.Tx) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return err
		}
		ids, err := chainIDs(ctx, tx, id)
		if err != nil {
			return err
		}
		return inChunks(ids, func(chunk []any, marks string) error {
			_, err := tx.ExecContext(ctx, "UPDATE sessions SET "+u.Assignments()+" WHERE id IN ("+marks+")", chunk...)
			return err
		})
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

// ClearMessages deletes a session's messages (the triggers remove them from
// the search indexes) and resets its counters; the session stays.
func (db *DB) ClearMessages(ctx context.Context, id string) (int64, error) {
	var n int64
	err := db.writeTx(ctx, 0, fmt.Sprintf("clear session %q", id), func(tx *sql.Tx) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE session_id = ?", id)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?", id)
		return err
	})
	return n, err
}
