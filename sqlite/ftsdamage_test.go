package sqlite_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestFTSFailOpenZeroedStructure: every block of a search index zeroed, its
// structure record included, makes FTS5 reuse segment ids its %_idx table
// still holds, and it fails the next insert with a bare SQLITE_CONSTRAINT,
// not a corruption code. The write's FTS fail-open must still take it:
// each append (one alone, and several grouped into one commit) succeeds and
// keeps its message, and the indexes are recreated and refilled, so the old
// messages are found again.
func TestFTSFailOpenZeroedStructure(t *testing.T) {
	for _, table := range []string{"messages_fts_data", "messages_fts_trigram_data", "messages_fts_cjk_data"} {
		for _, writers := range []int{1, 8} {
			t.Run(fmt.Sprintf("%s/writers=%d", table, writers), func(t *testing.T) {
				db := MustOpen(t)
				seed(t, db, 40)
				raw := rawDB(t, db.Path())
				rawExec(t, raw, "UPDATE "+table+" SET block = zeroblob(length(block))")

				ids := make([]int64, writers)
				errs := make([]error, writers)
				var wg sync.WaitGroup
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ids[w], errs[w] = db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user",
							Content: fmt.Sprintf("after the damage zebrafish%d 斑马鱼%d", w, w)})
					}()
				}
				wg.Wait()
				for w := range writers {
					if errs[w] != nil || ids[w] == 0 {
						t.Fatalf("append %d on a zeroed index: id %d, %v; want it stored", w, ids[w], errs[w])
					}
				}
				ms, err := db.Messages(ctx, "s", sessiondb.MessageFilter{AfterID: slices.Min(ids) - 1})
				if err != nil {
					t.Fatal(err)
				}
				stored := map[int64]any{}
				for _, m := range ms {
					stored[m.ID] = m.Content
				}
				for w := range writers {
					if got, want := stored[ids[w]], fmt.Sprintf("after the damage zebrafish%d 斑马鱼%d", w, w); got != want {
						t.Errorf("message %d holds %v, want %q", ids[w], got, want)
					}
				}
				if s := sessGet(t, db, "s"); s.MessageCount != int64(40+writers) {
					t.Errorf("message_count = %d, want %d", s.MessageCount, 40+writers)
				}
				if got := count(t, raw, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'messages_fts%'"); got != 9 {
					t.Errorf("%d FTS triggers, want 9", got)
				}
				for _, q := range []string{"zebrafish0", "斑马鱼0"} {
					if got := len(search(t, db, q, sessiondb.SearchOptions{})); got != 1 {
						t.Errorf("search %q for a message appended after the damage: %d hits, want 1", q, got)
					}
				}
				if got := len(search(t, db, "docker", sessiondb.SearchOptions{Limit: 1000})); got != 40 {
					t.Errorf("old messages: %d hits, want 40", got)
				}
				if got := len(search(t, db, "东京", sessiondb.SearchOptions{Limit: 1000})); got != 8 {
					t.Errorf("old CJK messages: %d hits, want 8", got)
				}
				checkIntegrity(t, raw)
			})
		}
	}
}
