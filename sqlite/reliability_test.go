//go:build unix

package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite"
)

// The reliability suite (issue 5 item 3): many writer processes with kill -9,
// a Hermes-style Python co-writer, damaged and unusual files, permissions.
// The default variants fit in about a minute under -race on two cores;
// -long runs them bigger and longer.
var longRun = flag.Bool("long", false, "run the long variants of the reliability tests (about 10 minutes; use with -timeout 30m)")

// knownBug fails a test at an assertion that guards a bug this suite found
// and the store fixed (a regression would show up under this name).
func knownBug(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("regression: "+format, args...)
}

// ---------------------------------------------------------------------------
// Re-executed writer process
// ---------------------------------------------------------------------------

// Environment of the re-executed writer (TestReliabilityHelperWriter).
const (
	envRelDB       = "SESSIONDB_RELIAB_DB"
	envRelTag      = "SESSIONDB_RELIAB_TAG"
	envRelN        = "SESSIONDB_RELIAB_N"
	envRelSessions = "SESSIONDB_RELIAB_SESSIONS" // comma-separated; messages go round-robin
	envRelGate     = "SESSIONDB_RELIAB_GATE"     // set: wait for a line on stdin after "ready"
	envRelStart    = "SESSIONDB_RELIAB_START"    // Unix nanoseconds: open the store at this instant
	envRelEnsure   = "SESSIONDB_RELIAB_ENSURE"   // set: create the sessions (EnsureSession) first
	envRelMerge    = "SESSIONDB_RELIAB_MERGE"    // writes between bounded FTS merges (default 1000)
)

// reliabContent is the content of the i-th message of writer tag: unique
// to (tag, i), with the word "relword" and, on every fifth, Chinese text.
func reliabContent(tag string, i int) string {
	if i%5 == 0 {
		return fmt.Sprintf("%s-%d relword 可靠性测试", tag, i)
	}
	return fmt.Sprintf("%s-%d relword", tag, i)
}

// reliabMessage is the i-th message of writer tag, in sessions round-robin;
// every seventh is an assistant row with two tool calls.
func reliabMessage(tag string, sessions []string, i int) sessiondb.NewMessage {
	m := sessiondb.NewMessage{SessionID: sessions[i%len(sessions)], Role: "user", Content: reliabContent(tag, i)}
	if i%7 == 3 {
		m.Role = "assistant"
		m.ToolCalls = json.RawMessage(`[{"id":"a","type":"function","function":{"name":"terminal","arguments":"{}"}},` +
			`{"id":"b","type":"function","function":{"name":"read_file","arguments":"{}"}}]`)
	}
	return m
}

// protocolFD is the file descriptor on which a re-executed helper writes
// its protocol lines: the parent passes a pipe as the child's first extra
// file. Stdout belongs to the test framework, which prints "PASS", and under
// -cover a "coverage: …" line, in every re-executed test binary.
const protocolFD = 3

// protocolOut is the helper's protocol stream (see protocolFD). An
// *os.File is unbuffered: one write(2) per Fprintf, and a pipe write of
// less than PIPE_BUF bytes is atomic, so a line is either read completely or
// not at all when the helper is killed.
func protocolOut() *os.File {
	return os.NewFile(protocolFD, "protocol")
}

// TestReliabilityHelperWriter is not a test: the reliability tests run the
// test binary again with only this function selected and the environment
// above set. It opens the store (at the start instant, if given), creates
// the sessions if asked, prints "ready", (when gated) waits for a line on
// stdin, appends N messages and prints "ack <id> <content>" after each
// AppendMessage returned; these lines go to protocolFD. Any error goes to
// stderr with exit status 1.
func TestReliabilityHelperWriter(t *testing.T) {
	path := os.Getenv(envRelDB)
	if path == "" {
		return
	}
	out := protocolOut()
	tag := os.Getenv(envRelTag)
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "writer %s pid %d: "+format+"\n", append([]any{tag, os.Getpid()}, args...)...)
		os.Exit(1)
	}
	n, err := strconv.Atoi(os.Getenv(envRelN))
	sessions := strings.Split(os.Getenv(envRelSessions), ",")
	if err != nil || tag == "" || sessions[0] == "" {
		fail("bad helper environment")
	}
	if every, err := strconv.ParseInt(os.Getenv(envRelMerge), 10, 64); err == nil {
		sqlite.SetFTSMergeEvery(t, every)
	}
	if start, err := strconv.ParseInt(os.Getenv(envRelStart), 10, 64); err == nil {
		time.Sleep(time.Until(time.Unix(0, start)))
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		fail("open: %v (code %s)", err, sessiondb.ErrorCode(err))
	}
	if os.Getenv(envRelEnsure) != "" {
		for _, id := range sessions {
			if _, err := db.EnsureSession(context.Background(), id, "cli", ""); err != nil {
				fail("ensure session %s: %v (code %s)", id, err, sessiondb.ErrorCode(err))
			}
		}
	}
	fmt.Fprintln(out, "ready")
	if os.Getenv(envRelGate) != "" {
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			fail("gate: %v", err)
		}
	}
	for i := 0; i < n; i++ {
		m := reliabMessage(tag, sessions, i)
		id, err := db.AppendMessage(context.Background(), m)
		if err != nil {
			fail("append %d: %v (code %s)", i, err, sessiondb.ErrorCode(err))
		}
		fmt.Fprintf(out, "ack %d %s\n", id, reliabContent(tag, i))
	}
	if err := db.Close(); err != nil {
		fail("close: %v", err)
	}
}

// proc is a child process (a re-executed writer or the Python co-writer)
// whose protocol stream is read line by line while it runs: the Python
// co-writer's stdout, a re-executed test binary's protocolFD.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdout bytes.Buffer // a re-executed test binary's stdout: the test framework's lines
	stderr bytes.Buffer
	ready  chan struct{} // closed at the "ready" line
	eof    chan struct{} // closed when stdout is drained

	mu    sync.Mutex
	acks  []ack    // "ack <id> <content>" lines, in order
	done  string   // payload of the "done" line
	other []string // any other line on the protocol stream
}

