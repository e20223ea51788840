package sessiondb

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// This file is the part of an import every backend shares (Importer):
// reading the exported stream (JSON Lines or a JSON array) with the line
// and item of each object, decoding and checking each session
// (ImportPlan), deciding what to do with it (DecideImport), and keeping
// the report. A backend supplies the transactions and the SQL
// (ImportBackend).

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

// ImportBackend is what RunImport asks of a store. Each method is one
// transaction of the store's (retried as its writes are), except
// ImportLookup, which reads the store as it is, for a dry run.
type ImportBackend interface {
	// ImportLookup answers a dry run's questions outside any transaction.
	ImportLookup() ImportLookup
	// WriteImport decides with DecideImport (known: nil) and writes p in
	// one transaction: all of the session or nothing. It keeps no state
	// outside the transaction, so a retry never writes twice. An error
	// for which the store refused the session's rows is returned as a
	// *Error naming the session and what to do (EINVALID or ECONFLICT,
	// ImportStoreFault false).
	WriteImport(ctx context.Context, p *ImportPlan, o ImportOptions) (ImportDecision, error)
	// LinkImported links children to parents imported after them, in one
	// transaction, with LinkParents, and returns the links it could not make.
	LinkImported(ctx context.Context, links []ImportLink) ([]ImportLink, error)
	// ImportStoreFault reports whether err, whose code (EINVALID,
	// ECONFLICT, ENOTFOUND) blames the session being imported, was in
	// fact caused by the store (a file it cannot write, say): the import
	// then stops instead of reporting the session and going on.
	ImportStoreFault(err error) bool
}

// importObjectError reports whether err concerns the session being
// imported (bad or clashing data: the import reports it and goes on)
// rather than the store (the import stops).
func importObjectError(b ImportBackend, err error) bool {
	switch ErrorCode(err) {
	case EINVALID, ECONFLICT, ENOTFOUND:
		return !b.ImportStoreFault(err)
	}
	return false
}

// ImportLookup is what DecideImport and LinkParents read of a store: in a
// backend's transaction, or for a dry run outside one.
type ImportLookup interface {
	// ImportedSession reports whether session id exists and, if it does,
	// whether it has no parent.
	ImportedSession(ctx context.Context, id string) (exists, parentless bool, err error)
	// InLineage reports whether anc is id or one of its ancestors
	// (following parent_session_id).
	InLineage(ctx context.Context, id, anc string) (bool, error)
	// TitleHolder returns the id of a session other than id whose title is
	// title, or "". Inside a transaction it keeps the answer true until
	// the transaction ends (a lock on the title where no index does).
	TitleHolder(ctx context.Context, title, id string) (string, error)
}

// ImportLinker is an ImportLookup inside a write transaction that can also
// give a session its parent.
type ImportLinker interface {
	ImportLookup
	// SetParentIfNone sets child's parent where it has none.
	SetParentIfNone(ctx context.Context, child, parent string) error
}

// ImportLink is a session imported without the parent the input gives it,
// to link once the parent is there.
type ImportLink struct {
	Child, Parent string

	pos     inputPos
	skipped bool   // the child was already there, without a parent
	why     string // why the parent was dropped (parentProblem), once known
}

// ImportOutcome is what an import does with one session.
type ImportOutcome int

// Outcomes of DecideImport.
const (
	ImportInsert  ImportOutcome = iota // the session is new
	ImportReplace                      // it exists and ImportOptions.Replace overwrites it
	ImportSkip                         // it exists and is left alone
)

// ImportDecision is what importing one session does (DecideImport), and
// what writing it did.
type ImportDecision struct {
	Outcome ImportOutcome
	// DetachedFrom is the parent dropped because it does not exist (yet),
	// or would make a cycle.
	DetachedFrom string
	why          string // parentProblem's answer, when it was asked
	// Renumbered counts the messages written with a new id, theirs being
	// taken (ChooseMessageIDs); set by WriteImport.
	Renumbered int
}

