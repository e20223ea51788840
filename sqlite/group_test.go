package sqlite_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestGroupCommitIsolatesFailures: appends issued together share a
// transaction, yet each gets its own id or error, and a bad one fails alone:
// one refused before its insert (missing or compressed session) as well as
// one whose insert fails (here a trigger refuses it). The first round has
// no such insert, so whole groups go in with one statement; in the second,
// the groups holding one are appended message by message.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	db := MustOpen(t)
	db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"})
	db.CreateSession(ctx, sessiondb.NewSession{ID: "closed", Source: "cli"})
	db.EndSession(ctx, "closed", "compression")
	if _, err := rawDB(t, db.Path()).Exec(`CREATE TRIGGER refuse_poison BEFORE INSERT ON messages
		WHEN NEW.content LIKE 'poison%' BEGIN SELECT RAISE(ABORT, 'poisoned message'); END`); err != nil {
		t.Fatal(err)
	}
	const twoCalls = `[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]`

	const n = 200
	acked := map[int64]string{} // id → content, over both rounds
	calls := 0
	for round, poison := range []bool{false, true} {
		ids := make([]int64, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				m := sessiondb.NewMessage{SessionID: "s", Role: "user", Content: fmt.Sprintf("r%d-m%d", round, i)}
				switch {
				case i%20 == 7:
					m.SessionID = "missing"
				case i%20 == 13:
					m.SessionID = "closed"
				case i%20 == 17 && poison:
					m.Content = fmt.Sprintf("poison%d", i)
				case i%5 == 0:
					m.Role, m.ToolCalls = "assistant", json.RawMessage(twoCalls)
				}
				ids[i], errs[i] = db.AppendMessage(ctx, m)
			}(i)
		}
		wg.Wait()
		for i := 0; i < n; i++ {
			switch {
			case i%20 == 7:
				if sessiondb.ErrorCode(errs[i]) != sessiondb.ENOTFOUND {
					t.Errorf("round %d: append %d to a missing session: %v", round, i, errs[i])
				}
			case i%20 == 13:
				if sessiondb.ErrorCode(errs[i]) != sessiondb.ECONFLICT {
					t.Errorf("round %d: append %d to a compressed session: %v", round, i, errs[i])
				}
			case i%20 == 17 && poison:
				if errs[i] == nil || !strings.Contains(errs[i].Error(), "poisoned message") {
					t.Errorf("round %d: append %d refused by a trigger: %v", round, i, errs[i])
				}
			default:
				if _, dup := acked[ids[i]]; errs[i] != nil || ids[i] == 0 || dup {
					t.Errorf("round %d: append %d: id %d, %v", round, i, ids[i], errs[i])
				}
				acked[ids[i]] = fmt.Sprintf("r%d-m%d", round, i)
				if i%5 == 0 {
					calls += 2
				}
			}
		}

		ms, err := db.Messages(ctx, "s", sessiondb.MessageFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != len(acked) {
			t.Fatalf("round %d: %d messages stored, %d acknowledged", round, len(ms), len(acked))
		}
		for _, m := range ms {
			if want, ok := acked[m.ID]; !ok {
				t.Errorf("round %d: message %d stored but not acknowledged", round, m.ID)
			} else if m.Content != want {
				t.Errorf("round %d: message %d holds %q; its append (%q) was acknowledged with that id", round, m.ID, m.Content, want)
			}
		}
		s, _ := db.Session(ctx, "s")
		if s.MessageCount != int64(len(acked)) || s.ToolCallCount != int64(calls) {
			t.Errorf("round %d: message_count = %d, tool_call_count = %d; want %d, %d", round, s.MessageCount, s.ToolCallCount, len(acked), calls)
		}
	}
	checkIntegrity(t, rawDB(t, db.Path()))
}

// BenchmarkAppend measures one message per call, as an agent appends, with
// 1 and 8 concurrent writers on one store (synchronous=FULL).
func BenchmarkAppend(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db := MustOpen(b)
			db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"})
			msg := sessiondb.NewMessage{SessionID: "s", Role: "assistant", Content: "Run docker compose up -d and check the logs of the api service."}
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N / writers
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < per; i++ {
						if _, err := db.AppendMessage(ctx, msg); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*writers)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// TestStatementJournalInMemory: a statement with a trigger that changes
// about 80 KB of existing pages inside a WAL transaction (as a group
// commit's INSERT does) keeps its statement journal in memory: the process
// raised SQLite's spill threshold (package walbuf, 120 KiB) before SQLite
// initialized. With the default of 64 KiB the journal would be a temporary
// file, open until the transaction ends.
func TestStatementJournalInMemory(t *testing.T) {
	MustOpen(t) // the store's package is initialized, as in the program
	db := rawDB(t, filepath.Join(t.TempDir(), "j.db"))
	db.SetMaxOpenConns(1)
	for _, s := range []string{
		"PRAGMA journal_mode=WAL",
		"CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER, b BLOB CHECK (length(b) > 0))",
		"CREATE TRIGGER t_count AFTER UPDATE ON t BEGIN UPDATE t SET n = 1 WHERE id = NEW.id; END",
		"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 20) INSERT INTO t(b) SELECT randomblob(3000) FROM s",
		"BEGIN",
		"UPDATE t SET b = randomblob(3000)",
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	defer db.Exec("ROLLBACK")
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.Contains(target, "(deleted)") {
			t.Fatalf("fd %s is a temporary file (%s): the statement journal spilled to disk", fd.Name(), target)
		}
	}
}
