package postgres

import (
	"context"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestDeleteCollectsPrompts: DeleteSession and Prune leave no system
// prompt behind that no remaining session refers to, and keep a prompt a
// remaining session shares.
func TestDeleteCollectsPrompts(t *testing.T) {
	ctx := context.Background()
	db := openInternal(t, Options{})
	for _, s := range []struct{ id, prompt string }{{"a", "only a's"}, {"b", "shared"}, {"c", "shared"}, {"d", "only d's"}} {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: s.id, Source: "cli", SystemPrompt: s.prompt, StartedAt: 1.6e9}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"c", "d"} {
		if err := db.EndSession(ctx, id, "user_exit"); err != nil {
			t.Fatal(err)
		}
	}
	prompts := func() int { return countRows(t, db, "system_prompts") }
	if n := prompts(); n != 3 {
		t.Fatalf("%d prompts stored, want 3", n)
	}
	if _, err := db.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if n := prompts(); n != 2 {
		t.Errorf("after deleting a: %d prompts, want 2 (a's collected)", n)
	}
	gone, err := db.Prune(ctx, sessiondb.PruneOptions{Before: 1.7e9})
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 2 {
		t.Fatalf("pruned %v, want c and d", gone)
	}
	if n := prompts(); n != 1 {
		t.Errorf("after pruning c and d: %d prompts, want 1 (d's collected, the shared one kept for b)", n)
	}
	if s, err := db.Session(ctx, "b"); err != nil || s.SystemPrompt == nil || *s.SystemPrompt != "shared" {
		t.Errorf("b's prompt after the prune: %v", err)
	}
}
