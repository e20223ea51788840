package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strconv"
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
// after ExportPageSize messages or at the first message that brings it past
// this size, so a session of large messages is read a few at a time.
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

// Hermes' import_sessions limits (STORAGE.md §6). Hermes imports a whole
// payload in one transaction and refuses a payload beyond them; sessiondb
// imports each session in a transaction of its own and imports everything,
// reporting a warning where Hermes would have refused.
const (
	hermesImportMaxSessions           = 500
	hermesImportMaxMessagesPerSession = 10_000
	hermesImportMaxMessages           = 50_000
	hermesImportMaxSessionBytes       = 5 << 20
	hermesImportMaxBytes              = 25 << 20
)

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
func (db *DB) ImportSessions(ctx context.Context, r io.Reader, o ImportOptions) (*ImportReport, error) {
	st := &importState{
		db:   db,
		o:    o,
		seen: map[string]seenSession{},
		rep: &ImportReport{DryRun: o.DryRun, ImportedIDs: []string{}, ReplacedIDs: []string{}, SkippedIDs: []string{},
			Errors: []ImportNote{}, Warnings: []ImportNote{}},
	}
	if err := st.read(ctx, bufio.NewReaderSize(r, 64<<10)); err != nil {
		return st.rep, err
	}
	return st.rep, st.finish(ctx)
}

// inputPos locates an object in the input.
type inputPos struct{ line, item int }

type seenSession struct {
	pos     inputPos
	present bool // the session exists after its import (imported, replaced or skipped)
}

type detachedChild struct {
	pos           inputPos
	child, parent string
	skipped       bool // the child was already there, without a parent
}

type importState struct {
	db       *DB
	o        ImportOptions
	rep      *ImportReport
	seen     map[string]seenSession
	detached []detachedChild

	sessions, messages int
	bytes              int64
}

func (st *importState) note(list *[]ImportNote, pos inputPos, id, msg string) {
	*list = append(*list, ImportNote{Line: pos.line, Item: pos.item, SessionID: id, Message: msg})
}

func (st *importState) fail(pos inputPos, id string, err error) {
	st.rep.Failed++
	st.note(&st.rep.Errors, pos, id, err.Error())
}

// read dispatches on the first non-blank line: "[" starts a JSON array,
// anything else is JSON Lines.
func (st *importState) read(ctx context.Context, br *bufio.Reader) error {
	line := 0
	started := false // a non-blank line was read
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			line++
			text := bytes.TrimSpace(b)
			if line == 1 {
				text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
			}
			if len(text) > 0 && !started && text[0] == '[' {
				rest := bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
				return st.readArray(ctx, io.MultiReader(bytes.NewReader(rest), br), line-1)
			}
			if len(text) > 0 {
				started = true
				if ferr := st.object(ctx, text, inputPos{line: line}); ferr != nil {
					return ferr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("import: read line %d: %w", line+1, err)
		}
	}
}

// readArray imports the elements of a JSON array one at a time. lines is
// how many lines precede r in the input.
func (st *importState) readArray(ctx context.Context, r io.Reader, lines int) error {
	lc := &importLineCounter{r: r, line: lines + 1}
	dec := json.NewDecoder(lc)
	if _, err := dec.Token(); err != nil {
		return sessiondb.Errorf(sessiondb.EINVALID, "import: line %d: %v", lc.lineAt(dec.InputOffset()), err)
	}
	for item := 1; dec.More(); item++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			pos := inputPos{line: lc.lineAt(dec.InputOffset()), item: item}
			st.fail(pos, "", fmt.Errorf("not valid JSON: %v", err))
			return sessiondb.Errorf(sessiondb.EINVALID, "import: line %d: the input is not valid JSON (%v); the objects before it were imported", pos.line, err)
		}
		pos := inputPos{line: lc.lineAt(dec.InputOffset() - int64(len(raw))), item: item}
		if err := st.object(ctx, raw, pos); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return sessiondb.Errorf(sessiondb.EINVALID, "import: line %d: the JSON array does not end properly: %v", lc.lineAt(dec.InputOffset()), err)
	}
	return nil
}

