package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessiondb/sessiondb"
)

// ImportSessions implements sessiondb.Importer with the import every
// backend shares (sessiondb.RunImport; the SQLite store's ImportSessions
// documents the behaviour): JSON Lines or a JSON array as an export
// writes it, each session all or nothing in one transaction of its own,
// retried as every write is (DB.write: a retry after a lost commit first
// asks whether it committed, so nothing is imported twice). Skipped,
// replaced and renumbered sessions, detached children, errors with their
// line and the warnings are reported exactly as on SQLite.
//
// Messages keep their ids from the file where no message holds them, in
// the session's order, as on SQLite; the others get new ids above every id
// the database holds or its identity sequence issued. To choose ids no
// concurrent writer can take, each session's transaction locks the
// messages table against writes (SHARE ROW EXCLUSIVE) while it inserts:
// appends and syncs wait for one session's import, reads never do.
// Imported rows get the store's origin (Options.Origin).
func (db *DB) ImportSessions(ctx context.Context, r io.Reader, o sessiondb.ImportOptions) (*sessiondb.ImportReport, error) {
	rep, err := sessiondb.RunImport(ctx, r, o, db.prepareOptions(), pgImport{db})
	return rep, db.mapErr("import", err) // a dry run's reads are not mapped by write
}

// pgImport is the PostgreSQL side of an import (sessiondb.ImportBackend).
type pgImport struct{ db *DB }

func (b pgImport) ImportLookup() sessiondb.ImportLookup { return importLookup{q: b.db.pool} }

func (b pgImport) WriteImport(ctx context.Context, p *sessiondb.ImportPlan, o sessiondb.ImportOptions) (sessiondb.ImportDecision, error) {
	var res sessiondb.ImportDecision
	// The messages are encoded and indexed before the transaction, so its
	// lock on the table is held for the writing only, unless the session
	// is there to be skipped (the transaction decides; this is a guess).
	var rows [][]any
	if exists, _, err := (importLookup{q: b.db.pool}).ImportedSession(ctx, p.ID); err == nil && (!exists || o.Replace) {
		if rows, err = b.db.importRows(p); err != nil {
			return res, err
		}
	}
	err := b.db.write(ctx, fmt.Sprintf("import session %q", p.ID), func(tx pgx.Tx) error {
		var err error
		res, err = b.db.importTx(ctx, tx, p, rows, o)
		return importRefused(p.ID, err)
	})
	return res, err
}

func (b pgImport) LinkImported(ctx context.Context, links []sessiondb.ImportLink) ([]sessiondb.ImportLink, error) {
	var orphans []sessiondb.ImportLink
	err := b.db.write(ctx, "import: link sessions to parents imported after them", func(tx pgx.Tx) error {
		var err error
		orphans, err = sessiondb.LinkParents(ctx, importLinker{importLookup{q: tx, locking: true}, tx}, links)
		return err
	})
	return orphans, err
}

// ImportStoreFault reports an error of PostgreSQL other than a refused
// row (importRefused).
func (pgImport) ImportStoreFault(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && !refusedClass(pe.Code)
}

// refusedClass reports a PostgreSQL error by which a row was refused for
// its values: a data exception (22), an integrity constraint (23), or a
// value beyond a limit (54, such as a tsvector too long).
func refusedClass(code string) bool {
	return strings.HasPrefix(code, "22") || strings.HasPrefix(code, "23") || strings.HasPrefix(code, "54")
}

// importRefused turns an error by which PostgreSQL refused a row of
// session id into one that names the session and what to do; the import
// reports it and goes on. Any other error is returned as it is, for write
// to retry or map.
func importRefused(id string, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !refusedClass(pe.Code) {
		return err
	}
	why := ""
	switch {
	case pe.Code == "23505":
		return &sessiondb.Error{Code: sessiondb.ECONFLICT, Err: err, Message: fmt.Sprintf(
			"session %q clashes with a row already in the database (PostgreSQL: %s); nothing of it was imported. "+
				"Change the clashing value in the file (or the row in the database) and import the file again: "+
				"the sessions already imported are skipped", id, pe.Message)}
	case pe.Code == "23502":
		why = "a value the database requires is missing"
	case strings.HasPrefix(pe.Code, "23"):
		why = "a rule of the database (a constraint) refused it"
	case strings.HasPrefix(pe.Code, "22"):
		why = "a value has a type or range the database does not accept"
	default:
		why = "a value is larger than PostgreSQL accepts"
	}
	return &sessiondb.Error{Code: sessiondb.EINVALID, Err: err, Message: fmt.Sprintf(
		"session %q was not imported: %s (PostgreSQL: %s); nothing of it was written. Fix the session in the file and import the file again: the sessions already imported are skipped", id, why, pe.Message)}
}

