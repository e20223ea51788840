package postgres_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/postgres"
)

// writerEnv, when set, makes TestMain's process a writer of
// TestReliabilityWriterProcesses: "URL|session|count".
const writerEnv = "SESSIONDB_PG_WRITER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(writerEnv); spec != "" {
		os.Exit(runWriter(spec))
	}
	os.Exit(m.Run())
}

// runWriter appends count messages to a session and prints on fd 3 the
// number of each message acknowledged, one per line.
func runWriter(spec string) int {
	parts := strings.Split(spec, "|")
	n, _ := strconv.Atoi(parts[2])
	out := os.NewFile(3, "acks")
	db, err := postgres.Open(context.Background(), parts[0], postgres.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	for i := range n {
		if _, err := db.AppendMessage(context.Background(), sessiondb.NewMessage{SessionID: parts[1], Role: "user", Content: fmt.Sprintf("%s #%d", parts[1], i)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			continue
		}
		fmt.Fprintln(out, i)
	}
	return 0
}

// checkStored asserts that each session holds exactly the acknowledged
// messages, once each, and that its message_count says so.
func checkStored(t *testing.T, db *postgres.DB, acked map[string]map[int]bool) {
	t.Helper()
	ctx := context.Background()
	for sid, want := range acked {
		ms, err := db.Messages(ctx, sid, sessiondb.MessageFilter{IncludeInactive: true})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]int{}
		for _, m := range ms {
			var i int
			if _, err := fmt.Sscanf(sessiondb.ContentText(m.Content), sid+" #%d", &i); err != nil {
				t.Fatalf("unexpected message %q", sessiondb.ContentText(m.Content))
			}
			seen[i]++
		}
		for i := range want {
			if seen[i] != 1 {
				t.Errorf("%s: acknowledged message #%d stored %d times", sid, i, seen[i])
			}
		}
		for i, n := range seen {
			if !want[i] {
				t.Errorf("%s: message #%d stored %d times but its append failed", sid, i, n)
			}
		}
		s, err := db.Session(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		if int(s.MessageCount) != len(ms) {
			t.Errorf("%s: message_count %d, %d messages stored", sid, s.MessageCount, len(ms))
		}
	}
}

// TestReliabilityRestartMidRun: eight goroutines append while the server
// restarts (pg_ctl restart -m fast); writers wait and retry, nothing
// acknowledged is lost and nothing is stored twice.
func TestReliabilityRestartMidRun(t *testing.T) {
	url, restart := testenv.PrivatePostgres(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const writers, each = 8, 150
	acked := map[string]map[int]bool{}
	var mu sync.Mutex
	var done atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		sid := fmt.Sprintf("w%d", w)
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: sid, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
		mine := map[int]bool{} // the goroutine writes its own map; acked is filled before it reads it
		acked[sid] = mine
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: fmt.Sprintf("%s #%d", sid, i)})
				if err == nil {
					mu.Lock()
					mine[i] = true
					mu.Unlock()
				} else {
					t.Logf("%s #%d: %v", sid, i, err)
				}
				done.Add(1)
			}
		}()
	}
	for done.Load() < writers*each/4 {
		time.Sleep(5 * time.Millisecond)
	}
	restart()
	restartedAt := done.Load()
	wg.Wait()
	if restartedAt >= writers*each {
		t.Fatalf("the restart came after every write; nothing was tested")
	}
	lost := 0
	for _, a := range acked {
		lost += each - len(a)
	}
	if lost > 0 {
		t.Errorf("%d appends failed across a fast restart; writers should wait and retry within their patience", lost)
	}
	checkStored(t, db, acked)
}

// TestReliabilityWriterProcesses: eight processes append to their own
// sessions and to one shared session; every acknowledged message is there
// once and the counters are exact.
func TestReliabilityWriterProcesses(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	url := db.Pool().Config().ConnString()
	const procs, each = 8, 60
	acked := map[string]map[int]bool{}
	type proc struct {
		cmd  *exec.Cmd
		acks *os.File
		sid  string
	}
	var ps []proc
	for p := range procs {
		sid := fmt.Sprintf("p%d", p)
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: sid, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
		acked[sid] = map[int]bool{}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), writerEnv+"="+url+"|"+sid+"|"+strconv.Itoa(each))
		cmd.ExtraFiles = []*os.File{w}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		ps = append(ps, proc{cmd, r, sid})
	}
	for _, p := range ps {
		acks, err := io.ReadAll(p.acks)
		p.acks.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("writer %s: %v", p.sid, err)
		}
		for _, line := range strings.Fields(string(acks)) {
			i, _ := strconv.Atoi(line)
			acked[p.sid][i] = true
		}
		if len(acked[p.sid]) != each {
			t.Errorf("writer %s: %d of %d appends acknowledged", p.sid, len(acked[p.sid]), each)
		}
	}
	checkStored(t, db, acked)
}
