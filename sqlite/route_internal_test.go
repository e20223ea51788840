package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestSearchPlans checks with EXPLAIN QUERY PLAN which statements a search
// runs: CJK queries of one and two characters on a live bigram index, and
// word queries, read the full-text indexes and never scan the messages
// table; a tool-role search (Hermes' LIKE route) does scan it.
func TestSearchPlans(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"数据库迁移完成", "项目进展", "库", "docker deployment notes"} {
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: text}); err != nil {
			t.Fatal(err)
		}
	}
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
