package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// Two writers give two sessions one title at once: exactly one wins, the
// other gets ECONFLICT (no index enforces it: the advisory lock does).
func TestSetTitleRace(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	for round := range 10 {
		a, b := fmt.Sprintf("a%d", round), fmt.Sprintf("b%d", round)
		for _, id := range []string{a, b} {
			if _, err := db.EnsureSession(ctx, id, "cli", ""); err != nil {
				t.Fatal(err)
			}
		}
		title := fmt.Sprintf("shared title %d", round)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, id := range []string{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = db.SetTitle(ctx, id, title)
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch sessiondb.ErrorCode(err) {
			case "":
				won++
			case sessiondb.ECONFLICT:
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d writers won the title (errors %v), want exactly 1", round, won, errs)
		}
		var holders int
		if err := db.Pool().QueryRow(ctx, "SELECT count(*) FROM sessions WHERE title = $1", title).Scan(&holders); err != nil || holders != 1 {
			t.Fatalf("round %d: %d sessions hold the title (%v)", round, holders, err)
		}
	}
}

// Synced hosts may each hold a title: ResolveTitle picks the most recently
// started, SetTitle on a third session is refused, and a compression
// continuation takes it from its ancestor.
func TestTitlesWithSyncedDuplicates(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	for i, id := range []string{"old", "new", "other"} {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli", StartedAt: float64(100 * (i + 1))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool().Exec(ctx, "UPDATE sessions SET title = 'dup', title_source = 'user' WHERE id IN ('old', 'new')"); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ResolveTitle(ctx, "dup"); got != "new" || err != nil {
		t.Fatalf("ResolveTitle(dup) = %q, %v; want the latest started, new", got, err)
	}
	if err := db.SetTitle(ctx, "other", "dup"); sessiondb.ErrorCode(err) != sessiondb.ECONFLICT {
		t.Fatalf("SetTitle of a held title: %v, want conflict", err)
	}
	for _, title := range []string{"dup #2", "dup #10x"} {
		if err := db.SetTitle(ctx, "other", title); err != nil {
			t.Fatal(err)
		}
		if got, err := db.ResolveTitle(ctx, "dup"); got != "other" || err != nil {
			t.Fatalf("ResolveTitle(dup) with %q = %q, %v; want the numbered one, other", title, got, err)
		}
	}
	// "dup #10x" is not numbered: "dup" is the highest in use.
	if got, err := db.NextTitleInLineage(ctx, "dup #4"); got != "dup #2" || err != nil {
		t.Fatalf("NextTitleInLineage = %q, %v", got, err)
	}
	// A continuation takes its ancestor's title.
	if err := db.SetTitle(ctx, "old", "chain"); err != nil {
		t.Fatal(err)
	}
	if err := db.EndSession(ctx, "old", sessiondb.EndReasonCompression); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "cont", Source: "cli", ParentSessionID: "old"}); err != nil {
		t.Fatal(err)
	}
	if err := db.SetTitle(ctx, "cont", "chain"); err != nil {
		t.Fatalf("continuation taking its ancestor's title: %v", err)
	}
	if s, _ := db.Session(ctx, "old"); s.Title != nil {
		t.Fatalf("the ancestor kept title %q", *s.Title)
	}
	if _, err := db.ResolveTitle(ctx, "none"); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Fatalf("ResolveTitle(none): %v, want not found", err)
	}
}

// Rows synced from a file may carry model_config that is not JSON: listing,
// lineage and deletes read their markers as absent instead of failing.
func TestInvalidModelConfigFromSync(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	db.CreateSession(ctx, sessiondb.NewSession{ID: "root", Source: "cli", StartedAt: 100})
	db.CreateSession(ctx, sessiondb.NewSession{ID: "kid", Source: "cli", ParentSessionID: "root", StartedAt: 200})
	db.CreateSession(ctx, sessiondb.NewSession{ID: "branch", Source: "cli", ParentSessionID: "root", StartedAt: 300,
		ModelConfig: `{"_branched_from":"root"}`})
	if _, err := db.Pool().Exec(ctx, `UPDATE sessions SET model_config = '{"_branched_from": oops' WHERE id = 'kid'`); err != nil {
		t.Fatal(err)
	}
	list, total, err := db.ListSessions(ctx, sessiondb.ListOptions{})
	if err != nil || total != 2 || len(list) != 2 || list[0].ID != "branch" || list[1].ID != "root" {
		t.Fatalf("list = %v, %d, %v; want branch and root", list, total, err)
	}
	tree, err := db.Lineage(ctx, "kid")
	if err != nil || tree.ID != "root" || len(tree.Children) != 2 || tree.Children[0].Kind != sessiondb.KindChild || tree.Children[1].Kind != sessiondb.KindBranch {
		t.Fatalf("lineage = %+v, %v", tree, err)
	}
	if ids, err := db.DeleteSession(ctx, "root"); err != nil || len(ids) != 1 {
		t.Fatalf("delete = %v, %v; want root alone", ids, err)
	}
	if s, err := db.Session(ctx, "kid"); err != nil || s.ParentSessionID != nil {
		t.Fatalf("the child was not orphaned: %v", err)
	}
}
