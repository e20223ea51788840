package postgres_test

import (
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/storetest"
)

// TestStore runs the conformance suite every backend passes. Ranked order
// is not compared: DESIGN.md ("Ranking") says how it differs from bm25.
func TestStore(t *testing.T) {
	storetest.RunWithOptions(t, func(t *testing.T) sessiondb.Store { return MustOpen(t) },
		storetest.Options{RankOrderDiffers: true})
}
