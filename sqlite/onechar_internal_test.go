package sqlite

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// oneCharDB opens a store of 300 messages in two sessions (cli, telegram)
// whose times run in another order than their ids, three to a time, so
// that time ties are broken by id. Every fifth message holds 库 (in the
// text, or only in the tool name or the tool calls), every seventh " Agent通信"
// (信 after Latin letters: only Hermes' LIKE scan finds it), and 罕 is in two
// of the oldest messages.
func oneCharDB(t *testing.T) *DB {
	t.Helper()
	ctx := context.Background()
	db := freshDB(t)
	for _, s := range []sessiondb.NewSession{{ID: "a", Source: "cli"}, {ID: "b", Source: "telegram"}} {
		if _, err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	order := rand.New(rand.NewPCG(1, 2)).Perm(300)
	for _, i := range order {
		m := sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "普通的消息", Timestamp: 1.7e9 + float64(i/3)}
		if i%2 == 1 {
			m.SessionID, m.Role = "b", "assistant"
		}
		switch {
		case i%35 == 0:
			m.Content = "数据库 Agent通信"
		case i%5 == 0:
			m.Content = []string{"库", "数据库迁移", "查询库存"}[i%3]
		case i%7 == 0:
			m.Content = "讨论 Agent通信协议"
		case i%11 == 1 && m.Role == "assistant":
			m.ToolCalls = json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"查库","arguments":"{}"}}]`)
		}
		if i < 6 && i%2 == 0 {
			m.Content = "罕见"
		}
		if _, err := db.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestSearchOneCJKWalk: a query of one CJK character answers with Hermes'
// LIKE scan, newest first with time ties in descending id order, page for
// page: from one statement, the walk down idx_messages_newest, when the page
// fills within the walk's bound; else from the indexes' vocabularies, a
// second statement (which misses 信 in Agent通信, as documented). The oracle
// is the same search with the tool role among the roles, which Hermes (and
// sessiondb) answer with the LIKE scan of the whole table.
func TestSearchOneCJKWalk(t *testing.T) {
	db := oneCharDB(t)
	defer func(n int) { oneCharWalk = n }(oneCharWalk)
	oneCharWalk = 60 // the 60 newest messages (and the ties of the 60th)
	statements := 0
	searchHook = func(querier, string, []any) { statements++ }
	defer func() { searchHook = nil }()
	for _, c := range []struct {
		q          string
		o          sessiondb.SearchOptions
		walk, same bool // answered by the walk alone; equal to the scan
	}{
		{"库", sessiondb.SearchOptions{Limit: 5}, true, true},
		{"库", sessiondb.SearchOptions{Limit: 12}, true, true},
		{"库", sessiondb.SearchOptions{Limit: 4, Offset: 9}, true, true},
		{"库", sessiondb.SearchOptions{Limit: 20}, false, true}, // 18 within the bound
		{"库", sessiondb.SearchOptions{Limit: 5, Offset: 40}, false, true},
		{"库", sessiondb.SearchOptions{Limit: 5, Sources: []string{"telegram"}}, true, true},
		{"库", sessiondb.SearchOptions{Limit: 12, Sources: []string{"telegram"}}, false, true},
		{"库", sessiondb.SearchOptions{Limit: 5, Roles: []string{"user"}}, true, true},
		{"信", sessiondb.SearchOptions{Limit: 8}, true, true},
		{"信", sessiondb.SearchOptions{Limit: 30}, false, false}, // the vocabulary misses Agent通信
		{"罕", sessiondb.SearchOptions{Limit: 5}, false, true},
		{"龘", sessiondb.SearchOptions{Limit: 5}, false, true},
	} {
		statements = 0
		got := searchIDs(t, db, c.q, c.o)
		if walked := statements == 1; walked != c.walk {
			t.Errorf("Search(%q, %+v): %d statements, want the walk alone = %v", c.q, c.o, statements, c.walk)
		}
		scan := c.o
		scan.Roles = append(slices.Clone(c.o.Roles), sessiondb.RoleTool)
		if len(c.o.Roles) == 0 {
			scan.Roles = []string{"user", "assistant", sessiondb.RoleTool}
		}
		want := searchIDs(t, db, c.q, scan)
		if slices.Equal(got, want) != c.same {
			t.Errorf("Search(%q, %+v) = %v, the LIKE scan gives %v; want equal = %v", c.q, c.o, got, want, c.same)
		}
		if c.walk && len(got) != c.o.Limit {
			t.Errorf("Search(%q, %+v): %d hits, want a full page", c.q, c.o, len(got))
		}
	}
}

// TestSearchOneCJKWithoutNewestIndex: on a file without
// idx_messages_newest, opened read-only (Hermes dropped it, or sessiondb
// never wrote to the file), the vocabularies answer; a writable open
// creates the index again.
func TestSearchOneCJKWithoutNewestIndex(t *testing.T) {
	ctx := context.Background()
	db := oneCharDB(t)
	want, err := db.Search(ctx, "库", sessiondb.SearchOptions{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.ExecContext(ctx, "DROP INDEX "+newestIndex); err != nil {
		t.Fatal(err)
	}
	path := db.path
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	statements := 0
	searchHook = func(querier, string, []any) { statements++ }
	defer func() { searchHook = nil }()
	got, err := ro.Search(ctx, "库", sessiondb.SearchOptions{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, func(a, b sessiondb.SearchHit) bool { return a.ID == b.ID }) || statements != 2 {
		t.Errorf("read-only without the index: %d hits in %d statements, want the %d of the walk in 2", len(got), statements, len(want))
	}
	rw, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	var n int
	if err := rw.read.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name = ?", newestIndex).Scan(&n); err != nil || n != 1 {
		t.Errorf("after a writable open: %d indexes named %s (%v), want it made again", n, newestIndex, err)
	}
}

// TestSearchOneCJKStructured: structured content ("\x00json:…") is found by
// the walk and by the vocabularies in a user row, by neither in a tool row
// (no index holds a tool row's structured content).
func TestSearchOneCJKStructured(t *testing.T) {
	ctx := context.Background()
	db := searchDB(t, "数据库", "普通")
	var ids []int64
	for _, role := range []string{"user", "tool"} {
		id, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: role,
			Content: []any{map[string]any{"type": "text", "text": "structured 库 content"}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, limit := range []int{1, 20} { // the walk fills a page of 1; not of 20
		hits, err := db.Search(ctx, "库", sessiondb.SearchOptions{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		found := map[int64]bool{}
		for _, h := range hits {
			found[h.ID] = true
		}
		if !found[ids[0]] || found[ids[1]] {
			t.Errorf("limit %d: hits %v; want the structured user row %d and not the tool row %d", limit, found, ids[0], ids[1])
		}
	}
}
