package sessiondb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// importNow is the clock of the imports below: it stamps what the file
// leaves without a time.
var importNow = time.Unix(1_700_000_500, 0)

// errStoreFault marks an error a fakeStore blames on itself
// (ImportStoreFault), whatever its code.
var errStoreFault = errors.New("the disk is full")

// fakeSession is a session row of a fakeStore.
type fakeSession struct {
	parent   string
	row      map[string]any // the columns written (SessionRow), or set up by put
	messages []int64        // its messages' ids, in order
}

// fakeStore is an in-memory ImportBackend (and its ImportLookup and
// ImportLinker) that does what a backend does: WriteImport decides with
// DecideImport, writes the columns of SessionRow and chooses the message
// ids with ChooseMessageIDs, all of a session or nothing. Tests inject
// faults by name in fail: "write:ID" (WriteImport of session ID),
// "session:ID", "lineage:ID", "title:TITLE", "parent:ID" (the lookups and
// SetParentIfNone) and "link" (LinkImported).
type fakeStore struct {
	sessions map[string]*fakeSession
	msgs     map[int64]string  // message id → session
	next     int64             // above every message id it ever issued
	prompts  map[string]string // hash → system prompt
	fail     map[string]error

	writes  []string // the sessions WriteImport was asked to write, in order
	plans   map[string]*ImportPlan
	linked  [][]ImportLink // the links of each LinkImported call
	lookups int            // ImportLookup calls (dry runs)
}

func newFakeStore() *fakeStore {
	return &fakeStore{sessions: map[string]*fakeSession{}, msgs: map[int64]string{}, next: 1,
		prompts: map[string]string{}, fail: map[string]error{}, plans: map[string]*ImportPlan{}}
}

// put stores session id with a parent ("" none), a title ("" none) and
// messages of the given ids.
func (f *fakeStore) put(id, parent, title string, msgs ...int64) {
	s := &fakeSession{parent: parent, row: map[string]any{"title": nil}, messages: msgs}
	if title != "" {
		s.row["title"] = title
	}
	for _, m := range msgs {
		f.msgs[m] = id
		f.next = max(f.next, m+1)
	}
	f.sessions[id] = s
}

func (f *fakeStore) ImportLookup() ImportLookup { f.lookups++; return f }

func (f *fakeStore) ImportedSession(_ context.Context, id string) (exists, parentless bool, err error) {
	if err := f.fail["session:"+id]; err != nil {
		return false, false, err
	}
	s, ok := f.sessions[id]
	return ok, ok && s.parent == "", nil
}

func (f *fakeStore) InLineage(_ context.Context, id, anc string) (bool, error) {
	if err := f.fail["lineage:"+id]; err != nil {
		return false, err
	}
	for range len(f.sessions) + 1 {
		if id == anc {
			return true, nil
		}
		s := f.sessions[id]
		if s == nil || s.parent == "" {
			return false, nil
		}
		id = s.parent
	}
	return false, fmt.Errorf("fake store: a cycle of parents through %q", id)
}

func (f *fakeStore) TitleHolder(_ context.Context, title, id string) (string, error) {
	if err := f.fail["title:"+title]; err != nil {
		return "", err
	}
	for _, sid := range slices.Sorted(maps.Keys(f.sessions)) {
		if sid != id && f.sessions[sid].row["title"] == title {
			return sid, nil
		}
	}
	return "", nil
}

func (f *fakeStore) SetParentIfNone(_ context.Context, child, parent string) error {
	if err := f.fail["parent:"+child]; err != nil {
		return err
	}
	if s := f.sessions[child]; s != nil && s.parent == "" {
		s.parent = parent
	}
	return nil
}

func (f *fakeStore) WriteImport(ctx context.Context, p *ImportPlan, o ImportOptions) (ImportDecision, error) {
	f.writes = append(f.writes, p.ID)
	if err := f.fail["write:"+p.ID]; err != nil {
		return ImportDecision{}, err
	}
	res, err := DecideImport(ctx, f, p, o, nil)
	if err != nil || res.Outcome == ImportSkip {
		return res, err
	}
	names, vals, err := p.SessionRow(res, o, func(prompt string) (string, error) {
		h := "hash:" + prompt
		f.prompts[h] = prompt
		return h, nil
	})
	if err != nil {
		return res, err
	}
	row := map[string]any{}
	if old := f.sessions[p.ID]; old != nil {
		maps.Copy(row, old.row) // a replaced session keeps the columns not written
		for _, m := range old.messages {
			delete(f.msgs, m)
		}
	}
	for i, n := range names {
		row[n] = vals[i]
	}
	taken := map[int64]bool{}
	for _, id := range p.FileIDs() {
		if _, ok := f.msgs[id]; ok {
			taken[id] = true
		}
	}
	ids, largest, renumbered := ChooseMessageIDs(p.Messages, f.next, taken)
	for _, id := range ids {
		f.msgs[id] = p.ID
	}
	f.next = max(f.next, largest+1)
	parent, _ := row["parent_session_id"].(string)
	f.sessions[p.ID] = &fakeSession{parent: parent, row: row, messages: ids}
	f.plans[p.ID] = p
	res.Renumbered = renumbered
	return res, nil
}

func (f *fakeStore) LinkImported(ctx context.Context, links []ImportLink) ([]ImportLink, error) {
	f.linked = append(f.linked, slices.Clone(links))
	if err := f.fail["link"]; err != nil {
		return nil, err
	}
	return LinkParents(ctx, f, links)
}

func (f *fakeStore) ImportStoreFault(err error) bool { return errors.Is(err, errStoreFault) }

// parents returns "id→parent" for each of the sessions ids.
func (f *fakeStore) parents(ids ...string) []string {
	var out []string
	for _, id := range ids {
		if s := f.sessions[id]; s == nil {
			out = append(out, id+"→(absent)")
		} else {
			out = append(out, id+"→"+s.parent)
		}
	}
	return out
}

// runImport imports in through f with the test clock.
func runImport(ctx context.Context, f *fakeStore, in io.Reader, o ImportOptions) (*ImportReport, error) {
	return RunImport(ctx, in, o, PrepareOptions{Now: func() time.Time { return importNow }}, f)
}

// obj is one session object of an import: its fields (already JSON) and
// messages.
func obj(fields string, messages ...string) string {
	return fmt.Sprintf(`{%s,"messages":[%s]}`, fields, strings.Join(messages, ","))
}

// sess is a session object with a source and a start, its other fields
// (already JSON, "" for none) and messages.
func sess(id, fields string, messages ...string) string {
	f := fmt.Sprintf(`"id":%q,"source":"cli","started_at":1700000000`, id)
	if fields != "" {
		f += "," + fields
	}
	return obj(f, messages...)
}

// msg is a user message with the file id id (0: none) and a timestamp.
func msg(id int64, text string) string {
	if id == 0 {
		return fmt.Sprintf(`{"role":"user","content":%q,"timestamp":1700000001}`, text)
	}
	return fmt.Sprintf(`{"id":%d,"role":"user","content":%q,"timestamp":1700000001}`, id, text)
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// counts renders a report's counters.
func counts(r *ImportReport) string {
	return fmt.Sprintf("dry %v imported %d replaced %d skipped %d failed %d detached %d messages %d renumbered %d",
		r.DryRun, r.Imported, r.Replaced, r.Skipped, r.Failed, r.Detached, r.Messages, r.Renumbered)
}

// note is an ImportNote a test expects: where, which session, and text
// its message holds.
type note struct {
	line, item int
	id, says   string
}

func checkNotes(t *testing.T, what string, got []ImportNote, want []note) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d notes %+v, want %d %+v", what, len(got), got, len(want), want)
		return
	}
	for i, w := range want {
		g := got[i]
		if g.Line != w.line || g.Item != w.item || g.SessionID != w.id || !strings.Contains(g.Message, w.says) {
			t.Errorf("%s %d: line %d item %d session %q %q; want line %d item %d session %q saying %q",
				what, i, g.Line, g.Item, g.SessionID, g.Message, w.line, w.item, w.id, w.says)
		}
	}
}

func equalStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// errorReader returns data, then err.
type errorReader struct {
	data string
	err  error
}

func (r *errorReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestRunImport(t *testing.T) {
	refused := &Error{Code: EINVALID, Message: `session "b" was not imported: a rule of the database refused it`}
	for _, tt := range []struct {
		name  string
		store func(f *fakeStore)
		in    string
		o     ImportOptions
		ctx   func() context.Context // nil: the test's
		// what the import stops with: an error code and text it holds
		// ("" and "": none)
		code, says string
		counts     string
		imported   []string
		replaced   []string
		skipped    []string
		errors     []note
		warnings   []note
		check      func(t *testing.T, f *fakeStore)
	}{{
		name:  "new sessions are imported with their messages, existing ones skipped",
		store: func(f *fakeStore) { f.put("old", "", "Kept", 1) },
		in: lines(
			sess("n1", "", msg(5, "one"), msg(6, "two")),
			sess("old", `"title":"Changed"`, msg(9, "not written")),
			sess("n2", "")),
		counts:   "dry false imported 2 replaced 0 skipped 1 failed 0 detached 0 messages 2 renumbered 0",
		imported: []string{"n1", "n2"}, replaced: []string{}, skipped: []string{"old"},
		check: func(t *testing.T, f *fakeStore) {
			equalStrings(t, "writes", f.writes, []string{"n1", "old", "n2"})
			if got := f.sessions["n1"].messages; !slices.Equal(got, []int64{5, 6}) {
				t.Errorf("n1 messages %v, want the file's ids 5 and 6", got)
			}
			if got := f.sessions["old"]; !slices.Equal(got.messages, []int64{1}) || got.row["title"] != "Kept" {
				t.Errorf("the skipped session changed: %v %v", got.messages, got.row["title"])
			}
			if f.linked != nil {
				t.Errorf("LinkImported called with %v: no session lacked its parent", f.linked)
			}
		},
	}, {
		name:  "with Replace an existing session is overwritten",
		store: func(f *fakeStore) { f.put("old", "", "Kept", 1, 2) },
		in: lines(
			sess("old", `"title":"Kept"`, msg(2, "new text")),
			sess("n1", "", msg(1, "taken no more"))),
		o:        ImportOptions{Replace: true},
		counts:   "dry false imported 1 replaced 1 skipped 0 failed 0 detached 0 messages 2 renumbered 0",
		imported: []string{"n1"}, replaced: []string{"old"}, skipped: []string{},
		check: func(t *testing.T, f *fakeStore) {
			if got := f.sessions["old"].messages; !slices.Equal(got, []int64{2}) {
				t.Errorf("old messages %v, want the file's one (id 2)", got)
			}
			if got := f.sessions["n1"].messages; !slices.Equal(got, []int64{1}) {
				t.Errorf("n1 messages %v, want id 1, freed by the replace", got)
			}
		},
	}, {
		name:  "messages whose ids are taken are renumbered, and said so",
		store: func(f *fakeStore) { f.put("old", "", "", 1) },
		in: lines(
			sess("n1", "", msg(1, "taken"), msg(7, "free")),
			sess("n2", "", msg(2, "taken by n1 now"), msg(0, "no id"))),
		counts:   "dry false imported 2 replaced 0 skipped 0 failed 0 detached 0 messages 4 renumbered 2",
		imported: []string{"n1", "n2"}, replaced: []string{}, skipped: []string{},
		warnings: []note{
			{1, 0, "n1", "1 of 2 messages got new ids"},
			{2, 0, "n2", "1 of 2 messages got new ids"},
		},
		check: func(t *testing.T, f *fakeStore) {
			if got := f.sessions["n1"].messages; !slices.Equal(got, []int64{2, 7}) {
				t.Errorf("n1 messages %v, want [2 7]", got)
			}
			if got := f.sessions["n2"].messages; !slices.Equal(got, []int64{8, 9}) {
				t.Errorf("n2 messages %v, want [8 9]", got)
			}
		},
	}, {
		name: "a parent later in the input is linked at the end, one found nowhere dropped",
		in: lines(
			sess("child", `"parent_session_id":"par"`),
			sess("par", ""),
			sess("orphan", `"parent_session_id":"nowhere"`),
			sess("kid", `"parent_session_id":"par"`)),
		counts:   "dry false imported 4 replaced 0 skipped 0 failed 0 detached 1 messages 0 renumbered 0",
		imported: []string{"child", "par", "orphan", "kid"}, replaced: []string{}, skipped: []string{},
		warnings: []note{{3, 0, "orphan", `parent session "nowhere" is neither in the database nor in the input`}},
		check: func(t *testing.T, f *fakeStore) {
			equalStrings(t, "parents", f.parents("child", "par", "orphan", "kid"),
				[]string{"child→par", "par→", "orphan→", "kid→par"})
			if len(f.linked) != 1 || len(f.linked[0]) != 2 || f.linked[0][0].Child != "child" || f.linked[0][1].Parent != "nowhere" {
				t.Errorf("LinkImported calls %+v, want one with child→par and orphan→nowhere", f.linked)
			}
		},
	}, {
		name: "a skipped session without its parent is linked when the parent arrives; a parent it has is kept",
		store: func(f *fakeStore) {
			f.put("x", "", "")
			f.put("a-child", "", "")
			f.put("c-kid", "x", "")
			f.put("d-lone", "", "")
		},
		in: lines(
			sess("a-child", `"parent_session_id":"b-parent"`),
			sess("b-parent", ""),
			sess("c-kid", `"parent_session_id":"b-parent"`),
			sess("d-lone", `"parent_session_id":"nowhere"`)),
		counts:   "dry false imported 1 replaced 0 skipped 3 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{"b-parent"}, replaced: []string{}, skipped: []string{"a-child", "c-kid", "d-lone"},
		check: func(t *testing.T, f *fakeStore) {
			equalStrings(t, "parents", f.parents("a-child", "c-kid", "d-lone"), []string{"a-child→b-parent", "c-kid→x", "d-lone→"})
		},
	}, {
		name:     "a parent that would close a cycle is dropped",
		store:    func(f *fakeStore) { f.put("c", "", ""); f.put("p", "c", "") },
		in:       lines(sess("c", `"parent_session_id":"p"`), sess("self", `"parent_session_id":"self"`)),
		o:        ImportOptions{Replace: true},
		counts:   "dry false imported 1 replaced 1 skipped 0 failed 0 detached 2 messages 0 renumbered 0",
		imported: []string{"self"}, replaced: []string{"c"}, skipped: []string{},
		warnings: []note{{1, 0, "c", `parent session "p" descends from this session`}, {2, 0, "self", `parent session "self" is the session itself`}},
		check: func(t *testing.T, f *fakeStore) {
			equalStrings(t, "parents", f.parents("c", "p", "self"), []string{"c→", "p→c", "self→"})
		},
	}, {
		name:  "a title another session holds fails the session, and the import goes on",
		store: func(f *fakeStore) { f.put("holder", "", "Taken") },
		in: lines(
			sess("t1", `"title":"Taken"`, msg(0, "lost")),
			sess("t2", `"title":"Free"`),
			sess("holder", `"title":"Taken"`)),
		o:        ImportOptions{Replace: true},
		counts:   "dry false imported 1 replaced 1 skipped 0 failed 1 detached 0 messages 0 renumbered 0",
		imported: []string{"t2"}, replaced: []string{"holder"}, skipped: []string{},
		errors: []note{{1, 0, "t1", `title "Taken" is already used by session holder`}},
		check: func(t *testing.T, f *fakeStore) {
			if _, ok := f.sessions["t1"]; ok {
				t.Error("the session whose title clashed was written")
			}
			if f.sessions["t2"].row["title"] != "Free" {
				t.Errorf("t2 title %v", f.sessions["t2"].row["title"])
			}
		},
	}, {
		name: "a dry run writes nothing and reports what the import would do",
		store: func(f *fakeStore) {
			f.put("old", "", "Kept", 1)
			f.put("lone", "", "")
		},
		in: lines(
			sess("child", `"parent_session_id":"par"`, msg(1, "one"), msg(2, "two")),
			sess("old", "", msg(3, "three")),
			sess("par", ""),
			sess("orphan", `"parent_session_id":"nowhere"`),
			sess("clash", `"title":"Kept"`),
			sess("kid", `"parent_session_id":"par"`),
			sess("lone", `"parent_session_id":"nowhere"`),
			sess("late", `"parent_session_id":"clash"`)),
		o:        ImportOptions{DryRun: true},
		counts:   "dry true imported 5 replaced 0 skipped 2 failed 1 detached 2 messages 2 renumbered 0",
		imported: []string{"child", "par", "orphan", "kid", "late"}, replaced: []string{}, skipped: []string{"old", "lone"},
		errors: []note{{5, 0, "clash", `title "Kept" is already used by session old`}},
		warnings: []note{
			{4, 0, "orphan", `parent session "nowhere" is neither in the database nor in the input`},
			{8, 0, "late", `parent session "clash" is neither`},
		},
		check: func(t *testing.T, f *fakeStore) {
			if len(f.writes) != 0 || f.linked != nil || len(f.sessions) != 2 {
				t.Errorf("a dry run wrote %v, linked %v, holds %d sessions", f.writes, f.linked, len(f.sessions))
			}
			if f.lookups != 8 {
				t.Errorf("%d lookups, want one for each session", f.lookups)
			}
		},
	}, {
		name:     "a dry run, like the import, drops a parent that is the session itself",
		in:       lines(sess("self", `"parent_session_id":"self"`)),
		o:        ImportOptions{DryRun: true},
		counts:   "dry true imported 1 replaced 0 skipped 0 failed 0 detached 1 messages 0 renumbered 0",
		imported: []string{"self"}, replaced: []string{}, skipped: []string{},
		warnings: []note{{1, 0, "self", `parent session "self" is the session itself`}},
	}, {
		name:     "the import fails the second session of the input that takes a title",
		in:       lines(sess("t1", `"title":"Same"`), sess("t2", `"title":"Same"`), sess("t3", `"title":"Other"`)),
		counts:   "dry false imported 2 replaced 0 skipped 0 failed 1 detached 0 messages 0 renumbered 0",
		imported: []string{"t1", "t3"}, replaced: []string{}, skipped: []string{},
		errors: []note{{2, 0, "t2", `title "Same" is already used by session t1`}},
	}, {
		name:     "a dry run, like the import, fails the second session of the input that takes a title",
		in:       lines(sess("t1", `"title":"Same"`), sess("t2", `"title":"Same"`), sess("t3", `"title":"Other"`)),
		o:        ImportOptions{DryRun: true},
		counts:   "dry true imported 2 replaced 0 skipped 0 failed 1 detached 0 messages 0 renumbered 0",
		imported: []string{"t1", "t3"}, replaced: []string{}, skipped: []string{},
		errors: []note{{2, 0, "t2", `title "Same" is already used by session t1`}},
	}, {
		name:     "a dry run counts no title for a session it skips",
		store:    func(f *fakeStore) { f.put("t1", "", "Old") },
		in:       lines(sess("t1", `"title":"Same"`), sess("t2", `"title":"Same"`)),
		o:        ImportOptions{DryRun: true},
		counts:   "dry true imported 1 replaced 0 skipped 1 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{"t2"}, replaced: []string{}, skipped: []string{"t1"},
	}, {
		name:     "a cycle of parents within the input is broken at its first link",
		in:       lines(sess("a", `"parent_session_id":"b"`), sess("b", `"parent_session_id":"a"`)),
		counts:   "dry false imported 2 replaced 0 skipped 0 failed 0 detached 1 messages 0 renumbered 0",
		imported: []string{"a", "b"}, replaced: []string{}, skipped: []string{},
		warnings: []note{{1, 0, "a", `parent session "b" descends from this session`}},
		check: func(t *testing.T, f *fakeStore) {
			equalStrings(t, "parents", f.parents("a", "b"), []string{"a→", "b→a"})
		},
	}, {
		name:     "a dry run, like the import, breaks a cycle of parents within the input",
		in:       lines(sess("a", `"parent_session_id":"b"`), sess("b", `"parent_session_id":"a"`)),
		o:        ImportOptions{DryRun: true},
		counts:   "dry true imported 2 replaced 0 skipped 0 failed 0 detached 1 messages 0 renumbered 0",
		imported: []string{"a", "b"}, replaced: []string{}, skipped: []string{},
		warnings: []note{{1, 0, "a", `parent session "b" descends from this session`}},
	}, {
		name:     "a cycle through the database and the input is broken",
		store:    func(f *fakeStore) { f.put("x", "a", "") },
		in:       lines(sess("a", `"parent_session_id":"b"`), sess("b", `"parent_session_id":"x"`), sess("c", `"parent_session_id":"b"`)),
		counts:   "dry false imported 3 replaced 0 skipped 0 failed 0 detached 1 messages 0 renumbered 0",
		imported: []string{"a", "b", "c"}, replaced: []string{}, skipped: []string{},
		warnings: []note{{1, 0, "a", `parent session "b" descends from this session`}},
		check: func(t *testing.T, f *fakeStore) {
			equalStrings(t, "parents", f.parents("a", "b", "c", "x"), []string{"a→", "b→x", "c→b", "x→a"})
		},
	}, {
		name:     "a dry run, like the import, breaks a cycle through the database and the input",
		store:    func(f *fakeStore) { f.put("x", "a", "") },
		in:       lines(sess("a", `"parent_session_id":"b"`), sess("b", `"parent_session_id":"x"`), sess("c", `"parent_session_id":"b"`)),
		o:        ImportOptions{DryRun: true},
		counts:   "dry true imported 3 replaced 0 skipped 0 failed 0 detached 1 messages 0 renumbered 0",
		imported: []string{"a", "b", "c"}, replaced: []string{}, skipped: []string{},
		warnings: []note{{1, 0, "a", `parent session "b" descends from this session`}},
	}, {
		name:     "a dry run, like the import, drops a parent that would close a cycle, and says so",
		store:    func(f *fakeStore) { f.put("c", "", ""); f.put("p", "c", "") },
		in:       lines(sess("c", `"parent_session_id":"p"`)),
		o:        ImportOptions{Replace: true, DryRun: true},
		counts:   "dry true imported 0 replaced 1 skipped 0 failed 0 detached 1 messages 0 renumbered 0",
		imported: []string{}, replaced: []string{"c"}, skipped: []string{},
		warnings: []note{{1, 0, "c", `parent session "p" descends from this session (linking it would make a cycle): imported without a parent`}},
	}, {
		name:     "what the file leaves without a time gets the store's clock",
		in:       lines(`{"id":"a","source":"cli","messages":[{"role":"user"}]}`),
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 0 detached 0 messages 1 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
		warnings: []note{{1, 0, "a", "no started_at"}, {1, 0, "a", "1 messages without a timestamp"}},
		check: func(t *testing.T, f *fakeStore) {
			now := UnixSeconds(importNow)
			if got, ts := f.sessions["a"].row["started_at"], f.plans["a"].Messages[0].Timestamp; got != now || ts != now {
				t.Errorf("started_at %v, message timestamp %v; want the clock's %v", got, ts, now)
			}
		},
	}, {
		name:     "a dry run with Replace",
		store:    func(f *fakeStore) { f.put("old", "", "", 1) },
		in:       lines(sess("old", "", msg(1, "a"), msg(2, "b")), sess("new", "")),
		o:        ImportOptions{DryRun: true, Replace: true},
		counts:   "dry true imported 1 replaced 1 skipped 0 failed 0 detached 0 messages 2 renumbered 0",
		imported: []string{"new"}, replaced: []string{"old"}, skipped: []string{},
	}, {
		name: "malformed lines are reported with their line, and the rest imported",
		in: lines(
			sess("a", "", msg(0, "one")),
			"",
			`{"id":"b", broken`,
			"   \t",
			`[1, 2]`,
			`{"source":"cli","messages":[]}`,
			sess("m", "", msg(0, "fine"), `{"content":"no role"}`),
			sess("c", "", msg(0, "three")),
			sess("a", ""),
			`{"id":"n","messages":[5]}`,
			`{"id":"f","source":"cli","started_at":1,"messages":[{"role":"user","observed":2}]}`),
		counts:   "dry false imported 2 replaced 0 skipped 0 failed 7 detached 0 messages 2 renumbered 0",
		imported: []string{"a", "c"}, replaced: []string{}, skipped: []string{},
		errors: []note{
			{3, 0, "", "not a session object"},
			{5, 0, "", "not a session object"},
			{6, 0, "", "session id is required"},
			{7, 0, "m", "message 2: append message: a role is required"},
			{9, 0, "a", `session "a" appears again (first at line 1); only the first is imported`},
			{10, 0, "n", "message 1: "},
			{11, 0, "f", "message 1: want true, false, 1 or 0, not 2"},
		},
		check: func(t *testing.T, f *fakeStore) {
			equalStrings(t, "writes", f.writes, []string{"a", "c"})
		},
	}, {
		name:     "the last line needs no newline, and a byte order mark starts the first",
		in:       "\xef\xbb\xbf" + sess("a", "") + "\n" + sess("b", ""),
		counts:   "dry false imported 2 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{"a", "b"}, replaced: []string{}, skipped: []string{},
	}, {
		name:     "a byte order mark after the first line is an error",
		in:       lines(sess("a", ""), "\xef\xbb\xbf"+sess("b", "")),
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 1 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
		errors: []note{{2, 0, "", "not a session object"}},
	}, {
		name: "a JSON array is read element by element, with lines and items",
		in: "\n  \n[" + sess("a", "", msg(0, "one")) + ",\n  " +
			sess("b", "", `{"content":"no role"}`) + ",\n" +
			"  {\"id\": \"c\",\n   \"messages\": []}, 17\n]\n",
		counts:   "dry false imported 2 replaced 0 skipped 0 failed 2 detached 0 messages 1 renumbered 0",
		imported: []string{"a", "c"}, replaced: []string{}, skipped: []string{},
		errors:   []note{{4, 2, "b", "message 1"}, {6, 4, "", "not a session object"}},
		warnings: []note{{5, 3, "c", "no source"}, {5, 3, "c", "no started_at"}},
	}, {
		name:     "a JSON array after a byte order mark",
		in:       "\xef\xbb\xbf[" + sess("a", "") + "]",
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
	}, {
		name:     "an empty JSON array imports nothing",
		in:       "[ ]\n",
		counts:   "dry false imported 0 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{}, replaced: []string{}, skipped: []string{},
	}, {
		name: "a broken JSON array stops at its line, keeping what came before",
		in:   "[\n  " + sess("a", "") + ",\n  {\"id\": \"b\",\n   \"source\": }\n]\n",
		code: EINVALID, says: "line 4: the input is not valid JSON",
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 1 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
		errors: []note{{4, 2, "", "not valid JSON"}},
	}, {
		name: "a syntax error is on its line however many elements come before it",
		in:   "[\n" + strings.Repeat(sess("a", "")+",\n", 6) + `{"id" "b"}` + "\n]\n",
		code: EINVALID, says: "line 8: the input is not valid JSON",
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 6 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
		errors: []note{{3, 2, "a", "appears again"}, {4, 3, "a", "appears again"}, {5, 4, "a", "appears again"},
			{6, 5, "a", "appears again"}, {7, 6, "a", "appears again"}, {8, 7, "", `not valid JSON: invalid character '"' after object key`}},
	}, {
		name: "a line break inside a string is an error on the line it breaks",
		in:   "[\n" + sess("a", "") + ",\n\n  {\"id\": \"b\n\nc\"}]",
		code: EINVALID, says: "line 4: the input is not valid JSON",
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 1 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
		errors: []note{{4, 2, "", `not valid JSON: invalid character '\n' in string literal`}},
	}, {
		name: "two array elements without a comma",
		in:   "[\n" + sess("a", "") + "\n" + sess("b", "") + "\n]\n",
		code: EINVALID, says: "line 3: the input is not valid JSON",
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 1 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
		errors: []note{{3, 2, "", "not valid JSON"}},
	}, {
		name: "a JSON array cut short inside an element",
		in:   "[\n" + sess("a", "") + ",\n{\"id\": \"b\",\n",
		code: EINVALID, says: "line 2: the input is not valid JSON",
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 1 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
		errors: []note{{2, 2, "", "not valid JSON"}},
	}, {
		name: "a JSON array that does not end",
		in:   "[\n" + sess("a", "") + "\n",
		code: EINVALID, says: "line 2: the JSON array does not end properly",
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
	}, {
		name: "sessions after the JSON array are refused, not left unread",
		in:   "[\n" + sess("a", "") + "]\n" + sess("b", "") + "\n",
		code: EINVALID, says: "line 3: the input goes on after the JSON array ends",
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
	}, {
		name: "anything but blank space after the JSON array is refused",
		in:   "[" + sess("a", "") + "]\n \n  ]\n",
		code: EINVALID, says: "line 3: the input goes on after the JSON array ends",
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
	}, {
		name:     "blank space after the JSON array is fine",
		in:       "[" + sess("a", "") + "]\n \n\t\n",
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
	}, {
		name: "a lineage object imports each segment",
		in: lines(
			obj(`"id":"tip"`+`,"segments":[`+sess("root", "", msg(0, "r"))+","+sess("tip", `"parent_session_id":"root"`, msg(0, "t"))+"]"),
			obj(`"id":"bad","segments":[1,`+sess("good", "")+"]")),
		counts:   "dry false imported 3 replaced 0 skipped 0 failed 1 detached 0 messages 2 renumbered 0",
		imported: []string{"root", "tip", "good"}, replaced: []string{}, skipped: []string{},
		errors: []note{{2, 0, "bad", "segment 1: not a session object"}},
		check: func(t *testing.T, f *fakeStore) {
			equalStrings(t, "parents", f.parents("tip"), []string{"tip→root"})
		},
	}, {
		name:     "a row the store refuses fails its session, and the import goes on",
		store:    func(f *fakeStore) { f.fail["write:b"] = refused },
		in:       lines(sess("a", ""), sess("b", "", msg(0, "x")), sess("c", "")),
		counts:   "dry false imported 2 replaced 0 skipped 0 failed 1 detached 0 messages 0 renumbered 0",
		imported: []string{"a", "c"}, replaced: []string{}, skipped: []string{},
		errors: []note{{2, 0, "b", refused.Message}},
	}, {
		name: "a clash or a missing row the store reports fails the session only",
		store: func(f *fakeStore) {
			f.fail["write:a"] = Errorf(ECONFLICT, "a clashes")
			f.fail["write:b"] = Errorf(ENOTFOUND, "b refers to nothing")
		},
		in:       lines(sess("a", ""), sess("b", ""), sess("c", "")),
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 2 detached 0 messages 0 renumbered 0",
		imported: []string{"c"}, replaced: []string{}, skipped: []string{},
		errors: []note{{1, 0, "a", "a clashes"}, {2, 0, "b", "b refers to nothing"}},
	}, {
		name: "an error the store caused stops the import, whatever its code",
		store: func(f *fakeStore) {
			f.fail["write:b"] = &Error{Code: EINVALID, Err: errStoreFault, Message: "cannot write: the disk is full"}
		},
		in:   lines(sess("a", ""), sess("b", ""), sess("c", "")),
		code: EINVALID, says: "the disk is full",
		counts:   "dry false imported 1 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
		check: func(t *testing.T, f *fakeStore) {
			equalStrings(t, "writes", f.writes, []string{"a", "b"})
		},
	}, {
		name:  "a busy store stops the import",
		store: func(f *fakeStore) { f.fail["write:a"] = Errorf(EBUSY, "locked") },
		in:    lines(sess("a", ""), sess("b", "")),
		code:  EBUSY, says: "locked",
		counts:   "dry false imported 0 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{}, replaced: []string{}, skipped: []string{},
	}, {
		name:  "a dry run's failed lookup stops it",
		store: func(f *fakeStore) { f.fail["session:b"] = errors.New("read failed") },
		in:    lines(sess("a", ""), sess("b", ""), sess("c", "")),
		o:     ImportOptions{DryRun: true},
		code:  EINTERNAL, says: "read failed",
		counts:   "dry true imported 1 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{"a"}, replaced: []string{}, skipped: []string{},
	}, {
		name:  "a failed link stops the import at its end",
		store: func(f *fakeStore) { f.fail["link"] = Errorf(EBUSY, "locked") },
		in:    lines(sess("child", `"parent_session_id":"par"`), sess("par", "")),
		code:  EBUSY, says: "locked",
		counts:   "dry false imported 2 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{"child", "par"}, replaced: []string{}, skipped: []string{},
	}, {
		name: "a cancelled context stops the import before the next object",
		ctx: func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		},
		in:   lines(sess("a", "")),
		code: EINTERNAL, says: "import: context canceled",
		counts:   "dry false imported 0 replaced 0 skipped 0 failed 0 detached 0 messages 0 renumbered 0",
		imported: []string{}, replaced: []string{}, skipped: []string{},
		check: func(t *testing.T, f *fakeStore) {
			if len(f.writes) != 0 {
				t.Errorf("wrote %v after the context was cancelled", f.writes)
			}
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeStore()
			if tt.store != nil {
				tt.store(f)
			}
			ctx := t.Context()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}
			rep, err := runImport(ctx, f, strings.NewReader(tt.in), tt.o)
			if got := ErrorCode(err); got != tt.code || (err != nil && !strings.Contains(err.Error(), tt.says)) {
				t.Errorf("error %v (code %q), want code %q saying %q", err, got, tt.code, tt.says)
			}
			if rep == nil {
				t.Fatal("no report")
			}
			if got := counts(rep); got != tt.counts {
				t.Errorf("report\n  %s, want\n  %s", got, tt.counts)
			}
			equalStrings(t, "imported", rep.ImportedIDs, tt.imported)
			equalStrings(t, "replaced", rep.ReplacedIDs, tt.replaced)
			equalStrings(t, "skipped", rep.SkippedIDs, tt.skipped)
			checkNotes(t, "error", rep.Errors, tt.errors)
			checkNotes(t, "warning", rep.Warnings, tt.warnings)
			if rep.Errors == nil || rep.Warnings == nil {
				t.Error("the report's lists are nil, not empty")
			}
			if tt.check != nil {
				tt.check(t, f)
			}
		})
	}
}

