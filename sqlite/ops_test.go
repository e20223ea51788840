package sqlite_test

// Tests of the session operations: titles (API.md §4, checklist 101–143),
// listing (§2 Listing, 71–75 and 144–166), lineage, deletion (76–77, 91),
// prune (86–90), lineage-wide flags, clearing and usage statistics.

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

const opsDay = 86400.0

// opsNow is the store's fixed clock in Unix seconds.
var opsNow = float64(fixedNow.Unix())

// opsStore is a store on a temporary file with a raw connection to the
// same file for assertions and backdating.
type opsStore struct {
	*sqlite.DB
	raw  *sql.DB
	path string
}

func opsOpen(tb testing.TB) *opsStore {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "state.db")
	db := MustOpenPath(tb, path)
	return &opsStore{DB: db, raw: rawDB(tb, path), path: path}
}

// create creates a session and fails the test on error.
func (s *opsStore) create(tb testing.TB, ns sessiondb.NewSession) string {
	tb.Helper()
	id, err := s.CreateSession(ctx, ns)
	if err != nil {
		tb.Fatalf("CreateSession(%q): %v", ns.ID, err)
	}
	return id
}

// add appends messages to a session in one batch.
func (s *opsStore) add(tb testing.TB, id string, ms ...sessiondb.NewMessage) {
	tb.Helper()
	if _, err := s.AppendMessages(ctx, id, ms); err != nil {
		tb.Fatalf("AppendMessages(%q): %v", id, err)
	}
}

// end ends a session and, when at is non-zero, backdates ended_at to it.
func (s *opsStore) end(tb testing.TB, id, reason string, at float64) {
	tb.Helper()
	if err := s.EndSession(ctx, id, reason); err != nil {
		tb.Fatalf("EndSession(%q): %v", id, err)
	}
	if at != 0 {
		s.exec(tb, "UPDATE sessions SET ended_at = ? WHERE id = ?", at, id)
	}
}

func (s *opsStore) exec(tb testing.TB, q string, args ...any) {
	tb.Helper()
	if _, err := s.raw.Exec(q, args...); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}

func (s *opsStore) get(tb testing.TB, id string) *sessiondb.Session {
	tb.Helper()
	got, err := s.Session(ctx, id)
	if err != nil {
		tb.Fatalf("Session(%q): %v", id, err)
	}
	return got
}

func (s *opsStore) exists(tb testing.TB, id string) bool {
	tb.Helper()
	return count(tb, s.raw, "SELECT COUNT(*) FROM sessions WHERE id = ?", id) == 1
}

// parent returns a session's parent_session_id ("" for NULL).
func (s *opsStore) parent(tb testing.TB, id string) string {
	tb.Helper()
	var p sql.NullString
	if err := s.raw.QueryRow("SELECT parent_session_id FROM sessions WHERE id = ?", id).Scan(&p); err != nil {
		tb.Fatalf("parent of %q: %v", id, err)
	}
	return p.String
}

func (s *opsStore) list(tb testing.TB, o sessiondb.ListOptions) ([]sessiondb.SessionSummary, int) {
	tb.Helper()
	rows, total, err := s.ListSessions(ctx, o)
	if err != nil {
		tb.Fatalf("ListSessions(%+v): %v", o, err)
	}
	return rows, total
}

// listIDs lists with no limit and returns the ids in order.
func (s *opsStore) listIDs(tb testing.TB, o sessiondb.ListOptions) []string {
	tb.Helper()
	o.Limit = -1
	rows, _ := s.list(tb, o)
	return opsSummaryIDs(rows)
}

func opsSummaryIDs(rows []sessiondb.SessionSummary) []string {
	ids := []string{}
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	return ids
}