// importLineCounter turns byte offsets of the stream it reads into line numbers.
// It keeps only the offsets of newlines not yet passed, so its memory is
// bounded by the decoder's read-ahead.
type importLineCounter struct {
	r    io.Reader
	off  int64   // bytes read so far
	nl   []int64 // offsets of newlines at or after the last lineAt offset
	line int     // line of the last lineAt offset
}

func (c *importLineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		if b == '\n' {
			c.nl = append(c.nl, c.off+int64(i))
		}
	}
	c.off += int64(n)
	return n, err
}

// lineAt returns the line of byte offset off; offsets must not decrease
// from one call to the next.
func (c *importLineCounter) lineAt(off int64) int {
	for len(c.nl) > 0 && c.nl[0] < off {
		c.nl = c.nl[1:]
		c.line++
	}
	return c.line
}

// importObject is an exported session as read: the row's columns, with the
// fields an import must tell apart from their zero value, and the messages
// (or segments) still as raw JSON so an error can name the message.
type importObject struct {
	sessiondb.Session
	ModelConfig   json.RawMessage   `json:"model_config"`
	StartedAt     *float64          `json:"started_at"`
	MessageCount  *int64            `json:"message_count"`
	ToolCallCount *int64            `json:"tool_call_count"`
	Messages      []json.RawMessage `json:"messages"`
	Segments      []json.RawMessage `json:"segments"`
}

// importFlag is a 0/1 column read from either a JSON boolean (sessiondb) or a
// JSON number (Hermes).
type importFlag bool

func (f *importFlag) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true", "1":
		*f = true
	case "false", "0", "null":
		*f = false
	default:
		return fmt.Errorf("want true, false, 1 or 0, not %s", b)
	}
	return nil
}

// importMessage is an exported message. The exported session_id is
// ignored and the id kept where it is free (importIDs); message_id is
// Hermes' alias of platform_message_id.
type importMessage struct {
	sessiondb.NewMessage
	Content           json.RawMessage `json:"content"`
	Timestamp         *float64        `json:"timestamp"`
	Observed          importFlag      `json:"observed"`
	CompressedSummary importFlag      `json:"_compressed_summary"`
	Active            *importFlag     `json:"active"`
	Compacted         importFlag      `json:"compacted"`
	MessageID         string          `json:"message_id"`
	ID                json.RawMessage `json:"id"`
}

func (st *importState) object(ctx context.Context, raw []byte, pos inputPos) error {
	if err := ctx.Err(); err != nil {
		return &sessiondb.Error{Code: sessiondb.EINTERNAL, Err: err, Message: "import: " + err.Error()}
	}
	st.bytes += int64(len(raw))
	var obj importObject
	if err := json.Unmarshal(raw, &obj); err != nil {
		st.fail(pos, "", fmt.Errorf("not a session object: %v", err))
		return nil
	}
	if len(obj.Segments) == 0 {
		return st.session(ctx, &obj, len(raw), pos)
	}
	for i, sraw := range obj.Segments {
		var seg importObject
		if err := json.Unmarshal(sraw, &seg); err != nil {
			st.fail(pos, obj.ID, fmt.Errorf("segment %d: not a session object: %v", i+1, err))
			continue
		}
		if err := st.session(ctx, &seg, len(sraw), pos); err != nil {
			return err
		}
	}
	return nil
}

