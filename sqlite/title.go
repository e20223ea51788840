package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// SetTitle gives a session a user title (sanitised; "" clears it). Titles
// are unique among sessions; the one exception is a title held by a
// compression ancestor of this session, which moves to it.
func (db *DB) SetTitle(ctx context.Context, id, title string) error {
	t, err := sessiondb.SanitizeTitle(title)
	if err != nil {
		return err
	}
	return db.writeTx(ctx, 0, fmt.Sprintf("rename session %q", id), func(tx *sql.Tx) error {
		return setTitle(ctx, tx, id, t, sessiondb.TitleSourceUser)
	})
}

func setTitle(ctx context.Context, tx *sql.Tx, id, title, source string) error {
	if err := mustExist(ctx, tx, id); err != nil {
		return err
	}
	if title == "" {
		_, err := tx.ExecContext(ctx, "UPDATE sessions SET title = NULL, title_source = NULL WHERE id = ?", id)
		return err
	}
	var holder string
	err := tx.QueryRowContext(ctx, "SELECT id FROM sessions WHERE title = ? AND id <> ?", title, id).Scan(&holder)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	default:
		anc, err := isCompressionAncestor(ctx, tx, holder, id)
		if err != nil {
			return err
		}
		if !anc {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "Title '%s' is already in use by session %s", title, holder)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET title = NULL WHERE id = ?", holder); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, "UPDATE sessions SET title = ?, title_source = ? WHERE id = ?", title, source, id)
	return err
}

// isCompressionAncestor reports whether anc is reached from id by following
// parents that ended with 'compression'.
func isCompressionAncestor(ctx context.Context, q querier, anc, id string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `WITH RECURSIVE up(id, depth) AS (
			SELECT parent_session_id, 1 FROM sessions WHERE id = ?
			UNION ALL
			SELECT s.parent_session_id, up.depth + 1 FROM sessions s JOIN up ON s.id = up.id
			WHERE up.depth < 1000)
		SELECT COUNT(*) FROM up JOIN sessions p ON p.id = up.id WHERE p.id = ? AND p.end_reason = 'compression'`, id, anc).Scan(&n)
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
	err = db.writeTx(ctx, 0, fmt.Sprintf("title session %q", id), func(tx *sql.Tx) error {
		wrote = false
		var cur, curSource *string
		err := tx.QueryRowContext(ctx, "SELECT title, title_source FROM sessions WHERE id = ?", id).Scan(&cur, &curSource)
		if errors.Is(err, sql.ErrNoRows) {
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
// "<title> #N" when numbered variants exist, else the exact title.
func (db *DB) ResolveTitle(ctx context.Context, title string) (string, error) {
	var id string
	err := db.read.QueryRowContext(ctx, `SELECT id FROM (
			SELECT id, 1 AS numbered, started_at FROM sessions WHERE title GLOB ?
			UNION ALL SELECT id, 0, started_at FROM sessions WHERE title = ?)
		ORDER BY numbered DESC, started_at DESC LIMIT 1`, globEscape(title)+" #[0-9]*", title).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", sessiondb.Errorf(sessiondb.ENOTFOUND, "no session titled %q", title)
	}
	if err != nil {
		return "", db.mapErr("resolve title", err)
	}
	return id, nil
}

// globEscape escapes GLOB's special characters.
func globEscape(s string) string {
	return strings.NewReplacer("[", "[[]", "*", "[*]", "?", "[?]").Replace(s)
}

// NextTitleInLineage returns the title for the next session of a numbered
// lineage: base itself when no session uses it, else "base #N" one past the
// highest number in use. A "#N" suffix of base is ignored.
func (db *DB) NextTitleInLineage(ctx context.Context, base string) (string, error) {
	base, _ = sessiondb.SplitNumberedTitle(base)
	rows, err := db.read.QueryContext(ctx, `SELECT title FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\'`,
		base, escapeLike(base)+" #%")
	if err != nil {
		return "", db.mapErr("next title", err)
	}
	defer rows.Close()
	var titles []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return "", db.mapErr("next title", err)
		}
		titles = append(titles, t)
	}
	if err := rows.Err(); err != nil {
		return "", db.mapErr("next title", err)
	}
	return sessiondb.NextNumberedTitle(base, titles), nil
}