func opsCandidateIDs(cs []sessiondb.PruneCandidate) []string {
	ids := []string{}
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

func opsRow(tb testing.TB, rows []sessiondb.SessionSummary, id string) sessiondb.SessionSummary {
	tb.Helper()
	for _, r := range rows {
		if r.ID == id {
			return r
		}
	}
	tb.Fatalf("no row %q in %v", id, opsSummaryIDs(rows))
	return sessiondb.SessionSummary{}
}

func opsSorted(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// opsSameSet fails unless got and want hold the same ids in any order.
func opsSameSet(tb testing.TB, what string, got, want []string) {
	tb.Helper()
	if !slices.Equal(opsSorted(got), opsSorted(want)) {
		tb.Errorf("%s = %v, want %v", what, opsSorted(got), opsSorted(want))
	}
}

func opsWantCode(tb testing.TB, err error, want string) {
	tb.Helper()
	if got := sessiondb.ErrorCode(err); got != want {
		tb.Fatalf("error code = %q (err %v), want %q", got, err, want)
	}
}

func opsStr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func opsCmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func opsUser(text string, ts float64) sessiondb.NewMessage {
	return sessiondb.NewMessage{Role: sessiondb.RoleUser, Content: text, Timestamp: ts}
}

func opsAssistant(text string, ts float64) sessiondb.NewMessage {
	return sessiondb.NewMessage{Role: sessiondb.RoleAssistant, Content: text, Timestamp: ts}
}

// ---------------------------------------------------------------- titles

func TestTitles(t *testing.T) {
	s := opsOpen(t)
	s.create(t, sessiondb.NewSession{ID: "s1", Source: "cli"})
	s.create(t, sessiondb.NewSession{ID: "s2", Source: "cli"})
	s.create(t, sessiondb.NewSession{ID: "s3", Source: "cli"})

	t.Run("starts nil", func(t *testing.T) { // 103
		if got := s.get(t, "s1"); got.Title != nil || got.TitleSource != nil {
			t.Fatalf("title = %s (%s), want NULL", opsStr(got.Title), opsStr(got.TitleSource))
		}
	})
	t.Run("set and get", func(t *testing.T) { // 101
		if err := s.SetTitle(ctx, "s1", "My Session"); err != nil {
			t.Fatal(err)
		}
		got := s.get(t, "s1")
		if opsStr(got.Title) != "My Session" || opsStr(got.TitleSource) != sessiondb.TitleSourceUser {
			t.Fatalf("title = %s (%s), want My Session (user)", opsStr(got.Title), opsStr(got.TitleSource))
		}
	})
	t.Run("unknown session", func(t *testing.T) { // 102
		opsWantCode(t, s.SetTitle(ctx, "nope", "x"), sessiondb.ENOTFOUND)
	})
	t.Run("update", func(t *testing.T) { // 104
		if err := s.SetTitle(ctx, "s1", "Renamed"); err != nil {
			t.Fatal(err)
		}
		if got := s.get(t, "s1").Title; opsStr(got) != "Renamed" {
			t.Fatalf("title = %s", opsStr(got))
		}
	})
	t.Run("special characters kept", func(t *testing.T) { // 107
		title := `PR #438 — fixing the 'auth' middleware "v2" 🚀 项目 café 50%_done`
		if err := s.SetTitle(ctx, "s2", title); err != nil {
			t.Fatal(err)
		}
		if got := s.get(t, "s2").Title; opsStr(got) != title {
			t.Fatalf("title = %s, want %s", opsStr(got), title)
		}
	})
	t.Run("sanitised on set", func(t *testing.T) {
		if err := s.SetTitle(ctx, "s3", "  hello\x00  \tworld\u200b  "); err != nil {
			t.Fatal(err)
		}
		if got := s.get(t, "s3").Title; opsStr(got) != "hello world" {
			t.Fatalf("title = %q", opsStr(got))
		}
	})
	t.Run("too long through set", func(t *testing.T) { // 111–129: 150 raises through set
		err := s.SetTitle(ctx, "s3", strings.Repeat("x", 150))
		opsWantCode(t, err, sessiondb.EINVALID)
		if !strings.Contains(err.Error(), "Title too long (150 chars, max 100)") {
			t.Errorf("message = %q", err)
		}
		if got := s.get(t, "s3").Title; opsStr(got) != "hello world" {
			t.Errorf("a refused title changed the row: %s", opsStr(got))
		}
		if err := s.SetTitle(ctx, "s3", strings.Repeat("y", 100)); err != nil {
			t.Errorf("100 characters refused: %v", err)
		}
	})
	t.Run("empty clears to NULL", func(t *testing.T) { // 108
		for _, empty := range []string{"", "   ", "\x00\u200b"} {
			if err := s.SetTitle(ctx, "s3", "temp"); err != nil {
				t.Fatal(err)
			}
			if err := s.SetTitle(ctx, "s3", empty); err != nil {
				t.Fatalf("SetTitle(%q): %v", empty, err)
			}
			if got := s.get(t, "s3"); got.Title != nil || got.TitleSource != nil {
				t.Fatalf("SetTitle(%q) left %s (%s)", empty, opsStr(got.Title), opsStr(got.TitleSource))
			}
			if n := count(t, s.raw, "SELECT COUNT(*) FROM sessions WHERE id = 's3' AND title IS NULL"); n != 1 {
				t.Fatalf("title stored as '' instead of NULL")
			}
		}
	})
	t.Run("many NULL titles", func(t *testing.T) { // 109
		s.create(t, sessiondb.NewSession{ID: "n1", Source: "cli"})
		s.create(t, sessiondb.NewSession{ID: "n2", Source: "cli"})
		for _, id := range []string{"n1", "n2", "s3"} {
			if err := s.SetTitle(ctx, id, ""); err != nil {
				t.Fatalf("SetTitle(%s, \"\"): %v", id, err)
			}
		}
		if n := count(t, s.raw, "SELECT COUNT(*) FROM sessions WHERE title IS NULL"); n < 3 {
			t.Fatalf("%d NULL titles", n)
		}
	})
	t.Run("survives end", func(t *testing.T) { // 110
		s.end(t, "s1", "user_exit", 0)
		if got := s.get(t, "s1").Title; opsStr(got) != "Renamed" {
			t.Fatalf("title after end = %s", opsStr(got))
		}
	})
	t.Run("duplicate refused", func(t *testing.T) { // 130
		err := s.SetTitle(ctx, "s2", "Renamed")
		opsWantCode(t, err, sessiondb.ECONFLICT)
		if !strings.Contains(err.Error(), "already in use by session") || !strings.Contains(err.Error(), "s1") {
			t.Errorf("message = %q, want it to name the holder s1", err)
		}
		if got := s.get(t, "s2").Title; got == nil || *got == "Renamed" {
			t.Errorf("s2 title = %s", opsStr(got))
		}
		// the comparison is made on the sanitised title
		opsWantCode(t, s.SetTitle(ctx, "s2", "  Renamed\x00 "), sessiondb.ECONFLICT)
	})
	t.Run("same title on the same session", func(t *testing.T) { // 131
		if err := s.SetTitle(ctx, "s1", "Renamed"); err != nil {
			t.Fatalf("re-setting the same title: %v", err)
		}
	})
}

func TestTitleMovesFromCompressionAncestor(t *testing.T) {
	s := opsOpen(t)
	s.create(t, sessiondb.NewSession{ID: "root", Source: "cli", StartedAt: opsNow - 300})
	if err := s.SetTitle(ctx, "root", "X"); err != nil {
		t.Fatal(err)
	}
	s.end(t, "root", sessiondb.EndReasonCompression, opsNow-200)
	s.create(t, sessiondb.NewSession{ID: "mid", Source: "cli", ParentSessionID: "root", StartedAt: opsNow - 200})
	s.end(t, "mid", sessiondb.EndReasonCompression, opsNow-100)
	s.create(t, sessiondb.NewSession{ID: "tip", Source: "cli", ParentSessionID: "mid", StartedAt: opsNow - 100})

	t.Run("an unrelated holder conflicts", func(t *testing.T) {
		s.create(t, sessiondb.NewSession{ID: "other", Source: "cli"})
		if err := s.SetTitle(ctx, "other", "Y"); err != nil {
			t.Fatal(err)
		}
		// other is no relative of root: plain conflict
		opsWantCode(t, s.SetTitle(ctx, "root", "Y"), sessiondb.ECONFLICT)
	})
	t.Run("grandchild takes the title over", func(t *testing.T) {
		if err := s.SetTitle(ctx, "tip", "X"); err != nil {
			t.Fatalf("SetTitle(tip, X) with X held by a compression ancestor: %v", err)
		}
		if got := s.get(t, "tip").Title; opsStr(got) != "X" {
			t.Errorf("tip title = %s", opsStr(got))
		}
		if got := s.get(t, "root").Title; got != nil {
			t.Errorf("root title = %s, want NULL after the move", opsStr(got))
		}
		if n := count(t, s.raw, "SELECT COUNT(*) FROM sessions WHERE title = 'X'"); n != 1 {
			t.Errorf("%d sessions titled X", n)
		}
	})
	t.Run("ancestor cannot take a descendant's title", func(t *testing.T) {
		opsWantCode(t, s.SetTitle(ctx, "root", "X"), sessiondb.ECONFLICT)
	})
	t.Run("direct child", func(t *testing.T) {
		s.create(t, sessiondb.NewSession{ID: "p2", Source: "cli"})
		if err := s.SetTitle(ctx, "p2", "Z"); err != nil {
			t.Fatal(err)
		}
		s.end(t, "p2", sessiondb.EndReasonCompression, 0)
		s.create(t, sessiondb.NewSession{ID: "c2", Source: "cli", ParentSessionID: "p2"})
		if err := s.SetTitle(ctx, "c2", "Z"); err != nil {
			t.Fatalf("child of a compression parent: %v", err)
		}
		if s.get(t, "p2").Title != nil {
			t.Error("parent kept its title")
		}
	})
	t.Run("a parent that did not end with compression keeps its title", func(t *testing.T) {
		s.create(t, sessiondb.NewSession{ID: "p3", Source: "cli"})
		if err := s.SetTitle(ctx, "p3", "W"); err != nil {
			t.Fatal(err)
		}
		s.end(t, "p3", "user_exit", 0)
		s.create(t, sessiondb.NewSession{ID: "c3", Source: "cli", ParentSessionID: "p3"})
		opsWantCode(t, s.SetTitle(ctx, "c3", "W"), sessiondb.ECONFLICT)
		if opsStr(s.get(t, "p3").Title) != "W" {
			t.Error("parent lost its title")
		}
	})
}

func TestResolveTitle(t *testing.T) {
	s := opsOpen(t)
	mk := func(id, title string, started float64) {
		t.Helper()
		s.create(t, sessiondb.NewSession{ID: id, Source: "cli", StartedAt: started})
		if err := s.SetTitle(ctx, id, title); err != nil {
			t.Fatal(err)
		}
	}
	mk("s1", "my project", 1000)
	mk("s2", "my project #2", 2000)
	mk("s3", "my project #3", 3000)
	mk("s10", "my project #10", 1500) // higher number, older start
	mk("solo", "standalone", 1000)
	mk("u1", "test_project", 1000)
	mk("u2", "testXproject #2", 2000)
	mk("g1", "a*b", 1000)
	mk("g2", "aXXb #2", 2000)
	mk("q1", "why?", 1000)
	mk("q2", "whyX #5", 2000)
	mk("b1", "[draft]", 1000)
	mk("b2", "d #4", 2000)

	for _, tt := range []struct{ title, want string }{
		{"standalone", "solo"},    // 134 exact
		{"my project", "s3"},      // 135 latest numbered variant by started_at
		{"my project #2", "s2"},   // 136 exact numbered title
		{"my project #10", "s10"}, // 136
		{"test_project", "u1"},    // `_` literal
		{"a*b", "g1"},             // `*` literal
		{"why?", "q1"},            // `?` literal
		{"[draft]", "b1"},         // `[` literal
	} {
		got, err := s.ResolveTitle(ctx, tt.title)
		if err != nil || got != tt.want {
			t.Errorf("ResolveTitle(%q) = %q, %v; want %q", tt.title, got, err, tt.want)
		}
	}
	_, err := s.ResolveTitle(ctx, "no such title") // 137
	opsWantCode(t, err, sessiondb.ENOTFOUND)
}

func TestNextTitleInLineage(t *testing.T) {
	s := opsOpen(t)
	n := 0
	mk := func(title string) {
		t.Helper()
		n++
		id := fmt.Sprintf("t%d", n)
		s.create(t, sessiondb.NewSession{ID: id, Source: "cli"})
		if err := s.SetTitle(ctx, id, title); err != nil {
			t.Fatal(err)
		}
	}
	next := func(base string) string {
		t.Helper()
		got, err := s.NextTitleInLineage(ctx, base)
		if err != nil {
			t.Fatalf("NextTitleInLineage(%q): %v", base, err)
		}
		return got
	}
	if got := next("my project"); got != "my project" { // 138
		t.Errorf("none existing: %q", got)
	}
	mk("my project")
	if got := next("my project"); got != "my project #2" { // 139
		t.Errorf("base existing: %q", got)
	}
	mk("my project #2")
	mk("my project #3")
	if got := next("my project"); got != "my project #4" { // 140
		t.Errorf("with #2 and #3: %q", got)
	}
	if got := next("my project #2"); got != "my project #4" { // 141 (stripped, then the highest wins)
		t.Errorf("numbered input: %q", got)
	}

	// 141 as in the checklist: only the base and #2 exist.
	mk("other")
	mk("other #2")
	if got := next("other #2"); got != "other #3" {
		t.Errorf("numbered input with base and #2: %q, want other #3", got)
	}
	// only numbered variants exist
	mk("lonely #2")
	if got := next("lonely"); got != "lonely #3" {
		t.Errorf("only #2 exists: %q, want lonely #3", got)
	}

	// 142: `_` is literal
	mk("testXproject #2")
	if got := next("test_project"); got != "test_project" {
		t.Errorf("test_project with testXproject #2 present: %q", got)
	}
	mk("test_project")
	if got := next("test_project"); got != "test_project #2" {
		t.Errorf("test_project existing: %q", got)
	}
	// 143: `%` is literal
	mk("100xyz done #7")
	if got := next("100% done"); got != "100% done" {
		t.Errorf("100%% done with 100xyz done #7 present: %q", got)
	}
	mk("100% done")
	if got := next("100% done"); got != "100% done #2" {
		t.Errorf("100%% done existing: %q", got)
	}
	// A title of another lineage that starts like this one's numbers
	// ("deploy #7 #9" is #9 of "deploy #7") does not count.
	mk("deploy")
	mk("deploy #7 #9")
	if got := next("deploy"); got != "deploy #2" {
		t.Errorf("deploy with deploy #7 #9 present: %q, want deploy #2", got)
	}
	// a backslash is literal too
	mk(`dir\x #9`)
	if got := next(`dir\x`); got != `dir\x #10` {
		t.Errorf(`dir\x: %q`, got)
	}
}

func TestSetAutoTitle(t *testing.T) {
	s := opsOpen(t)
	for _, id := range []string{"a", "b", "c", "legacy"} {
		s.create(t, sessiondb.NewSession{ID: id, Source: "cli"})
	}
	auto := func(id, title, source string) bool {
		t.Helper()
		ok, err := s.SetAutoTitle(ctx, id, title, source)
		if err != nil {
			t.Fatalf("SetAutoTitle(%s, %q, %s): %v", id, title, source, err)
		}
		return ok
	}
	check := func(id, title, source string) {
		t.Helper()
		got := s.get(t, id)
		if opsStr(got.Title) != title || opsStr(got.TitleSource) != source {
			t.Fatalf("%s: title %s (%s), want %s (%s)", id, opsStr(got.Title), opsStr(got.TitleSource), title, source)
		}
	}

	if !auto("a", "Derived title", sessiondb.TitleSourceDerived) {
		t.Fatal("derived on an untitled row not written")
	}
	check("a", "Derived title", "derived")
	if !auto("a", "LLM title", sessiondb.TitleSourceLLM) {
		t.Fatal("llm did not replace derived")
	}
	check("a", "LLM title", "llm")
	if auto("a", "Derived again", sessiondb.TitleSourceDerived) {
		t.Fatal("derived replaced llm")
	}
	if auto("a", "LLM again", sessiondb.TitleSourceLLM) {
		t.Fatal("llm replaced llm (authority must be strictly lower)")
	}
	check("a", "LLM title", "llm")
	if err := s.SetTitle(ctx, "a", "User title"); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"derived", "llm", "branch", "branch_fallback"} {
		if auto("a", "Auto "+src, src) {
			t.Fatalf("%s replaced a user title", src)
		}
	}
	check("a", "User title", "user")

	// a titled row with a NULL title_source ranks as a user title
	s.exec(t, "UPDATE sessions SET title = 'Legacy', title_source = NULL WHERE id = 'legacy'")
	if auto("legacy", "LLM", sessiondb.TitleSourceLLM) {
		t.Fatal("llm replaced a legacy (NULL-source) title")
	}

	if !auto("b", "Branch title", sessiondb.TitleSourceBranch) {
		t.Fatal("branch on an untitled row not written")
	}
	if !auto("b", "Better", sessiondb.TitleSourceLLM) {
		t.Fatal("llm did not replace branch")
	}

	// an automatic title is unique like any other
	_, err := s.SetAutoTitle(ctx, "c", "User title", sessiondb.TitleSourceLLM)
	opsWantCode(t, err, sessiondb.ECONFLICT)

	for _, bad := range []string{"user", "", "bogus"} {
		_, err := s.SetAutoTitle(ctx, "c", "x", bad)
		opsWantCode(t, err, sessiondb.EINVALID)
	}
	_, err = s.SetAutoTitle(ctx, "nope", "x", sessiondb.TitleSourceLLM)
	opsWantCode(t, err, sessiondb.ENOTFOUND)
	_, err = s.SetAutoTitle(ctx, "c", strings.Repeat("z", 101), sessiondb.TitleSourceLLM)
	opsWantCode(t, err, sessiondb.EINVALID)
}

// ---------------------------------------------------------------- listing

func TestListSessionsRich(t *testing.T) {
	s := opsOpen(t)
	base := opsNow - 30*opsDay

	s.create(t, sessiondb.NewSession{ID: "sys", Source: "cli", StartedAt: base + 1})
	s.add(t, "sys",
		sessiondb.NewMessage{Role: sessiondb.RoleSystem, Content: "You are a helpful assistant.", Timestamp: base + 2},
		opsUser("Hello world", base+3),
		opsAssistant("Hi!", base+4),
		opsUser("Second question", base+5))

	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 4)
	s.create(t, sessiondb.NewSession{ID: "long", Source: "cli", StartedAt: base + 10})
	s.add(t, "long", opsUser(long, base+11))

	exact := strings.Repeat("0123456789", 6)
	s.create(t, sessiondb.NewSession{ID: "exact60", Source: "cli", StartedAt: base + 15})
	s.add(t, "exact60", opsUser(exact, base+16))

	s.create(t, sessiondb.NewSession{ID: "nouser", Source: "cli", StartedAt: base + 20})
	s.add(t, "nouser", opsAssistant("only the assistant spoke", base+21))

	s.create(t, sessiondb.NewSession{ID: "empty", Source: "cli", StartedAt: base + 30})

	s.create(t, sessiondb.NewSession{ID: "lines", Source: "cli", StartedAt: base + 40})
	s.add(t, "lines", opsUser("line one\nline two\r\nline three", base+41))

	s.create(t, sessiondb.NewSession{ID: "hidden-first", Source: "cli", StartedAt: base + 45})
	s.add(t, "hidden-first",
		sessiondb.NewMessage{Role: sessiondb.RoleUser, Content: "scaffolding", DisplayKind: "hidden", Timestamp: base + 46},
		opsUser("what the user typed", base+47))

	s.create(t, sessiondb.NewSession{ID: "titled", Source: "cli", StartedAt: base + 50})
	if err := s.SetTitle(ctx, "titled", "A title"); err != nil {
		t.Fatal(err)
	}

	rows, total := s.list(t, sessiondb.ListOptions{})
	if total != 8 || len(rows) != 8 {
		t.Fatalf("%d rows, total %d; want 8", len(rows), total)
	}
	if want := []string{"titled", "hidden-first", "lines", "empty", "nouser", "exact60", "long", "sys"}; !slices.Equal(opsSummaryIDs(rows), want) {
		t.Errorf("order = %v, want newest first %v", opsSummaryIDs(rows), want)
	}

	t.Run("preview skips system", func(t *testing.T) { // 144
		if got := opsRow(t, rows, "sys").Preview; got != "Hello world" {
			t.Errorf("preview = %q", got)
		}
	})
	t.Run("long preview", func(t *testing.T) { // 145
		got := opsRow(t, rows, "long").Preview
		if n := len([]rune(got)); n != 63 || !strings.HasSuffix(got, "...") || got != long[:60]+"..." {
			t.Errorf("preview = %q (%d chars), want the first 60 chars + ...", got, n)
		}
		if got := opsRow(t, rows, "exact60").Preview; got != exact {
			t.Errorf("60-char preview = %q, want it whole", got)
		}
	})
	t.Run("no user message", func(t *testing.T) { // 146
		for _, id := range []string{"nouser", "empty"} {
			if got := opsRow(t, rows, id).Preview; got != "" {
				t.Errorf("%s preview = %q", id, got)
			}
		}
	})
	t.Run("newlines collapsed", func(t *testing.T) { // 151
		got := opsRow(t, rows, "lines").Preview
		if strings.ContainsAny(got, "\r\n") || !strings.HasPrefix(got, "line one line two") || !strings.HasSuffix(got, "line three") {
			t.Errorf("preview = %q", got)
		}
	})
	t.Run("hidden message skipped", func(t *testing.T) {
		if got := opsRow(t, rows, "hidden-first").Preview; got != "what the user typed" {
			t.Errorf("preview = %q", got)
		}
	})
	t.Run("last active", func(t *testing.T) { // 147, 148
		r := opsRow(t, rows, "sys")
		if r.LastActive <= r.StartedAt || r.LastActive != base+5 {
			t.Errorf("last_active = %v, started %v; want the newest message %v", r.LastActive, r.StartedAt, base+5)
		}
		e := opsRow(t, rows, "empty")
		if e.LastActive != e.StartedAt {
			t.Errorf("empty: last_active = %v, want started_at %v", e.LastActive, e.StartedAt)
		}
		// a fresher last_activity_at wins; values outside the sane window are ignored
		s.exec(t, "UPDATE sessions SET last_activity_at = ? WHERE id = 'empty'", base+500)
		s.exec(t, "UPDATE sessions SET last_activity_at = ? WHERE id = 'nouser'", 9e12)
		rows, _ := s.list(t, sessiondb.ListOptions{})
		if got := opsRow(t, rows, "empty").LastActive; got != base+500 {
			t.Errorf("last_activity_at not used: %v", got)
		}
		if got := opsRow(t, rows, "nouser").LastActive; got != base+21 {
			t.Errorf("out-of-window last_activity_at used: %v", got)
		}
	})
	t.Run("title included", func(t *testing.T) { // 149
		if got := opsRow(t, rows, "titled").Title; opsStr(got) != "A title" {
			t.Errorf("title = %s", opsStr(got))
		}
	})
}

