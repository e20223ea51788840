package sqlite_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// exportedIDs exports sel from db and returns the ids of the sessions
// exported, in order.
func exportedIDs(tb testing.TB, db *sqlite.DB, sel sqlite.ExportSelection) []string {
	tb.Helper()
	var ids []string
	err := db.ExportSessions(ctx, sel, func(x *sqlite.ExportedSession) error {
		ids = append(ids, x.Session.ID)
		return nil
	})
	if err != nil {
		tb.Fatalf("export %+v: %v", sel, err)
	}
	return ids
}

// TestExportSelectionAllPages: an export of every session reads them 100
// at a time, and exports each one once, in id order, whether the last page
// is full (100, 200 sessions) or not (99, 101, 201).
func TestExportSelectionAllPages(t *testing.T) {
	db := MustOpen(t)
	var want []string
	for _, n := range []int{99, 100, 101, 200, 201} {
		for i := len(want); i < n; i++ {
			id := fmt.Sprintf("s%04d", i)
			newSession(t, db, sessiondb.NewSession{ID: id, Source: "cli"})
			want = append(want, id)
		}
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			got := exportedIDs(t, db, sqlite.ExportSelection{})
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("exported %d sessions (first %q, last %q), want %d (%q to %q)",
					len(got), first(got), last(got), len(want), want[0], want[len(want)-1])
			}
		})
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// TestExportPagesLargeMessagesExactBound: a page of messages ends once its
// text reaches 16 MiB; when the first messages add up to exactly that, the
// messages after them are on the next page and are exported too, and when
// they add up to a byte less, the page goes on.
func TestExportPagesLargeMessagesExactBound(t *testing.T) {
	db := MustOpen(t)
	const half = 8 << 20
	for _, tc := range []struct {
		id     string
		second int // bytes of the second message; the first has half
	}{
		{"exact", half},
		{"under", half - 1},
	} {
		t.Run(tc.id, func(t *testing.T) {
			// The bytes are in reasoning, which no index reads, so the
			// test writes 16 MiB without tokenizing it.
			r1 := strings.Repeat("r", half-1)
			r2 := strings.Repeat("r", tc.second-1)
			newSession(t, db, sessiondb.NewSession{ID: tc.id, Source: "cli"},
				sessiondb.NewMessage{SessionID: tc.id, Role: "assistant", Content: "a", Reasoning: &r1},
				sessiondb.NewMessage{SessionID: tc.id, Role: "assistant", Content: "b", Reasoning: &r2},
				sessiondb.NewMessage{SessionID: tc.id, Role: "user", Content: "c"})
			var got []string
			err := db.ExportSessions(ctx, sqlite.ExportSelection{SessionID: tc.id}, func(x *sqlite.ExportedSession) error {
				for m, err := range x.Messages {
					if err != nil {
						return err
					}
					n := len(m.Content.(string))
					if m.Reasoning != nil {
						n += len(*m.Reasoning)
					}
					got = append(got, fmt.Sprintf("%s:%d", m.Content, n))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{fmt.Sprintf("a:%d", half), fmt.Sprintf("b:%d", tc.second), "c:1"}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("exported %q, want %q", got, want)
			}
		})
	}
}

// TestImportRefusedValue: a row SQLite refuses because a value has the
// wrong type (SQLITE_MISMATCH) or is too big (SQLITE_TOOBIG), here from
// triggers a newer Hermes might add, is that session's failure: it is
// reported, and the sessions after it are imported.
func TestImportRefusedValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, path)
	raw := rawDB(t, path)
	for _, q := range []string{
		`CREATE TABLE by_number (n INTEGER PRIMARY KEY)`,
		`CREATE TRIGGER mismatch BEFORE INSERT ON messages WHEN new.content = 'mismatch'
			BEGIN INSERT INTO by_number (n) VALUES ('not a number'); END`,
		`CREATE TRIGGER too_big BEFORE INSERT ON messages WHEN new.content = 'too big'
			BEGIN SELECT zeroblob(2000000000); END`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	in := `{"id":"a","source":"cli","started_at":1777000000,"messages":[{"id":1,"role":"user","content":"mismatch"}]}
{"id":"b","source":"cli","started_at":1777000000,"messages":[{"id":2,"role":"user","content":"too big"}]}
{"id":"c","source":"cli","started_at":1777000000,"messages":[{"id":3,"role":"user","content":"fine"}]}`
	rep, err := db.ImportSessions(ctx, strings.NewReader(in), sqlite.ImportOptions{})
	if err != nil {
		t.Fatalf("import stopped: %v (report %+v)", err, rep)
	}
	if rep.Imported != 1 || rep.Failed != 2 || len(rep.Errors) != 2 {
		t.Fatalf("report = %+v, want c imported and a, b failed", rep)
	}
	for i, want := range []struct {
		line int
		id   string
		says string
	}{
		{1, "a", "a value has a type the database does not accept"},
		{2, "b", "a value is larger than SQLite accepts"},
	} {
		e := rep.Errors[i]
		if e.Line != want.line || e.SessionID != want.id || !strings.Contains(e.Message, want.says) {
			t.Errorf("error %d = line %d, %q: %q; want line %d, %q saying %q", i, e.Line, e.SessionID, e.Message, want.line, want.id, want.says)
		}
	}
	if _, err := db.Session(ctx, "c"); err != nil {
		t.Errorf("session c: %v", err)
	}
	if n, _ := db.MessageCount(ctx); n != 1 {
		t.Errorf("%d messages stored, want c's only", n)
	}
}

// TestImportMessageStatements: the messages of a session are inserted 500
// a statement; a session of exactly 500 or 1000 messages is imported whole,
// as are one of 501 and one of 499, each message with its id and in order.
func TestImportMessageStatements(t *testing.T) {
	db := MustOpen(t)
	var in strings.Builder
	next := 1
	sizes := []int{499, 500, 501, 1000}
	for _, n := range sizes {
		fmt.Fprintf(&in, `{"id":"s%d","source":"cli","started_at":1777000000,"messages":[`, n)
		for i := range n {
			if i > 0 {
				in.WriteString(",")
			}
			fmt.Fprintf(&in, `{"id":%d,"role":"user","content":"m%d","timestamp":%d}`, next, i, 1777000000+i)
			next++
		}
		in.WriteString("]}\n")
	}
	rep, err := db.ImportSessions(ctx, strings.NewReader(in.String()), sqlite.ImportOptions{})
	if err != nil {
		t.Fatalf("import: %v (report %+v)", err, rep)
	}
	if rep.Imported != len(sizes) || rep.Failed != 0 || rep.Renumbered != 0 {
		t.Fatalf("report = %+v", rep)
	}
	id := int64(1)
	for _, n := range sizes {
		msgs, err := db.Messages(ctx, fmt.Sprintf("s%d", n), sessiondb.MessageFilter{IncludeInactive: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != n {
			t.Errorf("session s%d has %d messages, want %d", n, len(msgs), n)
			continue
		}
		for i, m := range msgs {
			if m.ID != id || m.Content != fmt.Sprintf("m%d", i) {
				t.Errorf("session s%d message %d = %d %v, want %d m%d", n, i, m.ID, m.Content, id, i)
				break
			}
			id++
		}
	}
}

// TestImportReplaceCollectsPrompts: replacing a session whose system
// prompt changes removes the old prompt when no other session holds it,
// and keeps it when one does.
func TestImportReplaceCollectsPrompts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, path)
	newSession(t, db, sessiondb.NewSession{ID: "alone", Source: "cli", SystemPrompt: "prompt of alone"})
	newSession(t, db, sessiondb.NewSession{ID: "shared1", Source: "cli", SystemPrompt: "shared prompt"})
	newSession(t, db, sessiondb.NewSession{ID: "shared2", Source: "cli", SystemPrompt: "shared prompt"})
	var in bytes.Buffer
	for _, o := range decodeLines(t, exportJSONL(t, db, sqlite.ExportSelection{})) {
		if o["id"] == "shared2" {
			continue
		}
		o["system_prompt"] = fmt.Sprintf("new prompt of %s", o["id"])
		line, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(line, '\n'))
	}
	rep := mustImport(t, db, in.Bytes(), sqlite.ImportOptions{Replace: true})
	if rep.Replaced != 2 {
		t.Fatalf("report = %+v, want 2 replaced", rep)
	}
	raw := rawDB(t, path)
	for prompt, want := range map[string]int{
		"prompt of alone":       0,
		"shared prompt":         1,
		"new prompt of alone":   1,
		"new prompt of shared1": 1,
	} {
		if got := count(t, raw, "SELECT COUNT(*) FROM system_prompts WHERE prompt = ?", prompt); got != want {
			t.Errorf("%d rows of system_prompts hold %q, want %d", got, prompt, want)
		}
	}
}

