package sqlite_test

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// TestInfo: `sessiondb info` reports the file as it is: schema version,
// journal mode, search layout and storage version, which search indexes are
// live (present, with their triggers, not waiting for a backfill), the rows
// still to index, the row counts and the files on disk.
func TestInfo(t *testing.T) {
	db := MustOpen(t)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: fmt.Sprintf("m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.UpdateTokenCounts(ctx, "s", sessiondb.TokenUpdate{InputTokens: 5, APICallCount: 1, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	in, err := db.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if in.Path != db.Path() || in.SchemaVersion != sqlite.SchemaVersion || in.JournalMode != "wal" ||
		in.FTSLayout != "external-content" || in.FTSStorage != fmt.Sprint(sqlite.FTSStorageVersion) || in.Pending != 0 {
		t.Errorf("info = %+v", in)
	}
	live := map[string]bool{"messages_fts": true, "messages_fts_trigram": true, "messages_fts_cjk": true}
	if !reflect.DeepEqual(in.Indexes, live) {
		t.Errorf("indexes = %v, want %v", in.Indexes, live)
	}
	rows := map[string]int64{"sessions": 1, "messages": 3, "system_prompts": 0, "session_model_usage": 1}
	if !reflect.DeepEqual(in.Rows, rows) {
		t.Errorf("rows = %v, want %v", in.Rows, rows)
	}
	base := filepath.Base(db.Path())
	if in.Files[base] <= 0 || len(in.Files) != 3 {
		t.Errorf("files = %v, want %s, its -wal and -shm", in.Files, base)
	}
	if n, err := db.MessageCount(ctx); err != nil || n != 3 {
		t.Errorf("MessageCount = %d, %v; want 3", n, err)
	}

	// A word index waiting for 7 rows and a CJK index waiting for 2 are not
	// live; an index without one of its triggers is not live either.
	raw := rawDB(t, db.Path())
	rawExec(t, raw, `INSERT INTO state_meta(key, value) VALUES ('fts_rebuild_high_water', '10'), ('fts_rebuild_progress', '3'),
		('fts_cjk_rebuild_high_water', '5'), ('fts_cjk_rebuild_progress', '3')`)
	if in, err = db.Info(ctx); err != nil {
		t.Fatal(err)
	}
	if in.Pending != 9 || in.Indexes["messages_fts"] || in.Indexes["messages_fts_trigram"] || in.Indexes["messages_fts_cjk"] {
		t.Errorf("pending backfill: pending %d, indexes %v; want 9 and none live", in.Pending, in.Indexes)
	}
	rawExec(t, raw, `DELETE FROM state_meta WHERE key LIKE 'fts_%rebuild%'`)
	rawExec(t, raw, `DROP TRIGGER messages_fts_cjk_insert`)
	if in, err = db.Info(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"messages_fts": true, "messages_fts_trigram": true, "messages_fts_cjk": false}
	if in.Pending != 0 || !reflect.DeepEqual(in.Indexes, want) {
		t.Errorf("a trigger dropped: pending %d, indexes %v; want 0, %v", in.Pending, in.Indexes, want)
	}
}

// TestDailyModelUsage: usage per local day of the sessions' start and per
// model, largest first within a day, from a given start on.
func TestDailyModelUsage(t *testing.T) {
	db := MustOpen(t)
	day := func(ts float64) string { return time.Unix(int64(ts), 0).Format("2006-01-02") }
	noon := float64(fixedNow.Unix()) - 2*86400 + 12*3600
	f := func(v float64) *float64 { return &v }
	for _, s := range []struct {
		id, model string
		start     float64
		messages  int
		u         sessiondb.TokenUpdate
	}{
		{"a", "m-a", noon, 2, sessiondb.TokenUpdate{InputTokens: 100, OutputTokens: 50, CacheReadTokens: 7, APICallCount: 1, EstimatedCostUSD: f(0.5)}},
		{"b", "m-b", noon + 60, 1, sessiondb.TokenUpdate{InputTokens: 300, OutputTokens: 100, ReasoningTokens: 40, CacheWriteTokens: 3, APICallCount: 2, ActualCostUSD: f(1.5)}},
		{"a2", "m-a", noon + 120, 1, sessiondb.TokenUpdate{InputTokens: 1, OutputTokens: 1, APICallCount: 1}},
		{"c", "m-a", noon + 86400, 0, sessiondb.TokenUpdate{InputTokens: 10, OutputTokens: 5, APICallCount: 1}},
		{"old", "m-a", noon - 30*86400, 0, sessiondb.TokenUpdate{InputTokens: 1000, APICallCount: 4}},
	} {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: s.id, Source: "cli", Model: s.model, StartedAt: s.start}); err != nil {
			t.Fatal(err)
		}
		for i := range s.messages {
			if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: s.id, Role: "user", Content: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		s.u.Model = s.model
		if err := db.UpdateTokenCounts(ctx, s.id, s.u); err != nil {
			t.Fatal(err)
		}
	}

	got, err := db.DailyModelUsage(ctx, noon-3600)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("days = %v, want %s and %s", got, day(noon), day(noon+86400))
	}
	first := got[day(noon)]
	if len(first) != 2 || first[0].Key != "m-b" || first[1].Key != "m-a" {
		t.Fatalf("%s = %+v, want m-b then m-a (largest first)", day(noon), first)
	}
	b, a := first[0], first[1]
	if b.Sessions != 1 || b.Messages != 1 || b.APICalls != 2 || b.InputTokens != 300 || b.OutputTokens != 100 ||
		b.ReasoningTokens != 40 || b.CacheWriteTokens != 3 || math.Abs(b.ActualCostUSD-1.5) > 1e-9 {
		t.Errorf("m-b = %+v", b)
	}
	if a.Sessions != 2 || a.Messages != 3 || a.APICalls != 2 || a.InputTokens != 101 || a.OutputTokens != 51 ||
		a.CacheReadTokens != 7 || math.Abs(a.EstimatedCostUSD-0.5) > 1e-9 {
		t.Errorf("m-a = %+v", a)
	}
	if second := got[day(noon+86400)]; len(second) != 1 || second[0].Key != "m-a" || second[0].InputTokens != 10 || second[0].Sessions != 1 {
		t.Errorf("%s = %+v", day(noon+86400), second)
	}

	all, err := db.DailyModelUsage(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if old := all[day(noon-30*86400)]; len(all) != 3 || len(old) != 1 || old[0].InputTokens != 1000 {
		t.Errorf("since 0: %v; want the old day too", all)
	}
}
