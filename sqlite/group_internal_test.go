package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/sessiondb/sessiondb"
)

// groupProbe watches the group commit of one store through the BEGIN of
// each write: it records how many messages were committed before each
// BEGIN (so the size of every group), can hold a BEGIN until the test
// releases it (while the leader holds it, the test queues more appends) and
// can fail one.
type groupProbe struct {
	t       *testing.T
	db      *DB
	mu      sync.Mutex
	begins  int
	counts  []int64                 // messages committed before each BEGIN
	gates   map[int]chan struct{}   // BEGIN n waits until its channel is closed
	fails   map[int]error           // BEGIN n fails with this error
	entered chan int                // BEGIN n reached its gate
	results map[string]appendResult // by content
	wg      sync.WaitGroup
}

type appendResult struct {
	id  int64
	err error
}

func newGroupProbe(t *testing.T, sessions ...string) *groupProbe {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, s := range sessions {
		if _, err := db.CreateSession(context.Background(), sessiondb.NewSession{ID: s, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	p := &groupProbe{t: t, db: db, gates: map[int]chan struct{}{}, fails: map[int]error{},
		entered: make(chan int, 16), results: map[string]appendResult{}}
	SetBeginFault(t, p.begin)
	return p
}

func (p *groupProbe) begin() error {
	var n int64
	if err := p.db.read.QueryRow("SELECT COUNT(*) FROM messages").Scan(&n); err != nil {
		p.t.Error(err)
	}
	p.mu.Lock()
	i := p.begins
	p.begins++
	p.counts = append(p.counts, n)
	gate, fail := p.gates[i], p.fails[i]
	p.mu.Unlock()
	if gate != nil {
		p.entered <- i
		<-gate
	}
	return fail
}

// hold makes BEGIN n wait until the returned function is called.
func (p *groupProbe) hold(n int) (release func()) {
	gate := make(chan struct{})
	p.mu.Lock()
	p.gates[n] = gate
	p.mu.Unlock()
	return func() { close(gate) }
}

func (p *groupProbe) fail(n int, err error) {
	p.mu.Lock()
	p.fails[n] = err
	p.mu.Unlock()
}

// waitEntered waits until the leader of a group holds BEGIN n.
func (p *groupProbe) waitEntered(n int) {
	p.t.Helper()
	select {
	case got := <-p.entered:
		if got != n {
			p.t.Fatalf("BEGIN %d held, want %d", got, n)
		}
	case <-time.After(time.Minute):
		p.t.Fatalf("BEGIN %d never reached", n)
	}
}

// message is the i-th message of the test: to session a or b in turn, every
// third one an assistant message with two tool calls.
func (p *groupProbe) message(i int) sessiondb.NewMessage {
	m := sessiondb.NewMessage{SessionID: []string{"a", "b"}[i%2], Role: "user", Content: fmt.Sprintf("message %03d", i)}
	if i%3 == 0 {
		m.Role = "assistant"
		m.ToolCalls = json.RawMessage(`[{"id":"x","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"y","type":"function","function":{"name":"g","arguments":"{}"}}]`)
	}
	return m
}

// append issues message i from a goroutine of its own and, unless it is to
// lead, waits until it is queued behind the running group, so that the
// queue's order is the order of i.
func (p *groupProbe) append(i int, leads bool) {
	p.t.Helper()
	queued := p.queued()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		m := p.message(i)
		id, err := p.db.AppendMessage(context.Background(), m)
		p.mu.Lock()
		p.results[m.Content.(string)] = appendResult{id, err}
		p.mu.Unlock()
	}()
	if !leads {
		p.waitQueued(queued + 1)
	}
}

func (p *groupProbe) queued() int {
	p.db.group.mu.Lock()
	defer p.db.group.mu.Unlock()
	return len(p.db.group.queue)
}

func (p *groupProbe) waitQueued(n int) {
	p.t.Helper()
	for deadline := time.Now().Add(time.Minute); p.queued() < n; time.Sleep(20 * time.Microsecond) {
		if time.Now().After(deadline) {
			p.t.Fatalf("%d appends queued, want %d", p.queued(), n)
		}
	}
}

// queueBehind issues append i as the leader of a group while the probe
// holds its BEGIN n, queues k more appends behind it, releases the BEGIN
// and returns the index of the next message.
func (p *groupProbe) queueBehind(n, i, k int) int {
	p.t.Helper()
	release := p.hold(n)
	p.append(i, true)
	i++
	p.waitEntered(n)
	for range k {
		p.append(i, false)
		i++
	}
	release()
	return i
}

// sizes waits for every append and returns the number of messages each
// write committed, in order.
func (p *groupProbe) sizes() []int64 {
	p.wg.Wait()
	var total int64
	if err := p.db.read.QueryRow("SELECT COUNT(*) FROM messages").Scan(&total); err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var sizes []int64
	for i, c := range p.counts {
		next := total
		if i+1 < len(p.counts) {
			next = p.counts[i+1]
		}
		sizes = append(sizes, next-c)
	}
	return sizes
}

// TestGroupCommitGrouping pins how concurrent appends are grouped: a lone
// append commits at once; requests queued behind a running commit go in
// together with the next one; a group waits for as many writers as the
// last group saw (the ones just acknowledged come back), taking them as
// they queue; a group never carries more than maxGroup requests. Every
// acknowledged message is stored once, under its own id, ids follow the
// order in which requests queued, and each session's counters count its
// own messages.
func TestGroupCommitGrouping(t *testing.T) {
	p := newGroupProbe(t, "a", "b")
	i := 0

	// 1. The leader holds BEGIN 0 while 9 requests queue: it commits its
	// own message alone (the last group saw no concurrency), the next
	// leader takes the 9. While that one holds BEGIN 1, 3 more queue: the
	// last group saw 10 writers (1 committed + 9 queued), so it takes the
	// 3 as well.
	release1 := p.hold(1)
	i = p.queueBehind(0, i, 9)
	p.waitEntered(1)
	for range 3 {
		p.append(i, false)
		i++
	}
	release1()
	p.wg.Wait()

	// 2. The last group saw 12 writers: a leader holding BEGIN 2 with 20
	// queued behind it takes them all in its commit.
	i = p.queueBehind(2, i, 20)
	p.wg.Wait()

	// 3. With 70 queued behind the leader, its group stops at maxGroup:
	// the leader's own and 63 more; the next group takes the other 7.
	i = p.queueBehind(3, i, 70)

	got := p.sizes()
	if want := []int64{1, 12, 21, 64, 7}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages per commit = %v, want %v", got, want)
	}

	var prev int64
	perSession := map[string][2]int64{}
	for j := range i {
		m := p.message(j)
		r := p.results[m.Content.(string)]
		if r.err != nil || r.id <= prev {
			t.Fatalf("append %d: id %d, %v; want an id above %d (the ids follow the queue)", j, r.id, r.err, prev)
		}
		prev = r.id
		c := perSession[m.SessionID]
		c[0]++
		if m.ToolCalls != nil {
			c[1] += 2
		}
		perSession[m.SessionID] = c
	}
	checkStored(t, p, i)
	for s, c := range perSession {
		var messages, calls int64
		if err := p.db.read.QueryRow("SELECT message_count, tool_call_count FROM sessions WHERE id = ?", s).Scan(&messages, &calls); err != nil {
			t.Fatal(err)
		}
		if messages != c[0] || calls != c[1] {
			t.Errorf("session %s: message_count %d, tool_call_count %d; want %d, %d", s, messages, calls, c[0], c[1])
		}
	}
}

// checkStored checks that the first n messages of the probe are stored
// exactly once, each under the id its append returned.
func checkStored(t *testing.T, p *groupProbe, n int) {
	t.Helper()
	rows, err := p.db.read.Query("SELECT id, content FROM messages")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	stored := map[string]int64{}
	for rows.Next() {
		var id int64
		var content string
		if err := rows.Scan(&id, &content); err != nil {
			t.Fatal(err)
		}
		if _, dup := stored[content]; dup {
			t.Errorf("%q stored twice", content)
		}
		stored[content] = id
	}
	for j := range n {
		c := p.message(j).Content.(string)
		if r := p.results[c]; r.err == nil && stored[c] != r.id {
			t.Errorf("%q: acknowledged with id %d, stored with %d", c, r.id, stored[c])
		}
	}
}

// TestGroupCommitErrors: a write that fails reaches every caller of its
// group and no other, and names what failed: a lone append names its
// session (also right after a lone append, when one writer was seen), a
// group says "append messages". Nothing of a failed group is stored, and
// the next group commits normally.
func TestGroupCommitErrors(t *testing.T) {
	p := newGroupProbe(t, "a", "b")
	full := sqlite3.Error{Code: sqlite3.ErrFull}
	i := 0

	// BEGIN 0 and 1: lone appends, after no writer and after one.
	p.fail(0, full)
	p.fail(1, full)
	for range 2 {
		p.append(i, true)
		p.wg.Wait()
		i++
	}
	// BEGIN 2 fails its leader alone (it took only its own request before
	// the 4 others queued); BEGIN 3 fails the group of those 4; BEGIN 4, a
	// lone append, succeeds.
	p.fail(2, full)
	p.fail(3, full)
	i = p.queueBehind(2, i, 4)
	p.wg.Wait()
	p.append(i, true)
	i++

	if got, want := fmt.Sprint(p.sizes()), "[0 0 0 0 1]"; got != want {
		t.Errorf("messages per commit = %s, want %s", got, want)
	}
	for j := range i {
		m := p.message(j)
		r := p.results[m.Content.(string)]
		var want string
		switch {
		case j <= 2:
			want = fmt.Sprintf("append message to %q: disk full", m.SessionID)
		case j < 7:
			want = "append messages: disk full"
		}
		if want == "" {
			if r.err != nil || r.id == 0 {
				t.Errorf("append %d after the failures: id %d, %v", j, r.id, r.err)
			}
			continue
		}
		if r.err == nil || r.id != 0 || !strings.HasPrefix(r.err.Error(), want) || sessiondb.ErrorCode(r.err) != sessiondb.EINTERNAL {
			t.Errorf("append %d: id %d, %v; want no id and an error starting %q", j, r.id, r.err, want)
		}
	}
	checkStored(t, p, i)
	var messages int64
	if err := p.db.read.QueryRow("SELECT SUM(message_count) FROM sessions").Scan(&messages); err != nil || messages != 1 {
		t.Errorf("message_count over the sessions = %d (%v), want 1", messages, err)
	}
}

// TestGroupAwaitWokenByJoin: a leader waiting for more writers is woken by
// the next request that queues, long before its window ends, and takes it;
// once the window has ended it waits no more.
func TestGroupAwaitWokenByJoin(t *testing.T) {
	p := newGroupProbe(t, "a")
	p.append(0, true) // a first append, as on every store that waits
	p.wg.Wait()
	g := &p.db.group

	if got := g.await(time.Now().Add(-time.Second), 5); len(got) != 0 {
		t.Fatalf("await past its deadline took %d requests from an empty queue", len(got))
	}

	g.mu.Lock()
	g.running = true // a commit runs: the next append queues
	g.mu.Unlock()
	took := make(chan []*appendReq, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		took <- g.await(time.Now().Add(time.Hour), 5)
	}()
	<-started
	time.Sleep(10 * time.Millisecond) // let it find the queue empty and wait
	done := make(chan appendResult, 1)
	go func() {
		id, err := g.append(context.Background(), p.db, "a", &row{})
		done <- appendResult{id, err}
	}()
	select {
	case got := <-took:
		if len(got) != 1 || got[0].sessionID != "a" {
			t.Fatalf("await woke with %d requests, want the one that queued", len(got))
		}
		got[0].err = fmt.Errorf("taken by the test")
		close(got[0].done)
	case <-time.After(time.Minute):
		t.Fatal("a request queued, but the waiting leader was not woken")
	}
	if r := <-done; r.err == nil || r.err.Error() != "taken by the test" {
		t.Errorf("the queued caller got %v, want the result its leader gave it", r.err)
	}
	g.mu.Lock()
	g.running = false
	g.mu.Unlock()
}