// TestListOrderByActivity: API.md §2 "Ordering: started_at DESC, or with
// order_by_last_active the freshest activity over the compression chain",
// where activity is last_active: the later of last_activity_at and the
// newest message, values outside the sane epoch window ignored.
func TestListOrderByActivity(t *testing.T) {
	s := opsOpen(t)
	base := opsNow - 10*opsDay
	s.create(t, sessiondb.NewSession{ID: "a", Source: "cli", StartedAt: base + 1})
	s.add(t, "a", opsUser("late message", base+100))
	s.create(t, sessiondb.NewSession{ID: "b", Source: "cli", StartedAt: base + 2})
	s.create(t, sessiondb.NewSession{ID: "c", Source: "cli", StartedAt: base + 3})
	s.exec(t, "UPDATE sessions SET last_activity_at = ? WHERE id = 'c'", base+50)
	o := sessiondb.ListOptions{OrderByActivity: true}

	t.Run("newest message counts", func(t *testing.T) {
		if ids := s.listIDs(t, o); !slices.Equal(ids, []string{"a", "c", "b"}) {
			t.Errorf("order = %v, want [a c b] (a's message at +100 is its last activity)", ids)
		}
	})
	t.Run("out-of-window stamp ignored", func(t *testing.T) {
		s.exec(t, "UPDATE sessions SET last_activity_at = ? WHERE id = 'b'", 9e12)
		if ids := s.listIDs(t, o); ids[0] == "b" {
			t.Errorf("order = %v: b's out-of-window last_activity_at 9e12 was used", ids)
		}
		s.exec(t, "UPDATE sessions SET last_activity_at = NULL WHERE id = 'b'")
	})
	t.Run("freshest activity over the compression chain", func(t *testing.T) {
		s.create(t, sessiondb.NewSession{ID: "root", Source: "cli", StartedAt: base})
		s.end(t, "root", sessiondb.EndReasonCompression, base+0.5)
		s.create(t, sessiondb.NewSession{ID: "tip", Source: "cli", ParentSessionID: "root", StartedAt: base + 0.5})
		s.add(t, "tip", opsUser("tip is busy", base+200))
		rows, _ := s.list(t, sessiondb.ListOptions{OrderByActivity: true, Limit: -1})
		if ids := opsSummaryIDs(rows); !slices.Equal(ids, []string{"tip", "a", "c", "b"}) {
			t.Errorf("order = %v, want [tip a c b] (the chain is as fresh as its tip)", ids)
		}
		// the rows carry last_active in the order the listing claims
		if !slices.IsSortedFunc(rows, func(x, y sessiondb.SessionSummary) int { return opsCmpFloat(y.LastActive, x.LastActive) }) {
			var la []float64
			for _, r := range rows {
				la = append(la, r.LastActive-base)
			}
			t.Errorf("last_active (relative) in listed order = %v, want descending", la)
		}
	})
}

