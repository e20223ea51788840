package sqlite_test

import (
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