// importLookup answers an import's questions (sessiondb.ImportLookup)
// through q: a write transaction (locking), or the pool for a dry run.
// Ids and titles are given and returned as the caller knows them (not
// escaped).
type importLookup struct {
	q reader
	// locking: TitleHolder takes SetTitle's lock on the title, so the
	// answer holds until the transaction ends (no index keeps titles
	// unique here).
	locking bool
}

func (l importLookup) ImportedSession(ctx context.Context, id string) (exists, parentless bool, err error) {
	err = l.q.QueryRow(ctx, "SELECT parent_session_id IS NULL FROM sessions WHERE id = $1", toPG(id)).Scan(&parentless)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	return err == nil, parentless, err
}

func (l importLookup) InLineage(ctx context.Context, id, anc string) (bool, error) {
	var n int
	err := l.q.QueryRow(ctx, `WITH RECURSIVE up(id) AS (
			SELECT $1::text
			UNION
			SELECT s.parent_session_id FROM sessions s JOIN up ON s.id = up.id WHERE s.parent_session_id IS NOT NULL)
		SELECT COUNT(*) FROM up WHERE id = $2`, toPG(id), toPG(anc)).Scan(&n)
	return n > 0, err
}

func (l importLookup) TitleHolder(ctx context.Context, title, id string) (string, error) {
	key := toPG(title)
	if l.locking {
		var one int
		if err := l.q.QueryRow(ctx, "SELECT 1 FROM pg_advisory_xact_lock($1, hashtext($2))", titleLock, key).Scan(&one); err != nil {
			return "", err
		}
	}
	var holder string
	err := l.q.QueryRow(ctx, `SELECT id FROM sessions WHERE title = $1 AND id <> $2 ORDER BY id COLLATE "C" LIMIT 1`, key, toPG(id)).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return fromPG(holder), err
}

// importLinker is importLookup in a write transaction (sessiondb.ImportLinker).
type importLinker struct {
	importLookup
	tx pgx.Tx
}

func (l importLinker) SetParentIfNone(ctx context.Context, child, parent string) error {
	_, err := l.tx.Exec(ctx, "UPDATE sessions SET parent_session_id = $1 WHERE id = $2 AND parent_session_id IS NULL", toPG(parent), toPG(child))
	return err
}

// importTx writes one planned session, its messages' rows (importRows;
// nil: made here) inside the caller's transaction. It keeps no state
// outside it, so write may run it again.
//
// Locks are taken in the order appends take theirs (the session's row,
// then the messages table), so the two never wait on each other in a
// circle: the row first (a replaced session's appends wait), then, when
// there are messages to insert, the table against other writers, so the
// ids chosen stay free until the commit.
func (db *DB) importTx(ctx context.Context, tx pgx.Tx, p *sessiondb.ImportPlan, rows [][]any, o sessiondb.ImportOptions) (sessiondb.ImportDecision, error) {
	if _, err := tx.Exec(ctx, "SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", toPG(p.ID)); err != nil {
		return sessiondb.ImportDecision{}, err
	}
	if len(p.Messages) > 0 {
		if _, err := tx.Exec(ctx, "LOCK TABLE messages IN SHARE ROW EXCLUSIVE MODE"); err != nil {
			return sessiondb.ImportDecision{}, err
		}
	}
	res, err := sessiondb.DecideImport(ctx, importLookup{q: tx, locking: true}, p, o, nil)
	if err != nil || res.Outcome == sessiondb.ImportSkip {
		return res, err
	}
	names, vals, err := p.SessionRow(res, o, func(prompt string) (string, error) { return storePrompt(ctx, tx, prompt) })
	if err != nil {
		return res, err
	}
	replace := res.Outcome == sessiondb.ImportReplace
	for i, v := range vals {
		if s, ok := v.(string); ok {
			vals[i] = toPG(s)
		}
	}
	key := toPG(p.ID)
	if replace {
		if _, err := tx.Exec(ctx, "DELETE FROM messages WHERE session_id = $1", key); err != nil {
			return res, err
		}
		set := make([]string, len(names))
		for i, n := range names {
			set[i] = fmt.Sprintf("%s = $%d", n, i+1)
		}
		q := fmt.Sprintf("UPDATE sessions SET %s WHERE id = $%d", strings.Join(set, ", "), len(names)+1)
		if _, err := tx.Exec(ctx, q, append(vals, key)...); err != nil {
			return res, err
		}
	} else {
		names = append(names, "id", "origin")
		vals = append(vals, key, db.origin)
		marks := make([]string, len(names))
		for i := range marks {
			marks[i] = fmt.Sprintf("$%d", i+1)
		}
		q := "INSERT INTO sessions (" + strings.Join(names, ", ") + ") VALUES (" + strings.Join(marks, ", ") + ")"
		if _, err := tx.Exec(ctx, q, vals...); err != nil {
			return res, err
		}
	}
	if len(p.Messages) > 0 {
		if rows == nil {
			if rows, err = db.importRows(p); err != nil {
				return res, err
			}
		}
		if res.Renumbered, err = insertImported(ctx, tx, p, rows); err != nil {
			return res, err
		}
	}
	if replace {
		if err := gcPrompts(ctx, tx); err != nil {
			return res, err
		}
	}
	return res, nil
}