// session imports one session object and records the outcome.
func (st *importState) session(ctx context.Context, obj *importObject, size int, pos inputPos) error {
	st.sessions++
	p, err := st.db.planImport(obj)
	if err != nil {
		st.fail(pos, obj.ID, err)
		return nil
	}
	if prev, dup := st.seen[p.id]; dup {
		st.fail(pos, p.id, sessiondb.Errorf(sessiondb.EINVALID, "session %q appears again (first at line %d); only the first is imported", p.id, prev.pos.line))
		return nil
	}
	st.seen[p.id] = seenSession{pos: pos}
	st.messages += len(p.rows)
	for _, w := range p.warnings {
		st.note(&st.rep.Warnings, pos, p.id, w)
	}
	if n := len(p.rows); n > hermesImportMaxMessagesPerSession {
		st.note(&st.rep.Warnings, pos, p.id, fmt.Sprintf("%d messages: Hermes' import_sessions refuses more than %d per session", n, hermesImportMaxMessagesPerSession))
	}
	if size > hermesImportMaxSessionBytes {
		st.note(&st.rep.Warnings, pos, p.id, fmt.Sprintf("%.1f MiB: Hermes' import_sessions refuses more than %d MiB per session", float64(size)/(1<<20), hermesImportMaxSessionBytes>>20))
	}

	var res importResult
	if st.o.DryRun {
		res, err = decideImport(ctx, st.db.read, p, st.o, func(id string) bool { return st.seen[id].present })
	} else {
		err = st.db.writeTx(ctx, TranscriptWritePatience, fmt.Sprintf("import session %q", p.id), func(tx *sql.Tx) error {
			var err error
			res, err = importTx(ctx, tx, p, st.o)
			return importRefused(p.id, err)
		})
	}
	if err != nil {
		if objectError(err) {
			st.fail(pos, p.id, err)
			return nil
		}
		return err
	}
	st.seen[p.id] = seenSession{pos: pos, present: true}
	switch res.outcome {
	case outcomeSkipped:
		st.rep.Skipped++
		st.rep.SkippedIDs = append(st.rep.SkippedIDs, p.id)
		if res.detachedFrom != "" {
			st.detached = append(st.detached, detachedChild{pos: pos, child: p.id, parent: res.detachedFrom, skipped: true})
		}
		return nil
	case outcomeReplaced:
		st.rep.Replaced++
		st.rep.ReplacedIDs = append(st.rep.ReplacedIDs, p.id)
	default:
		st.rep.Imported++
		st.rep.ImportedIDs = append(st.rep.ImportedIDs, p.id)
	}
	st.rep.Messages += len(p.rows)
	if res.renumbered > 0 {
		st.rep.Renumbered += res.renumbered
		st.note(&st.rep.Warnings, pos, p.id, fmt.Sprintf("%d of %d messages got new ids: other messages of the database hold theirs (the session's messages keep their order)", res.renumbered, len(p.rows)))
	}
	if res.detachedFrom != "" {
		st.detached = append(st.detached, detachedChild{pos: pos, child: p.id, parent: res.detachedFrom})
	}
	return nil
}

