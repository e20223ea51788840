package postgres

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
)

// TestStoreClock: the times the store stamps itself (a session started
// without StartedAt, EnsureSession's start, EndSession's ended_at, the
// usage row's first and last use) are Options.Now in Unix seconds,
// fraction included.
func TestStoreClock(t *testing.T) {
	ctx := context.Background()
	clock := time.Unix(1_750_000_000, 250_000_000)
	db := openInternal(t, Options{Now: func() time.Time { return clock }})
	const want = 1_750_000_000.25
	// near: float64(UnixNano)/1e9 is the time to about a microsecond.
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-3 }
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "made", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnsureSession(ctx, "ensured", "cli", ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"made", "ensured"} {
		s, err := db.Session(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !near(s.StartedAt, want) {
			t.Errorf("%s started_at = %v, want the clock's %v", id, s.StartedAt, want)
		}
	}
	clock = clock.Add(90 * time.Second)
	if err := db.EndSession(ctx, "made", "user_exit"); err != nil {
		t.Fatal(err)
	}
	if s, err := db.Session(ctx, "made"); err != nil {
		t.Fatal(err)
	} else if s.EndedAt == nil || !near(*s.EndedAt, want+90) {
		t.Errorf("ended_at = %v, want %v", fmtTime(s.EndedAt), want+90)
	}
	if err := db.UpdateTokenCounts(ctx, "made", sessiondb.TokenUpdate{InputTokens: 1}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(10 * time.Second)
	if err := db.UpdateTokenCounts(ctx, "made", sessiondb.TokenUpdate{InputTokens: 1}); err != nil {
		t.Fatal(err)
	}
	var first, last float64
	if err := db.pool.QueryRow(ctx, "SELECT first_seen, last_seen FROM session_model_usage WHERE session_id = 'made'").Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	if !near(first, want+90) || !near(last, want+100) {
		t.Errorf("usage row seen %v to %v, want %v to %v", first, last, want+90, want+100)
	}
}

// TestSystemPromptsCollected: a replaced or cleared system prompt leaves
// no row behind in system_prompts; one still used by another session stays.
func TestSystemPromptsCollected(t *testing.T) {
	ctx := context.Background()
	db := openInternal(t, Options{})
	for _, id := range []string{"a", "b"} {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli", StartedAt: 1.7e9}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		id, prompt string
		want       int
	}{
		{"a", "first", 1},
		{"b", "first", 1},  // shared: stored once
		{"a", "second", 2}, // "first" is still b's
		{"b", "third", 2},  // "first" is nobody's now
		{"a", "", 1},       // cleared
		{"b", "", 0},
	} {
		if err := db.UpdateSystemPrompt(ctx, step.id, step.prompt); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, db, "system_prompts"); n != step.want {
			t.Fatalf("after %s's prompt became %q: %d rows in system_prompts, want %d", step.id, step.prompt, n, step.want)
		}
	}
}

func fmtTime(p *float64) string {
	if p == nil {
		return "NULL"
	}
	return strconv.FormatFloat(*p, 'f', 3, 64)
}

// openInternal opens a store on a fresh database, closed when t ends.
func openInternal(t *testing.T, o Options) *DB {
	t.Helper()
	db, err := Open(context.Background(), testenv.Postgres(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// countRows returns the number of rows of table.
func countRows(t *testing.T, db *DB, table string) int {
	t.Helper()
	var n int
	if err := db.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
