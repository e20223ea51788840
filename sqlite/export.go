package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strings"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb"
)

// ExportPageSize is how many messages an export reads per query. An export
// holds at most one page of messages in memory, however long the session.
const ExportPageSize = 500

// exportSessionPageSize is how many sessions an export of many reads per
// query.
const exportSessionPageSize = 100

// exportPageBytes bounds the text a page of messages holds: a page ends
// after ExportPageSize messages or at the first message that brings it to
// or past this size, so a session of large messages is read a few at a time.
const exportPageBytes = 16 << 20

// ExportSelection chooses what ExportSessions exports (sessiondb.ExportSelection).
type ExportSelection = sessiondb.ExportSelection

// ExportedSession is one exported object (sessiondb.ExportedSession).
// Messages reads the database in pages of ExportPageSize as it is ranged
// over (each range reads afresh). Pages are separate queries, not one
// snapshot: a message appended to the session during the export appears at
// the end; none is ever skipped or repeated.
type ExportedSession = sessiondb.ExportedSession

// ExportSessions calls fn for every selected session, in id order (for
// Hermes ids, the order they started), and stops at the first error fn
// returns. Sessions are read 100 at a time and messages 500 at a time, so
// memory stays bounded whatever the size of the database. A SessionID that
// does not exist is an ENOTFOUND error; a Source without sessions exports
// nothing.
func (db *DB) ExportSessions(ctx context.Context, sel ExportSelection, fn func(*ExportedSession) error) error {
	if err := sel.Check(); err != nil {
		return err
	}
	if sel.SessionID != "" {
		var x *ExportedSession
		var err error
		if sel.Lineage {
			x, err = db.exportLineage(ctx, sel.SessionID)
		} else {
			var s *sessiondb.Session
			if s, err = db.Session(ctx, sel.SessionID); err == nil {
				x = &ExportedSession{Session: s, Messages: db.exportMessages(ctx, s.ID)}
			}
		}
		if err != nil {
			return err
		}
		return fn(x)
	}
	after := ""
	for first := true; ; first = false {
		page, err := db.exportSessionPage(ctx, sel.Source, after, first)
		if err != nil {
			return err
		}
		for _, s := range page {
			if err := fn(&ExportedSession{Session: s, Messages: db.exportMessages(ctx, s.ID)}); err != nil {
				return err
			}
		}
		if len(page) < exportSessionPageSize {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// exportSessionPage reads the next sessions after id after (keyset paging
// on the primary key), optionally of one source.
func (db *DB) exportSessionPage(ctx context.Context, source, after string, first bool) ([]*sessiondb.Session, error) {
	var where []string
	var args []any
	if source != "" {
		where = append(where, "s.source = ?")
		args = append(args, source)
	}
	if !first {
		where = append(where, "s.id > ?")
		args = append(args, after)
	}
	q := "SELECT " + sessionColumns + " FROM sessions s"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY s.id LIMIT ?"
	args = append(args, exportSessionPageSize)
	rows, err := db.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.mapErr("export sessions", err)
	}
	defer rows.Close()
	var page []*sessiondb.Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, db.mapErr("export sessions", err)
		}
		page = append(page, s)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr("export sessions", err)
	}
	return page, nil
}

// exportMessages returns a session's active messages as a sequence that
// reads them ExportPageSize at a time (keyset paging on the message id).
// Each page is read completely and its cursor closed before any message is
// yielded, so the consumer may take as long as it likes and the read pool
// is never held across yields.
func (db *DB) exportMessages(ctx context.Context, sessionID string) iter.Seq2[*sessiondb.Message, error] {
	return func(yield func(*sessiondb.Message, error) bool) {
		after := int64(math.MinInt64)
		for {
			page, more, err := db.exportMessagePage(ctx, sessionID, after)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, m := range page {
				if !yield(m, nil) {
					return
				}
			}
			if !more {
				return
			}
			after = page[len(page)-1].ID
		}
	}
}

