package sqlite_test

import (
	"fmt"
	"testing"

	"github.com/sessiondb/sessiondb"
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
