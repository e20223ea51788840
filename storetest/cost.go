package storetest

import (
	"testing"

	"github.com/sessiondb/sessiondb"
)

// testCostliestSessions checks sessiondb.CostRanker, for a store that has
// it: every session counts, the actual cost wins over the estimate, ties go
// to the newest, since and limit apply, costless sessions are left out.
func testCostliestSessions(t *testing.T, s *suite) {
	h := s.store(t)
	rank, ok := h.Store.(sessiondb.CostRanker)
	if !ok {
		t.Fatal("the store is not a sessiondb.CostRanker (the group is run only for one)")
	}
	cost := func(id string, estimated, actual *float64) {
		t.Helper()
		if err := h.UpdateTokenCounts(t.Context(), id, sessiondb.TokenUpdate{InputTokens: 1, EstimatedCostUSD: estimated, ActualCostUSD: actual}); err != nil {
			t.Fatalf("UpdateTokenCounts(%q): %v", id, err)
		}
	}
	h.create(sessiondb.NewSession{ID: "old-dear", Source: "cli", StartedAt: base})
	cost("old-dear", ptr(9.0), nil)
	// the actual cost wins even when it is below the estimate
	h.create(sessiondb.NewSession{ID: "actual", Source: "cli", StartedAt: base + 10})
	cost("actual", ptr(50.0), ptr(3.0))
	// a delegate child, an archived and a hidden session count too
	h.create(sessiondb.NewSession{ID: "parent", Source: "cli", StartedAt: base + 20})
	h.create(sessiondb.NewSession{ID: "child", Source: "tool", ParentSessionID: "parent", StartedAt: base + 21})
	cost("child", ptr(7.0), nil)
	h.create(sessiondb.NewSession{ID: "archived", Source: "cli", StartedAt: base + 30})
	cost("archived", ptr(5.0), nil)
	if err := h.SetArchived(t.Context(), "archived", true); err != nil {
		t.Fatal(err)
	}
	// equal costs: the newer first
	h.create(sessiondb.NewSession{ID: "tie-old", Source: "cli", StartedAt: base + 40})
	cost("tie-old", ptr(4.0), nil)
	h.create(sessiondb.NewSession{ID: "tie-new", Source: "cli", StartedAt: base + 50})
	cost("tie-new", ptr(4.0), nil)
	// no cost, a zero cost: left out
	h.create(sessiondb.NewSession{ID: "free", Source: "cli", StartedAt: base + 60})
	h.create(sessiondb.NewSession{ID: "zero", Source: "cli", StartedAt: base + 70})
	cost("zero", ptr(0.0), ptr(0.0))

	ids := func(since float64, limit int) []string {
		t.Helper()
		got, err := rank.CostliestSessions(t.Context(), since, limit)
		if err != nil {
			t.Fatalf("CostliestSessions(%v, %d): %v", since, limit, err)
		}
		out := []string{}
		for _, s := range got {
			out = append(out, s.ID)
		}
		return out
	}
	equal(t, "all", ids(0, 100), []string{"old-dear", "child", "archived", "tie-new", "tie-old", "actual"})
	equal(t, "limit 2", ids(0, 2), []string{"old-dear", "child"})
	equal(t, "since", ids(base+21, 100), []string{"child", "archived", "tie-new", "tie-old"})
	equal(t, "since after every session", ids(base+1000, 100), []string{})
	got, err := rank.CostliestSessions(t.Context(), 0, 1)
	if err != nil || len(got) != 1 || got[0].EstimatedCostUSD == nil || *got[0].EstimatedCostUSD != 9 || got[0].Source != "cli" {
		t.Errorf("the costliest session comes back incomplete: %+v, %v", got, err)
	}
}