// exportMessagePage reads the next page of a session's messages after id
// after, and whether more may follow.
func (db *DB) exportMessagePage(ctx context.Context, sessionID string, after int64) ([]*sessiondb.Message, bool, error) {
	rows, err := db.read.QueryContext(ctx, "SELECT "+messageColumns+`, `+messageBytesSQL+` FROM messages
		WHERE session_id = ? AND active = 1 AND id > ? ORDER BY id LIMIT ?`, sessionID, after, ExportPageSize)
	if err != nil {
		return nil, false, db.mapErr(fmt.Sprintf("export messages of %q", sessionID), err)
	}
	defer rows.Close()
	page := make([]*sessiondb.Message, 0, ExportPageSize)
	var held, size int64
	for held < exportPageBytes && rows.Next() {
		m, err := scanMessage(withColumn{rows, &size})
		if err != nil {
			return nil, false, db.mapErr(fmt.Sprintf("export messages of %q", sessionID), err)
		}
		page = append(page, m)
		held += size
	}
	if err := rows.Err(); err != nil {
		return nil, false, db.mapErr(fmt.Sprintf("export messages of %q", sessionID), err)
	}
	return page, len(page) == ExportPageSize || held >= exportPageBytes, nil
}

// messageBytesSQL is the size in bytes of a message's text columns;
// octet_length reads it from the record header, without the text.
const messageBytesSQL = `COALESCE(octet_length(content), 0) + COALESCE(octet_length(tool_calls), 0) +
	COALESCE(octet_length(reasoning), 0) + COALESCE(octet_length(reasoning_content), 0) +
	COALESCE(octet_length(reasoning_details), 0) + COALESCE(octet_length(codex_reasoning_items), 0) +
	COALESCE(octet_length(codex_message_items), 0) + COALESCE(octet_length(api_content), 0)`

// withColumn scans one more column, after those its caller asks for.
type withColumn struct {
	rows  *sql.Rows
	extra any
}

func (w withColumn) Scan(dest ...any) error { return w.rows.Scan(append(dest, w.extra)...) }

// exportLineage builds Hermes' export_session_lineage object for the
// compression lineage id belongs to.
func (db *DB) exportLineage(ctx context.Context, id string) (*ExportedSession, error) {
	chain, err := db.CompressionChain(ctx, id)
	if err != nil {
		return nil, err
	}
	segs := make([]ExportedSession, 0, len(chain))
	var total int64
	for _, sid := range chain {
		s, err := db.Session(ctx, sid)
		if err != nil {
			return nil, err
		}
		var n int64
		if err := db.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM messages WHERE session_id = ? AND active = 1", sid).Scan(&n); err != nil {
			return nil, db.mapErr(fmt.Sprintf("export lineage of %q", id), err)
		}
		total += n
		segs = append(segs, ExportedSession{Session: s, Messages: db.exportMessages(ctx, sid)})
	}
	return sessiondb.LineageExport(segs, total), nil
}

// ImportOptions modify ImportSessions (sessiondb.ImportOptions).
type ImportOptions = sessiondb.ImportOptions

// ImportNote is one entry of an ImportReport (sessiondb.ImportNote).
type ImportNote = sessiondb.ImportNote

// ImportReport says what ImportSessions did (sessiondb.ImportReport).
type ImportReport = sessiondb.ImportReport