func TestListSessionsSourcesAndPaging(t *testing.T) {
	s := opsOpen(t)
	base := opsNow - 10*opsDay
	srcs := []string{"cli", "telegram", "cli", "tool", "cron", "cli", "telegram", "tool"}
	for i, src := range srcs {
		id := fmt.Sprintf("%s-%d", src, i)
		s.create(t, sessiondb.NewSession{ID: id, Source: src, StartedAt: base + float64(i)})
		s.add(t, id, opsUser("hi "+id, base+float64(i)+0.5))
	}
	all := s.listIDs(t, sessiondb.ListOptions{})
	if len(all) != len(srcs) { // 71
		t.Fatalf("list = %v", all)
	}
	bySource := func(o sessiondb.ListOptions) map[string]int {
		m := map[string]int{}
		for _, id := range s.listIDs(t, o) {
			m[strings.SplitN(id, "-", 2)[0]]++
		}
		return m
	}
	for _, tt := range []struct {
		name string
		o    sessiondb.ListOptions
		want map[string]int
	}{
		{"source", sessiondb.ListOptions{Sources: []string{"telegram"}}, map[string]int{"telegram": 2}},                                              // 72, 150
		{"sources", sessiondb.ListOptions{Sources: []string{"telegram", "cron"}}, map[string]int{"telegram": 2, "cron": 1}},                          //
		{"only tool", sessiondb.ListOptions{Sources: []string{"tool"}}, map[string]int{"tool": 2}},                                                   // 164
		{"exclude one", sessiondb.ListOptions{ExcludeSources: []string{"tool"}}, map[string]int{"cli": 3, "telegram": 2, "cron": 1}},                 // 162
		{"exclude many", sessiondb.ListOptions{ExcludeSources: []string{"tool", "cron", "telegram"}}, map[string]int{"cli": 3}},                      // 163
		{"include and exclude", sessiondb.ListOptions{Sources: []string{"cli", "tool"}, ExcludeSources: []string{"tool"}}, map[string]int{"cli": 3}}, // 166
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := bySource(tt.o)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("sources = %v, want %v", got, tt.want)
			}
			_, total := s.list(t, tt.o) // 74: the count uses the same filters
			n := 0
			for _, v := range tt.want {
				n += v
			}
			if total != n {
				t.Errorf("total = %d, want %d", total, n)
			}
		})
	}

	t.Run("pagination", func(t *testing.T) { // 73
		var pages [][]string
		for off := 0; off < 10; off += 3 {
			rows, total := s.list(t, sessiondb.ListOptions{Limit: 3, Offset: off})
			if total != len(srcs) {
				t.Errorf("offset %d: total %d", off, total)
			}
			pages = append(pages, opsSummaryIDs(rows))
		}
		if len(pages[0]) != 3 || len(pages[1]) != 3 || len(pages[2]) != 2 || len(pages[3]) != 0 {
			t.Fatalf("pages = %v", pages)
		}
		joined := slices.Concat(pages...)
		if !slices.Equal(joined, all) {
			t.Errorf("pages %v do not add up to %v", pages, all)
		}
		if slices.Equal(pages[0], pages[1]) {
			t.Error("pages do not differ")
		}
	})
	t.Run("default limit 20", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			s.create(t, sessiondb.NewSession{ID: fmt.Sprintf("bulk-%02d", i), Source: "cli", StartedAt: base - float64(i)})
		}
		rows, total := s.list(t, sessiondb.ListOptions{})
		if len(rows) != 20 || total != 28 {
			t.Errorf("%d rows, total %d; want 20 of 28", len(rows), total)
		}
	})
	t.Run("message counts", func(t *testing.T) { // 75
		if got := s.get(t, "cli-0").MessageCount; got != 1 {
			t.Errorf("message_count = %d", got)
		}
		if n := count(t, s.raw, "SELECT COUNT(*) FROM messages"); n != len(srcs) {
			t.Errorf("%d messages in total", n)
		}
	})
}

func TestListSessionsChildren(t *testing.T) {
	s := opsOpen(t)
	base := opsNow - 5*opsDay
	s.create(t, sessiondb.NewSession{ID: "p", Source: "cli", StartedAt: base})
	s.add(t, "p", opsUser("parent", base+1))
	s.create(t, sessiondb.NewSession{ID: "branch", Source: "cli", ParentSessionID: "p", ModelConfig: `{"_branched_from":"p"}`, StartedAt: base + 2})
	s.create(t, sessiondb.NewSession{ID: "delegate", Source: "cli", ParentSessionID: "p", ModelConfig: `{"_delegate_from":"p"}`, StartedAt: base + 3})
	s.create(t, sessiondb.NewSession{ID: "reset", Source: "cli", ParentSessionID: "p", ModelConfig: `{"_reset_from":"p"}`, StartedAt: base + 4})

	ids := s.listIDs(t, sessiondb.ListOptions{})
	if !slices.Contains(ids, "branch") { // 152
		t.Errorf("branch child hidden: %v", ids)
	}
	if slices.Contains(ids, "delegate") { // 153
		t.Errorf("delegate child shown: %v", ids)
	}
	if !slices.Contains(ids, "reset") {
		t.Errorf("reset child hidden: %v", ids)
	}
	if _, total := s.list(t, sessiondb.ListOptions{}); total != 3 {
		t.Errorf("total = %d, want 3", total)
	}
	if ids := s.listIDs(t, sessiondb.ListOptions{IncludeChildren: true}); !slices.Contains(ids, "delegate") {
		t.Errorf("IncludeChildren hides the delegate: %v", ids)
	}
	if got := s.get(t, "branch").BranchedFrom; opsStr(got) != "p" {
		t.Errorf("_branched_from lifted = %s", opsStr(got))
	}
}

// opsChain builds the compression chain root → mid → tip of checklist
// 155–160, with a delegate child of root created before root ended and an
// unrelated session started between root and tip.
func opsChain(tb testing.TB, s *opsStore, base float64) {
	tb.Helper()
	s.create(tb, sessiondb.NewSession{ID: "root", Source: "cli", Model: "m-root", StartedAt: base})
	s.add(tb, "root", opsUser("root question", base+1))
	s.create(tb, sessiondb.NewSession{ID: "del", Source: "cli", ParentSessionID: "root", ModelConfig: `{"_delegate_from":"root"}`, StartedAt: base + 2})
	s.add(tb, "del", opsUser("subagent goal", base+2.5))
	s.end(tb, "root", sessiondb.EndReasonCompression, base+5)
	s.create(tb, sessiondb.NewSession{ID: "mid", Source: "cli", ParentSessionID: "root", StartedAt: base + 5})
	s.add(tb, "mid", opsUser("mid question", base+6))
	s.end(tb, "mid", sessiondb.EndReasonCompression, base+9)
	s.create(tb, sessiondb.NewSession{ID: "tip", Source: "cli", Model: "m-tip", ParentSessionID: "mid", StartedAt: base + 10})
	s.add(tb, "tip", opsUser("tip question", base+11), opsAssistant("tip answer", base+12))
	s.create(tb, sessiondb.NewSession{ID: "other", Source: "cli", StartedAt: base + 7})
}

func TestCompressionTipAndProjection(t *testing.T) {
	s := opsOpen(t)
	base := opsNow - 3*opsDay
	opsChain(t, s, base)

	t.Run("tip walk", func(t *testing.T) { // 155–157
		for _, id := range []string{"root", "mid", "tip"} {
			got, err := s.CompressionTip(ctx, id)
			if err != nil || got != "tip" {
				t.Errorf("CompressionTip(%s) = %q, %v; want tip", id, got, err)
			}
		}
		if got, err := s.CompressionTip(ctx, "other"); err != nil || got != "other" {
			t.Errorf("uncompressed session: tip %q, %v", got, err)
		}
		_, err := s.CompressionTip(ctx, "nope")
		opsWantCode(t, err, sessiondb.ENOTFOUND)
	})
	t.Run("chain", func(t *testing.T) {
		for _, id := range []string{"root", "mid", "tip"} {
			got, err := s.CompressionChain(ctx, id)
			if err != nil || !slices.Equal(got, []string{"root", "mid", "tip"}) {
				t.Errorf("CompressionChain(%s) = %v, %v", id, got, err)
			}
		}
	})
	t.Run("projected list", func(t *testing.T) { // 158, 160
		rows, total := s.list(t, sessiondb.ListOptions{})
		if ids := opsSummaryIDs(rows); !slices.Equal(ids, []string{"other", "tip"}) {
			t.Fatalf("list = %v, want [other tip] (the chain once, as its tip, ordered by the root's start)", ids)
		}
		if total != 2 {
			t.Errorf("total = %d, want 2", total)
		}
		r := opsRow(t, rows, "tip")
		if opsStr(r.LineageRootID) != "root" {
			t.Errorf("_lineage_root_id = %s", opsStr(r.LineageRootID))
		}
		if r.Preview != "tip question" {
			t.Errorf("preview = %q, want the tip's", r.Preview)
		}
		if r.EndedAt != nil || r.EndReason != nil {
			t.Errorf("ended_at = %v, end_reason = %s; want the tip's (open)", r.EndedAt, opsStr(r.EndReason))
		}
		if r.MessageCount != 2 || opsStr(r.Model) != "m-tip" {
			t.Errorf("message_count %d, model %s; want the tip's", r.MessageCount, opsStr(r.Model))
		}
		if r.LastActive != base+12 {
			t.Errorf("last_active = %v, want the tip's %v", r.LastActive, base+12)
		}
		// API.md §2: "The root's started_at is kept, so sorting stays stable."
		if r.StartedAt != base {
			t.Errorf("started_at = %.0f, want the root's %.0f (API.md §2 compression projection: the tip's is %.0f)", r.StartedAt, base, base+10)
		}
		// only the listed fields come from the tip; the root's lineage position stays
		if r.ParentSessionID != nil {
			t.Errorf("parent_session_id = %s, want the root's (NULL)", opsStr(r.ParentSessionID))
		}
	})
	t.Run("raw chains", func(t *testing.T) { // 154, 159
		rows, _ := s.list(t, sessiondb.ListOptions{RawChains: true, Limit: -1})
		if ids := opsSummaryIDs(rows); !slices.Equal(ids, []string{"other", "root"}) {
			t.Fatalf("raw list = %v, want [other root]", ids)
		}
		r := opsRow(t, rows, "root")
		if r.LineageRootID != nil || r.Preview != "root question" || opsStr(r.EndReason) != "compression" {
			t.Errorf("raw root row: lineage %s, preview %q, end %s", opsStr(r.LineageRootID), r.Preview, opsStr(r.EndReason))
		}
		all := s.listIDs(t, sessiondb.ListOptions{RawChains: true, IncludeChildren: true})
		opsSameSet(t, "raw list with children", all, []string{"root", "del", "mid", "tip", "other"})
	})
	t.Run("broken chain", func(t *testing.T) { // 161
		s.create(t, sessiondb.NewSession{ID: "broken", Source: "cli", StartedAt: base + 20})
		s.add(t, "broken", opsUser("broken question", base+21))
		// a subagent run spawned before the end is not a continuation
		s.create(t, sessiondb.NewSession{ID: "broken-del", Source: "cli", ParentSessionID: "broken", ModelConfig: `{"_delegate_from":"broken"}`, StartedAt: base + 22})
		s.end(t, "broken", sessiondb.EndReasonCompression, base+25)
		if got, err := s.CompressionTip(ctx, "broken"); err != nil || got != "broken" {
			t.Errorf("CompressionTip(broken) = %q, %v", got, err)
		}
		rows, _ := s.list(t, sessiondb.ListOptions{})
		r := opsRow(t, rows, "broken")
		if r.LineageRootID != nil || r.Preview != "broken question" {
			t.Errorf("broken chain row: lineage %s, preview %q", opsStr(r.LineageRootID), r.Preview)
		}
		if slices.Contains(opsSummaryIDs(rows), "broken-del") {
			t.Error("delegate shown")
		}
	})
}

// ---------------------------------------------------------------- lineage

