package sqlite_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestGroupCommitIsolatesFailures: appends issued together share a
// transaction, yet each gets its own id or error, and a bad one fails alone:
// one refused before its insert (missing or compressed session) as well as
// one whose insert fails (here a trigger refuses it).
func TestGroupCommitIsolatesFailures(t *testing.T) {
	db := MustOpen(t)
	db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"})
	db.CreateSession(ctx, sessiondb.NewSession{ID: "closed", Source: "cli"})
	db.EndSession(ctx, "closed", "compression")
	if _, err := rawDB(t, db.Path()).Exec(`CREATE TRIGGER refuse_poison BEFORE INSERT ON messages
		WHEN NEW.content LIKE 'poison%' BEGIN SELECT RAISE(ABORT, 'poisoned message'); END`); err != nil {
		t.Fatal(err)
	}

	const n = 200
	ids := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sid, content := "s", fmt.Sprintf("m%d", i)
			switch i % 20 {
			case 7:
				sid = "missing"
			case 13:
				sid = "closed"
			case 17:
				content = fmt.Sprintf("poison%d", i)
			}
			ids[i], errs[i] = db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: content})
		}(i)
	}
	wg.Wait()
	seen := map[int64]int{}
	good := 0
	for i := 0; i < n; i++ {
		switch i % 20 {
		case 7:
			if sessiondb.ErrorCode(errs[i]) != sessiondb.ENOTFOUND {
				t.Errorf("append %d to a missing session: %v", i, errs[i])
			}
		case 13:
			if sessiondb.ErrorCode(errs[i]) != sessiondb.ECONFLICT {
				t.Errorf("append %d to a compressed session: %v", i, errs[i])
			}
		case 17:
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "poisoned message") {
				t.Errorf("append %d refused by a trigger: %v", i, errs[i])
			}
		default:
			if _, dup := seen[ids[i]]; errs[i] != nil || ids[i] == 0 || dup {
				t.Errorf("append %d: id %d, %v", i, ids[i], errs[i])
			}
			seen[ids[i]] = i
			good++
		}
	}
	ms, err := db.Messages(ctx, "s", sessiondb.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != good {
		t.Fatalf("%d messages stored, %d acknowledged", len(ms), good)
	}
	for _, m := range ms {
		i, ok := seen[m.ID]
		if !ok {
			t.Errorf("message %d stored but not acknowledged", m.ID)
		} else if want := fmt.Sprintf("m%d", i); m.Content != want {
			t.Errorf("message %d holds %q; its append (%q) was acknowledged with that id", m.ID, m.Content, want)
		}
	}
	s, _ := db.Session(ctx, "s")
	if s.MessageCount != int64(good) {
		t.Errorf("message_count = %d, want %d", s.MessageCount, good)
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