// ImportSessions reads sessions exported by ExportSessions (or by Hermes'
// export_session, export_session_lineage or export_all) and writes them.
// The input is JSON Lines, one object per line, or a JSON array of
// objects. A lineage object (one with "segments") imports each segment as
// a session; its concatenated "messages" are a view and are ignored.
//
// Each session is all or nothing, in one BEGIN IMMEDIATE transaction: the
// row with every known column, and its messages with their original
// timestamps, active and compacted flags and every stored column.
//
// A message keeps its id from the file when no message of the database
// holds it and it is above the id of the session's message before it.
// Any other message gets a new id above every id the database holds or
// has issued, so a session's messages keep the file's order; Renumbered
// counts them, with a warning for each session. A complete export
// imported into an empty database keeps every id, however the sessions'
// messages interleave, and exports again exactly as it was.
//
// message_count and tool_call_count are recomputed from the active
// messages written, as Hermes does; a file value that differs is reported
// as a warning. The system prompt is stored once by hash, as CreateSession
// does. A parent that is neither in the database nor in the input is
// dropped (the session becomes a root) and reported; a parent that appears
// later in the input is linked once it is there.
//
// An object that cannot be imported (invalid JSON, a missing id or role, a
// title another session holds, an id seen earlier in the input, a row the
// database's constraints refuse) is reported in Errors with its line and
// the rest is imported; such an error names the session and what to do.
// Errors that concern the database rather than the object (busy, damaged,
// read-only, cancelled) stop the import: the sessions before it stay
// imported, and the report so far is returned with the error. Importing
// the same file again skips the sessions already there, so a stopped
// import is finished by running it again.
//
// Live runtime state is reset unless o.KeepRuntimeState is set (see
// ImportOptions). Hermes' import limits (500 sessions, 10 000 messages per
// session, 50 000 messages, 5 MiB per session, 25 MiB in all) are reported
// as warnings and never enforced: Hermes refuses such a payload because it
// writes all of it in one transaction, while here each session has its own.
// The import holds one session in memory at a time (about four times its
// JSON size).
//
// Reading, checking and deciding are sessiondb.RunImport's, which every
// backend shares; this file holds the SQLite transactions and SQL.
func (db *DB) ImportSessions(ctx context.Context, r io.Reader, o ImportOptions) (*ImportReport, error) {
	return sessiondb.RunImport(ctx, r, o, db.prepareOptions(true), sqliteImport{db})
}

// sqliteImport is the SQLite side of an import (sessiondb.ImportBackend).
type sqliteImport struct{ db *DB }

func (b sqliteImport) ImportLookup() sessiondb.ImportLookup { return importLookup{b.db.read} }

func (b sqliteImport) WriteImport(ctx context.Context, p *sessiondb.ImportPlan, o ImportOptions) (sessiondb.ImportDecision, error) {
	rows := make([]importRow, len(p.Messages))
	for i, m := range p.Messages {
		rows[i] = importRow{row: rowOf(m.PreparedMessage), id: m.FileID}
		if m.Active {
			rows[i].active = 1
		}
		if m.Compacted {
			rows[i].compacted = 1
		}
	}
	var res sessiondb.ImportDecision
	err := b.db.writeTx(ctx, TranscriptWritePatience, fmt.Sprintf("import session %q", p.ID), func(tx *sql.Tx) error {
		var err error
		res, err = importTx(ctx, tx, p, rows, o)
		return importRefused(p.ID, err)
	})
	return res, err
}

func (b sqliteImport) LinkImported(ctx context.Context, links []sessiondb.ImportLink) ([]sessiondb.ImportLink, error) {
	var orphans []sessiondb.ImportLink
	err := b.db.writeTx(ctx, 0, "import: link sessions to parents imported after them", func(tx *sql.Tx) error {
		var err error
		orphans, err = sessiondb.LinkParents(ctx, importLinker{importLookup{tx}, tx}, links)
		return err
	})
	return orphans, err
}

// ImportStoreFault reports an error of SQLite other than a refused row
// (a file the database cannot write is not the session's fault).
func (sqliteImport) ImportStoreFault(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code != sqlite3.ErrConstraint && se.Code != sqlite3.ErrMismatch && se.Code != sqlite3.ErrTooBig
}

// importRefused turns an error by which SQLite refused a row of session id
// (a constraint of the schema, a newer Hermes' trigger, a value too big)
// into one that names the session and what to do; the import reports it
// and goes on. Any other error is returned as it is, for writeTx to retry
// or map.
func importRefused(id string, err error) error {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return err
	}
	why := ""
	switch {
	case se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey:
		return &sessiondb.Error{Code: sessiondb.ECONFLICT, Err: err, Message: fmt.Sprintf(
			"session %q clashes with a row already in the database (SQLite: %v); nothing of it was imported. "+
				"Change the clashing value in the file (or the row in the database) and import the file again: "+
				"the sessions already imported are skipped", id, err)}
	case se.ExtendedCode == sqlite3.ErrConstraintForeignKey:
		why = "it refers to a session or system prompt the database does not hold"
	case se.ExtendedCode == sqlite3.ErrConstraintNotNull:
		why = "a value the database requires is missing"
	case se.Code == sqlite3.ErrConstraint:
		why = "a rule of the database (a check or a trigger, perhaps of a newer Hermes) refused it"
	case se.Code == sqlite3.ErrMismatch:
		why = "a value has a type the database does not accept"
	case se.Code == sqlite3.ErrTooBig:
		why = "a value is larger than SQLite accepts"
	default:
		return err
	}
	return &sessiondb.Error{Code: sessiondb.EINVALID, Err: err, Message: fmt.Sprintf(
		"session %q was not imported: %s (SQLite: %v); nothing of it was written. Fix the session in the file and import the file again: the sessions already imported are skipped", id, why, err)}
}