type ack struct {
	id      int64
	content string
}

// startProc starts cmd and reads its protocol stream: stdout, or with
// viaFD (a re-executed test binary) the pipe it gets as protocolFD.
func startProc(t *testing.T, name string, cmd *exec.Cmd, viaFD bool) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, ready: make(chan struct{}), eof: make(chan struct{})}
	var out io.ReadCloser
	var childEnd *os.File
	if viaFD {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		out, childEnd = r, w
		cmd.ExtraFiles = []*os.File{w} // protocolFD: the first extra file is fd 3
		cmd.Stdout = &p.stdout
	} else {
		var err error
		if out, err = cmd.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Stderr = &p.stderr
	err := cmd.Start()
	if childEnd != nil {
		childEnd.Close() // the child holds its copy; EOF comes when it exits
	}
	if err != nil {
		out.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		defer close(p.eof)
		if viaFD {
			defer out.Close() // exec closes only the pipes it made itself
		}
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		readyOnce := sync.OnceFunc(func() { close(p.ready) })
		for sc.Scan() {
			line := sc.Text()
			kind, rest, _ := strings.Cut(line, " ")
			p.mu.Lock()
			switch kind {
			case "ready":
				readyOnce()
			case "ack":
				idText, content, _ := strings.Cut(rest, " ")
				id, err := strconv.ParseInt(idText, 10, 64)
				if err != nil {
					p.other = append(p.other, line)
					break
				}
				p.acks = append(p.acks, ack{id, content})
			case "done":
				p.done = rest
			default:
				p.other = append(p.other, line)
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// startWriter re-executes the test binary as a writer process. A gated
// writer waits after "ready" until the returned release is called; extra
// environment settings (envRelStart, envRelEnsure) are added as given.
func startWriter(t *testing.T, ctx context.Context, path, tag string, n int, sessions []string, gated bool, env ...string) (p *proc, release func()) {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestReliabilityHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		envRelDB+"="+path,
		envRelTag+"="+tag,
		envRelN+"="+strconv.Itoa(n),
		envRelSessions+"="+strings.Join(sessions, ","),
	)
	cmd.Env = append(cmd.Env, env...)
	release = func() {}
	if gated {
		cmd.Env = append(cmd.Env, envRelGate+"=1")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		release = func() { stdin.Write([]byte("go\n")) }
	}
	return startProc(t, "writer "+tag, cmd, true), release
}

// wait drains stdout and waits for the process; it reports whether the
// process was killed by SIGKILL.
func (p *proc) wait() (killed bool, err error) {
	<-p.eof
	err = p.cmd.Wait()
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return true, err
	}
	return false, err
}

func (p *proc) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.ready:
	case <-p.eof:
		p.cmd.Wait()
		t.Fatalf("%s exited before it was ready: %v\n%s", p.name, p.cmd.ProcessState, p.stderr.String())
	case <-time.After(timeout):
		t.Fatalf("%s not ready after %s", p.name, timeout)
	}
}

func (p *proc) acked() []ack {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ack(nil), p.acks...)
}

// ---------------------------------------------------------------------------
// Assertions on the file
// ---------------------------------------------------------------------------

