package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// BenchmarkMessagesLatest times what `show` and the web page's transcript
// read first, the last 50 active messages of a session, on sessions of
// 1,000 and 100,000 messages (issue 17: flat in the session's length).
//
//	go test -tags sqlite_fts5 -run '^$' -bench BenchmarkMessagesLatest ./sqlite/
func BenchmarkMessagesLatest(b *testing.B) {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "state.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, n := range []int{1_000, 100_000} {
		id := fmt.Sprintf("s%d", n)
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			b.Fatal(err)
		}
		batch := make([]sessiondb.NewMessage, 0, 1000)
		for i := range n {
			batch = append(batch, sessiondb.NewMessage{Role: "user", Content: fmt.Sprintf("message %d of a long session about docker deployment", i)})
			if len(batch) == cap(batch) || i == n-1 {
				if _, err := db.AppendMessages(ctx, id, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			f := sessiondb.MessageFilter{Limit: 50, Latest: true}
			ms, err := db.Messages(ctx, id, f)
			if err != nil || len(ms) != 50 || ms[49].Content != fmt.Sprintf("message %d of a long session about docker deployment", n-1) {
				b.Fatalf("latest 50: %d rows, %v", len(ms), err)
			}
			for b.Loop() {
				if _, err := db.Messages(ctx, id, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
