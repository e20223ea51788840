package sqlite_test

import (
	"fmt"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestPruneMostOfHistory: a prune that removes most messages rebuilds the
// search indexes from what remains instead of deleting entry by entry; the
// result must be the same: consistent indexes that find exactly the rest.
func TestPruneMostOfHistory(t *testing.T) {
	db := MustOpen(t)
	old := float64(fixedNow.Add(-400 * 24 * 3600e9).Unix())
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("old-%03d", i)
		db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli", StartedAt: old})
		var ms []sessiondb.NewMessage
		for j := 0; j < 8; j++ {
			ms = append(ms, sessiondb.NewMessage{Role: "user", Content: fmt.Sprintf("old docker note %d 项目 %d", i, j), Timestamp: old + float64(j)})
		}
		if _, err := db.AppendMessages(ctx, id, ms); err != nil {
			t.Fatal(err)
		}
		db.EndSession(ctx, id, "user_exit")
	}
	db.CreateSession(ctx, sessiondb.NewSession{ID: "keep", Source: "cli"})
	db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "keep", Role: "user", Content: "recent docker 项目 question"})
	raw := rawDB(t, db.Path())
	before := count(t, raw, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'")

	pruned, err := db.Prune(ctx, sessiondb.PruneOptions{Before: old + 86400})
	if err != nil {
		t.Fatal(err)
	}
	if len(pruned) != 300 {
		t.Fatalf("pruned %d sessions, want 300", len(pruned))
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'"); got != before {
		t.Errorf("%d triggers after the prune, %d before", got, before)
	}
	checkIntegrity(t, raw)
	for _, q := range []string{"docker", "项目"} {
		hits := search(t, db, q, sessiondb.SearchOptions{Limit: 100})
		if len(hits) != 1 || hits[0].SessionID != "keep" {
			t.Errorf("%q after the prune: %d hits", q, len(hits))
		}
	}
	// The reinstalled triggers keep working.
	id, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "keep", Role: "user", Content: "zebra after prune"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClearMessages(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM messages WHERE id = ?", id); got != 0 {
		t.Fatal("message not deleted")
	}
	checkIntegrity(t, raw)
}

// TestPruneIDsOutsideJSON: session ids that cannot travel through JSON
// unchanged (invalid UTF-8, a NUL: files written by other tools may hold
// them) are deleted in chunks of IN lists, as Hermes does; a prune of more
// sessions than one chunk holds removes every one, with its messages, and
// nothing else.
func TestPruneIDsOutsideJSON(t *testing.T) {
	s := opsOpen(t)
	old := opsNow - 100*opsDay
	tx, err := s.raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	const n = 1901 // three chunks of at most 900
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("old-%04d", i)
		switch i {
		case 0:
			id = "bad-\xff-utf8"
		case 1000:
			id = "nul-\x00-id"
		}
		if _, err := tx.Exec(`INSERT INTO sessions (id, source, started_at, ended_at, end_reason, message_count) VALUES (?, 'cli', ?, ?, 'user_exit', 1)`, id, old, old+1); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'prunable text', ?)`, id, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	opsAged(t, s, "recent", "cli", 10, "user_exit")

	cands, err := s.Prune(ctx, sessiondb.PruneOptions{Before: ops90})
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != n {
		t.Errorf("%d candidates, want %d", len(cands), n)
	}
	if got := count(t, s.raw, "SELECT COUNT(*) FROM sessions WHERE id <> 'recent'"); got != 0 {
		t.Errorf("%d old sessions left", got)
	}
	if got := count(t, s.raw, "SELECT COUNT(*) FROM messages WHERE session_id <> 'recent'"); got != 0 {
		t.Errorf("%d messages of pruned sessions left", got)
	}
	if !s.exists(t, "recent") || count(t, s.raw, "SELECT COUNT(*) FROM messages WHERE session_id = 'recent'") == 0 {
		t.Error("the recent session or its messages went too")
	}
	if got := count(t, s.raw, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'prunable'"); got != 0 {
		t.Errorf("%d search entries of pruned messages left", got)
	}
	checkIntegrity(t, s.raw)
}

// TestPruneBulkClearsBackfillMarkers: a prune that removes most of the
// history rebuilds the search indexes from what remains, which completes a
// pending backfill: its markers go with it (left behind, they would send
// searches to the slow path for rows the index already holds).
func TestPruneBulkClearsBackfillMarkers(t *testing.T) {
	db := MustOpen(t)
	old := float64(fixedNow.Add(-400 * 24 * 3600e9).Unix())
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("old-%03d", i)
		db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli", StartedAt: old})
		var ms []sessiondb.NewMessage
		for j := 0; j < 8; j++ {
			ms = append(ms, sessiondb.NewMessage{Role: "user", Content: fmt.Sprintf("old note %d 项目 %d", i, j), Timestamp: old + float64(j)})
		}
		if _, err := db.AppendMessages(ctx, id, ms); err != nil {
			t.Fatal(err)
		}
		db.EndSession(ctx, id, "user_exit")
	}
	db.CreateSession(ctx, sessiondb.NewSession{ID: "keep", Source: "cli"})
	db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "keep", Role: "user", Content: "recent 项目 question"})
	raw := rawDB(t, db.Path())
	markers := []string{"fts_rebuild_high_water", "fts_rebuild_progress", "fts_cjk_rebuild_high_water", "fts_cjk_rebuild_progress"}
	for _, k := range markers {
		rawExec(t, raw, "INSERT OR REPLACE INTO state_meta (key, value) VALUES (?, '1')", k)
	}
	if _, err := db.Prune(ctx, sessiondb.PruneOptions{Before: old + 86400}); err != nil {
		t.Fatal(err)
	}
	for _, k := range markers {
		if n := count(t, raw, "SELECT COUNT(*) FROM state_meta WHERE key = ?", k); n != 0 {
			t.Errorf("backfill marker %s left after the rebuilding prune", k)
		}
	}
	hits := search(t, db, "项目", sessiondb.SearchOptions{Limit: 10})
	if len(hits) != 1 || hits[0].SessionID != "keep" {
		t.Errorf("search after the prune: %d hits", len(hits))
	}
	checkIntegrity(t, raw)
}