// ImportPlan is one session of an import, checked and encoded for
// writing. Text is scrubbed to valid UTF-8; a backend escapes what its
// column types cannot hold.
type ImportPlan struct {
	ID      string
	Session *Session // the row as read; SessionRow gives the columns to write
	// ModelConfig is the JSON object text to store, or nil for NULL.
	ModelConfig *string
	StartedAt   float64
	Parent      string // the parent the input gives, "" for none
	Messages    []ImportedMessage
	Active      int // active messages: the new message_count
	Calls       int // their tool calls: the new tool_call_count
	warnings    []string
}

// ImportedMessage is one message of an ImportPlan: prepared as an append
// prepares it, with what an import must not change (the timestamp, the
// active and compacted flags) and the id the file gives it.
type ImportedMessage struct {
	*PreparedMessage
	Active, Compacted bool
	FileID            int64 // 0: none (ChooseMessageIDs)
}

// RunImport reads sessions exported by an Exporter (or by Hermes'
// export_session, export_session_lineage or export_all) from r and writes
// them through b, one session per transaction; prep holds the store's
// message limits and clock. It is the body of every backend's
// ImportSessions (Importer), so they read, check, decide and report alike:
// JSON Lines or a JSON array; a lineage object's segments imported one by
// one; existing sessions skipped or replaced (ImportOptions); titles kept
// unique; a parent that comes later in the input linked at the end, one
// found nowhere dropped with a warning; messages' ids kept where free
// (ChooseMessageIDs); message_count and tool_call_count recomputed; an
// object that cannot be imported reported with its line and the rest
// imported. An error that concerns the store rather than an object stops
// the import: the report so far is returned with it, and running the
// import again finishes it (the sessions already there are skipped).
func RunImport(ctx context.Context, r io.Reader, o ImportOptions, prep PrepareOptions, b ImportBackend) (*ImportReport, error) {
	prep.Imported = true
	if prep.Now == nil {
		prep.Now = time.Now
	}
	st := &importState{
		b:       b,
		o:       o,
		prep:    prep,
		seen:    map[string]seenSession{},
		titles:  map[string]string{},
		parents: map[string]string{},
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

type importState struct {
	b        ImportBackend
	o        ImportOptions
	prep     PrepareOptions
	rep      *ImportReport
	seen     map[string]seenSession
	detached []ImportLink
	// titles a dry run's earlier sessions would have written, by holder:
	// the real import's title check sees them in the store.
	titles map[string]string
	// parents a dry run's sessions would have once written ("": none),
	// for the cycle check of the links finish would make.
	parents map[string]string

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
	lc := &lineCounter{r: r, line: lines + 1}
	dec := json.NewDecoder(lc)
	if _, err := dec.Token(); err != nil {
		if rerr := lc.readErr(); rerr != nil {
			return rerr
		}
		return Errorf(EINVALID, "import: line %d: %v", lc.lineAt(dec.InputOffset()), err)
	}
	for item := 1; dec.More(); item++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if rerr := lc.readErr(); rerr != nil {
				return rerr
			}
			pos := inputPos{line: lc.lineAt(errorOffset(dec, err)), item: item}
			st.fail(pos, "", fmt.Errorf("not valid JSON: %v", err))
			return Errorf(EINVALID, "import: line %d: the input is not valid JSON (%v); the objects before it were imported", pos.line, err)
		}
		pos := inputPos{line: lc.lineAt(dec.InputOffset() - int64(len(raw))), item: item}
		if err := st.object(ctx, raw, pos); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		if rerr := lc.readErr(); rerr != nil {
			return rerr
		}
		return Errorf(EINVALID, "import: line %d: the JSON array does not end properly: %v", lc.lineAt(dec.InputOffset()), err)
	}
	// Anything but blank space after the array is refused rather than
	// left unread without a word: sessions there would be lost.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Errorf(EINVALID, "import: line %d: the input goes on after the JSON array ends; the array's sessions were imported, nothing after it", lc.lineAt(errorOffset(dec, err)))
	}
	return nil
}