// storedRows maps every message content to the ids of the rows holding it.
func storedRows(tb testing.TB, raw *sql.DB) map[string][]int64 {
	tb.Helper()
	rows, err := raw.Query("SELECT id, COALESCE(content, '') FROM messages")
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	m := map[string][]int64{}
	for rows.Next() {
		var id int64
		var c string
		if err := rows.Scan(&id, &c); err != nil {
			tb.Fatal(err)
		}
		m[c] = append(m[c], id)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return m
}

// checkAcked checks that every acknowledged message is stored exactly once,
// under the id the writer was given.
func checkAcked(t *testing.T, who string, acks []ack, stored map[string][]int64) {
	t.Helper()
	bad := 0
	for _, a := range acks {
		ids := stored[a.content]
		if len(ids) != 1 || ids[0] != a.id {
			if bad++; bad <= 5 {
				t.Errorf("%s: acknowledged %q (id %d) is stored as ids %v, want exactly [%d]", who, a.content, a.id, ids, a.id)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d acknowledged messages missing or duplicated in all", who, bad)
	}
}

// checkMerged checks that bounded FTS merge passes ran on the file: each
// index has usermerge 2 in its config, which the first pass sets.
func checkMerged(t *testing.T, raw *sql.DB) {
	t.Helper()
	for _, table := range []string{"messages_fts", "messages_fts_trigram", "messages_fts_cjk"} {
		if n := count(t, raw, "SELECT COUNT(*) FROM "+table+"_config WHERE k = 'usermerge' AND v = 2"); n != 1 {
			t.Errorf("%s: no usermerge 2 in its config: no merge pass ran", table)
		}
	}
}

// checkCounters checks that every session's message_count is its row count
// and its tool_call_count the calls of its non-tool rows.
func checkCounters(t *testing.T, raw *sql.DB) {
	t.Helper()
	rows, err := raw.Query(`SELECT s.id, s.message_count, s.tool_call_count,
		(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id),
		(SELECT COALESCE(SUM(json_array_length(m.tool_calls)), 0) FROM messages m
			WHERE m.session_id = s.id AND m.role <> 'tool' AND m.tool_calls IS NOT NULL)
		FROM sessions s ORDER BY s.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var mc, tc, n, calls int
		if err := rows.Scan(&id, &mc, &tc, &n, &calls); err != nil {
			t.Fatal(err)
		}
		if mc != n || tc != calls {
			t.Errorf("session %s: message_count %d for %d rows, tool_call_count %d for %d calls", id, mc, n, tc, calls)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// reader lists and searches the store until stop is closed and returns how
// many rounds it made. The total of message_count over the listing must
// never go down.
func reader(ctx context.Context, t *testing.T, db *sqlite.DB, stop <-chan struct{}) (rounds int) {
	var prev int64
	for i := 0; ; i++ {
		select {
		case <-stop:
			return i
		default:
		}
		list, _, err := db.ListSessions(ctx, sessiondb.ListOptions{Limit: -1})
		if err != nil {
			t.Errorf("reader: list sessions: %v (code %s)", err, sessiondb.ErrorCode(err))
			return i
		}
		var total int64
		for _, s := range list {
			total += s.MessageCount
		}
		if total < prev {
			t.Errorf("reader: message_count total went down from %d to %d", prev, total)
		}
		prev = total
		q := "relword"
		if i%3 == 2 {
			q = "可靠性"
		}
		if _, err := db.Search(ctx, q, sessiondb.SearchOptions{Limit: 10}); err != nil {
			t.Errorf("reader: search %q: %v (code %s)", q, err, sessiondb.ErrorCode(err))
			return i
		}
	}
}

// ---------------------------------------------------------------------------
// 1. Many processes, kill -9
// ---------------------------------------------------------------------------

func TestReliabilityManyProcesses(t *testing.T) {
	writers, perWriter, killRounds, budget := 8, 500, 1, 3*time.Minute
	if *longRun {
		perWriter, killRounds, budget = 2000, 3, 25*time.Minute
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 5))
	t.Logf("seed %d", seed)

	path := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, path)
	sessions := []string{"rel-a", "rel-b", "rel-c", "rel-d"}
	for _, id := range sessions {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	stop := make(chan struct{})
	var reads int
	var readerDone sync.WaitGroup
	readerDone.Add(1)
	go func() {
		defer readerDone.Done()
		reads = reader(runCtx, t, db, stop)
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		readerDone.Wait()
	}()

	type result struct {
		p      *proc
		tag    string
		killed bool
	}
	var all []result
	round := func(name string, kill int) {
		start := time.Now()
		procs := make([]*proc, writers)
		for w := range procs {
			tag := fmt.Sprintf("%sw%d", name, w)
			// Each writer starts with a different session, so all four
			// sessions' counters are bumped by several processes at once.
			ss := append(append([]string(nil), sessions[w%len(sessions):]...), sessions[:w%len(sessions)]...)
			// Bounded FTS merges every 40 writes, so that kills also land
			// in merges.
			procs[w], _ = startWriter(t, runCtx, path, tag, perWriter, ss, false, envRelMerge+"=40")
		}
		var timers []*time.Timer
		for _, w := range rng.Perm(writers)[:kill] {
			delay := time.Duration(rng.Int64N(int64(2 * time.Second)))
			p := procs[w]
			timers = append(timers, time.AfterFunc(delay, func() { p.cmd.Process.Signal(syscall.SIGKILL) }))
		}
		killed := 0
		for w, p := range procs {
			k, err := p.wait()
			if k {
				killed++
			}
			tag := fmt.Sprintf("%sw%d", name, w)
			if !k && err != nil {
				t.Errorf("writer %s failed: %v\n%s", tag, err, p.stderr.String())
			}
			if !k && strings.Contains(strings.ToLower(p.stderr.String()), "locked") {
				t.Errorf("live writer %s surfaced a locked database:\n%s", tag, p.stderr.String())
			}
			all = append(all, result{p, tag, k})
		}
		for _, tm := range timers {
			tm.Stop()
		}
		t.Logf("round %s: %d writers × %d appends, %d killed by SIGKILL, %s", name, writers, perWriter, killed, time.Since(start).Round(time.Millisecond))
	}
	round("r1", 0)
	for i := 0; i < killRounds; i++ {
		round(fmt.Sprintf("k%d", i+1), writers/2)
	}
	close(stop)
	readerDone.Wait()
	t.Logf("reader made %d list+search rounds while the writers ran", reads)

	// The store that watched all this still writes and finds.
	id, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "rel-a", Role: "user", Content: "afterword survivor"})
	if err != nil {
		t.Fatalf("append after the kills: %v", err)
	}
	if hits, err := db.Search(ctx, "afterword", sessiondb.SearchOptions{}); err != nil || len(hits) != 1 || hits[0].ID != id {
		t.Errorf("search after the kills: %v, %v; want the one row %d", hits, err, id)
	}

	raw := rawDB(t, path)
	stored := storedRows(t, raw)
	unlogged := 0 // killed writers whose last commit was never acknowledged
	for _, r := range all {
		acks := r.p.acked()
		checkAcked(t, r.tag, acks, stored)
		// Rows of this writer: exactly the acknowledged ones, plus for a
		// killed writer at most the one it committed but could not log.
		n := 0
		for c := range stored {
			if strings.HasPrefix(c, r.tag+"-") {
				n++
			}
		}
		next := reliabContent(r.tag, len(acks))
		if r.killed && n == len(acks)+1 {
			unlogged++
		}
		switch {
		case !r.killed && (len(acks) != perWriter || n != perWriter):
			t.Errorf("writer %s: %d acks and %d rows, want %d", r.tag, len(acks), n, perWriter)
		case r.killed && n == len(acks)+1 && len(stored[next]) != 1:
			t.Errorf("killed writer %s: one unacknowledged row, but not its next message %q", r.tag, next)
		case r.killed && n != len(acks) && n != len(acks)+1:
			t.Errorf("killed writer %s: %d rows for %d acks", r.tag, n, len(acks))
		}
		for i, a := range acks {
			if want := reliabContent(r.tag, i); a.content != want {
				t.Errorf("writer %s: ack %d is %q, want %q", r.tag, i, a.content, want)
				break
			}
		}
		for _, line := range r.p.other {
			t.Errorf("writer %s printed an unexpected protocol line: %q", r.tag, line)
		}
	}
	for c, ids := range stored {
		if len(ids) > 1 {
			t.Errorf("content %q stored %d times (ids %v)", c, len(ids), ids)
		}
	}
	t.Logf("%d killed writers died between a commit and its ack line", unlogged)
	checkCounters(t, raw)
	checkIntegrity(t, raw)
	checkMerged(t, raw)
}

// TestReliabilityFreshFile starts eight processes that open, at the same
// instant, a database whose directory does not exist yet: all of them must
// end up on one file (none may move a sibling's new, still empty file
// aside or open a file of its own).
func TestReliabilityFreshFile(t *testing.T) {
	const writers, perWriter = 8, 50
	dir := filepath.Join(t.TempDir(), "hermes-home")
	path := filepath.Join(dir, "state.db")
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := strconv.FormatInt(time.Now().Add(time.Second).UnixNano(), 10)
	sessions := []string{"fresh-a", "fresh-b"}
	procs := make([]*proc, writers)
	for w := range procs {
		procs[w], _ = startWriter(t, runCtx, path, fmt.Sprintf("f%d", w), perWriter, sessions, false,
			envRelStart+"="+start, envRelEnsure+"=1")
	}
	lockedAtOpen := 0
	for w, p := range procs {
		_, err := p.wait()
		switch msg := p.stderr.String(); {
		case err != nil && strings.Contains(msg, ": open: ") && strings.Contains(msg, "database is locked"):
			lockedAtOpen++
		case err != nil:
			t.Errorf("writer f%d failed: %v\n%s", w, err, msg)
		}
	}
	if lockedAtOpen > 0 {
		knownBug(t, "%d of %d processes failed to open with \"database is locked\" at once, without waiting: "+
			"fts5cjk's auto-extension runs SQL inside sqlite3_open_v2, before the driver installs the busy timeout", lockedAtOpen, writers)
	}
	raw := rawDB(t, path)
	stored := storedRows(t, raw)
	for w, p := range procs {
		checkAcked(t, fmt.Sprintf("writer f%d", w), p.acked(), stored)
	}
	if got, want := count(t, raw, "SELECT COUNT(*) FROM messages"), writers*perWriter; got != want {
		t.Errorf("messages = %d, want %d", got, want)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if n := e.Name(); n != "state.db" && n != "state.db-wal" && n != "state.db-shm" {
			t.Errorf("unexpected file %s next to the database", n)
		}
	}
	checkCounters(t, raw)
	checkIntegrity(t, raw)
}

// ---------------------------------------------------------------------------
// 2. Hermes-style Python co-writer
// ---------------------------------------------------------------------------

func TestCowriterHermes(t *testing.T) {
	python := testenv.Python(t, "to play a Hermes process")
	pyN, goN, procN, budget := 160, 150, 150, 90*time.Second
	if *longRun {
		pyN, goN, procN, budget = 2000, 2000, 2000, 10*time.Minute
	}
	// The in-process writers run Hermes' bounded FTS merge every 25 writes
	// instead of every 1000, so merges commit among Python's writes.
	sqlite.SetFTSMergeEvery(t, 25)
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			db.Close()
		}
	}()
	for _, id := range []string{"go-a", "shared"} {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	start := time.Now()

	// A separate Go process opens before Hermes starts: a sessiondb Open
	// restores the CJK triggers a tokenizer-less Hermes dropped (see the
	// report of issue 5), so opening during its run would break its inserts.
	// All writers start appending once Hermes has run its protocol.
	gp, releaseGP := startWriter(t, runCtx, path, "gp", procN, []string{"shared", "go-a"}, true)
	gp.waitReady(t, 30*time.Second)

	py := exec.CommandContext(runCtx, python, filepath.Join("testdata", "hermes_cowriter.py"), path,
		"--create", "py-own", "--session", "py-own", "--session", "shared", "-n", strconv.Itoa(pyN), "--tag", "py")
	py.Env = append(os.Environ(), "PYTHONIOENCODING=utf-8")
	pp := startProc(t, "hermes_cowriter.py", py, false)
	pp.waitReady(t, 30*time.Second)
	releaseGP()

	// Once Python is writing, a third connection holds the write lock for
	// longer than the 1 s busy timeout, so Python and the Go writers go
	// through their whole-transaction retry, not only SQLite's busy wait.
	hogged := make(chan int, 1) // Python's ack count when the lock was taken; -1 if never
	hogDB := rawDB(t, path)
	go func() {
		for len(pp.acked()) < 10 {
			select {
			case <-pp.eof:
				hogged <- -1
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		conn, err := hogDB.Conn(runCtx)
		if err != nil {
			t.Errorf("lock holder: %v", err)
			hogged <- -1
			return
		}
		defer conn.Close()
		if _, err := conn.ExecContext(runCtx, "BEGIN IMMEDIATE"); err != nil {
			t.Errorf("lock holder: %v", err)
			hogged <- -1
			return
		}
		n := len(pp.acked())
		time.Sleep(1500 * time.Millisecond)
		if _, err := conn.ExecContext(runCtx, "COMMIT"); err != nil {
			t.Errorf("lock holder: %v", err)
		}
		hogged <- n
	}()

	var wg sync.WaitGroup
	goAcks := make([][]ack, 2)
	for g := range goAcks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tag := fmt.Sprintf("g%d", g)
			for i := 0; i < goN; i++ {
				m := reliabMessage(tag, []string{"go-a", "shared"}, i)
				id, err := db.AppendMessage(runCtx, m)
				if err != nil {
					t.Errorf("go writer %s: append %d: %v (code %s)", tag, i, err, sessiondb.ErrorCode(err))
					return
				}
				goAcks[g] = append(goAcks[g], ack{id, reliabContent(tag, i)})
			}
		}()
	}
	wg.Wait()
	if _, err := pp.wait(); err != nil {
		t.Fatalf("python co-writer failed: %v\nstderr:\n%s\nother output: %q", err, pp.stderr.String(), pp.other)
	}
	if _, err := gp.wait(); err != nil {
		t.Fatalf("go writer process failed: %v\n%s", err, gp.stderr.String())
	}
	var stats struct {
		SQLiteVersion string   `json:"sqlite_version"`
		Retries       int      `json:"retries"`
		MaxWait       float64  `json:"max_wait_s"`
		Dropped       []string `json:"dropped_cjk_triggers"`
	}
	if err := json.Unmarshal([]byte(pp.done), &stats); err != nil {
		t.Fatalf("python statistics %q: %v", pp.done, err)
	}
	t.Logf("python (SQLite %s): %d appends, %d whole-transaction retries, longest wait %.2fs; go: 2×%d in-process + %d in a process; %s",
		stats.SQLiteVersion, pyN, stats.Retries, stats.MaxWait, goN, procN, time.Since(start).Round(time.Millisecond))
	if n := <-hogged; n >= 0 && n < pyN && stats.Retries == 0 {
		t.Errorf("python never retried a transaction although the write lock was held for 1.5 s after its ack %d", n)
	}
	if len(stats.Dropped) != 3 {
		t.Errorf("python dropped CJK triggers %v, want all three (sessiondb had created them)", stats.Dropped)
	}

	raw := rawDB(t, path)
	stored := storedRows(t, raw)
	pyAcks := pp.acked()
	if len(pyAcks) != pyN {
		t.Errorf("python acknowledged %d messages, want %d", len(pyAcks), pyN)
	}
	checkAcked(t, "python", pyAcks, stored)
	checkAcked(t, "go process", gp.acked(), stored)
	for g, acks := range goAcks {
		if len(acks) != goN {
			t.Errorf("go writer g%d acknowledged %d messages, want %d", g, len(acks), goN)
		}
		checkAcked(t, fmt.Sprintf("go writer g%d", g), acks, stored)
	}
	if got, want := count(t, raw, "SELECT COUNT(*) FROM messages"), pyN+2*goN+procN; got != want {
		t.Errorf("messages = %d, want %d", got, want)
	}
	checkCounters(t, raw)
	var switches int
	raw.QueryRow(`SELECT COUNT(*) FROM (SELECT (content LIKE 'pyword %') <> LAG(content LIKE 'pyword %') OVER (ORDER BY id) AS sw
		FROM messages) WHERE sw`).Scan(&switches)
	t.Logf("python and go rows alternate %d times in id order", switches)

	// Rows Python wrote are indexed by the word and trigram triggers.
	pyIDs, pyCJK := map[int64]bool{}, map[int64]bool{}
	for _, a := range pyAcks {
		pyIDs[a.id] = true
		if strings.Contains(a.content, "大别山") {
			pyCJK[a.id] = true
		}
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'pyword'"); got != pyN {
		t.Errorf("messages_fts MATCH 'pyword' = %d, want %d", got, pyN)
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM messages_fts_trigram WHERE messages_fts_trigram MATCH '别山项'"); got != len(pyCJK) {
		t.Errorf("messages_fts_trigram MATCH '别山项' = %d, want the %d Chinese Python rows", got, len(pyCJK))
	}
	for _, q := range []string{"pyword", "大别山项目"} {
		hits, err := db.Search(ctx, q, sessiondb.SearchOptions{Limit: 5})
		if err != nil || len(hits) == 0 {
			t.Errorf("Search(%q) = %d hits, %v; want Python rows", q, len(hits), err)
		}
		for _, h := range hits {
			if !pyIDs[h.ID] {
				t.Errorf("Search(%q) found row %d, not one of Python's", q, h.ID)
			}
		}
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM state_meta WHERE key = 'fts_cjk_stale' AND value = '1'"); got != 1 {
		t.Errorf("fts_cjk_stale not set by the tokenizer-less protocol")
	}
	checkMerged(t, raw)

	// Reopen: sessiondb restores the CJK index the protocol marked stale.
	closed = true
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = MustOpenPath(t, path)
	if _, err := db.RestoreCJK(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.Meta(ctx, "fts_cjk_stale"); ok || err != nil {
		t.Errorf("fts_cjk_stale still set after reopen (%v)", err)
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ('messages_fts_cjk_insert', 'messages_fts_cjk_delete', 'messages_fts_cjk_update')"); got != 3 {
		t.Errorf("%d CJK triggers after reopen, want 3", got)
	}
	if pending, err := db.PendingBackfill(ctx); err != nil || pending != 0 {
		t.Errorf("PendingBackfill = %d, %v after reopen; want 0", pending, err)
	}
	if got := count(t, raw, `SELECT COUNT(*) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH '"别山"'`); got != len(pyCJK) {
		t.Errorf(`messages_fts_cjk MATCH "别山" = %d, want the %d Chinese Python rows`, got, len(pyCJK))
	}
	goCJK := 0
	for c := range stored {
		if strings.Contains(c, "可靠性测试") {
			goCJK++
		}
	}
	if got := count(t, raw, `SELECT COUNT(*) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH '"可靠"'`); got != goCJK {
		t.Errorf(`messages_fts_cjk MATCH "可靠" = %d, want the %d Chinese Go rows written during the gap`, got, goCJK)
	}
	hits, err := db.Search(ctx, "别山", sessiondb.SearchOptions{Limit: 5})
	if err != nil || len(hits) == 0 {
		t.Errorf("Search(别山) after reopen = %d hits, %v", len(hits), err)
	}
	for _, h := range hits {
		if !pyCJK[h.ID] {
			t.Errorf("Search(别山) found row %d, not a Chinese Python row", h.ID)
		}
	}
	checkCounters(t, raw)
	checkIntegrity(t, raw)
}

// ---------------------------------------------------------------------------
// 3. Bad files
// ---------------------------------------------------------------------------

// fileHash is the SHA-256 of a file, or "absent".
func fileHash(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "absent"
	}
	if err != nil {
		tb.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func openErr(path string) error {
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err == nil {
		db.Close()
	}
	return err
}

// checkOpenError checks Open's error on path: the code, the path named, and
// each of the wanted phrases.
func checkOpenError(t *testing.T, err error, path, code string, phrases ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("open %s succeeded, want a %s error", path, code)
	}
	if got := sessiondb.ErrorCode(err); got != code {
		t.Errorf("error code = %q, want %q (%v)", got, code, err)
	}
	for _, s := range append([]string{path}, phrases...) {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
}

// damage returns a copy of a fixture damaged by cut: it gets the file's
// bytes and the page size and returns the new bytes.
func damage(t *testing.T, name string, cut func(b []byte, pageSize int) []byte) string {
	t.Helper()
	path := fixture(t, name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(b[16])<<8 | int(b[17])
	if err := os.WriteFile(path, cut(b, pageSize), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkUntouched checks that Open of a damaged file failed with ECORRUPT,
// named the file and `sessiondb recover`, and wrote nothing: the file and
// its -wal are as they were (SQLite may create and remove sidecars).
func checkUntouched(t *testing.T, path string, walMode bool) {
	t.Helper()
	before, beforeWAL := fileHash(t, path), fileHash(t, path+"-wal")
	err := openErr(path)
	checkOpenError(t, err, path, sessiondb.ECORRUPT, "damaged", "sessiondb recover")
	after, afterWAL := fileHash(t, path), fileHash(t, path+"-wal")
	if after != before || (afterWAL != beforeWAL && afterWAL != "absent") {
		if !walMode {
			knownBug(t, "Open switched the damaged rollback-journal file %s to WAL before migrate found the damage (%v), "+
				"although the error says nothing was written", filepath.Base(path), err)
		}
		t.Errorf("the damaged file was modified by a failed open (%v)", err)
	}
	t.Logf("error: %v", err)
}

func TestBadFileDamaged(t *testing.T) {
	t.Run("zero bytes", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		db := MustOpenPath(t, path)
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
			t.Fatalf("a zero-byte file must become a working database: %v", err)
		}
		checkIntegrity(t, rawDB(t, path))
	})

	t.Run("random bytes", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		junk := make([]byte, 3*4096+17)
		rand.NewChaCha8([32]byte{1}).Read(junk)
		if err := os.WriteFile(path, junk, 0o600); err != nil {
			t.Fatal(err)
		}
		before := fileHash(t, path)
		err := openErr(path)
		moved, _ := filepath.Glob(path + ".invalid-*")
		if err == nil && len(moved) == 1 {
			// Open moves a headerless file aside (QuarantineInvalid).
			if got := fileHash(t, moved[0]); got != before {
				t.Errorf("the quarantined copy differs from the original")
			}
			return
		}
		checkOpenError(t, err, path, sessiondb.ECORRUPT, "sessiondb recover")
		if fileHash(t, path) != before {
			t.Errorf("the file of random bytes was modified")
		}
	})

	t.Run("truncated WAL-mode fixture", func(t *testing.T) {
		checkUntouched(t, damage(t, "hermes-v11.db", func(b []byte, _ int) []byte { return b[:len(b)/2] }), true)
	})
	t.Run("truncated rollback-mode fixture", func(t *testing.T) {
		checkUntouched(t, damage(t, "hermes-v23.db", func(b []byte, _ int) []byte { return b[:len(b)/2] }), false)
	})
	zeroMiddle := func(b []byte, ps int) []byte {
		mid := len(b) / ps / 2 * ps
		clear(b[mid : mid+ps])
		return b
	}
	t.Run("zeroed page WAL-mode fixture", func(t *testing.T) {
		checkUntouched(t, damage(t, "hermes-v11.db", zeroMiddle), true)
	})
	t.Run("zeroed page rollback-mode fixture", func(t *testing.T) {
		checkUntouched(t, damage(t, "hermes-v23.db", zeroMiddle), false)
	})
}

func TestBadFilePaths(t *testing.T) {
	t.Run("directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		checkOpenError(t, openErr(path), path, sessiondb.EINVALID, "is a directory")
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			t.Errorf("the directory was touched: %v", err)
		}
		if ents, _ := os.ReadDir(path); len(ents) != 0 {
			t.Errorf("files created inside the directory: %v", ents)
		}
	})

	t.Run("symlink to a valid database", func(t *testing.T) {
		target := fixture(t, "hermes-v23.db")
		linkDir := t.TempDir()
		link := filepath.Join(linkDir, "state.db")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		viaLink := MustOpenPath(t, link)
		viaTarget := MustOpenPath(t, target)
		sid := firstSession(t, rawDB(t, target))
		for i, db := range []*sqlite.DB{viaLink, viaTarget, viaLink} {
			if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: fmt.Sprintf("linkword %d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		raw := rawDB(t, target)
		if got := count(t, raw, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'linkword'"); got != 3 {
			t.Errorf("rows written through the link and the target: %d, want 3", got)
		}
		// SQLite resolves the link, so both paths share one WAL: a -wal
		// next to the link would be a second journal for the same file.
		for _, s := range []string{"-wal", "-shm", "-journal"} {
			if _, err := os.Lstat(link + s); err == nil {
				t.Errorf("%s created next to the symlink", filepath.Base(link+s))
			}
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the symlink was replaced: %v", err)
		}
		checkCounters(t, raw)
		checkIntegrity(t, raw)
	})

	t.Run("symlink to a missing target", func(t *testing.T) {
		dir := t.TempDir()
		link := filepath.Join(dir, "state.db")
		if err := os.Symlink(filepath.Join(dir, "gone", "state.db"), link); err != nil {
			t.Fatal(err)
		}
		checkOpenError(t, openErr(link), link, sessiondb.EINVALID, "symlink", "missing")
		if _, err := os.Stat(filepath.Join(dir, "gone")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the link target's directory was created")
		}
	})

	t.Run("read-only file", func(t *testing.T) {
		for _, mode := range []string{"wal", "delete"} {
			t.Run(mode, func(t *testing.T) { testReadOnly(t, mode) })
		}
	})

	t.Run("missing WAL after an unclean stop", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
		if err != nil {
			t.Fatal(err)
		}
		db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"})
		for i := 0; i < 10; i++ {
			if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: fmt.Sprintf("checkpointed %d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil { // clean close: everything checkpointed
			t.Fatal(err)
		}
		// A second store keeps its writes in the WAL (fewer than the 50
		// writes between checkpoints) and is never closed: the crash.
		db = MustOpenPath(t, path)
		for i := 0; i < 5; i++ {
			if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: fmt.Sprintf("in the wal %d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
			t.Fatalf("no WAL content to lose: %v", err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		copyPath := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(copyPath, b, 0o600); err != nil {
			t.Fatal(err)
		}
		restored := MustOpenPath(t, copyPath)
		msgs, err := restored.Messages(ctx, "s", sessiondb.MessageFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 10 || msgs[9].Content != "checkpointed 9" {
			t.Errorf("copy without its WAL has %d messages, want the 10 checkpointed ones", len(msgs))
		}
		if _, err := restored.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "after restore"}); err != nil {
			t.Errorf("append to the restored copy: %v", err)
		}
		raw := rawDB(t, copyPath)
		checkCounters(t, raw)
		checkIntegrity(t, raw)
	})
}

// Environment of the re-executed read-only opener (TestBadFileHelperReadOnly).
const envReadOnlyDB = "SESSIONDB_RELIAB_READONLY_DB"

// TestBadFileHelperReadOnly is not a test: testReadOnly runs the test binary
// again as an unprivileged user (root may write any file) with this
// function selected. It opens the database and writes the error as JSON to
// protocolFD.
func TestBadFileHelperReadOnly(t *testing.T) {
	path := os.Getenv(envReadOnlyDB)
	if path == "" {
		return
	}
	json.NewEncoder(protocolOut()).Encode(readOnlyOpen(path))
}

type readOnlyResult struct {
	UID     int    `json:"uid"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func readOnlyOpen(path string) readOnlyResult {
	err := openErr(path)
	r := readOnlyResult{UID: os.Geteuid(), Code: sessiondb.ErrorCode(err)}
	if err != nil {
		r.Message = err.Error()
	}
	return r
}

// testReadOnly opens a 0400 database owned by the opening user: it must
// fail with EPERM naming the file and the permission problem, write
// nothing, and leave the file's mode alone.
func testReadOnly(t *testing.T, journal string) {
	nobody := 65534
	dir, err := os.MkdirTemp("", "sessiondb-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	dataDir := filepath.Join(dir, "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dataDir, "state.db")
	db, err := sqlite.Open(path, sqlite.Options{JournalMode: journal, Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	before := fileHash(t, path)

	var res readOnlyResult
	if os.Geteuid() != 0 {
		res = readOnlyOpen(path)
	} else {
		// Run as nobody from a copy of the test binary nobody can execute.
		for _, p := range []string{dir, dataDir, path} {
			if err := os.Chown(p, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "sqlite.test")
		copyFileMode(t, os.Args[0], bin, 0o755)
		cmd := exec.Command(bin, "-test.run=^TestBadFileHelperReadOnly$", "-test.count=1")
		cmd.Env = append(os.Environ(), envReadOnlyDB+"="+path, "HOME="+dataDir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(nobody), Gid: uint32(nobody)}}
		p := startProc(t, "read-only helper", cmd, true)
		if _, err := p.wait(); err != nil {
			t.Fatalf("read-only helper: %v\n%s\n%s", err, p.stdout.String(), p.stderr.String())
		}
		if len(p.other) != 1 {
			t.Fatalf("read-only helper wrote %q, want one JSON line", p.other)
		}
		if err := json.Unmarshal([]byte(p.other[0]), &res); err != nil {
			t.Fatalf("read-only helper output %q: %v", p.other[0], err)
		}
		if res.UID != nobody {
			t.Fatalf("helper ran as uid %d", res.UID)
		}
	}
	t.Logf("uid %d: %s", res.UID, res.Message)
	if res.Code != sessiondb.EPERM {
		t.Errorf("open of a read-only file: code %q (%s), want %q", res.Code, res.Message, sessiondb.EPERM)
	}
	for _, s := range []string{path, "cannot write", "permissions"} {
		if !strings.Contains(res.Message, s) {
			t.Errorf("error %q does not mention %q", res.Message, s)
		}
	}
	if fileHash(t, path) != before {
		t.Errorf("the read-only file was modified")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o400 {
		knownBug(t, "Open changed the mode of the read-only file from 400 to %o (chmodFiles adds the write bit)", got)
	}
}

func copyFileMode(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// QuarantineInvalid
// ---------------------------------------------------------------------------

var quarantineName = regexp.MustCompile(`^state\.db\.invalid-\d{8}_\d{6}(-\d+)?$`)

func TestQuarantineInvalid(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	write := func(t *testing.T, path string, b []byte, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	junk := make([]byte, 8192)
	rand.NewChaCha8([32]byte{2}).Read(junk)

	t.Run("zero bytes with sidecars", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		write(t, path, nil, old)
		write(t, path+"-wal", []byte("stale wal"), old)
		write(t, path+"-shm", []byte("stale shm"), old)
		moved, err := sqlite.QuarantineInvalid(path)
		if err != nil {
			t.Fatal(err)
		}
		if !quarantineName.MatchString(filepath.Base(moved)) || filepath.Dir(moved) != filepath.Dir(path) {
			t.Fatalf("moved to %q, want %s.invalid-YYYYmmdd_HHMMSS", moved, path)
		}
		for _, s := range []string{"", "-wal", "-shm"} {
			if _, err := os.Lstat(path + s); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s still in place", filepath.Base(path+s))
			}
		}
		if got, _ := os.ReadFile(moved + "-wal"); string(got) != "stale wal" {
			t.Errorf("the -wal did not move with the file: %q", got)
		}
		if got, _ := os.ReadFile(moved + "-shm"); string(got) != "stale shm" {
			t.Errorf("the -shm did not move with the file: %q", got)
		}
		// The fresh database Open creates never sees the old sidecars.
		db := MustOpenPath(t, path)
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
			t.Fatal(err)
		}
		checkIntegrity(t, rawDB(t, path))
	})

	t.Run("headerless", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		write(t, path, junk, time.Now())
		write(t, path+"-journal", []byte("hot journal"), time.Now())
		moved, err := sqlite.QuarantineInvalid(path)
		if err != nil || moved == "" {
			t.Fatalf("QuarantineInvalid = %q, %v; want the file moved", moved, err)
		}
		if got, _ := os.ReadFile(moved); !bytes.Equal(got, junk) {
			t.Errorf("the moved file differs from the original")
		}
		if _, err := os.Stat(moved + "-journal"); err != nil {
			t.Errorf("the -journal did not move with the file: %v", err)
		}
	})

	t.Run("shorter than a header", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		write(t, path, []byte("SQLite"), time.Now())
		if moved, err := sqlite.QuarantineInvalid(path); err != nil || moved == "" {
			t.Fatalf("QuarantineInvalid = %q, %v; want the file moved", moved, err)
		}
	})

	t.Run("name taken", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "state.db")
		now := time.Now()
		var want []string
		for _, ts := range []time.Time{now, now.Add(time.Second)} {
			base := path + ".invalid-" + ts.Format("20060102_150405")
			write(t, base, []byte("earlier quarantine"), old)
			want = append(want, base+"-2")
		}
		write(t, path, junk, time.Now())
		moved, err := sqlite.QuarantineInvalid(path)
		if err != nil {
			t.Fatal(err)
		}
		if moved != want[0] && moved != want[1] {
			t.Errorf("moved to %q, want one of %q", moved, want)
		}
		if got, _ := os.ReadFile(strings.TrimSuffix(moved, "-2")); string(got) != "earlier quarantine" {
			t.Errorf("an earlier quarantined file was overwritten")
		}
	})

	leftAlone := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"missing", func(t *testing.T, path string) {}},
		{"valid database", func(t *testing.T, path string) { copyFileMode(t, fixture(t, "hermes-v23.db"), path, 0o600) }},
		{"young zero-byte file", func(t *testing.T, path string) { write(t, path, nil, time.Now()) }},
		{"directory", func(t *testing.T, path string) { os.Mkdir(path, 0o700) }},
		{"symlink to a headerless file", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "junk")
			write(t, target, junk, old)
			os.Symlink(target, path)
		}},
		{"held open by this process", func(t *testing.T, path string) {
			write(t, path, junk, old)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
		}},
		{"open in a connection of this process", func(t *testing.T, path string) {
			// A connection on a new, still empty file: moving the file
			// would leave it writing to the moved inode.
			c, err := sql.Open("sqlite3", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if err := c.Ping(); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
				t.Fatalf("connection did not leave an empty file: %v", err)
			}
			os.Chtimes(path, old, old)
		}},
	}
	for _, tc := range leftAlone {
		t.Run("leaves alone "+tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.db")
			tc.setup(t, path)
			before, _ := os.ReadDir(dir)
			moved, err := sqlite.QuarantineInvalid(path)
			if err != nil || moved != "" {
				t.Errorf("QuarantineInvalid = %q, %v; want nothing moved", moved, err)
			}
			after, _ := os.ReadDir(dir)
			if len(after) != len(before) {
				t.Errorf("directory changed: %v → %v", before, after)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 5. Permissions
// ---------------------------------------------------------------------------

func checkModes(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode = %o, want %o", filepath.Base(p), got, want)
		}
	}
}

func TestPermissions(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })

	t.Run("created by Open, and after the WAL files are recreated", func(t *testing.T) {
		top := filepath.Join(t.TempDir(), "hermes-home")
		dir := filepath.Join(top, "profiles")
		path := filepath.Join(dir, "state.db")
		write := func(db *sqlite.DB, content string) {
			t.Helper()
			if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: content}); err != nil {
				t.Fatal(err)
			}
		}
		db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
		if err != nil {
			t.Fatal(err)
		}
		db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"})
		write(db, "first")
		checkModes(t, path, 0o600)
		for _, d := range []string{top, dir} {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("directory %s created by Open: %v, %v; want mode 700", filepath.Base(d), fi.Mode().Perm(), err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"-wal", "-shm"} {
			if err := os.Remove(path + s); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		db = MustOpenPath(t, path)
		write(db, "second")
		checkModes(t, path, 0o600)
	})

	t.Run("existing loose files are tightened", func(t *testing.T) {
		path := fixture(t, "hermes-v11.db")
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		dirMode := func() os.FileMode {
			fi, err := os.Stat(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			return fi.Mode().Perm()
		}
		if err := os.Chmod(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		// A connection of another program holds the file open, so its
		// sidecars (created with the file's 644) stay while the store opens.
		raw := rawDB(t, path)
		count(t, raw, "SELECT COUNT(*) FROM sessions")
		checkModes(t, path, 0o644)
		db := MustOpenPath(t, path)
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: firstSession(t, raw), Role: "user", Content: "x"}); err != nil {
			t.Fatal(err)
		}
		checkModes(t, path, 0o600)
		if got := dirMode(); got != 0o755 {
			t.Errorf("existing directory mode changed to %o", got)
		}
	})
}