// finish links children to parents that came later in the input (and
// skipped sessions that lack the parent the input gives them), reports the
// imported children left without a parent, and warns where Hermes' limits for
// a whole import are exceeded.
func (st *importState) finish(ctx context.Context) error {
	var orphans []detachedChild
	if st.o.DryRun {
		for _, d := range st.detached {
			if !st.seen[d.parent].present {
				orphans = append(orphans, d)
			}
		}
	} else if len(st.detached) > 0 {
		err := st.db.writeTx(ctx, 0, "import: link sessions to parents imported after them", func(tx *sql.Tx) error {
			orphans = orphans[:0]
			for _, d := range st.detached {
				ok, err := parentAcceptable(ctx, tx, d.child, d.parent)
				if err != nil {
					return err
				}
				if !ok {
					orphans = append(orphans, d)
					continue
				}
				if _, err := tx.ExecContext(ctx, "UPDATE sessions SET parent_session_id = ? WHERE id = ? AND parent_session_id IS NULL", d.parent, d.child); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, d := range orphans {
		if d.skipped {
			continue // left as it was
		}
		st.rep.Detached++
		st.note(&st.rep.Warnings, d.pos, d.child, fmt.Sprintf("parent session %q is neither in the database nor in the input: imported without a parent", d.parent))
	}
	whole := inputPos{}
	if st.sessions > hermesImportMaxSessions {
		st.note(&st.rep.Warnings, whole, "", fmt.Sprintf("%d sessions: Hermes' import_sessions refuses more than %d in one import", st.sessions, hermesImportMaxSessions))
	}
	if st.messages > hermesImportMaxMessages {
		st.note(&st.rep.Warnings, whole, "", fmt.Sprintf("%d messages: Hermes' import_sessions refuses more than %d in one import", st.messages, hermesImportMaxMessages))
	}
	if st.bytes > hermesImportMaxBytes {
		st.note(&st.rep.Warnings, whole, "", fmt.Sprintf("%.1f MiB: Hermes' import_sessions refuses more than %d MiB in one import", float64(st.bytes)/(1<<20), hermesImportMaxBytes>>20))
	}
	return nil
}

// importPlan is a session checked and encoded for writing.
type importPlan struct {
	id          string
	s           *sessiondb.Session
	modelConfig any // NULL or JSON object text
	startedAt   float64
	parent      string
	rows        []importRow
	active      int // active messages: the new message_count
	calls       int // their tool calls: the new tool_call_count
	warnings    []string
}

type importRow struct {
	*row
	active, compacted int
	id                int64 // the message's id in the file (0: none), kept when free (see importIDs)
}

// planImport checks an object and encodes its messages with the append
// path's encoder (prepare), keeping what an import must not change: the
// timestamps and the active and compacted flags.
func (db *DB) planImport(obj *importObject) (*importPlan, error) {
	if strings.TrimSpace(obj.ID) == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "session id is required")
	}
	s := obj.Session
	p := &importPlan{id: sessiondb.ScrubText(obj.ID), s: &s}
	if s.Source == "" {
		s.Source = "import"
		p.warnings = append(p.warnings, `no source: imported with source "import"`)
	}
	if obj.StartedAt != nil {
		p.startedAt = *obj.StartedAt
	} else {
		p.startedAt = unixSeconds(db.now())
		p.warnings = append(p.warnings, "no started_at: the import time was used")
	}
	mc, err := importModelConfig(obj.ModelConfig)
	if err != nil {
		return nil, err
	}
	p.modelConfig = mc
	if s.ParentSessionID != nil {
		p.parent = sessiondb.ScrubText(*s.ParentSessionID)
	}
	if s.SystemPromptHash != nil && (s.SystemPrompt == nil || *s.SystemPrompt == "") {
		p.warnings = append(p.warnings, "system_prompt_hash without system_prompt: the prompt is not in the file, so the session is imported without one")
	}

	p.rows = make([]importRow, 0, len(obj.Messages))
	untimed := 0
	for i, raw := range obj.Messages {
		var im importMessage
		if err := json.Unmarshal(raw, &im); err != nil {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "message %d: %v", i+1, err)
		}
		obj.Messages[i] = nil // the raw copy can go while the rest is encoded
		nm := im.NewMessage
		nm.SessionID = p.id
		nm.Content = importContent(im.Content)
		nm.Observed = bool(im.Observed)
		nm.CompressedSummary = bool(im.CompressedSummary)
		if nm.PlatformMessageID == "" {
			nm.PlatformMessageID = im.MessageID
		}
		r, err := db.prepare(nm, true)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i+1, err)
		}
		if im.Timestamp != nil {
			r.timestamp = *im.Timestamp
		} else {
			untimed++
		}
		ir := importRow{row: r, active: 1, id: importMessageID(im.ID)}
		if im.Active != nil && !*im.Active {
			ir.active = 0
		}
		if im.Compacted {
			ir.compacted = 1
		}
		if ir.active == 1 {
			p.active++
			p.calls += r.countedCalls()
		}
		p.rows = append(p.rows, ir)
	}
	if untimed > 0 {
		p.warnings = append(p.warnings, fmt.Sprintf("%d messages without a timestamp: the import time was used", untimed))
	}
	if obj.MessageCount != nil && *obj.MessageCount != int64(p.active) {
		p.warnings = append(p.warnings, fmt.Sprintf("message_count is %d in the file but %d active messages were imported; message_count is %d", *obj.MessageCount, p.active, p.active))
	}
	if obj.ToolCallCount != nil && *obj.ToolCallCount != int64(p.calls) {
		p.warnings = append(p.warnings, fmt.Sprintf("tool_call_count is %d in the file but the imported messages hold %d tool calls; tool_call_count is %d", *obj.ToolCallCount, p.calls, p.calls))
	}
	return p, nil
}

