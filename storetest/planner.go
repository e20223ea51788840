package storetest

import (
	"testing"

	"github.com/sessiondb/sessiondb"
)

// testDeleteTargets checks the optional sessiondb.DeletePlanner: it names
// what DeleteSession would delete (the session first, then its delegate
// children, recursively) and deletes nothing. A store without it skips.
func testDeleteTargets(t *testing.T, s *suite) {
	planner := func(t *testing.T) (*harness, sessiondb.DeletePlanner) {
		h := s.store(t)
		p, ok := h.Store.(sessiondb.DeletePlanner)
		if !ok {
			t.Skip("the store has no DeleteTargets")
		}
		return h, p
	}

	t.Run("names the session and its delegate children and deletes nothing", func(t *testing.T) {
		h, p := planner(t)
		h.at("p", base)
		for _, c := range []struct{ id, parent, config string }{
			{"d1", "p", `{"_delegate_from":"p"}`},
			{"d2", "d1", `{"_delegate_from":"d1"}`},
			{"br", "p", `{"_branched_from":"p"}`},
			{"c", "p", ""},
		} {
			h.create(sessiondb.NewSession{ID: c.id, Source: "cli", ParentSessionID: c.parent, ModelConfig: c.config, StartedAt: base + 1})
		}
		ids, err := p.DeleteTargets(t.Context(), "p")
		if err != nil {
			t.Fatal(err)
		}
		sameSet(t, "targets", ids, []string{"p", "d1", "d2"})
		if len(ids) == 0 || ids[0] != "p" {
			t.Errorf("targets = %v, want the session first", ids)
		}
		for _, id := range []string{"p", "d1", "d2", "br", "c"} {
			if !h.exists(id) {
				t.Errorf("%s deleted by DeleteTargets", id)
			}
		}
		deleted, err := h.DeleteSession(t.Context(), "p")
		if err != nil {
			t.Fatal(err)
		}
		sameSet(t, "deleted", deleted, ids)
	})

	t.Run("an unknown id is not found", func(t *testing.T) {
		_, p := planner(t)
		ids, err := p.DeleteTargets(t.Context(), "nope")
		wantCode(t, err, sessiondb.ENOTFOUND)
		if len(ids) != 0 {
			t.Errorf("ids = %v", ids)
		}
	})
}