// errorOffset is the offset in the input of err, returned by dec. A
// syntax error's own Offset counts only the bytes dec scanned as values,
// not the commas and blank space between them, so it is found again in
// what dec holds unread, which starts at dec.InputOffset(); any other
// error (the input ends early) is placed after the last value read.
func errorOffset(dec *json.Decoder, err error) int64 {
	off := dec.InputOffset()
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return off
	}
	if err := json.NewDecoder(dec.Buffered()).Decode(new(json.RawMessage)); errors.As(err, &se) {
		return off + se.Offset - 1
	}
	return off
}

// lineCounter turns byte offsets of the stream it reads into line numbers.
// It keeps only the offsets of newlines not yet passed, so its memory is
// bounded by the decoder's read-ahead.
type lineCounter struct {
	r    io.Reader
	off  int64   // bytes read so far
	nl   []int64 // offsets of newlines at or after the last lineAt offset
	line int     // line of the last lineAt offset
	err  error   // the input's read error (not io.EOF), once it failed
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		if b == '\n' {
			c.nl = append(c.nl, c.off+int64(i))
		}
	}
	c.off += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// readErr is the input's read error, placed as JSON Lines places it (the
// line reading had reached), or nil while the input reads.
func (c *lineCounter) readErr() error {
	if c.err == nil {
		return nil
	}
	return fmt.Errorf("import: read line %d: %w", c.lineAt(c.off), c.err)
}