// importMessageID reads a message id from the file: a positive integer,
// or 0 for anything else (null, absent, a string, a fraction), which gets
// a new id like a message without one.
func importMessageID(raw json.RawMessage) int64 {
	id, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil || id < 0 {
		return 0
	}
	return id
}

// importContent turns exported content into what EncodeContent takes: a
// JSON string as text, null as no content, anything else as raw JSON
// (stored behind the structured-content prefix, bytes unchanged).
func importContent(raw json.RawMessage) any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return raw
}

// importModelConfig accepts model_config as Hermes exports it (JSON text
// in a string) or as a JSON object, and returns the text to store.
func importModelConfig(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	text := []byte(raw)
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "model_config: %v", err)
		}
		if s == "" {
			return s, nil
		}
		if sessiondb.TooDeep(s) {
			return sessiondb.ScrubText(s), nil // restored as exported: a value nested too deep to read
		}
		text = []byte(s)
	}
	var obj map[string]any
	if err := json.Unmarshal(text, &obj); err != nil || obj == nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "model_config must be a JSON object")
	}
	return sessiondb.ScrubText(string(text)), nil
}

type importOutcome int

const (
	outcomeImported importOutcome = iota
	outcomeReplaced
	outcomeSkipped
)

type importResult struct {
	outcome      importOutcome
	detachedFrom string // the parent dropped because it does not exist (yet)
	renumbered   int    // messages whose id from the file was taken (see importIDs)
}

// decideImport works out what importing p does, reading through q: skip,
// insert or replace, and whether the parent is kept. A title held by
// another session is an ECONFLICT error. known reports parents that a dry
// run would have imported earlier.
func decideImport(ctx context.Context, q querier, p *importPlan, o ImportOptions, known func(string) bool) (importResult, error) {
	var res importResult
	exists, err := sessionExists(ctx, q, p.id)
	if err != nil {
		return res, err
	}
	switch {
	case exists && !o.Replace:
		res.outcome = outcomeSkipped
		// An earlier import may have had to leave the session without
		// its parent (the parent came later in a file whose import
		// stopped before the end, or was missing from it): link it now,
		// in finish, if the parent turns up. A parent the row has is
		// never changed.
		if p.parent != "" {
			var parentless bool
			if err := q.QueryRowContext(ctx, "SELECT parent_session_id IS NULL FROM sessions WHERE id = ?", p.id).Scan(&parentless); err != nil {
				return res, err
			}
			if parentless {
				res.detachedFrom = p.parent
			}
		}
		return res, nil
	case exists:
		res.outcome = outcomeReplaced
	}
	if p.parent != "" {
		ok, err := parentAcceptable(ctx, q, p.id, p.parent)
		if err != nil {
			return res, err
		}
		if !ok && !(known != nil && p.parent != p.id && known(p.parent)) {
			res.detachedFrom = p.parent
		}
	}
	if p.s.Title != nil {
		var holder string
		err := q.QueryRowContext(ctx, "SELECT id FROM sessions WHERE title = ? AND id <> ?", sessiondb.ScrubText(*p.s.Title), p.id).Scan(&holder)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return res, err
		default:
			return res, sessiondb.Errorf(sessiondb.ECONFLICT, "title %q is already used by session %s; rename one of them and import again", *p.s.Title, holder)
		}
	}
	return res, nil
}

