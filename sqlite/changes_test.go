package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

func TestChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, path)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "before"}); err != nil {
		t.Fatal(err)
	}
	lastMsg, seq, err := db.ChangeHead(ctx)
	if err != nil || lastMsg != 1 || seq != 1 {
		t.Fatalf("ChangeHead = %d, %d, %v", lastMsg, seq, err)
	}
	v0, err := db.DataVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a commit of another handle changes the data version", func(t *testing.T) {
		other := MustOpenPath(t, path)
		if _, err := other.CreateSession(ctx, sessiondb.NewSession{ID: "s2", Source: "telegram"}); err != nil {
			t.Fatal(err)
		}
		long := strings.Repeat("长", 300)
		if _, err := other.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s2", Role: "assistant", Content: long}); err != nil {
			t.Fatal(err)
		}
		if _, err := other.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s2", Role: "user", Content: []any{map[string]any{"type": "text", "text": "parts"}}}); err != nil {
			t.Fatal(err)
		}
		v1, err := db.DataVersion(ctx)
		if err != nil || v1 == v0 {
			t.Fatalf("data version %d → %d (%v)", v0, v1, err)
		}
		if v2, _ := db.DataVersion(ctx); v2 != v1 {
			t.Fatalf("data version moved without a commit: %d → %d", v1, v2)
		}
	})

	msgs, sess, next, err := db.Changes(ctx, lastMsg, seq, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].ID != 2 || msgs[0].SessionID != "s2" || len([]rune(msgs[0].Content.(string))) != 200 {
		t.Fatalf("messages after %d, limit 1: %+v", lastMsg, msgs)
	}
	if next != 2 {
		t.Errorf("session cursor = %d, want 2", next)
	}
	ids := map[string]bool{}
	for _, s := range sess {
		ids[s.ID] = true
	}
	if !ids["s1"] || !ids["s2"] || len(sess) != 2 {
		t.Errorf("sessions = %v (the new one and the recent window)", ids)
	}
	msgs, _, _, err = db.Changes(ctx, 2, next, 100)
	if err != nil || len(msgs) != 1 || msgs[0].Content != "parts" {
		t.Fatalf("the multimodal message: %q %v", msgs[0].Content, err)
	}
}

// TestDataVersionReadOnly: a read-only handle (a pool of connections) sees
// another handle's commit, and nothing else moves its data version.
func TestDataVersionReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	w := MustOpenPath(t, path)
	if _, err := w.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	r, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v0, err := r.DataVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 { // reads on every connection of the pool
		if _, _, err := r.ListSessions(ctx, sessiondb.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		if v, _ := r.DataVersion(ctx); v != v0 {
			t.Fatalf("data version moved without a commit: %d → %d", v0, v)
		}
	}
	if _, err := w.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.DataVersion(ctx); v == v0 {
		t.Fatal("the read-only handle did not see the commit")
	}
}
