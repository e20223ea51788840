package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// titleLock is the first key of the transaction-level advisory lock
// SetTitle takes on a title's hash ("titl" in ASCII); the second is
// hashtext(title).
const titleLock = 0x7469746c

// SetTitle gives a session a user title (sanitised; "" clears it). Titles
// are unique among sessions; the one exception is a title held by a
// compression ancestor of this session, which moves to it. No index
// enforces it (several hosts sync into one database and may each hold the
// title): writers of one title are serialised by an advisory lock on its
// hash, and the check runs under it.
func (db *DB) SetTitle(ctx context.Context, id, title string) error {
	t, err := sessiondb.SanitizeTitle(title)
	if err != nil {
		return err
	}
	return db.write(ctx, fmt.Sprintf("rename session %q", id), func(tx pgx.Tx) error {
		return setTitle(ctx, tx, id, t, sessiondb.TitleSourceUser)
	})
}

func setTitle(ctx context.Context, tx pgx.Tx, id, title, source string) error {
	if err := mustExist(ctx, tx, id); err != nil {
		return err
	}
	if title == "" {
		_, err := tx.Exec(ctx, "UPDATE sessions SET title = NULL, title_source = NULL WHERE id = $1", toPG(id))
		return err
	}
	key := toPG(title)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", titleLock, key); err != nil {
		return err
	}
	holders, err := collect(ctx, tx, `SELECT id FROM sessions WHERE title = $1 AND id <> $2 ORDER BY started_at DESC, id COLLATE "C"`, key, toPG(id))
	if err != nil {
		return err
	}
	for _, holder := range holders {
		anc, err := isCompressionAncestor(ctx, tx, holder, id)
		if err != nil {
			return err
		}
		if !anc {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "Title '%s' is already in use by session %s", title, holder)
		}
	}
	for _, holder := range holders {
		if _, err := tx.Exec(ctx, "UPDATE sessions SET title = NULL WHERE id = $1", toPG(holder)); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, "UPDATE sessions SET title = $1, title_source = $2 WHERE id = $3", key, source, toPG(id))
	return err
}

// isCompressionAncestor reports whether anc is reached from id by following
// parents that ended with 'compression'.
func isCompressionAncestor(ctx context.Context, q reader, anc, id string) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `WITH RECURSIVE up(id, depth) AS (
			SELECT parent_session_id, 1 FROM sessions WHERE id = $1
			UNION ALL
			SELECT s.parent_session_id, up.depth + 1 FROM sessions s JOIN up ON s.id = up.id
			WHERE up.depth < 1000)
		SELECT COUNT(*) FROM up JOIN sessions p ON p.id = up.id WHERE p.id = $2 AND p.end_reason = 'compression'`,
		toPG(id), toPG(anc)).Scan(&n)
	return n > 0, err
}

// SetAutoTitle sets an automatic title (source derived, llm, branch or
// branch_fallback) only when the session has none or its title has lower
// authority. It reports whether the title was written.
func (db *DB) SetAutoTitle(ctx context.Context, id, title, source string) (bool, error) {
	if err := sessiondb.CheckAutoTitleSource(source); err != nil {
		return false, err
	}
	t, err := sessiondb.SanitizeTitle(title)
	if err != nil || t == "" {
		return false, err
	}
	wrote := false
	err = db.write(ctx, fmt.Sprintf("title session %q", id), func(tx pgx.Tx) error {
		wrote = false
		var cur, curSource *string
		err := tx.QueryRow(ctx, "SELECT title, title_source FROM sessions WHERE id = $1 FOR UPDATE", toPG(id)).Scan(&cur, &curSource)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return err
		}
		if !sessiondb.AutoTitleWins(cur, curSource, source) {
			return nil
		}
		if err := setTitle(ctx, tx, id, t, source); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	return wrote, err
}

// ResolveTitle returns the session a title names: the most recently started
// "<title> #N" when numbered variants exist, else the exact title. Where
// synced hosts hold one title several times, the most recently started
// session wins.
func (db *DB) ResolveTitle(ctx context.Context, title string) (string, error) {
	var id string
	key := toPG(title)
	err := db.pool.QueryRow(ctx, `SELECT id FROM (
			SELECT id, 1 AS numbered, started_at FROM sessions
			WHERE starts_with(title, $1 || ' #') AND ascii(substr(title, char_length($1) + 3, 1)) BETWEEN 48 AND 57
			UNION ALL SELECT id, 0, started_at FROM sessions WHERE title = $1) t
		ORDER BY numbered DESC, started_at DESC, id COLLATE "C" DESC LIMIT 1`, key).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", sessiondb.Errorf(sessiondb.ENOTFOUND, "no session titled %q", title)
	}
	if err != nil {
		return "", db.mapErr("resolve title", err)
	}
	return fromPG(id), nil
}

// NextTitleInLineage returns the title for the next session of a numbered
// lineage: base itself when no session uses it, else "base #N" one past the
// highest number in use. A "#N" suffix of base is ignored.
func (db *DB) NextTitleInLineage(ctx context.Context, base string) (string, error) {
	base, _ = sessiondb.SplitNumberedTitle(base)
	key := toPG(base)
	titles, err := collect(ctx, db.pool, `SELECT title FROM sessions WHERE title = $1 OR title LIKE $2 ESCAPE '\'`,
		key, escapeLike(key)+" #%")
	if err != nil {
		return "", db.mapErr("next title", err)
	}
	return sessiondb.NextNumberedTitle(base, titles), nil
}
