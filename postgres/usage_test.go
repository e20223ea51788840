package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

func TestUsageStats(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	day1 := float64(time.Date(2024, 3, 1, 12, 0, 0, 0, time.Local).Unix())
	day2 := day1 + 86400
	cost := 0.25
	for _, s := range []struct {
		id, source, model string
		started           float64
		in                int64
	}{{"a", "cli", "m1", day1, 10}, {"b", "telegram", "m2", day1 + 60, 100}, {"c", "cli", "m1", day2, 1}} {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: s.id, Source: s.source, Model: s.model, StartedAt: s.started}); err != nil {
			t.Fatal(err)
		}
		if err := db.UpdateTokenCounts(ctx, s.id, sessiondb.TokenUpdate{InputTokens: s.in, OutputTokens: 1, APICallCount: 1, EstimatedCostUSD: &cost}); err != nil {
			t.Fatal(err)
		}
	}
	db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "x"})
	for _, tt := range []struct {
		by   string
		want []sessiondb.UsageRow
	}{
		{sessiondb.UsageByTotal, []sessiondb.UsageRow{{Key: "", Sessions: 3, Messages: 1, APICalls: 3, InputTokens: 111, OutputTokens: 3, EstimatedCostUSD: 0.75}}},
		{sessiondb.UsageBySource, []sessiondb.UsageRow{
			{Key: "telegram", Sessions: 1, APICalls: 1, InputTokens: 100, OutputTokens: 1, EstimatedCostUSD: 0.25},
			{Key: "cli", Sessions: 2, Messages: 1, APICalls: 2, InputTokens: 11, OutputTokens: 2, EstimatedCostUSD: 0.5}}},
		{sessiondb.UsageByModel, []sessiondb.UsageRow{
			{Key: "m2", Sessions: 1, APICalls: 1, InputTokens: 100, OutputTokens: 1, EstimatedCostUSD: 0.25},
			{Key: "m1", Sessions: 2, Messages: 1, APICalls: 2, InputTokens: 11, OutputTokens: 2, EstimatedCostUSD: 0.5}}},
		{sessiondb.UsageByDay, []sessiondb.UsageRow{
			{Key: "2024-03-02", Sessions: 1, APICalls: 1, InputTokens: 1, OutputTokens: 1, EstimatedCostUSD: 0.25},
			{Key: "2024-03-01", Sessions: 2, Messages: 1, APICalls: 2, InputTokens: 110, OutputTokens: 2, EstimatedCostUSD: 0.5}}},
	} {
		got, err := db.UsageStats(ctx, tt.by, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("by %q: %+v, want %+v", tt.by, got, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("by %q row %d: %+v, want %+v", tt.by, i, got[i], tt.want[i])
			}
		}
	}
	if got, err := db.UsageStats(ctx, sessiondb.UsageBySource, day2); err != nil || len(got) != 1 || got[0].Sessions != 1 {
		t.Fatalf("since day 2: %+v, %v", got, err)
	}
	if _, err := db.UsageStats(ctx, "week", 0); sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Fatalf("by week: %v, want invalid", err)
	}
	got, err := db.SessionUsage(ctx, "b")
	if err != nil || len(got) != 1 || got[0].Key != "m2" || got[0].InputTokens != 100 {
		t.Fatalf("session usage = %+v, %v", got, err)
	}
}