// importLookup answers an import's questions (sessiondb.ImportLookup)
// through q: the write transaction, or the read pool for a dry run. The
// unique index on titles keeps TitleHolder's answer true in a transaction.
type importLookup struct{ q querier }

func (l importLookup) ImportedSession(ctx context.Context, id string) (exists, parentless bool, err error) {
	err = l.q.QueryRowContext(ctx, "SELECT parent_session_id IS NULL FROM sessions WHERE id = ?", id).Scan(&parentless)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	return err == nil, parentless, err
}

func (l importLookup) InLineage(ctx context.Context, id, anc string) (bool, error) {
	var n int
	err := l.q.QueryRowContext(ctx, `WITH RECURSIVE up(id) AS (
			SELECT ?
			UNION
			SELECT s.parent_session_id FROM sessions s JOIN up ON s.id = up.id WHERE s.parent_session_id IS NOT NULL)
		SELECT COUNT(*) FROM up WHERE id = ?`, id, anc).Scan(&n)
	return n > 0, err
}

func (l importLookup) TitleHolder(ctx context.Context, title, id string) (string, error) {
	var holder string
	err := l.q.QueryRowContext(ctx, "SELECT id FROM sessions WHERE title = ? AND id <> ?", title, id).Scan(&holder)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return holder, err
}

// importLinker is importLookup in a write transaction (sessiondb.ImportLinker).
type importLinker struct {
	importLookup
	tx *sql.Tx
}

func (l importLinker) SetParentIfNone(ctx context.Context, child, parent string) error {
	_, err := l.tx.ExecContext(ctx, "UPDATE sessions SET parent_session_id = ? WHERE id = ? AND parent_session_id IS NULL", parent, child)
	return err
}

// importRow is an imported message as SQLite arguments.
type importRow struct {
	*row
	active, compacted int
	id                int64 // the message's id in the file (0: none), kept when free (sessiondb.ChooseMessageIDs)
}

// importMessageSQL inserts imported messages: their ids, chosen by
// importIDs, and every column an export carries (display_identity and
// display_order are left to the triggers, as on append).
const (
	importMessageSQL = `INSERT INTO messages (id, session_id, role, content, tool_call_id, tool_calls,
	tool_name, effect_disposition, timestamp, token_count, finish_reason, reasoning, reasoning_content,
	reasoning_details, codex_reasoning_items, codex_message_items, platform_message_id, observed,
	_compressed_summary, active, compacted, api_content, display_kind, display_metadata) VALUES `
	importMessageValues = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	importMessageArgs   = 24
	// importInsertRows is how many messages one INSERT carries: 500*24
	// bound values, under SQLite's 32,766. One statement writes one FTS5
	// segment per index, where a statement per message wrote one each.
	importInsertRows = 500
)

// importIDs chooses the id of each message of one session inside the
// import's transaction (sessiondb.ChooseMessageIDs): new ids start above
// every id the database holds or its sqlite_sequence says it ever issued,
// as AUTOINCREMENT would give.
//
// An id at or below sqlite_sequence that no row holds any more (a deleted
// message's) can be taken again. Nothing in the file refers to it: the
// FTS delete trigger removed its index entries, and display_order is set
// from the new row by the insert trigger.
func importIDs(ctx context.Context, tx *sql.Tx, p *sessiondb.ImportPlan) (ids []int64, renumbered int, err error) {
	var next int64
	if err := tx.QueryRowContext(ctx, nextMessageIDSQL).Scan(&next); err != nil {
		return nil, 0, err
	}
	taken, err := takenMessageIDs(ctx, tx, p.FileIDs())
	if err != nil {
		return nil, 0, err
	}
	ids, _, renumbered = sessiondb.ChooseMessageIDs(p.Messages, next, taken)
	return ids, renumbered, nil
}