// Without a clock of the store's the import uses the time of day.
func TestRunImportDefaultClock(t *testing.T) {
	f := newFakeStore()
	before := UnixSeconds(time.Now())
	_, err := RunImport(t.Context(), strings.NewReader(`{"id":"a","source":"cli"}`), ImportOptions{}, PrepareOptions{}, f)
	after := UnixSeconds(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := f.sessions["a"].row["started_at"].(float64); got < before || got > after {
		t.Errorf("started_at %v, want the time of the import (between %v and %v)", got, before, after)
	}
}

// A reader that fails stops the import with its error and the line it
// was reading; what came before stays imported.
func TestRunImportReadError(t *testing.T) {
	gone := errors.New("connection reset")
	for _, tt := range []struct {
		name, data, says string
		imported         []string
	}{
		{"before any line", "", "import: read line 1: connection reset", []string{}},
		{"after a line", sess("a", "") + "\n", "import: read line 2: connection reset", []string{"a"}},
		{"after a blank line", "\n", "import: read line 2: connection reset", []string{}},
		{"in a JSON array", "[\n" + sess("a", "") + ",\n", "import: read line 3: connection reset", []string{"a"}},
		{"after a JSON array's opening", "[", "import: read line 1: connection reset", []string{}},
		{"before a JSON array's end", "[\n" + sess("a", "") + "\n", "import: read line 3: connection reset", []string{"a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeStore()
			rep, err := runImport(t.Context(), f, &errorReader{data: tt.data, err: gone}, ImportOptions{})
			if !errors.Is(err, gone) || err.Error() != tt.says || ErrorCode(err) != EINTERNAL {
				t.Errorf("error %v, want %q wrapping the reader's", err, tt.says)
			}
			equalStrings(t, "imported", rep.ImportedIDs, tt.imported)
		})
	}
}

// Hermes' import_sessions refuses a payload beyond its limits; sessiondb
// imports it and warns, at exactly the limits Hermes has.
func TestRunImportHermesLimits(t *testing.T) {
	// withMessages is a session of n timestamped messages.
	withMessages := func(id string, n int) string {
		ms := make([]string, n)
		for i := range ms {
			ms[i] = `{"role":"user","timestamp":1}`
		}
		return sess(id, "", ms...)
	}
	// ofSize is a session object of exactly n bytes.
	ofSize := func(id string, n int) string {
		s := sess(id, `"cwd":""`)
		return strings.Replace(s, `"cwd":""`, `"cwd":"`+strings.Repeat("x", n-len(s))+`"`, 1)
	}
	sessions := func(n int) string {
		ls := make([]string, n)
		for i := range ls {
			ls[i] = sess(fmt.Sprintf("s%03d", i), "")
		}
		return lines(ls...)
	}
	for _, tt := range []struct {
		name     string
		in       func() string
		warnings []note
	}{
		{"500 sessions", func() string { return sessions(500) }, nil},
		{"501 sessions", func() string { return sessions(501) },
			[]note{{0, 0, "", "501 sessions: Hermes' import_sessions refuses more than 500 in one import"}}},
		{"10,000 messages in a session, 50,000 in all", func() string {
			return lines(withMessages("a", 10_000), withMessages("b", 10_000), withMessages("c", 10_000),
				withMessages("d", 10_000), withMessages("e", 10_000))
		}, nil},
		{"10,001 messages in a session, 50,001 in all", func() string {
			return lines(withMessages("a", 10_000), withMessages("b", 10_001), withMessages("c", 10_000),
				withMessages("d", 10_000), withMessages("e", 10_000))
		}, []note{
			{2, 0, "b", "10001 messages: Hermes' import_sessions refuses more than 10000 per session"},
			{0, 0, "", "50001 messages: Hermes' import_sessions refuses more than 50000 in one import"},
		}},
		{"5 MiB a session, 25 MiB in all", func() string {
			return lines(ofSize("a", 5<<20), ofSize("b", 5<<20), ofSize("c", 5<<20), ofSize("d", 5<<20), ofSize("e", 5<<20))
		}, nil},
		{"a byte more", func() string {
			return lines(ofSize("a", 5<<20), ofSize("b", 5<<20+1), ofSize("c", 3<<20), ofSize("d", 7<<20))
		}, []note{
			{2, 0, "b", "5.0 MiB: Hermes' import_sessions refuses more than 5 MiB per session"},
			{4, 0, "d", "7.0 MiB: Hermes' import_sessions refuses more than 5 MiB per session"},
		}},
		{"25 MiB and two bytes in all", func() string {
			return lines(ofSize("a", 5<<20), ofSize("b", 5<<20), ofSize("c", 5<<20), ofSize("d", 5<<20), ofSize("e", 5<<20), "{}")
		}, []note{{0, 0, "", "25.0 MiB: Hermes' import_sessions refuses more than 25 MiB in one import"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := runImport(t.Context(), newFakeStore(), strings.NewReader(tt.in()), ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkNotes(t, "warning", rep.Warnings, tt.warnings)
		})
	}
}

// plan decodes one session object and plans its import with the test
// clock.
func plan(t *testing.T, js string) (*ImportPlan, error) {
	t.Helper()
	var o importObject
	if err := json.Unmarshal([]byte(js), &o); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return planImport(&o, PrepareOptions{Imported: true, Now: func() time.Time { return importNow }})
}

func TestPlanImport(t *testing.T) {
	now := UnixSeconds(importNow)
	deep := strings.Repeat(`{"a":`, MaxJSONDepth+1) + "1" + strings.Repeat("}", MaxJSONDepth+1)
	deepText, _ := json.Marshal(deep)
	for _, tt := range []struct {
		name     string
		in       string
		err      string // text the EINVALID error holds, "" for none
		warnings []string
		check    func(t *testing.T, p *ImportPlan)
	}{
		{name: "an id is required", in: `{"id":" \t","source":"cli"}`, err: "session id is required"},
		{name: "no id at all", in: `{"source":"cli"}`, err: "session id is required"},
		{
			name:     "a missing source and start are filled in, and said so",
			in:       `{"id":"a"}`,
			warnings: []string{`no source: imported with source "import"`, "no started_at: the import time was used"},
			check: func(t *testing.T, p *ImportPlan) {
				if p.ID != "a" || p.Session.Source != "import" || p.StartedAt != now || p.Parent != "" ||
					p.ModelConfig != nil || len(p.Messages) != 0 || p.Active != 0 || p.Calls != 0 {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "a start of 0 is kept",
			in:   `{"id":"a","source":"cli","started_at":0,"parent_session_id":"p","message_count":0,"tool_call_count":0}`,
			check: func(t *testing.T, p *ImportPlan) {
				if p.StartedAt != 0 || p.Parent != "p" {
					t.Errorf("started_at %v parent %q", p.StartedAt, p.Parent)
				}
			},
		},
		{name: "a model_config object is kept as written", in: `{"id":"a","source":"cli","started_at":1,"model_config":{"t": 1}}`,
			check: wantModelConfig(`{"t": 1}`)},
		{name: "a model_config as JSON text is unwrapped", in: `{"id":"a","source":"cli","started_at":1,"model_config":"{\"t\":1}"}`,
			check: wantModelConfig(`{"t":1}`)},
		{name: "an empty model_config text is kept", in: `{"id":"a","source":"cli","started_at":1,"model_config":""}`,
			check: wantModelConfig("")},
		{name: "a null model_config is none", in: `{"id":"a","source":"cli","started_at":1,"model_config":null}`,
			check: func(t *testing.T, p *ImportPlan) {
				if p.ModelConfig != nil {
					t.Errorf("model_config %q, want none", *p.ModelConfig)
				}
			}},
		{name: "a model_config too deep to read is kept as exported", in: `{"id":"a","source":"cli","started_at":1,"model_config":` + string(deepText) + `}`,
			check: wantModelConfig(deep)},
		{name: "a model_config list", in: `{"id":"a","model_config":[1]}`, err: "model_config must be a JSON object"},
		{name: "a model_config list as text", in: `{"id":"a","model_config":"[1]"}`, err: "model_config must be a JSON object"},
		{name: "a model_config null as text", in: `{"id":"a","model_config":"null"}`, err: "model_config must be a JSON object"},
		{name: "a model_config number", in: `{"id":"a","model_config":5}`, err: "model_config must be a JSON object"},
		{
			name:     "a prompt hash without its prompt",
			in:       `{"id":"a","source":"cli","started_at":1,"system_prompt_hash":"h"}`,
			warnings: []string{"system_prompt_hash without system_prompt: the prompt is not in the file"},
		},
		{
			name:     "a prompt hash with an empty prompt",
			in:       `{"id":"a","source":"cli","started_at":1,"system_prompt_hash":"h","system_prompt":""}`,
			warnings: []string{"system_prompt_hash without system_prompt"},
		},
		{name: "a prompt hash with its prompt", in: `{"id":"a","source":"cli","started_at":1,"system_prompt_hash":"h","system_prompt":"p"}`},
		{
			name: "messages keep their flags, time and id; the counters are recomputed",
			in: `{"id":"a","source":"cli","started_at":1,"message_count":3,"tool_call_count":1,"messages":[` +
				`{"id":3,"session_id":"other","role":"user","content":"hi","timestamp":7,"message_id":"tg-1","observed":1},` +
				`{"id":"4","role":"assistant","tool_calls":[{"id":"x"},{"id":"y"}],"active":0,"timestamp":8,"_compressed_summary":true},` +
				`{"role":"tool","tool_calls":[{"id":"x"}],"compacted":1,"active":null,"content":null},` +
				`{"id":-2,"role":"assistant","tool_calls":[{"id":"z"}],"active":true,"platform_message_id":"keep","message_id":"ignored","content":[{"type":"text","text":"x"}]}]}`,
			warnings: []string{"2 messages without a timestamp: the import time was used"},
			check: func(t *testing.T, p *ImportPlan) {
				if p.Active != 3 || p.Calls != 1 || len(p.Messages) != 4 {
					t.Fatalf("active %d calls %d messages %d, want 3, 1, 4", p.Active, p.Calls, len(p.Messages))
				}
				type got struct {
					fileID            int64
					active, compacted bool
					observed, summary bool
					ts                float64
					platform, content string
				}
				str := func(s *string) string {
					if s == nil {
						return "<nil>"
					}
					return *s
				}
				want := []got{
					{3, true, false, true, false, 7, "tg-1", "hi"},
					{0, false, false, false, true, 8, "<nil>", "<nil>"},
					{0, true, true, false, false, now, "<nil>", "<nil>"},
					{0, true, false, false, false, now, "keep", ContentJSONPrefix + `[{"type":"text","text":"x"}]`},
				}
				for i, m := range p.Messages {
					g := got{m.FileID, m.Active, m.Compacted, m.Observed, m.CompressedSummary, m.Timestamp, str(m.PlatformMessageID), str(m.Content)}
					if g != want[i] {
						t.Errorf("message %d = %+v, want %+v", i+1, g, want[i])
					}
				}
			},
		},
		{
			name: "counters the file gets wrong are said so",
			in: `{"id":"a","source":"cli","started_at":1,"message_count":2,"tool_call_count":0,"messages":[` +
				`{"role":"assistant","tool_calls":[{"id":"x"}],"timestamp":8}]}`,
			warnings: []string{
				"message_count is 2 in the file but 1 active messages were imported; message_count is 1",
				"tool_call_count is 0 in the file but the imported messages hold 1 tool calls; tool_call_count is 1",
			},
		},
		{name: "a message that is not an object", in: `{"id":"a","messages":[{"role":"user"},"x"]}`, err: "message 2: json: cannot unmarshal"},
		{name: "a message without a role", in: `{"id":"a","messages":[{"role":"user"},{"role":"user"},{"content":"x"}]}`,
			err: "message 3: append message: a role is required"},
		{name: "a flag that is not one", in: `{"id":"a","messages":[{"role":"user","compacted":"yes"}]}`,
			err: `message 1: want true, false, 1 or 0, not "yes"`},
		{name: "text behind the structured prefix is kept", in: `{"id":"a","source":"cli","started_at":1,"messages":[{"role":"user","timestamp":1,"content":"\u0000json:{bad"}]}`,
			check: func(t *testing.T, p *ImportPlan) {
				if c := p.Messages[0].Content; c == nil || *c != ContentJSONPrefix+"{bad" {
					t.Errorf("content %v", c)
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := plan(t, tt.in)
			if tt.err != "" {
				if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), tt.err) || p != nil {
					t.Fatalf("got %v, %v; want an EINVALID error saying %q", p, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(p.warnings, tt.warnings, strings.HasPrefix) {
				t.Errorf("warnings %q, want %q", p.warnings, tt.warnings)
			}
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
}

func wantModelConfig(want string) func(t *testing.T, p *ImportPlan) {
	return func(t *testing.T, p *ImportPlan) {
		t.Helper()
		if p.ModelConfig == nil || *p.ModelConfig != want {
			t.Errorf("model_config %v, want %q", p.ModelConfig, want)
		}
	}
}

func TestImportMessageID(t *testing.T) {
	for in, want := range map[string]int64{
		"7": 7, " 12 ": 12, "0": 0, "-3": 0, `"12"`: 0, "1.5": 0, "null": 0, "": 0,
		"9223372036854775807": 1<<63 - 1, "9223372036854775808": 0,
	} {
		if got := importMessageID(json.RawMessage(in)); got != want {
			t.Errorf("importMessageID(%s) = %d, want %d", in, got, want)
		}
	}
}

func TestImportContent(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want any
	}{
		{``, nil},
		{`null`, nil},
		{` null `, nil},
		{`"text"`, "text"},
		{` "te\"xt" `, `te"xt`},
		{`[{"type":"text"}]`, json.RawMessage(`[{"type":"text"}]`)},
		{`5`, json.RawMessage(`5`)},
	} {
		got := importContent(json.RawMessage(tt.in))
		if fmt.Sprintf("%T %s", got, got) != fmt.Sprintf("%T %s", tt.want, tt.want) {
			t.Errorf("importContent(%s) = %T %s, want %T %s", tt.in, got, got, tt.want, tt.want)
		}
	}
}

func TestImportFlag(t *testing.T) {
	for in, want := range map[string]bool{"true": true, "1": true, "false": false, "0": false, "null": false} {
		f := importFlag(!want)
		if err := f.UnmarshalJSON([]byte(in)); err != nil || bool(f) != want {
			t.Errorf("%s: %v, %v; want %v", in, f, err, want)
		}
	}
	for _, in := range []string{"2", `"true"`, "1.0", "[]"} {
		var f importFlag
		if err := f.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestDecideImport(t *testing.T) {
	store := func() *fakeStore {
		f := newFakeStore()
		f.put("free", "", "")
		f.put("kid", "free", "")
		f.put("titled", "", "Taken")
		return f
	}
	lookupFailed := errors.New("lookup failed")
	all := func(string) bool { return true }
	for _, tt := range []struct {
		name          string
		id, parent    string
		title         *string
		o             ImportOptions
		known         func(string) bool
		fail          string // a fault of the store (fakeStore.fail)
		outcome       ImportOutcome
		detached, err string
	}{
		{name: "new", id: "new", outcome: ImportInsert},
		{name: "new with its parent", id: "new", parent: "free", outcome: ImportInsert},
		{name: "new without its parent", id: "new", parent: "missing", outcome: ImportInsert, detached: "missing"},
		{name: "new without its parent, known to come", id: "new", parent: "missing", known: all, outcome: ImportInsert},
		{name: "new without its parent, not known to come", id: "new", parent: "missing", known: func(string) bool { return false },
			outcome: ImportInsert, detached: "missing"},
		{name: "its own parent, known", id: "new", parent: "new", known: all, outcome: ImportInsert, detached: "new"},
		{name: "its own parent, stored", id: "free", parent: "free", o: ImportOptions{Replace: true}, outcome: ImportReplace, detached: "free"},
		{name: "new, its title free", id: "new", title: ptr("Free"), outcome: ImportInsert},
		{name: "new, its title taken", id: "new", title: ptr("Taken"), err: `title "Taken" is already used by session titled; rename one of them and import again`},
		{name: "new, its title taken once scrubbed", id: "new", title: ptr("Taken"), fail: "", err: "already used"},
		{name: "stored, skipped", id: "free", outcome: ImportSkip},
		{name: "stored, skipped, its title taken", id: "free", title: ptr("Taken"), outcome: ImportSkip},
		{name: "stored without a parent, skipped, to link", id: "free", parent: "missing", outcome: ImportSkip, detached: "missing"},
		{name: "stored with a parent, skipped", id: "kid", parent: "other", outcome: ImportSkip},
		{name: "stored, replaced", id: "free", o: ImportOptions{Replace: true}, outcome: ImportReplace},
		{name: "stored, replaced, its own title", id: "titled", title: ptr("Taken"), o: ImportOptions{Replace: true}, outcome: ImportReplace},
		{name: "stored, replaced, without its parent", id: "kid", parent: "missing", o: ImportOptions{Replace: true},
			outcome: ImportReplace, detached: "missing"},
		{name: "replaced, a parent closing a cycle", id: "free", parent: "kid", o: ImportOptions{Replace: true},
			outcome: ImportReplace, detached: "kid"},
		{name: "the session's lookup fails", id: "new", fail: "session:new", err: "lookup failed"},
		{name: "the parent's lookup fails", id: "new", parent: "free", fail: "session:free", err: "lookup failed"},
		{name: "the lineage lookup fails", id: "new", parent: "free", fail: "lineage:free", err: "lookup failed"},
		{name: "the title lookup fails", id: "new", title: ptr("Free"), fail: "title:Free", err: "lookup failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := store()
			if tt.fail != "" {
				f.fail[tt.fail] = lookupFailed
			}
			p := &ImportPlan{ID: tt.id, Parent: tt.parent, Session: &Session{ID: tt.id, Title: tt.title}}
			got, err := DecideImport(t.Context(), f, p, tt.o, tt.known)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %+v, %v; want an error saying %q", got, err, tt.err)
				}
				if tt.fail != "" && !errors.Is(err, lookupFailed) {
					t.Errorf("error %v is not the store's", err)
				}
				if tt.fail == "" && ErrorCode(err) != ECONFLICT {
					t.Errorf("error %v: code %q, want %q", err, ErrorCode(err), ECONFLICT)
				}
				return
			}
			if err != nil || got.Outcome != tt.outcome || got.DetachedFrom != tt.detached || got.Renumbered != 0 {
				t.Errorf("got %+v, %v; want outcome %d detached from %q", got, err, tt.outcome, tt.detached)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestLinkParents(t *testing.T) {
	f := newFakeStore()
	f.put("p", "", "")
	for _, id := range []string{"c1", "c2", "c3"} {
		f.put(id, "", "")
	}
	f.put("c4", "p", "")
	f.put("q", "", "")
	links := []ImportLink{
		{Child: "c1", Parent: "p"},
		{Child: "c2", Parent: "missing"},
		{Child: "c3", Parent: "c3"},
		{Child: "c4", Parent: "q"}, // has a parent: kept
		{Child: "p", Parent: "c1"}, // c1's parent is p now: a cycle
		{Child: "q", Parent: "c4"},
	}
	orphans, err := LinkParents(t.Context(), f, links)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range orphans {
		got = append(got, o.Child+"→"+o.Parent+": "+o.why)
	}
	equalStrings(t, "orphans", got, []string{"c2→missing: " + parentMissing, "c3→c3: " + parentIsSelf, "p→c1: " + parentCycle})
	equalStrings(t, "parents", f.parents("c1", "c2", "c3", "c4", "p", "q"),
		[]string{"c1→p", "c2→", "c3→", "c4→p", "p→", "q→c4"})

	for _, fail := range []string{"session:p", "lineage:p", "parent:c1"} {
		f := newFakeStore()
		f.put("p", "", "")
		f.put("c1", "", "")
		f.fail[fail] = errStoreFault
		if orphans, err := LinkParents(t.Context(), f, links[:2]); !errors.Is(err, errStoreFault) || orphans != nil {
			t.Errorf("%s fails: %v, %v; want the store's error and no links", fail, orphans, err)
		}
	}
}

func TestChooseMessageIDs(t *testing.T) {
	const top = MaxKeptMessageID
	for _, tt := range []struct {
		name       string
		file       []int64
		next       int64
		taken      []int64
		ids        []int64
		largest    int64
		renumbered int
	}{
		{name: "none", next: 5, ids: []int64{}},
		{name: "free ids are kept", file: []int64{3, 5, 9}, next: 10, ids: []int64{3, 5, 9}, largest: 9},
		{name: "messages without an id get new ones", file: []int64{0, 0}, next: 4, ids: []int64{4, 5}, largest: 5},
		{name: "a taken id is renumbered", file: []int64{1, 7}, next: 5, taken: []int64{1}, ids: []int64{5, 7}, largest: 7, renumbered: 1},
		{name: "an id below the one before is renumbered", file: []int64{9, 3}, next: 5, ids: []int64{9, 10}, largest: 10, renumbered: 1},
		{name: "an id equal to the one before is renumbered", file: []int64{4, 4}, next: 10, ids: []int64{4, 10}, largest: 10, renumbered: 1},
		{name: "new ids go above the kept ones", file: []int64{0, 12, 0}, next: 10, ids: []int64{10, 12, 13}, largest: 13},
		{name: "the largest id kept", file: []int64{top, top + 1}, next: 1, ids: []int64{top, top + 1}, largest: top + 1, renumbered: 1},
		{name: "an id beyond 2^53 - 1", file: []int64{1 << 53, 1<<63 - 1}, next: 1, ids: []int64{1, 2}, largest: 2, renumbered: 2},
		{name: "after a clash the rest is numbered on", file: []int64{2, 3, 4}, next: 3, taken: []int64{2}, ids: []int64{3, 4, 5},
			largest: 5, renumbered: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ms := make([]ImportedMessage, len(tt.file))
			for i, id := range tt.file {
				ms[i].FileID = id
			}
			taken := map[int64]bool{}
			for _, id := range tt.taken {
				taken[id] = true
			}
			ids, largest, renumbered := ChooseMessageIDs(ms, tt.next, taken)
			if !slices.Equal(ids, tt.ids) || largest != tt.largest || renumbered != tt.renumbered {
				t.Errorf("got %v, largest %d, %d renumbered; want %v, %d, %d", ids, largest, renumbered, tt.ids, tt.largest, tt.renumbered)
			}
		})
	}
}

func TestFileIDs(t *testing.T) {
	p := &ImportPlan{}
	for _, id := range []int64{0, 3, MaxKeptMessageID, MaxKeptMessageID + 1, 1<<63 - 1, 3} {
		p.Messages = append(p.Messages, ImportedMessage{FileID: id})
	}
	if got, want := p.FileIDs(), []int64{3, MaxKeptMessageID, 3}; !slices.Equal(got, want) {
		t.Errorf("FileIDs() = %v, want %v", got, want)
	}
	if got := (&ImportPlan{}).FileIDs(); got != nil {
		t.Errorf("FileIDs() of no messages = %v", got)
	}
}

// runtimeColumns are the live state an import leaves out by default.
var runtimeColumns = []string{"session_key", "chat_id", "chat_type", "thread_id", "origin_json",
	"last_activity_at", "last_activity_description", "last_activity_provenance",
	"handoff_state", "handoff_platform", "handoff_error",
	"compression_failure_cooldown_until", "compression_failure_error", "compression_fallback_streak",
	"compression_ineffective_count", "compression_recovery_deadline", "compression_overload_streak",
	"rewind_count", "tool_names"}

func TestSessionRow(t *testing.T) {
	in := `{"id":"a","source":"cli","started_at":5,"system_prompt":"be brief","system_prompt_hash":"old",` +
		`"parent_session_id":"p","model_config":{"t":1},"title":"T","user_id":"u","ended_at":9.5,"expiry_finalized":1,` +
		`"api_call_count":4,"archived":1,"estimated_cost_usd":0.25,"display_name":"",` +
		`"session_key":"k","chat_id":"c","chat_type":"dm","thread_id":"th","origin_json":"{}",` +
		`"last_activity_at":7.5,"last_activity_description":"d","last_activity_provenance":"pv",` +
		`"handoff_state":"h","handoff_platform":"hp","handoff_error":"he",` +
		`"compression_failure_cooldown_until":8.5,"compression_failure_error":"ce","compression_fallback_streak":2,` +
		`"compression_ineffective_count":3,"compression_recovery_deadline":6.5,"compression_overload_streak":4,` +
		`"rewind_count":5,"tool_names":"tn",` +
		`"messages":[{"role":"assistant","tool_calls":[{"id":"x"}],"timestamp":1},{"role":"user","active":0,"timestamp":2}]}`
	p, err := plan(t, in)
	if err != nil {
		t.Fatal(err)
	}
	fileRuntime := []any{"k", "c", "dm", "th", "{}", 7.5, "d", "pv", "h", "hp", "he", 8.5, "ce", int64(2), int64(3), 6.5, int64(4), int64(5), "tn"}
	resetRuntime := []any{nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, int64(0), int64(0), nil, int64(0), int64(0), nil}
	var prompts []string
	store := func(prompt string) (string, error) {
		prompts = append(prompts, prompt)
		return "h1", nil
	}
	for _, tt := range []struct {
		name    string
		d       ImportDecision
		o       ImportOptions
		parent  any
		runtime []any // nil: the columns are left out
	}{
		{"a new session gets the reset runtime state", ImportDecision{Outcome: ImportInsert}, ImportOptions{}, "p", resetRuntime},
		{"a replaced session keeps its own", ImportDecision{Outcome: ImportReplace}, ImportOptions{}, "p", nil},
		{"KeepRuntimeState, new", ImportDecision{Outcome: ImportInsert}, ImportOptions{KeepRuntimeState: true}, "p", fileRuntime},
		{"KeepRuntimeState, replaced", ImportDecision{Outcome: ImportReplace}, ImportOptions{KeepRuntimeState: true}, "p", fileRuntime},
		{"a detached parent is left out", ImportDecision{Outcome: ImportInsert, DetachedFrom: "p"}, ImportOptions{}, nil, resetRuntime},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prompts = nil
			names, vals, err := p.SessionRow(tt.d, tt.o, store)
			if err != nil || len(names) != len(vals) {
				t.Fatalf("%d names, %d values, %v", len(names), len(vals), err)
			}
			if want := 61 - len(runtimeColumns); tt.runtime != nil {
				want = 61
				if len(names) != want {
					t.Errorf("%d columns, want %d", len(names), want)
				}
			} else if len(names) != want {
				t.Errorf("%d columns, want %d", len(names), want)
			}
			row := map[string]any{}
			for i, n := range names {
				if _, dup := row[n]; dup || n == "id" {
					t.Errorf("column %s written twice, or the id", n)
				}
				row[n] = vals[i]
			}
			for name, want := range map[string]any{
				"source": "cli", "title": "T", "user_id": "u", "display_name": "", "model": nil,
				"system_prompt": nil, "system_prompt_hash": "h1", "parent_session_id": tt.parent,
				"model_config": `{"t":1}`, "started_at": 5.0, "ended_at": 9.5, "expiry_finalized": int64(1),
				"message_count": int64(1), "tool_call_count": int64(1), "api_call_count": int64(4),
				"archived": int64(1), "estimated_cost_usd": 0.25, "actual_cost_usd": nil, "last_read_at": nil,
			} {
				if got, ok := row[name]; !ok || got != want {
					t.Errorf("%s = %#v (written %v), want %#v", name, got, ok, want)
				}
			}
			for i, name := range runtimeColumns {
				got, ok := row[name]
				switch {
				case tt.runtime == nil && ok:
					t.Errorf("%s written (%#v): a replaced session keeps its own", name, got)
				case tt.runtime != nil && (!ok || got != tt.runtime[i]):
					t.Errorf("%s = %#v (written %v), want %#v", name, got, ok, tt.runtime[i])
				}
			}
			equalStrings(t, "prompts stored", prompts, []string{"be brief"})
		})
	}

	t.Run("no prompt, no hash", func(t *testing.T) {
		for _, in := range []string{`{"id":"a","source":"cli","started_at":1}`, `{"id":"a","source":"cli","started_at":1,"system_prompt":""}`} {
			p, err := plan(t, in)
			if err != nil {
				t.Fatal(err)
			}
			names, vals, err := p.SessionRow(ImportDecision{}, ImportOptions{}, func(string) (string, error) {
				t.Fatal("a prompt was stored")
				return "", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range names {
				if n == "system_prompt_hash" && vals[i] != nil {
					t.Errorf("system_prompt_hash %#v, want NULL", vals[i])
				}
			}
		}
	})
	t.Run("a prompt that cannot be stored", func(t *testing.T) {
		names, vals, err := p.SessionRow(ImportDecision{}, ImportOptions{}, func(string) (string, error) { return "", errStoreFault })
		if !errors.Is(err, errStoreFault) || names != nil || vals != nil {
			t.Errorf("got %v, %v, %v; want the store's error", names, vals, err)
		}
	})
}