// TestImportReplacePromptDeleteRefused: when the database refuses to
// delete the replaced session's old system prompt (a trigger a newer
// Hermes might add), the replace is that session's failure and nothing of
// it is written: the session keeps its prompt and its messages.
func TestImportReplacePromptDeleteRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, path)
	newSession(t, db, sessiondb.NewSession{ID: "s", Source: "cli", SystemPrompt: "old prompt"},
		sessiondb.NewMessage{Role: "user", Content: "old question"})
	o := decodeLines(t, exportJSONL(t, db, sqlite.ExportSelection{SessionID: "s"}))[0]
	o["system_prompt"] = "new prompt"
	o["messages"] = []any{map[string]any{"role": "user", "content": "new question", "timestamp": 1777000000.5}}
	line, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	if _, err := raw.Exec(`CREATE TRIGGER keep_prompts BEFORE DELETE ON system_prompts
		BEGIN SELECT RAISE(ABORT, 'prompts are kept'); END`); err != nil {
		t.Fatal(err)
	}
	rep := mustImport(t, db, line, sqlite.ImportOptions{Replace: true})
	if rep.Replaced != 0 || rep.Failed != 1 || len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0].Message, "prompts are kept") {
		t.Fatalf("report = %+v, want s failed because its old prompt is kept", rep)
	}
	s, err := db.Session(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := db.Messages(ctx, "s", sessiondb.MessageFilter{IncludeInactive: true})
	if err != nil {
		t.Fatal(err)
	}
	if *s.SystemPrompt != "old prompt" || len(msgs) != 1 || msgs[0].Content != "old question" {
		t.Errorf("after the refused replace: prompt %q, messages %+v; want the session as it was", *s.SystemPrompt, msgs)
	}
}
