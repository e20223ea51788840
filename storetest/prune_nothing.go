package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// testPruneNothing: a prune that finds nothing to delete (only open or
// recent sessions) returns no candidate and keeps everything.
// The deadline only bounds a prune that would never end.
func testPruneNothing(t *testing.T, s *suite) {
	h := s.store(t)
	h.at("open", base)
	h.at("recent", base+10*day)
	h.end("recent", "user_exit")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, dry := range []bool{false, true} {
		got, err := h.Prune(ctx, sessiondb.PruneOptions{Before: base + day, DryRun: dry})
		if err != nil {
			t.Fatalf("Prune(dry run %v): %v", dry, err)
		}
		if len(got) != 0 {
			t.Errorf("Prune(dry run %v) = %#v, want none", dry, got)
		}
	}
	for _, id := range []string{"open", "recent"} {
		if !h.exists(id) {
			t.Errorf("%s pruned", id)
		}
	}
}