func TestLineage(t *testing.T) {
	s := opsOpen(t)
	base := opsNow - opsDay
	opsChain(t, s, base)
	s.create(t, sessiondb.NewSession{ID: "br", Source: "cli", ParentSessionID: "root", ModelConfig: `{"_branched_from":"root"}`, StartedAt: base + 3})
	s.create(t, sessiondb.NewSession{ID: "plain", Source: "cli", ParentSessionID: "br", StartedAt: base + 4})
	s.create(t, sessiondb.NewSession{ID: "rs", Source: "cli", ParentSessionID: "tip", ModelConfig: `{"_reset_from":"tip"}`, StartedAt: base + 13})
	if err := s.SetTitle(ctx, "tip", "The tip"); err != nil {
		t.Fatal(err)
	}

	var render func(n *sessiondb.LineageNode, depth int) string
	render = func(n *sessiondb.LineageNode, depth int) string {
		out := fmt.Sprintf("%s%s:%s\n", strings.Repeat("  ", depth), n.ID, n.Kind)
		for _, c := range n.Children {
			out += render(c, depth+1)
		}
		return out
	}
	want := `root:root
  del:delegate
  br:branch
    plain:child
  mid:compression
    tip:compression
      rs:reset
`
	for _, from := range []string{"root", "tip", "plain", "del", "rs"} {
		tree, err := s.Lineage(ctx, from)
		if err != nil {
			t.Fatalf("Lineage(%s): %v", from, err)
		}
		if got := render(tree, 0); got != want {
			t.Errorf("Lineage(%s) =\n%s\nwant\n%s", from, got, want)
		}
	}
	tree, _ := s.Lineage(ctx, "tip")
	tip := tree.Children[2].Children[0]
	if opsStr(tip.Title) != "The tip" || tip.MessageCount != 2 || tip.EndedAt != nil || tip.StartedAt != base+10 || tip.Source != "cli" {
		t.Errorf("tip node = %+v", tip)
	}
	if r := tree; opsStr(r.EndReason) != "compression" || r.EndedAt == nil || *r.EndedAt != base+5 {
		t.Errorf("root node end = %s at %v", opsStr(r.EndReason), r.EndedAt)
	}

	lone, err := s.Lineage(ctx, "other")
	if err != nil || lone.ID != "other" || lone.Kind != "root" || len(lone.Children) != 0 {
		t.Errorf("Lineage(other) = %+v, %v", lone, err)
	}
	_, err = s.Lineage(ctx, "nope")
	opsWantCode(t, err, sessiondb.ENOTFOUND)
}

// ---------------------------------------------------------------- delete