// objectError reports whether err concerns the session being imported
// (bad or clashing data) rather than the database, so the import can go on
// with the next session.
func objectError(err error) bool {
	var de *sessiondb.Error
	if !errors.As(err, &de) {
		return false
	}
	switch de.Code {
	case sessiondb.EINVALID, sessiondb.ECONFLICT, sessiondb.ENOTFOUND:
		// A file the database cannot write is not the session's fault.
		var se sqlite3.Error
		return !errors.As(err, &se) || se.Code == sqlite3.ErrConstraint || se.Code == sqlite3.ErrMismatch || se.Code == sqlite3.ErrTooBig
	}
	return false
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

func sessionExists(ctx context.Context, q querier, id string) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, "SELECT 1 FROM sessions WHERE id = ?", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// parentAcceptable reports whether child may point at parent: the parent
// exists and child is not among its ancestors (no cycle).
func parentAcceptable(ctx context.Context, q querier, child, parent string) (bool, error) {
	if parent == child {
		return false, nil
	}
	if ok, err := sessionExists(ctx, q, parent); !ok || err != nil {
		return false, err
	}
	var n int
	err := q.QueryRowContext(ctx, `WITH RECURSIVE up(id) AS (
			SELECT ?
			UNION
			SELECT s.parent_session_id FROM sessions s JOIN up ON s.id = up.id WHERE s.parent_session_id IS NOT NULL)
		SELECT COUNT(*) FROM up WHERE id = ?`, parent, child).Scan(&n)
	return n == 0, err
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

// maxKeptMessageID bounds the message ids an import keeps. Beyond 2^53 a
// JSON number is not exact for many readers (JavaScript, Python's float);
// and an id near the top of the int64 range would leave AUTOINCREMENT no
// room: once it has issued the largest rowid, SQLite refuses every later
// insert with SQLITE_FULL.
const maxKeptMessageID = 1<<53 - 1

// importIDs chooses the id of each message of one session, in file order,
// inside the import's transaction. A message keeps its id from the file
// when no row of the database holds it and it is above the id given to
// the message before it (a session's messages are read in id order, so
// their order must not change). Every other message, and one without an
// id, gets the next new id: above every id the database holds or its
// sqlite_sequence says it ever issued, as AUTOINCREMENT would give. So a
// complete export imported into an empty database keeps every id, however
// the sessions' messages interleave, and into a database that holds some
// of the ids a session keeps the ids that are free until its first clash
// and is numbered on from the top after it.
//
// Sessions are imported one at a time, so a new id may be one that a
// later session of the file holds; that message then gets a new id in
// turn. Into an empty database no id is ever new.
//
// An id at or below sqlite_sequence that no row holds any more (a deleted
// message's) can be taken again. Nothing in the file refers to it: the
// FTS delete trigger removed its index entries, and display_order is set
// from the new row by the insert trigger. renumbered counts the messages
// whose id from the file was not kept.
func importIDs(ctx context.Context, tx *sql.Tx, rows []importRow) (ids []int64, renumbered int, err error) {
	var next int64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(
			COALESCE((SELECT MAX(id) FROM messages), 0),
			COALESCE((SELECT MAX(seq) FROM sqlite_sequence WHERE name = 'messages'), 0)) + 1`).Scan(&next); err != nil {
		return nil, 0, err
	}
	taken, err := takenMessageIDs(ctx, tx, rows)
	if err != nil {
		return nil, 0, err
	}
	ids = make([]int64, len(rows))
	var prev int64
	for i, r := range rows {
		id := r.id
		if id <= prev || id > maxKeptMessageID || taken[id] {
			if id != 0 {
				renumbered++
			}
			id = next
		}
		next = max(next, id+1)
		ids[i], prev = id, id
	}
	return ids, renumbered, nil
}

// takenMessageIDs returns which of the rows' ids from the file a row of
// the database holds.
func takenMessageIDs(ctx context.Context, tx *sql.Tx, rows []importRow) (map[int64]bool, error) {
	taken := map[int64]bool{}
	var want []any
	flush := func() error {
		if len(want) == 0 {
			return nil
		}
		q := "SELECT id FROM messages WHERE id IN (?" + strings.Repeat(", ?", len(want)-1) + ")"
		rs, err := tx.QueryContext(ctx, q, want...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var id int64
			if err := rs.Scan(&id); err != nil {
				return err
			}
			taken[id] = true
		}
		want = want[:0]
		return rs.Err()
	}
	for _, r := range rows {
		if r.id > 0 && r.id <= maxKeptMessageID {
			want = append(want, r.id)
		}
		if len(want) == importInsertRows {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	return taken, flush()
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

// importTx writes one planned session inside the caller's transaction. It
// keeps no state outside it, so writeTx may run it again.
func importTx(ctx context.Context, tx *sql.Tx, p *importPlan, o ImportOptions) (importResult, error) {
	res, err := decideImport(ctx, tx, p, o, nil)
	if err != nil || res.outcome == outcomeSkipped {
		return res, err
	}
	var hash any
	if p.s.SystemPrompt != nil && *p.s.SystemPrompt != "" {
		h, err := storePrompt(ctx, tx, *p.s.SystemPrompt)
		if err != nil {
			return res, err
		}
		hash = h
	}
	var parent any
	if p.parent != "" && res.detachedFrom == "" {
		parent = p.parent
	}
	cols := p.columns(hash, parent)
	if res.outcome == outcomeReplaced {
		// Messages go first, while the row still has its old source and
		// model_config: the FTS delete triggers decide index membership
		// from the session row.
		if _, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE session_id = ?", p.id); err != nil {
			return res, err
		}
		var set []string
		var args []any
		for _, c := range cols {
			if c.runtime && !o.KeepRuntimeState {
				continue // a replaced session keeps its own runtime state
			}
			set = append(set, c.name+" = ?")
			args = append(args, c.val)
		}
		args = append(args, p.id)
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET "+strings.Join(set, ", ")+" WHERE id = ?", args...); err != nil {
			return res, err
		}
	} else {
		names := []string{"id"}
		args := []any{p.id}
		for _, c := range cols {
			names = append(names, c.name)
			if c.runtime && !o.KeepRuntimeState {
				args = append(args, c.reset)
			} else {
				args = append(args, c.val)
			}
		}
		q := "INSERT INTO sessions (" + strings.Join(names, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(names)-1) + ")"
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return res, err
		}
	}
	if len(p.rows) > 0 {
		ids, renumbered, err := importIDs(ctx, tx, p.rows)
		if err != nil {
			return res, err
		}
		res.renumbered = renumbered
		for start := 0; start < len(p.rows); start += importInsertRows {
			end := min(start+importInsertRows, len(p.rows))
			if err := insertImported(ctx, tx, p.id, p.rows[start:end], ids[start:end]); err != nil {
				return res, err
			}
		}
	}
	if res.outcome == outcomeReplaced {
		if err := gcPrompts(ctx, tx); err != nil {
			return res, err
		}
	}
	return res, nil
}

// importColumn is one sessions column an import writes. Runtime columns
// hold live state (routing, activity, handoff, back-off, caches); reset is
// what a new session gets instead unless KeepRuntimeState is set.
type importColumn struct {
	name    string
	val     any
	runtime bool
	reset   any
}

// columns lists every sessions column an import writes, id aside. The
// legacy inline system_prompt is always NULL: the prompt is stored by hash.
func (p *importPlan) columns(hash, parent any) []importColumn {
	s := p.s
	c := func(name string, v any) importColumn { return importColumn{name: name, val: v} }
	rt := func(name string, v, reset any) importColumn {
		return importColumn{name: name, val: v, runtime: true, reset: reset}
	}
	return []importColumn{
		c("source", sessiondb.ScrubText(s.Source)),
		c("created_source", importText(s.CreatedSource)),
		c("user_id", importText(s.UserID)),
		rt("session_key", importText(s.SessionKey), nil),
		rt("chat_id", importText(s.ChatID), nil),
		rt("chat_type", importText(s.ChatType), nil),
		rt("thread_id", importText(s.ThreadID), nil),
		c("display_name", importText(s.DisplayName)),
		rt("origin_json", importText(s.OriginJSON), nil),
		c("expiry_finalized", importValue(s.ExpiryFinalized)),
		c("model", importText(s.Model)),
		c("model_config", p.modelConfig),
		c("system_prompt", nil),
		c("system_prompt_hash", hash),
		c("parent_session_id", parent),
		c("started_at", p.startedAt),
		c("ended_at", importValue(s.EndedAt)),
		c("end_reason", importText(s.EndReason)),
		c("message_count", p.active),
		c("tool_call_count", p.calls),
		c("api_call_count", s.APICallCount),
		c("input_tokens", s.InputTokens),
		c("output_tokens", s.OutputTokens),
		c("cache_read_tokens", s.CacheReadTokens),
		c("cache_write_tokens", s.CacheWriteTokens),
		c("reasoning_tokens", s.ReasoningTokens),
		c("billing_provider", importText(s.BillingProvider)),
		c("billing_base_url", importText(s.BillingBaseURL)),
		c("billing_mode", importText(s.BillingMode)),
		c("estimated_cost_usd", importValue(s.EstimatedCostUSD)),
		c("actual_cost_usd", importValue(s.ActualCostUSD)),
		c("cost_status", importText(s.CostStatus)),
		c("cost_source", importText(s.CostSource)),
		c("pricing_version", importText(s.PricingVersion)),
		c("cwd", importText(s.Cwd)),
		c("git_branch", importText(s.GitBranch)),
		c("git_repo_root", importText(s.GitRepoRoot)),
		c("git_metadata_generation", s.GitMetadataGeneration),
		c("title", importText(s.Title)),
		c("title_source", importText(s.TitleSource)),
		rt("last_activity_at", importValue(s.LastActivityAt), nil),
		rt("last_activity_description", importText(s.LastActivityDescription), nil),
		rt("last_activity_provenance", importText(s.LastActivityProvenance), nil),
		rt("handoff_state", importText(s.HandoffState), nil),
		rt("handoff_platform", importText(s.HandoffPlatform), nil),
		rt("handoff_error", importText(s.HandoffError), nil),
		rt("compression_failure_cooldown_until", importValue(s.CompressionFailureCooldownUntil), nil),
		rt("compression_failure_error", importText(s.CompressionFailureError), nil),
		rt("compression_fallback_streak", s.CompressionFallbackStreak, 0),
		rt("compression_ineffective_count", s.CompressionIneffectiveCount, 0),
		rt("compression_recovery_deadline", importValue(s.CompressionRecoveryDeadline), nil),
		rt("compression_overload_streak", s.CompressionOverloadStreak, 0),
		c("profile_name", importText(s.ProfileName)),
		c("transport_profile", importText(s.TransportProfile)),
		rt("rewind_count", s.RewindCount, 0),
		c("archived", s.Archived),
		c("auto_archived", s.AutoArchived),
		c("pinned", s.Pinned),
		c("hidden", s.Hidden),
		c("last_read_at", importValue(s.LastReadAt)),
		rt("tool_names", importText(s.ToolNames), nil),
	}
}

// importText binds a nullable text column as valid UTF-8; "" stays "".
func importText(p *string) any {
	if p == nil {
		return nil
	}
	return sessiondb.ScrubText(*p)
}

// importValue binds a nullable column.
func importValue[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
