package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// TestSearchPlans checks with EXPLAIN QUERY PLAN which statements a search
// runs: CJK queries of two characters on a live bigram index, and word
// queries, read the full-text indexes and never scan the messages table; a
// query of one CJK character walks idx_messages_newest from the newest
// message down to a bound (a range of the index, and its OFFSET for the
// bound), then, the page not full, reads the indexes; a tool-role search
// (Hermes' LIKE route) does scan the table.
func TestSearchPlans(t *testing.T) {
	ctx := context.Background()
	db := searchDB(t, "数据库迁移完成", "项目进展", "库", "docker deployment notes")
	var plans []string
	searchHook = func(on querier, stmt string, args []any) {
		rows, err := on.QueryContext(ctx, "EXPLAIN QUERY PLAN "+stmt, args...)
		if err != nil {
			t.Fatalf("EXPLAIN QUERY PLAN %s: %v", stmt, err)
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		plans = append(plans, strings.Join(plan, "; "))
	}
	defer func() { searchHook = nil }()

	for _, c := range []struct {
		query string
		opts  sessiondb.SearchOptions
		scan  bool
		hits  int
	}{
		{"库", sessiondb.SearchOptions{}, false, 2},
		{"项目", sessiondb.SearchOptions{}, false, 1},
		{"docker", sessiondb.SearchOptions{}, false, 1},
		{"库", sessiondb.SearchOptions{Roles: []string{"user", "tool"}}, true, 2},
	} {
		plans = nil
		hits, err := db.Search(ctx, c.query, c.opts)
		if err != nil {
			t.Fatalf("Search(%q): %v", c.query, err)
		}
		if len(hits) != c.hits {
			t.Errorf("Search(%q, roles %v): %d hits, want %d", c.query, c.opts.Roles, len(hits), c.hits)
		}
		if len(plans) == 0 {
			t.Fatalf("Search(%q) ran no statement", c.query)
		}
		if c.query == "库" && !c.scan {
			walk := "SEARCH m USING INDEX idx_messages_newest (timestamp>?)"
			if !strings.HasPrefix(plans[0], walk+";") {
				t.Errorf("Search(%q) first plan %q, want the walk %q", c.query, plans[0], walk)
			}
			plans = plans[1:]
			if len(plans) != 1 {
				t.Fatalf("Search(%q): %d statements after the walk, want the vocabulary read", c.query, len(plans))
			}
		}
		for _, p := range plans {
			scan := false
			for _, step := range strings.Split(p, "; ") {
				f := strings.Fields(step)
				scan = scan || len(f) > 1 && f[0] == "SCAN" && (f[1] == "m" || f[1] == "messages")
			}
			if scan != c.scan || !c.scan && !strings.Contains(p, "VIRTUAL TABLE") {
				t.Errorf("Search(%q, roles %v) plan %q: table scan = %v, want %v (and an index otherwise)", c.query, c.opts.Roles, p, scan, c.scan)
			}
		}
	}
}

// TestSearchOneStatement: a one-word search is answered by one statement
// that ranks, filters and reads the page, and (when looking the page's rows
// up costs more than reading the matches) one more that makes the page's
// snippets, also with
// filtered-out rows ahead of the page; when they outnumber the spare rows
// of the K best, the ranking runs again, and every hit still has its
// snippet.
func TestSearchOneStatement(t *testing.T) {
	ctx := context.Background()
	var texts []string
	for i := range 40 {
		texts = append(texts, "needle"+strings.Repeat(" hay", i))
	}
	db := searchDB(t, texts...)
	defer SetRankSeekMicros(SetRankSeekMicros(1 << 20)) // without instances, snippets from a pass over the matches
	statements := 0
	searchHook = func(querier, string, []any) { statements++ }
	defer func() { searchHook = nil }()
	search := func(o sessiondb.SearchOptions, wantStatements int) {
		t.Helper()
		withAndWithoutInstances(wantStatements, func(keep bool, want int) {
			t.Helper()
			statements = 0
			hits, err := db.Search(ctx, "needle", o)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != o.Limit || statements != want {
				t.Errorf("limit %d offset %d, instances kept %v: %d hits from %d statements, want %d from %d", o.Limit, o.Offset, keep, len(hits), statements, o.Limit, want)
			}
			for _, h := range hits {
				if h.Snippet == nil || !strings.Contains(*h.Snippet, ">>>needle<<<") {
					t.Errorf("limit %d offset %d: hit %d has snippet %v", o.Limit, o.Offset, h.ID, h.Snippet)
				}
			}
		})
	}
	search(sessiondb.SearchOptions{Limit: 5}, 2)
	search(sessiondb.SearchOptions{Limit: 5, Offset: 3}, 2)
	// The best match (the shortest row) is inactive: the page's rows are
	// numbered after the filters, so the same two statements answer.
	if _, err := db.write.ExecContext(ctx, "UPDATE messages SET active = 0, compacted = 0 WHERE content = 'needle'"); err != nil {
		t.Fatal(err)
	}
	search(sessiondb.SearchOptions{Limit: 5}, 2)
	// The 12 best are inactive, more than the 8 spare rows of K = 13: the
	// page does not fill within the K best, and the ranking runs again
	// with more of them.
	if _, err := db.write.ExecContext(ctx, "UPDATE messages SET active = 0, compacted = 0 WHERE length(content) < 6 + 4*12"); err != nil {
		t.Fatal(err)
	}
	search(sessiondb.SearchOptions{Limit: 5}, 3)
}

// withAndWithoutInstances runs search twice: with the ranking keeping the
// instances of its rows, whose page then gets its snippets in the ranking's
// statement (want - 1 statements), and keeping none, when one statement
// more makes them (want; TestSearchOneStatement sets that to a pass).
func withAndWithoutInstances(want int, search func(keep bool, want int)) {
	search(true, want-1)
	defer fts5cjk.SetInstMax(fts5cjk.SetInstMax(0))
	search(false, want)
}

// needleTexts are 40 rows of "needle" among ever more "hay", every third
// one also holding "straw", the first 12 "reed".
func needleTexts() []string {
	var texts []string
	for i := range 40 {
		text := "needle" + strings.Repeat(" hay", i)
		if i%3 == 1 {
			text += " straw"
		}
		if i < 12 {
			text += " reed"
		}
		texts = append(texts, text)
	}
	return texts
}

// TestSearchNotOneStatement: "A NOT B" is ranked as A alone, without the
// rows that hold B: the statements of a one-word search, with the rows
// holding B rejected like filtered rows (when more of them than the spare
// rows are among the best, the ranking runs again with more rows).
func TestSearchNotOneStatement(t *testing.T) {
	ctx := context.Background()
	db := searchDB(t, needleTexts()...)
	defer SetRankSeekMicros(SetRankSeekMicros(1 << 20)) // without instances, snippets from a pass over the matches
	statements := 0
	searchHook = func(querier, string, []any) { statements++ }
	defer func() { searchHook = nil }()
	search := func(q string, o sessiondb.SearchOptions, wantStatements int) {
		t.Helper()
		withAndWithoutInstances(wantStatements, func(keep bool, want int) {
			t.Helper()
			statements = 0
			hits, err := db.Search(ctx, q, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != o.Limit || statements != want {
				t.Errorf("%q limit %d, instances kept %v: %d hits from %d statements, want %d from %d", q, o.Limit, keep, len(hits), statements, o.Limit, want)
			}
			for _, h := range hits {
				if h.Snippet == nil || !strings.Contains(*h.Snippet, ">>>needle<<<") || strings.Contains(*h.Snippet, "straw") {
					t.Errorf("%q: hit %d has snippet %v", q, h.ID, h.Snippet)
				}
			}
		})
	}
	search("needle NOT straw", sessiondb.SearchOptions{Limit: 5}, 2)
	search(`"needle" NOT "straw"`, sessiondb.SearchOptions{Limit: 5, Offset: 4}, 2)
	// The 12 best rows hold "reed": more than the 8 spare rows of K = 9,
	// so the ranking runs again with more rows.
	search("needle NOT reed", sessiondb.SearchOptions{Limit: 1}, 3)

	// When B holds every row of A, the ranking stops at notMaxK rows and
	// FTS5 answers: 13, then 104, then 256 rows (three statements), then
	// the exact statement, which finds nothing, and the Latin retry of the
	// bigram and trigram indexes (two more).
	var texts []string
	for i := range notMaxK + 50 {
		texts = append(texts, "needle"+strings.Repeat(" hay", i%40))
	}
	db = searchDB(t, texts...)
	statements = 0
	if hits, err := db.Search(ctx, "needle NOT needle", sessiondb.SearchOptions{Limit: 5}); err != nil || len(hits) != 0 || statements != 6 {
		t.Errorf("needle NOT needle: %d hits from %d statements (%v), want none from 6", len(hits), statements, err)
	}
}

// TestSearchNotFilterChoice: "A NOT B" lists B's rows once for the
// statement (NOT IN) while neither word has a range summary, and looks each
// ranked row up among B's matches (NOT EXISTS) once one has (notFilter);
// the same rows either way.
func TestSearchNotFilterChoice(t *testing.T) {
	ctx := context.Background()
	db := searchDB(t, needleTexts()...)
	var stmts []string
	searchHook = func(_ querier, stmt string, _ []any) { stmts = append(stmts, stmt) }
	defer func() { searchHook = nil }()
	search := func(want string) []int64 {
		t.Helper()
		stmts = nil
		hits, err := db.Search(ctx, "needle NOT straw", sessiondb.SearchOptions{Limit: 10})
		if err != nil || len(hits) != 10 {
			t.Fatalf("%d hits, %v", len(hits), err)
		}
		filters := map[string]bool{}
		for _, stmt := range stmts {
			filters["NOT IN"] = filters["NOT IN"] || strings.Contains(stmt, "m.id NOT IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?)")
			filters["NOT EXISTS"] = filters["NOT EXISTS"] || strings.Contains(stmt, "NOT EXISTS (SELECT 1 FROM messages_fts AS x")
		}
		if len(stmts) == 0 || !filters[want] || len(filters) != 2 || filters["NOT IN"] == filters["NOT EXISTS"] {
			t.Fatalf("filters used %v, want %s only (statements %q)", filters, want, stmts)
		}
		var ids []int64
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		return ids
	}
	listed := search("NOT IN")
	SetRankSummaryScale(t, 10, 8)
	if _, err := db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if looked := search("NOT EXISTS"); !slices.Equal(looked, listed) {
		t.Fatalf("with a summary of needle: %v, without: %v", looked, listed)
	}
}

// freshDB opens an empty store, closed when t ends.
func freshDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// searchDB opens a fresh store holding session "s" with one user message
// per text.
func searchDB(t *testing.T, texts ...string) *DB {
	t.Helper()
	ctx := context.Background()
	db := freshDB(t)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	for _, text := range texts {
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestStablePlans: the store's connections, writer and readers, run with
// the query planner stability guarantee (FTS5's segment lookups are not
// re-prepared at every other search); another connection of the process
// keeps SQLite's default.
func TestStablePlans(t *testing.T) {
	ctx := context.Background()
	db := searchDB(t, "needle")
	if _, err := db.Search(ctx, "needle", sessiondb.SearchOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, c := range []struct {
		name string
		conn *sql.DB
		want int
	}{{"writer", db.write, 1}, {"reader", db.read, 1}, {"another connection", other, 0}} {
		var on int
		if err := c.conn.QueryRowContext(ctx, "SELECT sessiondb_stable_plans(-1)").Scan(&on); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if on != c.want {
			t.Errorf("%s: stable plans = %d, want %d", c.name, on, c.want)
		}
	}
}

// TestSnippetTexts: the column texts search hands sessiondb_snippet are the
// ones each index's content view gives, so every snippet equals FTS5's own
// snippet() of the row: tool rows past the word index's 8,192-character
// prefix, tool names and calls, CJK and Latin, every index of the current
// layout.
func TestSnippetTexts(t *testing.T) {
	ctx := context.Background()
	db := searchDB(t, "needle in the first message. 项目 needle", "项目管理 and the needle: 项目")
	// The word index holds a tool row's first 8,192 characters: here a
	// match near their end, so that the fragment runs to the end of what
	// was indexed, and text past it that must not show.
	long := strings.Repeat("filler words here ", 452) + "needle 项目 tail of the indexed part" + strings.Repeat(" beyond", 40)
	msgs := []sessiondb.NewMessage{
		{SessionID: "s", Role: "assistant", Content: "calling needle", ToolName: "needle_helper",
			ToolCalls: json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"needle_tool","arguments":"{\"q\":\"needle 项目\"}"}}]`)},
		{SessionID: "s", Role: "tool", ToolName: "needle_tool", ToolCallID: "c1", Content: long},
		{SessionID: "s", Role: "user", Content: "东京的项目 needle"},
	}
	for _, m := range msgs {
		if _, err := db.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	s := &searcher{db: db}
	compared := 0
	for table, queries := range map[string][]string{
		"messages_fts":         {"needle", "beyond", "项目", "needle_tool", "filler"},
		"messages_fts_cjk":     {`"项目"`, "needle", `"项目管理"`},
		"messages_fts_trigram": {`"项目管"`, `"needle"`, `"helper"`},
	} {
		for _, q := range queries {
			rows, err := db.read.QueryContext(ctx, "SELECT m.id, snippet("+table+", -1, '>>>', '<<<', '...', 40), "+
				s.snippetSQL(table)+" FROM "+table+" JOIN messages m ON m.id = "+table+".rowid WHERE "+table+" MATCH ?", q)
			if err != nil {
				t.Fatalf("%s MATCH %s: %v", table, q, err)
			}
			for rows.Next() {
				var id int64
				var want, got sql.NullString
				if err := rows.Scan(&id, &want, &got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s MATCH %s, message %d:\n got %q\nwant %q", table, q, id, got.String, want.String)
				}
				compared++
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if compared < 15 {
		t.Fatalf("only %d snippets compared", compared)
	}
}

// TestSearchPagePastTheEnd: a page past a query's last hit is empty. The
// Latin retry of the bigram and trigram indexes (for Latin glued to CJK)
// runs only when the word index finds nothing at all, not when it finds
// fewer rows than the offset; before, the second page of "deploy" came
// from the bigram index, which also finds the glued 修改deploy服务.
func TestSearchPagePastTheEnd(t *testing.T) {
	db := searchDB(t, "we deploy with docker today", "修改deploy服务", "修改youer服务")
	for _, c := range []struct {
		q    string
		o    sessiondb.SearchOptions
		want []int64
	}{
		{"deploy", sessiondb.SearchOptions{}, []int64{1}},
		{"deploy", sessiondb.SearchOptions{Offset: 1}, []int64{}},
		{"youer", sessiondb.SearchOptions{}, []int64{3}}, // the retry
		{"youer", sessiondb.SearchOptions{Offset: 1}, []int64{}},
		{"deploy OR youer", sessiondb.SearchOptions{Offset: 1}, []int64{}},
	} {
		if got := searchIDs(t, db, c.q, c.o); !slices.Equal(got, c.want) {
			t.Errorf("Search(%q, offset %d) = %v, want %v", c.q, c.o.Offset, got, c.want)
		}
	}
}

// searchIDs returns the ids of db's hits for q.
func searchIDs(t *testing.T, db *DB, q string, o sessiondb.SearchOptions) []int64 {
	t.Helper()
	hits, err := db.Search(context.Background(), q, o)
	if err != nil {
		t.Fatalf("Search(%q, %+v): %v", q, o, err)
	}
	var out []int64
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

// TestRunSummarized: a run of CJK characters goes to matchTop when every
// one of its bigrams has a summary (rank.c then reads the least), not
// when one has none; a bigram met twice counts once.
func TestRunSummarized(t *testing.T) {
	ctx := context.Background()
	SetRankSummaryScale(t, 20, 8)
	var texts []string
	for i := 0; i < 100; i++ {
		switch {
		case i < 20:
			texts = append(texts, "数据库 ok")
		case i < 40:
			texts = append(texts, "数据 表 x")
		case i < 60:
			texts = append(texts, "哈哈 y")
		default:
			texts = append(texts, "hello world")
		}
	}
	db := searchDB(t, texts...)
	if n, err := db.SummarizeTerms(ctx, nil); err != nil || n == 0 {
		t.Fatalf("SummarizeTerms: %d terms, %v", n, err)
	}
	s := &searcher{db: db}
	for run, want := range map[string]bool{
		"数据库": true,  // 数据 and 据库
		"哈哈哈": true,  // 哈哈 twice
		"数据表": false, // 据表: no summary
		"数据":  true,  // one bigram: its term
		"世界":  false,
	} {
		if have, n := s.summarized(ctx, "messages_fts_cjk", bigrams(run)); (n > 0 && have == n) != want {
			t.Errorf("%s: %d of %d bigrams summarized, want all: %v", run, have, n, want)
		}
	}
}
