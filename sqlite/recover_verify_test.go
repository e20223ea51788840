package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// TestRecoverVerifyCountsTheSource: a copy that stops short without any
// read error (here: the messages table's chunks are dropped on the way)
// must fail verification, which compares the output with the source's row
// counts, not with what was copied.
func TestRecoverVerifyCountsTheSource(t *testing.T) {
	src := upgradedFixture(t, "hermes-v23.db")
	srcMessages := count(t, rawDB(t, src), "SELECT COUNT(*) FROM messages")
	if srcMessages == 0 {
		t.Fatal("the fixture has no messages: the test would prove nothing")
	}
	sqlite.SetRecoverDropChunk(t, func(table string) bool { return table == "messages" })
	out := filepath.Join(t.TempDir(), "new.db")
	rep, err := sqlite.Recover(ctx, src, out, recoverOpts)
	if err == nil || sessiondb.ErrorCode(err) != sessiondb.EINTERNAL {
		t.Fatalf("recover of a short copy: %v, want EINTERNAL (verification failed)", err)
	}
	if rep == nil {
		t.Fatal("no report")
	}
	if rep.Verify.OK || rep.Verify.RowCountsMatch || rep.Complete {
		t.Errorf("verify ok=%v row counts match=%v complete=%v; want all false", rep.Verify.OK, rep.Verify.RowCountsMatch, rep.Complete)
	}
	found := false
	for _, p := range rep.Verify.Problems {
		if strings.Contains(p, "table messages holds 0 rows") && strings.Contains(p, "the source counts") {
			found = true
		}
	}
	if !found {
		t.Errorf("problems %q do not name the messages table against the source's count", rep.Verify.Problems)
	}
}
