package storetest

import (
	"testing"

	"github.com/sessiondb/sessiondb"
)

// testUsage checks the per-model usage rows UpdateTokenCounts keeps, as a
// backend's optional UsageStats reads them (sessiondb.UsageReporter); a
// store without UsageStats skips it.
func testUsage(t *testing.T, s *suite) {
	t.Run("each update counts under its route: its model, else the session's, else unknown", func(t *testing.T) {
		h := s.store(t)
		u, ok := h.Store.(sessiondb.UsageReporter)
		if !ok {
			t.Skip("the store has no UsageStats")
		}
		ctx := t.Context()
		h.create(sessiondb.NewSession{ID: "with-model", Source: "cli", Model: "m1", StartedAt: base})
		h.create(sessiondb.NewSession{ID: "no-model", Source: "cli", StartedAt: base + 1})
		h.create(sessiondb.NewSession{ID: "switched", Source: "cli", Model: "m1", StartedAt: base + 2})
		for _, c := range []struct {
			id string
			u  sessiondb.TokenUpdate
		}{
			{"with-model", sessiondb.TokenUpdate{InputTokens: 5, APICallCount: 1}},
			{"no-model", sessiondb.TokenUpdate{InputTokens: 70, APICallCount: 1}},
			{"switched", sessiondb.TokenUpdate{InputTokens: 300, APICallCount: 1, Model: "m2"}},
			{"with-model", sessiondb.TokenUpdate{InputTokens: 2, APICallCount: 1}},
		} {
			if err := h.UpdateTokenCounts(ctx, c.id, c.u); err != nil {
				t.Fatalf("UpdateTokenCounts(%s): %v", c.id, err)
			}
		}
		rows, err := u.UsageStats(ctx, sessiondb.UsageByModel, 0)
		if err != nil {
			t.Fatal(err)
		}
		type sums struct{ sessions, calls, in int64 }
		got := map[string]sums{}
		var keys []string
		for _, r := range rows {
			got[r.Key] = sums{r.Sessions, r.APICalls, r.InputTokens}
			keys = append(keys, r.Key)
		}
		equal(t, "usage by model", got, map[string]sums{
			"m2":      {1, 1, 300},
			"unknown": {1, 1, 70},
			"m1":      {1, 2, 7},
		})
		equal(t, "the order of the models (most tokens first)", keys, []string{"m2", "unknown", "m1"})
		// The session's own model stays what it was created with.
		if m := str(h.get("switched").Model); m != "m1" {
			t.Errorf("switched model = %s, want m1", m)
		}
	})
}