// takenMessageIDs returns which of the ids a row of the database holds.
func takenMessageIDs(ctx context.Context, tx *sql.Tx, ids []int64) (map[int64]bool, error) {
	taken := map[int64]bool{}
	for start := 0; start < len(ids); start += importInsertRows {
		want := ids[start:min(start+importInsertRows, len(ids))]
		args := make([]any, len(want))
		for i, id := range want {
			args[i] = id
		}
		q := "SELECT id FROM messages WHERE id IN (?" + strings.Repeat(", ?", len(want)-1) + ")"
		rs, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var id int64
			if err := rs.Scan(&id); err != nil {
				rs.Close()
				return nil, err
			}
			taken[id] = true
		}
		if err := rs.Close(); err != nil {
			return nil, err
		}
		if err := rs.Err(); err != nil {
			return nil, err
		}
	}
	return taken, nil
}

// insertImported inserts rows of session sid with the given ids, in one
// statement.
func insertImported(ctx context.Context, tx *sql.Tx, sid string, rows []importRow, ids []int64) error {
	var q strings.Builder
	q.WriteString(importMessageSQL)
	args := make([]any, 0, len(rows)*importMessageArgs)
	for i, r := range rows {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(importMessageValues)
		var content any
		if r.content != nil {
			content = *r.content
		}
		args = append(args, ids[i], sid, r.role, content, r.toolCallID, r.toolCalls,
			r.toolName, r.effect, r.timestamp, r.tokenCount, r.finish, r.reasoning, r.reasoningContent,
			r.reasoningDetails, r.codexReasoning, r.codexMessage, r.platformID, r.observed,
			r.compressed, r.active, r.compacted, r.apiContent, r.displayKind, r.displayMetadata)
	}
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// importTx writes one planned session (its messages as rows) inside the
// caller's transaction. It keeps no state outside it, so writeTx may run
// it again.
func importTx(ctx context.Context, tx *sql.Tx, p *sessiondb.ImportPlan, rows []importRow, o ImportOptions) (sessiondb.ImportDecision, error) {
	res, err := sessiondb.DecideImport(ctx, importLookup{tx}, p, o, nil)
	if err != nil || res.Outcome == sessiondb.ImportSkip {
		return res, err
	}
	names, args, err := p.SessionRow(res, o, func(prompt string) (string, error) { return storePrompt(ctx, tx, prompt) })
	if err != nil {
		return res, err
	}
	replace := res.Outcome == sessiondb.ImportReplace
	if replace {
		// Messages go first, while the row still has its old source and
		// model_config: the FTS delete triggers decide index membership
		// from the session row.
		if _, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE session_id = ?", p.ID); err != nil {
			return res, err
		}
		args = append(args, p.ID)
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET "+strings.Join(names, " = ?, ")+" = ? WHERE id = ?", args...); err != nil {
			return res, err
		}
	} else {
		names = append([]string{"id"}, names...)
		args = append([]any{p.ID}, args...)
		q := "INSERT INTO sessions (" + strings.Join(names, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(names)-1) + ")"
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return res, err
		}
	}
	if len(rows) > 0 {
		ids, renumbered, err := importIDs(ctx, tx, p)
		if err != nil {
			return res, err
		}
		res.Renumbered = renumbered
		for start := 0; start < len(rows); start += importInsertRows {
			end := min(start+importInsertRows, len(rows))
			if err := insertImported(ctx, tx, p.ID, rows[start:end], ids[start:end]); err != nil {
				return res, err
			}
		}
	}
	if replace {
		if err := gcPrompts(ctx, tx); err != nil {
			return res, err
		}
	}
	return res, nil
}