// lineAt returns the line of byte offset off; offsets must not decrease
// from one call to the next.
func (c *lineCounter) lineAt(off int64) int {
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
	Session
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
// ignored and the id kept where it is free (ChooseMessageIDs); message_id
// is Hermes' alias of platform_message_id.
type importMessage struct {
	NewMessage
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
		return &Error{Code: EINTERNAL, Err: err, Message: "import: " + err.Error()}
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
	p, err := planImport(obj, st.prep)
	if err != nil {
		st.fail(pos, obj.ID, err)
		return nil
	}
	if prev, dup := st.seen[p.ID]; dup {
		st.fail(pos, p.ID, Errorf(EINVALID, "session %q appears again (first at line %d); only the first is imported", p.ID, prev.pos.line))
		return nil
	}
	st.seen[p.ID] = seenSession{pos: pos}
	st.messages += len(p.Messages)
	for _, w := range p.warnings {
		st.note(&st.rep.Warnings, pos, p.ID, w)
	}
	if n := len(p.Messages); n > hermesImportMaxMessagesPerSession {
		st.note(&st.rep.Warnings, pos, p.ID, fmt.Sprintf("%d messages: Hermes' import_sessions refuses more than %d per session", n, hermesImportMaxMessagesPerSession))
	}
	if size > hermesImportMaxSessionBytes {
		st.note(&st.rep.Warnings, pos, p.ID, fmt.Sprintf("%.1f MiB: Hermes' import_sessions refuses more than %d MiB per session", float64(size)/(1<<20), hermesImportMaxSessionBytes>>20))
	}

	var res ImportDecision
	if st.o.DryRun {
		res, err = DecideImport(ctx, st.b.ImportLookup(), p, st.o, func(id string) bool { return st.seen[id].present })
		if err == nil && res.Outcome != ImportSkip && p.Session.Title != nil {
			title := ScrubText(*p.Session.Title)
			if holder, ok := st.titles[title]; ok && holder != p.ID {
				err = titleTaken(*p.Session.Title, holder)
			} else {
				st.titles[title] = p.ID
			}
		}
	} else {
		res, err = st.b.WriteImport(ctx, p, st.o)
	}
	if err != nil {
		if importObjectError(st.b, err) {
			st.fail(pos, p.ID, err)
			return nil
		}
		return err
	}
	st.seen[p.ID] = seenSession{pos: pos, present: true}
	switch res.Outcome {
	case ImportSkip:
		st.rep.Skipped++
		st.rep.SkippedIDs = append(st.rep.SkippedIDs, p.ID)
		if res.DetachedFrom != "" {
			st.detached = append(st.detached, ImportLink{pos: pos, Child: p.ID, Parent: res.DetachedFrom, skipped: true, why: res.why})
		}
		return nil
	case ImportReplace:
		st.rep.Replaced++
		st.rep.ReplacedIDs = append(st.rep.ReplacedIDs, p.ID)
	default:
		st.rep.Imported++
		st.rep.ImportedIDs = append(st.rep.ImportedIDs, p.ID)
	}
	if st.o.DryRun {
		st.parents[p.ID] = p.Parent
		if res.DetachedFrom != "" {
			st.parents[p.ID] = ""
		}
	}
	st.rep.Messages += len(p.Messages)
	if res.Renumbered > 0 {
		st.rep.Renumbered += res.Renumbered
		st.note(&st.rep.Warnings, pos, p.ID, fmt.Sprintf("%d of %d messages got new ids: other messages of the database hold theirs (the session's messages keep their order)", res.Renumbered, len(p.Messages)))
	}
	if res.DetachedFrom != "" {
		st.detached = append(st.detached, ImportLink{pos: pos, Child: p.ID, Parent: res.DetachedFrom, why: res.why})
	}
	return nil
}

// finish links children to parents that came later in the input (and
// skipped sessions that lack the parent the input gives them), reports the
// imported children left without a parent, and warns where Hermes' limits
// for a whole import are exceeded.
func (st *importState) finish(ctx context.Context) error {
	var orphans []ImportLink
	if st.o.DryRun {
		for _, d := range st.detached {
			// A session is never its own parent (LinkParents refuses it).
			if d.Parent == d.Child || !st.seen[d.Parent].present {
				orphans = append(orphans, d)
				continue
			}
			cycle, err := st.dryCycle(ctx, d.Child, d.Parent)
			if err != nil {
				return err
			}
			if cycle {
				d.why = parentCycle
				orphans = append(orphans, d)
				continue
			}
			st.parents[d.Child] = d.Parent
		}
	} else if len(st.detached) > 0 {
		var err error
		if orphans, err = st.b.LinkImported(ctx, st.detached); err != nil {
			return err
		}
	}
	for _, d := range orphans {
		if d.skipped {
			continue // left as it was
		}
		st.rep.Detached++
		why := d.why
		if why == "" {
			why = parentMissing
		}
		st.note(&st.rep.Warnings, d.pos, d.Child, fmt.Sprintf("parent session %q %s: imported without a parent", d.Parent, why))
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

// dryCycle reports whether linking child to parent would close a cycle,
// as LinkParents would find it after a real import: the parents the dry
// run's sessions would have, then the store's for the rest of the chain.
func (st *importState) dryCycle(ctx context.Context, child, parent string) (bool, error) {
	node := parent
	for range len(st.parents) + 1 {
		if node == child {
			return true, nil
		}
		next, ok := st.parents[node]
		if !ok {
			return st.b.ImportLookup().InLineage(ctx, node, child)
		}
		if next == "" {
			return false, nil
		}
		node = next
	}
	return true, nil // a loop among the input's own parents
}

// LinkParents links each child to its parent where the parent is
// acceptable (parentProblem) and the child has no parent,
// through l (a backend's write transaction), and returns the links it did
// not make, each with the reason.
func LinkParents(ctx context.Context, l ImportLinker, links []ImportLink) ([]ImportLink, error) {
	var orphans []ImportLink
	for _, d := range links {
		why, err := parentProblem(ctx, l, d.Child, d.Parent)
		if err != nil {
			return nil, err
		}
		if why != "" {
			d.why = why
			orphans = append(orphans, d)
			continue
		}
		if err := l.SetParentIfNone(ctx, d.Child, d.Parent); err != nil {
			return nil, err
		}
	}
	return orphans, nil
}

// Why an import leaves a session without the parent its input names.
const (
	parentMissing = "is neither in the database nor in the input"
	parentIsSelf  = "is the session itself"
	parentCycle   = "descends from this session (linking it would make a cycle)"
)

// parentProblem says why child may not point at parent ("" if it may):
// the parent must exist and child must not be among its ancestors.
func parentProblem(ctx context.Context, l ImportLookup, child, parent string) (string, error) {
	if parent == child {
		return parentIsSelf, nil
	}
	if ok, _, err := l.ImportedSession(ctx, parent); err != nil || !ok {
		return parentMissing, err
	}
	cycle, err := l.InLineage(ctx, parent, child)
	if err != nil || !cycle {
		return "", err
	}
	return parentCycle, nil
}

// planImport checks an object and encodes its messages with the append
// path's encoder (PrepareMessage), keeping what an import must not change:
// the timestamps and the active and compacted flags.
func planImport(obj *importObject, prep PrepareOptions) (*ImportPlan, error) {
	if strings.TrimSpace(obj.ID) == "" {
		return nil, Errorf(EINVALID, "session id is required")
	}
	s := obj.Session
	p := &ImportPlan{ID: ScrubText(obj.ID), Session: &s}
	if s.Source == "" {
		s.Source = "import"
		p.warnings = append(p.warnings, `no source: imported with source "import"`)
	}
	if obj.StartedAt != nil {
		p.StartedAt = *obj.StartedAt
	} else {
		p.StartedAt = UnixSeconds(prep.Now())
		p.warnings = append(p.warnings, "no started_at: the import time was used")
	}
	mc, err := importModelConfig(obj.ModelConfig)
	if err != nil {
		return nil, err
	}
	p.ModelConfig = mc
	if s.ParentSessionID != nil {
		p.Parent = ScrubText(*s.ParentSessionID)
	}
	if s.SystemPromptHash != nil && (s.SystemPrompt == nil || *s.SystemPrompt == "") {
		p.warnings = append(p.warnings, "system_prompt_hash without system_prompt: the prompt is not in the file, so the session is imported without one")
	}

	p.Messages = make([]ImportedMessage, 0, len(obj.Messages))
	untimed := 0
	for i, raw := range obj.Messages {
		var im importMessage
		if err := json.Unmarshal(raw, &im); err != nil {
			return nil, Errorf(EINVALID, "message %d: %v", i+1, err)
		}
		obj.Messages[i] = nil // the raw copy can go while the rest is encoded
		nm := im.NewMessage
		nm.SessionID = p.ID
		nm.Content = importContent(im.Content)
		nm.Observed = bool(im.Observed)
		nm.CompressedSummary = bool(im.CompressedSummary)
		if nm.PlatformMessageID == "" {
			nm.PlatformMessageID = im.MessageID
		}
		pm, err := PrepareMessage(nm, prep)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i+1, err)
		}
		if im.Timestamp != nil {
			pm.Timestamp = *im.Timestamp
		} else {
			untimed++
		}
		m := ImportedMessage{PreparedMessage: pm, Active: im.Active == nil || bool(*im.Active),
			Compacted: bool(im.Compacted), FileID: importMessageID(im.ID)}
		if m.Active {
			p.Active++
			p.Calls += pm.CountedCalls()
		}
		p.Messages = append(p.Messages, m)
	}
	if untimed > 0 {
		p.warnings = append(p.warnings, fmt.Sprintf("%d messages without a timestamp: the import time was used", untimed))
	}
	if obj.MessageCount != nil && *obj.MessageCount != int64(p.Active) {
		p.warnings = append(p.warnings, fmt.Sprintf("message_count is %d in the file but %d active messages were imported; message_count is %d", *obj.MessageCount, p.Active, p.Active))
	}
	if obj.ToolCallCount != nil && *obj.ToolCallCount != int64(p.Calls) {
		p.warnings = append(p.warnings, fmt.Sprintf("tool_call_count is %d in the file but the imported messages hold %d tool calls; tool_call_count is %d", *obj.ToolCallCount, p.Calls, p.Calls))
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
func importModelConfig(raw json.RawMessage) (*string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	text := []byte(raw)
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, Errorf(EINVALID, "model_config: %v", err)
		}
		if s == "" {
			return &s, nil
		}
		if TooDeep(s) {
			s = ScrubText(s) // restored as exported: a value nested too deep to read
			return &s, nil
		}
		text = []byte(s)
	}
	var obj map[string]any
	if err := json.Unmarshal(text, &obj); err != nil || obj == nil {
		return nil, Errorf(EINVALID, "model_config must be a JSON object")
	}
	s := ScrubText(string(text))
	return &s, nil
}

// DecideImport works out what importing p does, reading through q: skip,
// insert or replace, and whether the parent is kept. A title held by
// another session is an ECONFLICT error. known reports parents that a dry
// run would have imported earlier (nil in a write).
func DecideImport(ctx context.Context, q ImportLookup, p *ImportPlan, o ImportOptions, known func(string) bool) (ImportDecision, error) {
	var res ImportDecision
	exists, parentless, err := q.ImportedSession(ctx, p.ID)
	if err != nil {
		return res, err
	}
	switch {
	case exists && !o.Replace:
		res.Outcome = ImportSkip
		// An earlier import may have had to leave the session without
		// its parent (the parent came later in a file whose import
		// stopped before the end, or was missing from it): link it now,
		// in finish, if the parent turns up. A parent the row has is
		// never changed.
		if p.Parent != "" && parentless {
			res.DetachedFrom = p.Parent
		}
		return res, nil
	case exists:
		res.Outcome = ImportReplace
	}
	if p.Parent != "" {
		why, err := parentProblem(ctx, q, p.ID, p.Parent)
		if err != nil {
			return res, err
		}
		if why != "" && !(known != nil && p.Parent != p.ID && known(p.Parent)) {
			res.DetachedFrom, res.why = p.Parent, why
		}
	}
	if p.Session.Title != nil {
		holder, err := q.TitleHolder(ctx, ScrubText(*p.Session.Title), p.ID)
		if err != nil {
			return res, err
		}
		if holder != "" {
			return res, titleTaken(*p.Session.Title, holder)
		}
	}
	return res, nil
}

// titleTaken is the error of an imported session whose title holder holds.
func titleTaken(title, holder string) error {
	return Errorf(ECONFLICT, "title %q is already used by session %s; rename one of them and import again", title, holder)
}

// MaxKeptMessageID bounds the message ids an import keeps. Beyond 2^53 a
// JSON number is not exact for many readers (JavaScript, Python's float);
// and an id near the top of the int64 range would leave a store's id
// generator no room (SQLite's AUTOINCREMENT refuses every later insert
// once it has issued the largest rowid).
const MaxKeptMessageID = 1<<53 - 1

// FileIDs returns the message ids of the file that an import may keep
// (positive, at most MaxKeptMessageID): a backend looks up which of them
// its database holds, for ChooseMessageIDs.
func (p *ImportPlan) FileIDs() []int64 {
	var ids []int64
	for _, m := range p.Messages {
		if m.FileID > 0 && m.FileID <= MaxKeptMessageID {
			ids = append(ids, m.FileID)
		}
	}
	return ids
}

// ChooseMessageIDs chooses the id of each message of one session, in file
// order, inside the import's transaction. A message keeps its id from the
// file when no row of the database holds it (taken) and it is above the id
// given to the message before it (a session's messages are read in id
// order, so their order must not change). Every other message, and one
// without an id, gets the next new id, from next on: next is above every
// id the database holds or its id generator ever issued. So a complete
// export imported into an empty database keeps every id, however the
// sessions' messages interleave, and into a database that holds some of
// the ids a session keeps the ids that are free until its first clash and
// is numbered on from the top after it.
//
// Sessions are imported one at a time, so a new id may be one that a
// later session of the file holds; that message then gets a new id in
// turn. Into an empty database no id is ever new.
//
// It returns the ids, the largest (0 for none) and how many messages were
// renumbered: those whose id from the file was not kept.
func ChooseMessageIDs(ms []ImportedMessage, next int64, taken map[int64]bool) (ids []int64, largest int64, renumbered int) {
	ids = make([]int64, len(ms))
	var prev int64
	for i, m := range ms {
		id := m.FileID
		if id <= prev || id > MaxKeptMessageID || taken[id] {
			if id != 0 {
				renumbered++
			}
			id = next
		}
		next = max(next, id+1)
		ids[i], prev = id, id
		largest = max(largest, id)
	}
	return ids, largest, renumbered
}

// SessionRow returns the sessions columns, id aside, and their values that
// a backend writes for p once DecideImport chose d (an insert or a
// replace): the system prompt stored through storePrompt (which returns
// its hash; the legacy inline system_prompt is always NULL), the parent
// unless it was detached, and the runtime state as o says (see
// ImportOptions.KeepRuntimeState): a new session gets the reset values, a
// replaced one keeps its own (the columns are left out). A value is nil
// (NULL), a string (scrubbed to valid UTF-8), an int64 or a float64.
func (p *ImportPlan) SessionRow(d ImportDecision, o ImportOptions, storePrompt func(prompt string) (hash string, err error)) (names []string, vals []any, err error) {
	var hash, parent any
	if s := p.Session.SystemPrompt; s != nil && *s != "" {
		h, err := storePrompt(*s)
		if err != nil {
			return nil, nil, err
		}
		hash = h
	}
	if p.Parent != "" && d.DetachedFrom == "" {
		parent = p.Parent
	}
	for _, c := range p.columns(hash, parent) {
		switch {
		case o.KeepRuntimeState || !c.runtime:
			vals = append(vals, c.val)
		case d.Outcome == ImportReplace:
			continue // a replaced session keeps its own runtime state
		default:
			vals = append(vals, c.reset)
		}
		names = append(names, c.name)
	}
	return names, vals, nil
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

// columns lists every sessions column an import writes, id aside.
func (p *ImportPlan) columns(hash, parent any) []importColumn {
	s := p.Session
	c := func(name string, v any) importColumn { return importColumn{name: name, val: v} }
	rt := func(name string, v, reset any) importColumn {
		return importColumn{name: name, val: v, runtime: true, reset: reset}
	}
	return []importColumn{
		c("source", ScrubText(s.Source)),
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
		c("model_config", importValue(p.ModelConfig)),
		c("system_prompt", nil),
		c("system_prompt_hash", hash),
		c("parent_session_id", parent),
		c("started_at", p.StartedAt),
		c("ended_at", importValue(s.EndedAt)),
		c("end_reason", importText(s.EndReason)),
		c("message_count", int64(p.Active)),
		c("tool_call_count", int64(p.Calls)),
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
		rt("compression_fallback_streak", s.CompressionFallbackStreak, int64(0)),
		rt("compression_ineffective_count", s.CompressionIneffectiveCount, int64(0)),
		rt("compression_recovery_deadline", importValue(s.CompressionRecoveryDeadline), nil),
		rt("compression_overload_streak", s.CompressionOverloadStreak, int64(0)),
		c("profile_name", importText(s.ProfileName)),
		c("transport_profile", importText(s.TransportProfile)),
		rt("rewind_count", s.RewindCount, int64(0)),
		c("archived", s.Archived),
		c("auto_archived", s.AutoArchived),
		c("pinned", s.Pinned),
		c("hidden", s.Hidden),
		c("last_read_at", importValue(s.LastReadAt)),
		rt("tool_names", importText(s.ToolNames), nil),
	}
}

// importText is a nullable text column as valid UTF-8; "" stays "".
func importText(p *string) any {
	if p == nil {
		return nil
	}
	return ScrubText(*p)
}

// importValue is a nullable column's value.
func importValue[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
