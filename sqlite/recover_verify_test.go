package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
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

// TestRecoverCountersPhase: sessions whose stored counters disagree with the
// messages copied are reported, in id order, and keep their stored values.
func TestRecoverCountersPhase(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, src)
	for _, id := range []string{"c-ok", "c-msgs", "c-calls"} {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "user", Content: "hello " + id}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	withRawDB(t, src, func(raw *sql.DB) {
		rawExec(t, raw, "UPDATE sessions SET message_count = 5 WHERE id = 'c-msgs'")
		rawExec(t, raw, "UPDATE sessions SET tool_call_count = 3 WHERE id = 'c-calls'")
	})
	rep, out := recoverWith(t, src, recoverOpts)
	c := rep.Counters
	if c.MessageCount != 1 || c.ToolCallCount != 1 || !reflect.DeepEqual(c.Sessions, []string{"c-calls", "c-msgs"}) {
		t.Errorf("counters %+v, want 1 message count and 1 tool call count mismatch, sessions [c-calls c-msgs]", c)
	}
	o := rawDB(t, out)
	if got := count(t, o, "SELECT message_count FROM sessions WHERE id = 'c-msgs'"); got != 5 {
		t.Errorf("message_count of c-msgs = %d, want the stored 5 kept", got)
	}
	if got := count(t, o, "SELECT tool_call_count FROM sessions WHERE id = 'c-calls'"); got != 3 {
		t.Errorf("tool_call_count of c-calls = %d, want the stored 3 kept", got)
	}
}

// TestRecoverDuplicateTitles: an older file may hold one title twice; the
// output's unique title index keeps it on the later session only.
func TestRecoverDuplicateTitles(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, src)
	for _, id := range []string{"t-old", "t-new", "t-other"} {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	withRawDB(t, src, func(raw *sql.DB) {
		rawExec(t, raw, "DROP INDEX idx_sessions_title_unique")
		rawExec(t, raw, "UPDATE sessions SET title = 'same' WHERE id IN ('t-old', 't-new')")
		rawExec(t, raw, "UPDATE sessions SET title = 'other' WHERE id = 't-other'")
	})
	rep, out := recoverWith(t, src, recoverOpts)
	if rep.Cleanup.TitlesCleared != 1 {
		t.Errorf("titles cleared = %d, want 1", rep.Cleanup.TitlesCleared)
	}
	o := rawDB(t, out)
	var keeper string
	if err := o.QueryRow("SELECT id FROM sessions WHERE title = 'same'").Scan(&keeper); err != nil || keeper != "t-new" {
		t.Errorf("title 'same' kept by %q (%v), want the later session t-new", keeper, err)
	}
	if got := count(t, o, "SELECT COUNT(*) FROM sessions WHERE title = 'other'"); got != 1 {
		t.Errorf("the unique title 'other' was touched")
	}
	if got := count(t, o, "SELECT COUNT(*) FROM sessions"); got != 3 {
		t.Errorf("%d sessions, want 3", got)
	}
}

// TestRecoverCountersListsTwenty: with more than twenty sessions whose
// counters disagree, all are counted and the first twenty (in id order)
// named.
func TestRecoverCountersListsTwenty(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, src)
	var ids []string
	for i := range 21 {
		id := fmt.Sprintf("c%02d", i)
		ids = append(ids, id)
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	withRawDB(t, src, func(raw *sql.DB) { rawExec(t, raw, "UPDATE sessions SET message_count = 2") })
	rep, err := sqlite.Recover(ctx, src, filepath.Join(t.TempDir(), "new.db"), recoverOpts)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	if c := rep.Counters; c.MessageCount != 21 || !reflect.DeepEqual(c.Sessions, ids[:20]) {
		t.Errorf("counters %+v; want 21 message count mismatches, the first 20 sessions named", c)
	}
}