func TestDeleteSession(t *testing.T) {
	s := opsOpen(t)
	t.Run("removes the row and its messages", func(t *testing.T) { // 76
		s.create(t, sessiondb.NewSession{ID: "d1", Source: "cli", SystemPrompt: "prompt only d1 uses"})
		s.add(t, "d1", opsUser("deleteme zebra", 0), opsAssistant("zebra answer", 0))
		if err := s.UpdateTokenCounts(ctx, "d1", sessiondb.TokenUpdate{InputTokens: 5, Model: "m"}); err != nil {
			t.Fatal(err)
		}
		s.create(t, sessiondb.NewSession{ID: "keep", Source: "cli", SystemPrompt: "shared prompt"})
		s.add(t, "keep", opsUser("zebra kept", 0))
		s.create(t, sessiondb.NewSession{ID: "keep2", Source: "cli", SystemPrompt: "shared prompt"})

		ids, err := s.DeleteSession(ctx, "d1")
		if err != nil || !slices.Equal(ids, []string{"d1"}) {
			t.Fatalf("DeleteSession = %v, %v", ids, err)
		}
		if s.exists(t, "d1") {
			t.Error("row kept")
		}
		if n := count(t, s.raw, "SELECT COUNT(*) FROM messages WHERE session_id = 'd1'"); n != 0 {
			t.Errorf("%d messages kept", n)
		}
		if n := count(t, s.raw, "SELECT COUNT(*) FROM session_model_usage WHERE session_id = 'd1'"); n != 0 {
			t.Errorf("%d usage rows kept", n)
		}
		if n := count(t, s.raw, "SELECT COUNT(*) FROM system_prompts WHERE prompt = 'prompt only d1 uses'"); n != 0 {
			t.Error("unreferenced system prompt kept")
		}
		if n := count(t, s.raw, "SELECT COUNT(*) FROM system_prompts WHERE prompt = 'shared prompt'"); n != 1 {
			t.Error("shared system prompt collected")
		}
		hits, err := s.Search(ctx, "zebra", sessiondb.SearchOptions{})
		if err != nil || len(hits) != 1 || hits[0].SessionID != "keep" {
			t.Errorf("search after delete = %+v, %v", hits, err)
		}
		checkIntegrity(t, s.raw)

		if _, err := s.DeleteSession(ctx, "keep"); err != nil {
			t.Fatal(err)
		}
		if n := count(t, s.raw, "SELECT COUNT(*) FROM system_prompts WHERE prompt = 'shared prompt'"); n != 1 {
			t.Error("system prompt still used by keep2 collected")
		}
	})
	t.Run("unknown", func(t *testing.T) { // 77
		ids, err := s.DeleteSession(ctx, "nope")
		opsWantCode(t, err, sessiondb.ENOTFOUND)
		if len(ids) != 0 {
			t.Errorf("ids = %v", ids)
		}
	})
	t.Run("delegates go, other children are orphaned", func(t *testing.T) { // 91
		s.create(t, sessiondb.NewSession{ID: "p", Source: "cli"})
		s.create(t, sessiondb.NewSession{ID: "d1", Source: "cli", ParentSessionID: "p", ModelConfig: `{"_delegate_from":"p"}`})
		s.create(t, sessiondb.NewSession{ID: "d2", Source: "cli", ParentSessionID: "d1", ModelConfig: `{"_delegate_from":"d1"}`})
		s.create(t, sessiondb.NewSession{ID: "d1-plain", Source: "cli", ParentSessionID: "d1"})
		s.create(t, sessiondb.NewSession{ID: "br", Source: "cli", ParentSessionID: "p", ModelConfig: `{"_branched_from":"p"}`})
		s.create(t, sessiondb.NewSession{ID: "c", Source: "cli", ParentSessionID: "p"})
		s.create(t, sessiondb.NewSession{ID: "gc", Source: "cli", ParentSessionID: "c"})
		for _, id := range []string{"p", "d1", "d2"} {
			s.add(t, id, opsUser("message of "+id, 0))
		}

		targets, err := s.DeleteTargets(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		opsSameSet(t, "DeleteTargets", targets, []string{"p", "d1", "d2"})
		ids, err := s.DeleteSession(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		opsSameSet(t, "deleted", ids, []string{"p", "d1", "d2"})
		if len(ids) == 0 || ids[0] != "p" {
			t.Errorf("deleted = %v, want the session first", ids)
		}
		for _, id := range []string{"p", "d1", "d2"} {
			if s.exists(t, id) {
				t.Errorf("%s kept", id)
			}
		}
		if n := count(t, s.raw, "SELECT COUNT(*) FROM messages WHERE session_id IN ('p', 'd1', 'd2')"); n != 0 {
			t.Errorf("%d messages kept", n)
		}
		for _, id := range []string{"br", "c", "d1-plain"} {
			if !s.exists(t, id) {
				t.Errorf("%s deleted", id)
			} else if p := s.parent(t, id); p != "" {
				t.Errorf("%s parent = %q, want NULL", id, p)
			}
		}
		if p := s.parent(t, "gc"); p != "c" {
			t.Errorf("grandchild parent = %q, want c (untouched)", p)
		}
		checkIntegrity(t, s.raw)
	})
}

// ---------------------------------------------------------------- prune

// opsAged creates an ended session whose start and messages lie age days
// before the store's clock.
func opsAged(tb testing.TB, s *opsStore, id, source string, age float64, reason string) {
	tb.Helper()
	at := opsNow - age*opsDay
	s.create(tb, sessiondb.NewSession{ID: id, Source: source, StartedAt: at})
	s.add(tb, id, opsUser("question of "+id, at+1), opsAssistant("answer", at+2))
	if reason != "" {
		s.end(tb, id, reason, at+3)
	}
}

func opsPrune(tb testing.TB, s *opsStore, o sessiondb.PruneOptions) []string {
	tb.Helper()
	cands, err := s.Prune(ctx, o)
	if err != nil {
		tb.Fatalf("Prune(%+v): %v", o, err)
	}
	return opsCandidateIDs(cands)
}

var ops90 = opsNow - 90*opsDay

func TestPruneBasics(t *testing.T) {
	s := opsOpen(t)
	opsAged(t, s, "old", "cli", 100, "user_exit")
	opsAged(t, s, "new", "cli", 10, "user_exit")
	opsAged(t, s, "open", "cli", 200, "") // 87: never ended
	opsAged(t, s, "old-tg", "telegram", 120, "user_exit")
	if err := s.SetTitle(ctx, "old", "Old one"); err != nil {
		t.Fatal(err)
	}

	// 88: source filter
	got := opsPrune(t, s, sessiondb.PruneOptions{Before: ops90, Sources: []string{"telegram"}})
	opsSameSet(t, "pruned telegram", got, []string{"old-tg"})

	// 86, 87
	cands, err := s.Prune(ctx, sessiondb.PruneOptions{Before: ops90})
	if err != nil {
		t.Fatal(err)
	}
	opsSameSet(t, "pruned", opsCandidateIDs(cands), []string{"old"})
	c := cands[0]
	at := opsNow - 100*opsDay
	if c.Source != "cli" || opsStr(c.Title) != "Old one" || c.StartedAt != at || c.LastActive != at+2 ||
		c.EndedAt == nil || *c.EndedAt != at+3 || c.MessageCount != 2 || c.Archived {
		t.Errorf("candidate = %+v", c)
	}
	for id, want := range map[string]bool{"old": false, "new": true, "open": true, "old-tg": false} {
		if s.exists(t, id) != want {
			t.Errorf("%s exists = %v, want %v", id, !want, want)
		}
	}
	if n := count(t, s.raw, "SELECT COUNT(*) FROM messages WHERE session_id = 'old'"); n != 0 {
		t.Errorf("%d messages of a pruned session kept", n)
	}
	checkIntegrity(t, s.raw)

	_, err = s.Prune(ctx, sessiondb.PruneOptions{})
	opsWantCode(t, err, sessiondb.EINVALID)
}

func TestPruneChains(t *testing.T) {
	t.Run("multi-level chain is orphaned correctly", func(t *testing.T) { // 89
		s := opsOpen(t)
		opsAged(t, s, "A", "cli", 200, "")
		s.end(t, "A", "compressed", 0)
		for _, c := range []struct {
			id, parent string
			age        float64
		}{{"B", "A", 150}, {"C", "B", 10}, {"D", "C", 5}} {
			at := opsNow - c.age*opsDay
			s.create(t, sessiondb.NewSession{ID: c.id, Source: "cli", ParentSessionID: c.parent, StartedAt: at})
			s.add(t, c.id, opsUser("q "+c.id, at+1))
			s.end(t, c.id, "compressed", at+2)
		}
		opsSameSet(t, "pruned", opsPrune(t, s, sessiondb.PruneOptions{Before: ops90}), []string{"A", "B"})
		if !s.exists(t, "C") || !s.exists(t, "D") {
			t.Fatal("recent sessions pruned")
		}
		if p := s.parent(t, "C"); p != "" {
			t.Errorf("C parent = %q, want NULL", p)
		}
		if p := s.parent(t, "D"); p != "C" {
			t.Errorf("D parent = %q, want C", p)
		}
		checkIntegrity(t, s.raw)
	})
	t.Run("entirely old chain", func(t *testing.T) { // 90
		s := opsOpen(t)
		prev := ""
		for i, id := range []string{"A", "B", "C"} {
			at := opsNow - float64(300-i*10)*opsDay
			s.create(t, sessiondb.NewSession{ID: id, Source: "cli", ParentSessionID: prev, StartedAt: at})
			s.add(t, id, opsUser("q "+id, at+1))
			s.end(t, id, "compressed", at+2)
			prev = id
		}
		if got := opsPrune(t, s, sessiondb.PruneOptions{Before: ops90}); len(got) != 3 {
			t.Errorf("pruned %v, want 3", got)
		}
		if n := count(t, s.raw, "SELECT COUNT(*) FROM sessions"); n != 0 {
			t.Errorf("%d sessions left", n)
		}
	})
	t.Run("entirely old compression chain", func(t *testing.T) {
		s := opsOpen(t)
		opsAged(t, s, "root", "cli", 300, sessiondb.EndReasonCompression)
		at := opsNow - 290*opsDay
		s.create(t, sessiondb.NewSession{ID: "mid", Source: "cli", ParentSessionID: "root", StartedAt: at})
		s.add(t, "mid", opsUser("q", at+1))
		s.end(t, "mid", sessiondb.EndReasonCompression, at+2)
		s.create(t, sessiondb.NewSession{ID: "tip", Source: "cli", ParentSessionID: "mid", StartedAt: at + 10})
		s.end(t, "tip", "user_exit", at+20)
		opsSameSet(t, "pruned", opsPrune(t, s, sessiondb.PruneOptions{Before: ops90}), []string{"root", "mid", "tip"})
	})
	t.Run("compression ancestor with recent continuation is kept", func(t *testing.T) {
		s := opsOpen(t)
		opsAged(t, s, "root", "cli", 300, sessiondb.EndReasonCompression)
		at := opsNow - 290*opsDay
		s.create(t, sessiondb.NewSession{ID: "mid", Source: "cli", ParentSessionID: "root", StartedAt: at})
		s.add(t, "mid", opsUser("q", at+1))
		s.end(t, "mid", sessiondb.EndReasonCompression, at+2)
		recent := opsNow - 5*opsDay
		s.create(t, sessiondb.NewSession{ID: "tip", Source: "cli", ParentSessionID: "mid", StartedAt: recent})
		s.end(t, "tip", "user_exit", recent+1)
		opsAged(t, s, "plain-old", "cli", 300, "user_exit")

		if got := opsPrune(t, s, sessiondb.PruneOptions{Before: ops90}); !slices.Equal(got, []string{"plain-old"}) {
			t.Errorf("pruned %v, want only plain-old (root and mid continue into a recent tip)", got)
		}
		for _, id := range []string{"root", "mid", "tip"} {
			if !s.exists(t, id) {
				t.Errorf("%s pruned", id)
			}
		}
		if p := s.parent(t, "mid"); p != "root" {
			t.Errorf("mid parent = %q", p)
		}
	})
	t.Run("compression ancestor of an open old tip is kept", func(t *testing.T) {
		s := opsOpen(t)
		opsAged(t, s, "root", "cli", 300, sessiondb.EndReasonCompression)
		at := opsNow - 290*opsDay
		s.create(t, sessiondb.NewSession{ID: "tip", Source: "cli", ParentSessionID: "root", StartedAt: at})
		if got := opsPrune(t, s, sessiondb.PruneOptions{Before: ops90}); len(got) != 0 {
			t.Errorf("pruned %v, want nothing", got)
		}
	})
}

func TestPrunePinned(t *testing.T) {
	build := func(t *testing.T) *opsStore {
		s := opsOpen(t)
		opsAged(t, s, "pinned", "cli", 200, "user_exit")
		if err := s.SetPinned(ctx, "pinned", true); err != nil {
			t.Fatal(err)
		}
		// chain 1: only the tip row is pinned (as an older writer may leave it)
		opsAged(t, s, "r1", "cli", 300, sessiondb.EndReasonCompression)
		opsAgedChild(t, s, "t1", "r1", 290, "user_exit")
		s.exec(t, "UPDATE sessions SET pinned = 1 WHERE id = 't1'")
		// chain 2: only the root row is pinned
		opsAged(t, s, "r2", "cli", 300, sessiondb.EndReasonCompression)
		opsAgedChild(t, s, "m2", "r2", 295, sessiondb.EndReasonCompression)
		opsAgedChild(t, s, "t2", "m2", 290, "user_exit")
		s.exec(t, "UPDATE sessions SET pinned = 1 WHERE id = 'r2'")
		opsAged(t, s, "loose", "cli", 300, "user_exit")
		return s
	}
	t.Run("kept", func(t *testing.T) {
		s := build(t)
		if got := opsPrune(t, s, sessiondb.PruneOptions{Before: ops90}); !slices.Equal(got, []string{"loose"}) {
			t.Errorf("pruned %v, want only loose (pinned rows and every segment of a pinned chain stay)", got)
		}
	})
	t.Run("IncludePinned", func(t *testing.T) {
		s := build(t)
		got := opsPrune(t, s, sessiondb.PruneOptions{Before: ops90, IncludePinned: true})
		opsSameSet(t, "pruned", got, []string{"pinned", "r1", "t1", "r2", "m2", "t2", "loose"})
	})
}

// opsAgedChild creates a child session age days old.
func opsAgedChild(tb testing.TB, s *opsStore, id, parent string, age float64, reason string) {
	tb.Helper()
	at := opsNow - age*opsDay
	s.create(tb, sessiondb.NewSession{ID: id, Source: "cli", ParentSessionID: parent, StartedAt: at})
	s.add(tb, id, opsUser("q "+id, at+1))
	if reason != "" {
		s.end(tb, id, reason, at+2)
	}
}

func TestPruneLastActivity(t *testing.T) {
	s := opsOpen(t)
	opsAged(t, s, "old", "cli", 100, "")
	s.add(t, "old", opsUser("came back yesterday", opsNow-opsDay))
	s.end(t, "old", "user_exit", 0)

	opsAged(t, s, "stamped", "cli", 100, "user_exit")
	s.exec(t, "UPDATE sessions SET last_activity_at = ? WHERE id = 'stamped'", opsNow-2*opsDay)

	opsAged(t, s, "garbage", "cli", 100, "user_exit") // an out-of-window stamp is ignored
	s.exec(t, "UPDATE sessions SET last_activity_at = ? WHERE id = 'garbage'", 5e246)

	s.create(t, sessiondb.NewSession{ID: "bare", Source: "cli", StartedAt: opsNow - 100*opsDay}) // no messages: started_at
	s.end(t, "bare", "user_exit", 0)

	got := opsPrune(t, s, sessiondb.PruneOptions{Before: ops90})
	opsSameSet(t, "pruned", got, []string{"garbage", "bare"})
}

func TestPruneDryRun(t *testing.T) {
	build := func(t *testing.T) *opsStore {
		s := opsOpen(t)
		opsAged(t, s, "a", "cli", 100, "user_exit")
		opsAged(t, s, "b", "telegram", 150, "user_exit")
		opsAged(t, s, "c", "cli", 5, "user_exit")
		opsAged(t, s, "open", "cli", 300, "")
		opsAged(t, s, "r", "cli", 300, sessiondb.EndReasonCompression)
		opsAgedChild(t, s, "r-tip", "r", 1, "user_exit")
		opsAged(t, s, "x", "cli", 300, "compressed")
		opsAgedChild(t, s, "x-child", "x", 200, "")
		return s
	}
	s := build(t)
	before := count(t, s.raw, "SELECT COUNT(*) FROM sessions")
	beforeMsgs := count(t, s.raw, "SELECT COUNT(*) FROM messages")
	dry := opsPrune(t, s, sessiondb.PruneOptions{Before: ops90, DryRun: true})
	if n := count(t, s.raw, "SELECT COUNT(*) FROM sessions"); n != before {
		t.Fatalf("dry run deleted %d sessions", before-n)
	}
	if n := count(t, s.raw, "SELECT COUNT(*) FROM messages"); n != beforeMsgs {
		t.Fatalf("dry run deleted %d messages", beforeMsgs-n)
	}
	if p := s.parent(t, "x-child"); p != "x" {
		t.Fatalf("dry run orphaned x-child")
	}
	real := opsPrune(t, s, sessiondb.PruneOptions{Before: ops90})
	if !slices.Equal(dry, real) {
		t.Errorf("dry run %v, real prune %v", dry, real)
	}
	opsSameSet(t, "pruned", real, []string{"a", "b", "x"})
	if n := count(t, s.raw, "SELECT COUNT(*) FROM sessions"); n != before-len(real) {
		t.Errorf("%d sessions left, want %d", n, before-len(real))
	}
	checkIntegrity(t, s.raw)
}

// ---------------------------------------------------------------- flags and clear

func TestLineageFlags(t *testing.T) {
	s := opsOpen(t)
	opsChain(t, s, opsNow-opsDay)
	flags := func(id string) (archived, pinned, hidden int) {
		t.Helper()
		if err := s.raw.QueryRow("SELECT COALESCE(archived, 0), COALESCE(pinned, 0), COALESCE(hidden, 0) FROM sessions WHERE id = ?", id).Scan(&archived, &pinned, &hidden); err != nil {
			t.Fatal(err)
		}
		return
	}
	chain := []string{"root", "mid", "tip"}

	t.Run("archive applies to the whole chain", func(t *testing.T) {
		if err := s.SetArchived(ctx, "mid", true); err != nil {
			t.Fatal(err)
		}
		for _, id := range chain {
			if a, _, _ := flags(id); a != 1 {
				t.Errorf("%s not archived", id)
			}
		}
		if a, _, _ := flags("other"); a != 0 {
			t.Error("an unrelated session was archived")
		}
		if ids := s.listIDs(t, sessiondb.ListOptions{}); !slices.Equal(ids, []string{"other"}) {
			t.Errorf("default list = %v, want archived chains hidden", ids)
		}
		if ids := s.listIDs(t, sessiondb.ListOptions{IncludeArchived: true}); !slices.Equal(ids, []string{"other", "tip"}) {
			t.Errorf("IncludeArchived list = %v", ids)
		}
		rows, total := s.list(t, sessiondb.ListOptions{ArchivedOnly: true})
		if ids := opsSummaryIDs(rows); !slices.Equal(ids, []string{"tip"}) || total != 1 {
			t.Errorf("ArchivedOnly list = %v (total %d)", ids, total)
		}
		s.exec(t, "UPDATE sessions SET auto_archived = 1 WHERE id IN ('root', 'mid', 'tip')")
		if err := s.SetArchived(ctx, "tip", false); err != nil {
			t.Fatal(err)
		}
		for _, id := range chain {
			if a, _, _ := flags(id); a != 0 {
				t.Errorf("%s still archived", id)
			}
		}
		if n := count(t, s.raw, "SELECT COUNT(*) FROM sessions WHERE auto_archived = 1"); n != 0 {
			t.Errorf("unarchive left %d auto_archived", n)
		}
	})
	t.Run("pin applies to the whole chain", func(t *testing.T) {
		if err := s.SetPinned(ctx, "root", true); err != nil {
			t.Fatal(err)
		}
		for _, id := range chain {
			if _, p, _ := flags(id); p != 1 {
				t.Errorf("%s not pinned", id)
			}
		}
		rows, _ := s.list(t, sessiondb.ListOptions{PinnedOnly: true})
		if ids := opsSummaryIDs(rows); !slices.Equal(ids, []string{"tip"}) || opsStr(rows[0].LineageRootID) != "root" {
			t.Errorf("PinnedOnly list = %v", ids)
		}
		if err := s.SetPinned(ctx, "tip", false); err != nil {
			t.Fatal(err)
		}
		for _, id := range chain {
			if _, p, _ := flags(id); p != 0 {
				t.Errorf("%s still pinned", id)
			}
		}
	})
	t.Run("pin un-hides", func(t *testing.T) {
		s.exec(t, "UPDATE sessions SET hidden = 1 WHERE id IN ('root', 'mid', 'tip', 'other')")
		if ids := s.listIDs(t, sessiondb.ListOptions{}); len(ids) != 0 {
			t.Fatalf("hidden sessions listed: %v", ids)
		}
		if ids := s.listIDs(t, sessiondb.ListOptions{IncludeHidden: true}); !slices.Equal(ids, []string{"other", "tip"}) {
			t.Errorf("IncludeHidden list = %v", ids)
		}
		if err := s.SetPinned(ctx, "tip", true); err != nil {
			t.Fatal(err)
		}
		for _, id := range chain {
			if _, p, h := flags(id); p != 1 || h != 0 {
				t.Errorf("%s: pinned %d hidden %d", id, p, h)
			}
		}
		if ids := s.listIDs(t, sessiondb.ListOptions{}); !slices.Equal(ids, []string{"tip"}) {
			t.Errorf("list after pin = %v", ids)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		opsWantCode(t, s.SetArchived(ctx, "nope", true), sessiondb.ENOTFOUND)
		opsWantCode(t, s.SetPinned(ctx, "nope", true), sessiondb.ENOTFOUND)
	})
}

func TestClearMessages(t *testing.T) {
	s := opsOpen(t)
	s.create(t, sessiondb.NewSession{ID: "c", Source: "cli"})
	if err := s.SetTitle(ctx, "c", "Keep me"); err != nil {
		t.Fatal(err)
	}
	s.add(t, "c",
		opsUser("platypus question", 0),
		sessiondb.NewMessage{Role: sessiondb.RoleAssistant, Content: "calling", ToolCalls: []byte(`[{"id":"1","function":{"name":"platypus_tool"}},{"id":"2"}]`)},
		sessiondb.NewMessage{Role: sessiondb.RoleTool, Content: "platypus result", ToolCallID: "1", ToolName: "shell"})
	if err := s.UpdateTokenCounts(ctx, "c", sessiondb.TokenUpdate{InputTokens: 100, OutputTokens: 7}); err != nil {
		t.Fatal(err)
	}
	s.create(t, sessiondb.NewSession{ID: "other", Source: "cli"})
	s.add(t, "other", opsUser("platypus elsewhere", 0))

	n, err := s.ClearMessages(ctx, "c")
	if err != nil || n != 3 {
		t.Fatalf("ClearMessages = %d, %v; want 3", n, err)
	}
	got := s.get(t, "c")
	if got.MessageCount != 0 || got.ToolCallCount != 0 {
		t.Errorf("counters = %d messages, %d tool calls", got.MessageCount, got.ToolCallCount)
	}
	if opsStr(got.Title) != "Keep me" || got.InputTokens != 100 || got.OutputTokens != 7 {
		t.Errorf("session changed: title %s, tokens %d/%d", opsStr(got.Title), got.InputTokens, got.OutputTokens)
	}
	if ms, err := s.Messages(ctx, "c", sessiondb.MessageFilter{}); err != nil || len(ms) != 0 {
		t.Errorf("messages left: %d, %v", len(ms), err)
	}
	hits, err := s.Search(ctx, "platypus", sessiondb.SearchOptions{})
	if err != nil || len(hits) != 1 || hits[0].SessionID != "other" {
		t.Errorf("search after clear = %+v, %v", hits, err)
	}
	checkIntegrity(t, s.raw)
	// the session takes new messages
	s.add(t, "c", opsUser("fresh start", 0))
	if got := s.get(t, "c").MessageCount; got != 1 {
		t.Errorf("message_count after a new append = %d", got)
	}
	_, err = s.ClearMessages(ctx, "nope")
	opsWantCode(t, err, sessiondb.ENOTFOUND)
}

// ---------------------------------------------------------------- usage

func TestUsageStats(t *testing.T) {
	s := opsOpen(t)
	f := func(v float64) *float64 { return &v }
	day1 := opsNow - 2*opsDay
	s.create(t, sessiondb.NewSession{ID: "s1", Source: "cli", Model: "m-a", StartedAt: day1})
	s.add(t, "s1", opsUser("one", day1+1), opsAssistant("two", day1+2))
	upd := func(id string, u sessiondb.TokenUpdate) {
		t.Helper()
		if err := s.UpdateTokenCounts(ctx, id, u); err != nil {
			t.Fatal(err)
		}
	}
	upd("s1", sessiondb.TokenUpdate{InputTokens: 100, OutputTokens: 50, CacheReadTokens: 7, APICallCount: 1, Model: "m-a", BillingProvider: "openai", EstimatedCostUSD: f(0.5)})
	upd("s1", sessiondb.TokenUpdate{InputTokens: 100, OutputTokens: 50, APICallCount: 1, Model: "m-a", BillingProvider: "openai", EstimatedCostUSD: f(0.25)})
	upd("s1", sessiondb.TokenUpdate{InputTokens: 10, OutputTokens: 5, APICallCount: 1, Model: "m-a", BillingProvider: "openai", Task: "title"})

	s.create(t, sessiondb.NewSession{ID: "s2", Source: "telegram", StartedAt: day1 + 3600})
	s.add(t, "s2", opsUser("three", day1+3601))
	upd("s2", sessiondb.TokenUpdate{InputTokens: 300, OutputTokens: 100, ReasoningTokens: 40, APICallCount: 2, Model: "m-b", BillingProvider: "anthropic", ActualCostUSD: f(1.5)})

	old := opsNow - 40*opsDay
	s.create(t, sessiondb.NewSession{ID: "s3", Source: "cli", StartedAt: old})
	upd("s3", sessiondb.TokenUpdate{InputTokens: 1000, CacheWriteTokens: 3, APICallCount: 4, Model: "m-a", BillingProvider: "openai"})

	s.create(t, sessiondb.NewSession{ID: "s4", Source: "cron", StartedAt: day1 + 7200}) // no usage at all

	stats := func(by string, since float64) []sessiondb.UsageRow {
		t.Helper()
		rows, err := s.UsageStats(ctx, by, since)
		if err != nil {
			t.Fatalf("UsageStats(%q): %v", by, err)
		}
		return rows
	}
	approx := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

	t.Run("by model", func(t *testing.T) {
		rows := stats(sqlite.ByModel, 0)
		if len(rows) != 3 {
			t.Fatalf("rows = %+v", rows)
		}
		type key struct{ model, provider, task string }
		got := map[key]sessiondb.UsageRow{}
		var order []key
		for _, r := range rows {
			k := key{r.Key, r.Provider, r.Task}
			got[k] = r
			order = append(order, k)
		}
		a := got[key{"m-a", "openai", ""}]
		if a.Sessions != 2 || a.InputTokens != 1200 || a.OutputTokens != 100 || a.APICalls != 6 ||
			a.CacheReadTokens != 7 || a.CacheWriteTokens != 3 || !approx(a.EstimatedCostUSD, 0.75) || a.Messages != 2 {
			t.Errorf("m-a/openai = %+v", a)
		}
		b := got[key{"m-b", "anthropic", ""}]
		if b.Sessions != 1 || b.InputTokens != 300 || b.OutputTokens != 100 || b.ReasoningTokens != 40 || b.APICalls != 2 || !approx(b.ActualCostUSD, 1.5) {
			t.Errorf("m-b/anthropic = %+v", b)
		}
		c := got[key{"m-a", "openai", "title"}]
		if c.Sessions != 1 || c.InputTokens != 10 || c.OutputTokens != 5 || c.APICalls != 1 {
			t.Errorf("m-a/openai/title = %+v", c)
		}
		if want := []key{{"m-a", "openai", ""}, {"m-b", "anthropic", ""}, {"m-a", "openai", "title"}}; !slices.Equal(order, want) {
			t.Errorf("order = %v, want largest first %v", order, want)
		}
	})
	t.Run("by source", func(t *testing.T) {
		rows := stats(sqlite.BySource, 0)
		var keys []string
		for _, r := range rows {
			keys = append(keys, r.Key)
		}
		if !slices.Equal(keys, []string{"cli", "telegram", "cron"}) {
			t.Fatalf("sources = %v", keys)
		}
		cli := rows[0]
		if cli.Sessions != 2 || cli.InputTokens != 1210 || cli.OutputTokens != 105 || cli.APICalls != 7 || cli.Messages != 2 || !approx(cli.EstimatedCostUSD, 0.75) {
			t.Errorf("cli = %+v", cli)
		}
		if cron := rows[2]; cron.Sessions != 1 || cron.InputTokens != 0 {
			t.Errorf("cron = %+v", cron)
		}
	})
	t.Run("by day", func(t *testing.T) {
		rows := stats(sqlite.ByDay, 0)
		dayOf := func(sec float64) string { return time.Unix(int64(sec), 0).Local().Format("2006-01-02") }
		want := map[string]int64{}
		for _, st := range []float64{day1, day1 + 3600, day1 + 7200, old} {
			want[dayOf(st)]++
		}
		got := map[string]int64{}
		var keys []string
		for _, r := range rows {
			got[r.Key] = r.Sessions
			keys = append(keys, r.Key)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("sessions per day = %v, want %v", got, want)
		}
		if !slices.IsSortedFunc(keys, func(a, b string) int { return strings.Compare(b, a) }) {
			t.Errorf("days = %v, want newest first", keys)
		}
	})
	t.Run("total", func(t *testing.T) {
		rows := stats(sqlite.ByTotal, 0)
		if len(rows) != 1 {
			t.Fatalf("rows = %+v", rows)
		}
		r := rows[0]
		if r.Key != "" || r.Sessions != 4 || r.Messages != 3 || r.InputTokens != 1510 || r.OutputTokens != 205 ||
			r.APICalls != 9 || r.ReasoningTokens != 40 || !approx(r.EstimatedCostUSD, 0.75) || !approx(r.ActualCostUSD, 1.5) {
			t.Errorf("total = %+v", r)
		}
	})
	t.Run("since", func(t *testing.T) {
		since := opsNow - 30*opsDay
		r := stats(sqlite.ByTotal, since)
		if len(r) != 1 || r[0].Sessions != 3 || r[0].InputTokens != 510 {
			t.Errorf("total since = %+v", r)
		}
		m := stats(sqlite.ByModel, since)
		for _, row := range m {
			if row.Key == "m-a" && row.Task == "" && (row.InputTokens != 200 || row.Sessions != 1) {
				t.Errorf("m-a since = %+v", row)
			}
		}
		if got := stats(sqlite.BySource, opsNow+opsDay); len(got) != 0 {
			t.Errorf("stats of the future = %+v", got)
		}
	})
	t.Run("invalid group", func(t *testing.T) {
		_, err := s.UsageStats(ctx, "week", 0)
		opsWantCode(t, err, sessiondb.EINVALID)
	})
	t.Run("session usage", func(t *testing.T) {
		rows, err := s.SessionUsage(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 {
			t.Fatalf("rows = %+v", rows)
		}
		byTask := map[string]sessiondb.UsageRow{}
		for _, r := range rows {
			byTask[r.Task] = r
			if r.Key != "m-a" || r.Provider != "openai" {
				t.Errorf("row = %+v", r)
			}
		}
		if r := byTask[""]; r.InputTokens != 200 || r.OutputTokens != 100 || r.APICalls != 2 || !approx(r.EstimatedCostUSD, 0.75) {
			t.Errorf("main route = %+v", r)
		}
		if r := byTask["title"]; r.InputTokens != 10 || r.APICalls != 1 {
			t.Errorf("title route = %+v", r)
		}
		if rows, err := s.SessionUsage(ctx, "s4"); err != nil || len(rows) != 0 {
			t.Errorf("no usage = %+v, %v", rows, err)
		}
		_, err = s.SessionUsage(ctx, "nope")
		opsWantCode(t, err, sessiondb.ENOTFOUND)
	})
}

// ---------------------------------------------------------------- benchmark

const (
	opsBenchSessions = 10_000
	opsBenchPer      = 3
)

// opsPruneTemplate returns a database of 10k ended sessions × 3 messages,
// all older than 90 days, built once and cached in os.TempDir(); the name
// carries a hash of the schema files, so a changed schema rebuilds it.
func opsPruneTemplate(b *testing.B) string {
	b.Helper()
	h := sha256.New()
	files, _ := filepath.Glob(filepath.Join("schema", "*.sql"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		h.Write(data)
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("sessiondb-bench-prune10k-v1-%x.db", h.Sum(nil)[:6]))
	if opsTemplateOK(path) {
		return path
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	opsRemoveDB(tmp)
	db, err := sqlite.Open(tmp, sqlite.Options{Now: func() time.Time { return fixedNow }, Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	start := opsNow - 200*opsDay
	words := []string{"docker", "deployment", "kubernetes", "pods", "logs", "retry", "timeout", "database", "migration", "index"}
	for i := 0; i < opsBenchSessions; i++ {
		id := fmt.Sprintf("prune_%05d", i)
		at := start + float64(i)
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli", Model: "bench-model", StartedAt: at}); err != nil {
			b.Fatal(err)
		}
		w := words[i%len(words)]
		ms := []sessiondb.NewMessage{
			{Role: sessiondb.RoleUser, Content: fmt.Sprintf("Session %d: why does the %s step fail after the %s change?", i, w, words[(i+3)%len(words)]), Timestamp: at + 1},
			{Role: sessiondb.RoleAssistant, Content: fmt.Sprintf("The %s fails because the %s is misconfigured; check the %s and retry. %s", w, words[(i+5)%len(words)], words[(i+7)%len(words)], strings.Repeat("More detail follows. ", 5)), Timestamp: at + 2},
			{Role: sessiondb.RoleUser, Content: "Thanks, that fixed it.", Timestamp: at + 3},
		}
		if _, err := db.AppendMessages(ctx, id, ms); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", "file:"+tmp+"?_busy_timeout=5000")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := raw.Exec("UPDATE sessions SET ended_at = started_at + 10, end_reason = 'user_exit'"); err != nil {
		b.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	raw.Close()
	for _, sfx := range []string{"", "-wal", "-shm"} {
		if _, err := os.Stat(tmp + sfx); err == nil {
			if err := os.Rename(tmp+sfx, path+sfx); err != nil {
				b.Fatal(err)
			}
		} else {
			os.Remove(path + sfx)
		}
	}
	if !opsTemplateOK(path) {
		b.Fatalf("template %s is incomplete after building", path)
	}
	return path
}

func opsTemplateOK(path string) bool {
	if _, err := os.Stat(path); err != nil {
		return false
	}
	raw, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		return false
	}
	defer raw.Close()
	var n, m, ended int
	if raw.QueryRow("SELECT COUNT(*), COALESCE(SUM(ended_at IS NOT NULL), 0) FROM sessions").Scan(&n, &ended) != nil {
		return false
	}
	if raw.QueryRow("SELECT COUNT(*) FROM messages").Scan(&m) != nil {
		return false
	}
	return n == opsBenchSessions && ended == n && m == opsBenchSessions*opsBenchPer
}

func opsRemoveDB(path string) {
	for _, sfx := range []string{"", "-wal", "-shm", "-journal"} {
		os.Remove(path + sfx)
	}
}

func opsCopy(b *testing.B, src, dst string) {
	b.Helper()
	for _, sfx := range []string{"", "-wal"} {
		in, err := os.Open(src + sfx)
		if err != nil {
			if sfx != "" && os.IsNotExist(err) {
				continue
			}
			b.Fatal(err)
		}
		out, err := os.Create(dst + sfx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			b.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// opsCPU is the process's user+system CPU time so far.
func opsCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPrune10k times one Prune that deletes 10k ended sessions with
// their 30k messages (and their search-index entries) in one transaction.
// Besides ns/op it reports cpu-s/op, the CPU time of the prunes, which a
// busy machine inflates far less than the wall time.
func BenchmarkPrune10k(b *testing.B) {
	b.StopTimer()
	tmpl := opsPruneTemplate(b)
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "state.db")
		opsCopy(b, tmpl, path)
		db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
		if err != nil {
			b.Fatal(err)
		}
		c0 := opsCPU()
		b.StartTimer()
		cands, err := db.Prune(ctx, sessiondb.PruneOptions{Before: opsNow - 90*opsDay})
		b.StopTimer()
		cpu += opsCPU() - c0
		if err != nil {
			b.Fatal(err)
		}
		if len(cands) != opsBenchSessions {
			b.Fatalf("pruned %d sessions, want %d", len(cands), opsBenchSessions)
		}
		db.Close()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// With every Include option set, no filter is left: the list is every row of
// the table, children, archived and hidden ones included.
func TestListSessionsWithoutFilters(t *testing.T) {
	s := opsOpen(t)
	base := opsNow - 5*opsDay
	s.create(t, sessiondb.NewSession{ID: "p", Source: "cli", StartedAt: base})
	s.create(t, sessiondb.NewSession{ID: "delegate", Source: "cli", ParentSessionID: "p", ModelConfig: `{"_delegate_from":"p"}`, StartedAt: base + 1})
	s.create(t, sessiondb.NewSession{ID: "archived", Source: "telegram", StartedAt: base + 2})
	s.create(t, sessiondb.NewSession{ID: "hidden", Source: "cron", StartedAt: base + 3})
	s.exec(t, "UPDATE sessions SET archived = 1 WHERE id = 'archived'")
	s.exec(t, "UPDATE sessions SET hidden = 1 WHERE id = 'hidden'")

	o := sessiondb.ListOptions{IncludeChildren: true, IncludeArchived: true, IncludeHidden: true}
	if got, want := s.listIDs(t, o), []string{"hidden", "archived", "delegate", "p"}; !slices.Equal(got, want) {
		t.Errorf("ids = %v, want %v", got, want)
	}
	if _, total := s.list(t, o); total != 4 {
		t.Errorf("total = %d, want 4", total)
	}
}

// A parent cycle of compressed sessions (a hand-edited or damaged file) has
// no live end: following continuations stops at a bound instead of looping,
// and names sessions of the cycle only.
func TestCompressionCycleEnds(t *testing.T) {
	s := opsOpen(t)
	base := opsNow - opsDay
	s.create(t, sessiondb.NewSession{ID: "a", Source: "cli", StartedAt: base})
	s.create(t, sessiondb.NewSession{ID: "b", Source: "cli", ParentSessionID: "a", StartedAt: base + 1})
	s.exec(t, "UPDATE sessions SET parent_session_id = 'b' WHERE id = 'a'")
	s.end(t, "a", sessiondb.EndReasonCompression, base+2)
	s.end(t, "b", sessiondb.EndReasonCompression, base+3)

	tip, err := s.CompressionTip(ctx, "a")
	if err != nil || (tip != "a" && tip != "b") {
		t.Errorf("CompressionTip(a) = %q, %v; want a or b", tip, err)
	}
	chain, err := s.CompressionChain(ctx, "a")
	if err != nil {
		t.Fatalf("CompressionChain(a): %v", err)
	}
	for _, id := range chain {
		if id != "a" && id != "b" {
			t.Fatalf("CompressionChain(a) holds %q", id)
		}
	}
}
