package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestLineagePlanReadsTheTreeOnly: the lineage statement looks sessions up
// by id and by parent and never walks the sessions table (it did, in
// started_at order to spare its sort, which grew with the history), and it
// returns the tree's rows in started_at order.
func TestLineagePlanReadsTheTreeOnly(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// 200 unrelated sessions, then a root with two children started in the
	// reverse order of their ids.
	for i := range 200 {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: fmt.Sprintf("other-%03d", i), Source: "cli", StartedAt: float64(1000 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []sessiondb.NewSession{
		{ID: "root", Source: "cli", StartedAt: 2000},
		{ID: "child-b", Source: "cli", ParentSessionID: "root", StartedAt: 2001},
		{ID: "child-a", Source: "cli", ParentSessionID: "root", StartedAt: 2002},
	} {
		if _, err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.write.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}

	rows, err := db.read.QueryContext(ctx, "EXPLAIN QUERY PLAN "+lineageTreeSQL, "root")
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	rows.Close()
	for _, step := range plan {
		if strings.HasPrefix(step, "SCAN s") || strings.HasPrefix(step, "SCAN sessions") {
			t.Errorf("the lineage statement walks the sessions table (%q); plan: %q", step, strings.Join(plan, "; "))
		}
	}

	tree, err := db.Lineage(ctx, "child-a")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range tree.Children {
		got = append(got, c.ID)
	}
	if tree.ID != "root" || strings.Join(got, ",") != "child-b,child-a" {
		t.Errorf("lineage of child-a: root %s, children %v; want root with child-b, child-a (started_at order)", tree.ID, got)
	}
}
