package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// TestChangesDefaultLimit: a limit of 0 or below means the default of 500
// messages (and new sessions), not none.
func TestChangesDefaultLimit(t *testing.T) {
	db := MustOpen(t)
	for i := range 3 {
		id := fmt.Sprintf("s%d", i)
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "user", Content: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{0, -1} {
		msgs, sess, next, err := db.Changes(ctx, 0, 0, limit)
		if err != nil || len(msgs) != 3 || len(sess) != 3 || next != 3 {
			t.Errorf("Changes(limit %d) = %d messages, %d sessions, cursor %d, %v; want 3, 3, 3", limit, len(msgs), len(sess), next, err)
		}
	}
}

// TestDataVersionOneConnection: the data version is asked on one
// connection kept for it, never on one of the read pool's (each connection
// counts the commits it noticed from its own start, so a value read on
// another connection looks like a change, or hides one): with a read of
// the pool going on, the value moves with each commit of another handle,
// and only then. In DELETE journal mode, where one connection serves
// everything, that connection is not kept, or every other read and write
// would wait for it.
func TestDataVersionOneConnection(t *testing.T) {
	for _, mode := range []string{"wal", "delete"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			open := func() *sqlite.DB {
				db, err := sqlite.Open(path, sqlite.Options{JournalMode: mode})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
			db, other := open(), open()
			if _, err := other.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			v0, err := db.DataVersion(wctx)
			if err != nil {
				t.Fatal(err)
			}
			for round := range 4 {
				if _, err := other.AppendMessage(wctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: fmt.Sprint(round)}); err != nil {
					t.Fatal(err)
				}
				if _, _, err := db.ListSessions(wctx, sessiondb.ListOptions{}); err != nil {
					t.Fatalf("a read after DataVersion: %v", err)
				}
				if _, err := db.AppendMessage(wctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "own"}); err != nil {
					t.Fatalf("a write after DataVersion: %v", err)
				}
				v1, err := db.DataVersion(wctx)
				if err != nil || v1 == v0 {
					t.Fatalf("round %d: data version %d → %d (%v) across a commit", round, v0, v1, err)
				}
				if v, _ := db.DataVersion(wctx); v != v1 {
					t.Fatalf("round %d: data version moved without a commit: %d → %d", round, v1, v)
				}
				v0 = v1
			}
			if mode == "delete" {
				return
			}
			// Reads hold connections of the pool: the data version is still
			// asked where it was.
			for i := range 3 {
				snap, err := db.Snapshot(wctx)
				if err != nil {
					t.Fatal(err)
				}
				defer snap.Close()
				if v, err := db.DataVersion(wctx); err != nil || v != v0 {
					t.Fatalf("with %d reads going on: data version %d → %d (%v) without a commit", i+1, v0, v, err)
				}
			}
		})
	}
}