// importMessageColumns are the columns insertImported copies: the id and
// display_order (the id, as an append sets it), the columns of insertArgs
// in its order, the flags an import keeps, then the search columns.
var importMessageColumns = append([]string{"id", "display_order", "session_id", "role", "content",
	"tool_call_id", "tool_calls", "tool_name", "effect_disposition", "timestamp", "token_count", "finish_reason",
	"reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items", "codex_message_items",
	"platform_message_id", "observed", "_compressed_summary", "api_content", "display_kind", "display_metadata",
	"origin", "active", "compacted"}, searchColumnNames...)

// importRows returns p's messages as rows of importMessageColumns, their
// ids (the first two values) left for insertImported to choose. Each is
// indexed for the session as the import writes it (its source and
// model_config).
func (db *DB) importRows(p *sessiondb.ImportPlan) ([][]any, error) {
	to := &appendTarget{source: sessiondb.ScrubText(p.Session.Source), modelConfig: p.ModelConfig}
	flag := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	rows := make([][]any, len(p.Messages))
	for i, m := range p.Messages {
		search, err := indexArgs(m.PreparedMessage, to)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i+1, err)
		}
		row := make([]any, 0, len(importMessageColumns))
		row = append(row, int64(0), int64(0))
		row = append(row, db.insertArgs(p.ID, m.PreparedMessage)...)
		row = append(row, flag(m.Active), flag(m.Compacted))
		rows[i] = append(row, search...)
	}
	return rows, nil
}

// insertImported inserts rows, p's messages (importRows), with COPY, under
// importTx's lock on the table: each keeps its id from the file where it
// is free (sessiondb.ChooseMessageIDs), the others are numbered on from
// above every id the table holds or its sequence issued; the sequence is
// then moved past every id written, so later appends never collide. It
// returns how many messages got a new id.
func insertImported(ctx context.Context, tx pgx.Tx, p *sessiondb.ImportPlan, rows [][]any) (int, error) {
	var top, issued int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(id), 0),
			COALESCE(pg_sequence_last_value(pg_get_serial_sequence('messages', 'id')::regclass), 0) FROM messages`).
		Scan(&top, &issued); err != nil {
		return 0, err
	}
	taken := map[int64]bool{}
	if want := p.FileIDs(); len(want) > 0 {
		held, err := tx.Query(ctx, "SELECT id FROM messages WHERE id = ANY($1)", want)
		if err != nil {
			return 0, err
		}
		ids, err := pgx.CollectRows(held, pgx.RowTo[int64])
		if err != nil {
			return 0, err
		}
		for _, id := range ids {
			taken[id] = true
		}
	}
	ids, largest, renumbered := sessiondb.ChooseMessageIDs(p.Messages, max(top, issued)+1, taken)
	for i, row := range rows {
		row[0], row[1] = ids[i], ids[i] // display_order is the id, as an append sets it
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"messages"}, importMessageColumns, pgx.CopyFromRows(rows)); err != nil {
		return 0, err
	}
	if hi := max(largest, top); hi > issued {
		if _, err := tx.Exec(ctx, "SELECT setval(pg_get_serial_sequence('messages', 'id'), $1)", hi); err != nil {
			return 0, err
		}
	}
	return renumbered, nil
}
