// Package storetest is the conformance suite of the sessiondb.Store
// contract: every backend's tests call Run with a function that opens a
// fresh, empty store, and the suite checks the behaviour the SQLite backend
// promises (and Hermes relies on) through the interface alone.
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) sessiondb.Store {
//			db := mustOpen(t) // registers its own cleanup
//			return db
//		})
//	}
//
// Each subtest opens its own store, so subtests neither see nor disturb
// each other's rows. The suite never reads the store's clock: every time it
// asserts is one it gave (NewSession.StartedAt, NewMessage.Timestamp) or one
// it read back first (ended_at), so a backend may run on any clock.
//
// Search cases compare match sets (the message ids, or session ids) written
// down by hand from the corpus in search.go; ranked order is compared only
// for the sorts every backend promises (newest, oldest) and for clear-cut
// rank cases, which a backend whose ranking is documented to differ skips
// with Options.RankOrderDiffers.
//
// The per-model usage rows of UpdateTokenCounts are checked through the
// optional sessiondb.UsageReporter, when the store has it.
//
// What no Store method can produce is not checked: rows made inactive by
// compaction (IncludeInactive is checked only on all-active sessions),
// hidden sessions (ListOptions.IncludeHidden), and the search routes SQLite
// takes only while an index is stale or being rebuilt. Nor is the store's
// clock, beyond "a timestamp out of Hermes' window is replaced by one
// inside it".
package storetest

import (
	"testing"

	"github.com/sessiondb/sessiondb"
)

// Options describe where a backend legitimately differs from the SQLite
// backend. The zero value asks for everything.
type Options struct {
	// RankOrderDiffers skips the cases that compare the order of a
	// rank-sorted search (SQLite ranks with FTS5's bm25). Match sets,
	// paging consistency and the newest/oldest orders are still checked.
	// Set it only for a backend whose DESIGN.md documents how its ranking
	// differs.
	RankOrderDiffers bool
}

// Run runs the whole suite against the stores open returns. open must
// return a new, empty store on every call and register its closing with
// t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) sessiondb.Store) {
	RunWithOptions(t, open, Options{})
}

// RunWithOptions is Run for a backend that differs as o says.
func RunWithOptions(t *testing.T, open func(t *testing.T) sessiondb.Store, o Options) {
	s := &suite{open: open, opts: o}
	for _, g := range []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"CreateSession", testCreateSession},
		{"EnsureSession", testEnsureSession},
		{"Session", testSession},
		{"OddSessionIDs", testOddSessionIDs},
		{"EndSession", testEndSession},
		{"ReopenSession", testReopenSession},
		{"UpdateSystemPrompt", testUpdateSystemPrompt},
		{"UpdateTokenCounts", testUpdateTokenCounts},
		{"Usage", testUsage},
		{"ResolveSessionID", testResolveSessionID},
		{"Meta", testMeta},
		{"AppendMessage", testAppendMessage},
		{"AppendMessages", testAppendMessages},
		{"AppendMessagesRefused", testAppendMessagesRefused},
		{"AppendBatch", testAppendBatch},
		{"Messages", testMessages},
		{"Conversation", testConversation},
		{"Titles", testTitles},
		{"ListSessions", testListSessions},
		{"Lineage", testLineage},
		{"DeleteSession", testDeleteSession},
		{"DeleteTargets", testDeleteTargets},
		{"Prune", testPrune},
		{"PruneNothing", testPruneNothing},
		{"Flags", testFlags},
		{"ClearMessages", testClearMessages},
		{"Search", testSearch},
		{"Import", testImport},
	} {
		t.Run(g.name, func(t *testing.T) { g.run(t, s) })
	}
	// Groups of optional interfaces run for a store that has them.
	if _, ok := open(t).(sessiondb.CostRanker); ok {
		t.Run("CostliestSessions", func(t *testing.T) { testCostliestSessions(t, s) })
	}
}

// suite carries the open function and the options to every group.
type suite struct {
	open func(t *testing.T) sessiondb.Store
	opts Options
}

// store opens a fresh store for t.
func (s *suite) store(t *testing.T) *harness {
	t.Helper()
	st := s.open(t)
	if st == nil {
		t.Fatal("open returned a nil store")
	}
	return &harness{t: t, Store: st}
}
