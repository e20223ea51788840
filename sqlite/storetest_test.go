package sqlite_test

import (
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/storetest"
)

// TestStore runs the conformance suite every backend passes.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) sessiondb.Store { return MustOpen(t) })
}
