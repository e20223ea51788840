package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/internal/workload"
	"github.com/sessiondb/sessiondb/sqlite"
)

func init() { commands["bench"] = newBenchCommand }

// TestMain lets this test binary stand in for sessiondb when benchWorkerEnv
// is set: `bench --procs N` re-runs its own executable as its workers, and
// TestReadOnlyFile runs commands as another user.
func TestMain(m *testing.M) {
	if os.Getenv(benchWorkerEnv) != "" {
		os.Exit(Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// makeWorkload is the shared workload generator (CI installs python3).
var makeWorkload = testenv.Shared("bench", "make_workload.py")

// benchJSON runs bench with args and --json and decodes its report.
func benchJSON(t *testing.T, db string, args ...string) (map[string]any, string) {
	t.Helper()
	out := mustCLI(t, db, append(append([]string{"bench"}, args...), "--json")...)
	if n := strings.Count(strings.TrimSpace(out), "\n"); n != 0 {
		t.Errorf("bench --json printed %d lines, want one object on one line", n+1)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	return rep, out
}

// num returns the number at a dotted path of a decoded report.
func num(t *testing.T, rep map[string]any, path string) float64 {
	t.Helper()
	var v any = rep
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("report has no %s", path)
		}
		if v, ok = m[k]; !ok {
			t.Fatalf("report has no %s", path)
		}
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%s = %v, want a number", path, v)
	}
	return f
}

// storeCounts opens db and returns its message and session counts.
func storeCounts(t *testing.T, db string) (messages, sessions int64) {
	t.Helper()
	s, err := sqlite.Open(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return in.Rows["messages"], in.Rows["sessions"]
}

func checkReads(t *testing.T, rep map[string]any, labels []string) {
	t.Helper()
	qs, ok := rep["queries"].(map[string]any)
	if !ok || len(qs) != len(labels) {
		t.Fatalf("queries = %v, want the labels %v", rep["queries"], labels)
	}
	for _, l := range labels {
		p50, p95 := num(t, rep, "queries."+l+".p50_ms"), num(t, rep, "queries."+l+".p95_ms")
		if p50 <= 0 || p95 < p50 {
			t.Errorf("query %s: p50 %v ms, p95 %v ms", l, p50, p95)
		}
		num(t, rep, "queries."+l+".hits")
		if q, _ := qs[l].(map[string]any)["query"].(string); q == "" {
			t.Errorf("query %s has no query text", l)
		}
	}
	if p50, p95 := num(t, rep, "list.p50_ms"), num(t, rep, "list.p95_ms"); p50 <= 0 || p95 < p50 {
		t.Errorf("list: p50 %v ms, p95 %v ms", p50, p95)
	}
	if rep["journal_mode"] != "wal" || rep["synchronous"] != "full" {
		t.Errorf("journal_mode %v, synchronous %v; want wal, full", rep["journal_mode"], rep["synchronous"])
	}
	if num(t, rep, "appends_per_s") <= 0 || num(t, rep, "append_seconds") <= 0 {
		t.Errorf("appends_per_s %v, append_seconds %v", rep["appends_per_s"], rep["append_seconds"])
	}
	if num(t, rep, "db_bytes") <= 0 {
		t.Errorf("db_bytes = %v", rep["db_bytes"])
	}
}

func TestBenchGenerated(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bench.db")
	rep, _ := benchJSON(t, db, "--sessions", "5", "--messages", "200", "--writers", "4", "--searches", "3", "--bands=false")
	checkReads(t, rep, []string{"word", "phrase", "prefix", "cjk3", "cjk2"})
	for path, want := range map[string]float64{"messages": 200, "sessions": 5, "writers": 4, "processes": 1, "errors": 0, "list.rows": 5} {
		if got := num(t, rep, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	if p50, p99 := num(t, rep, "append.p50_ms"), num(t, rep, "append.p99_ms"); p50 <= 0 || p99 < p50 {
		t.Errorf("append latency p50 %v ms, p99 %v ms", p50, p99)
	}
	// The other interactive reads, on the listed session with the most
	// messages (over 50 here: the seed's shares are uneven): its last 50
	// messages, its lineage (itself), its id by a prefix, and the usage by
	// day of the newest 100 sessions (one day).
	reads, _ := rep["reads"].([]any)
	wantReads := []struct {
		name string
		rows float64
	}{{"show-tail-50", 50}, {"lineage", 1}, {"resolve-prefix", 1}, {"stats-newest-100", 1}}
	if len(reads) != len(wantReads) {
		t.Fatalf("reads = %v, want %d", rep["reads"], len(wantReads))
	}
	for i, want := range wantReads {
		r := map[string]any{"r": reads[i]}
		if r["r"].(map[string]any)["read"] != want.name || num(t, r, "r.rows") != want.rows || num(t, r, "r.p50_ms") <= 0 || num(t, r, "r.p95_ms") < num(t, r, "r.p50_ms") {
			t.Errorf("read %d = %v, want %s with %v rows and p50 ≤ p95", i, reads[i], want.name, want.rows)
		}
	}
	if _, err := os.Stat("/proc/self/status"); err == nil && num(t, rep, "peak_rss_mb") <= 0 {
		t.Errorf("peak_rss_mb = %v", rep["peak_rss_mb"])
	}
	if m, s := storeCounts(t, db); m != 200 || s != 5 {
		t.Fatalf("store holds %d messages in %d sessions, want 200 in 5", m, s)
	}

	// A second run on the same file adds new sessions rather than
	// appending to the first run's; the human report is a table.
	out := mustCLI(t, db, "bench", "--sessions", "2", "--messages", "20", "--searches", "1", "--bands=false")
	for _, want := range []string{"appends", "append latency", "word", "cjk2", "list-20", "show-tail-50", "stats-newest-100", "synchronous full"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if m, s := storeCounts(t, db); m != 220 || s != 7 {
		t.Fatalf("after a second run the store holds %d messages in %d sessions, want 220 in 7", m, s)
	}
}

func TestBenchProcs(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bench.db")
	rep, _ := benchJSON(t, db, "--sessions", "6", "--messages", "150", "--writers", "2", "--procs", "2", "--searches", "1", "--bands=false")
	for path, want := range map[string]float64{"messages": 150, "processes": 3, "errors": 0} {
		if got := num(t, rep, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	if _, err := os.Stat("/proc/self/status"); err == nil && num(t, rep, "worker_peak_rss_mb") <= 0 {
		t.Errorf("worker_peak_rss_mb = %v", rep["worker_peak_rss_mb"])
	}
	if m, s := storeCounts(t, db); m != 150 || s != 6 {
		t.Fatalf("store holds %d messages in %d sessions, want 150 in 6", m, s)
	}
}

func TestBenchReplay(t *testing.T) {
	python := testenv.Program(t, "python3", "to generate the replay workload with ../shared/bench/make_workload.py")
	dir := t.TempDir()
	workload, queries := filepath.Join(dir, "w.jsonl"), filepath.Join(dir, "q.txt")
	if out, err := exec.Command(python, makeWorkload, "300", "10", "42", workload, queries).CombinedOutput(); err != nil {
		t.Fatalf("make_workload.py: %v\n%s", err, out)
	}
	qs, err := readQueries(queries)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, q := range qs {
		labels = append(labels, q.label)
	}
	if len(labels) != 12 {
		t.Fatalf("query file has %d labels, want 12", len(labels))
	}
	db := filepath.Join(dir, "replay.db")
	mustCLI(t, db, "init")
	rep, raw := benchJSON(t, db, "--workload", workload, "--queries", queries)
	checkReads(t, rep, labels)
	if got, want := num(t, rep, "messages"), 300.0; got != want {
		t.Errorf("messages = %v, want %v", got, want)
	}
	if got, want := num(t, rep, "sessions"), 10.0; got != want {
		t.Errorf("sessions = %v, want %v", got, want)
	}
	if got, want := num(t, rep, "list.rows"), 10.0; got != want {
		t.Errorf("list.rows = %v, want %v", got, want)
	}
	if got := num(t, rep, "queries.word.hits"); got != 20 {
		t.Errorf("queries.word.hits = %v, want a full page of 20", got)
	}
	// The labels appear in query-file order.
	at := -1
	for _, l := range labels {
		i := strings.Index(raw, `"`+l+`":{`)
		if i < at {
			t.Errorf("label %s is out of query-file order in %s", l, raw)
		}
		at = i
	}
	if m, s := storeCounts(t, db); m != 300 || s != 10 {
		t.Fatalf("store holds %d messages in %d sessions, want 300 in 10", m, s)
	}
}

func TestBenchReplayMapsFields(t *testing.T) {
	dir := t.TempDir()
	workload, queries := filepath.Join(dir, "w.jsonl"), filepath.Join(dir, "q.txt")
	lines := `{"op":"new_session","id":"s1","source":"telegram","model":null,"extra":1}

{"op":"append","session_id":"s1","role":"user","content":"deploy with docker","tool_calls":null,"tool_name":null,"tool_call_id":null,"reasoning":null,"finish_reason":null,"token_count":null}
{"op":"append","session_id":"s1","role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"terminal","arguments":"{\"command\": \"ls\"}"}}],"tool_name":null,"tool_call_id":null,"reasoning":"think","finish_reason":"tool_calls","token_count":42}
{"op":"append","session_id":"s1","role":"tool","content":"{\"output\": \"ok\"}","tool_calls":null,"tool_name":"terminal","tool_call_id":"call_1","reasoning":null,"finish_reason":null,"token_count":null}
`
	if err := os.WriteFile(workload, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(queries, []byte("# comment\nword\tdocker\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "replay.db")
	rep, _ := benchJSON(t, db, "--workload", workload, "--queries", queries, "--searches", "2")
	if got := num(t, rep, "queries.word.hits"); got != 1 {
		t.Errorf("queries.word.hits = %v, want 1", got)
	}
	s, err := sqlite.Open(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	sess, err := s.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Source != "telegram" || sess.Model != nil || sess.MessageCount != 3 || sess.ToolCallCount != 1 {
		t.Errorf("session = source %q model %v, %d messages, %d tool calls", sess.Source, sess.Model, sess.MessageCount, sess.ToolCallCount)
	}
	ms, err := s.Messages(ctx, "s1", sessiondb.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("%d messages, want 3", len(ms))
	}
	a, tool := ms[1], ms[2]
	var calls []map[string]any
	if err := json.Unmarshal(a.ToolCalls, &calls); err != nil || len(calls) != 1 || calls[0]["id"] != "call_1" {
		t.Errorf("tool_calls = %s (%v)", a.ToolCalls, err)
	}
	if a.Content != nil || a.Reasoning == nil || *a.Reasoning != "think" || a.TokenCount == nil || *a.TokenCount != 42 ||
		a.FinishReason == nil || *a.FinishReason != "tool_calls" {
		t.Errorf("assistant = content %v, reasoning %v, tokens %v, finish %v", a.Content, a.Reasoning, a.TokenCount, a.FinishReason)
	}
	if tool.ToolName == nil || *tool.ToolName != "terminal" || tool.ToolCallID == nil || *tool.ToolCallID != "call_1" ||
		tool.Content != `{"output": "ok"}` {
		t.Errorf("tool = name %v, call id %v, content %v", tool.ToolName, tool.ToolCallID, tool.Content)
	}
}

func TestBenchBadInput(t *testing.T) {
	dir := t.TempDir()
	queries := filepath.Join(dir, "q.txt")
	if err := os.WriteFile(queries, []byte("word\tdocker\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	workload := filepath.Join(dir, "w.jsonl")
	bad := `{"op":"new_session","id":"s1","source":"cli","model":null}
{"op":"append","session_id":"s1","role":"user","content":"hi","tool_calls":null,"tool_name":null,"tool_call_id":null,"reasoning":null,"finish_reason":null,"token_count":null}
{"op":"delete_session","id":"s1"}
`
	if err := os.WriteFile(workload, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "bad.db")
	_, errOut, code := cli(t, db, "", "bench", "--workload", workload, "--queries", queries, "--json")
	if code != exitUsage || !strings.Contains(errOut, "line 3") || !strings.Contains(errOut, `unknown op "delete_session"`) {
		t.Fatalf("exit %d, stderr %q; want exit %d naming line 3 and the op", code, errOut, exitUsage)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a bad workload created the database: the file must be checked first")
	}

	for _, tc := range []struct{ name, args, want string }{
		{"workload without queries", "--workload x.jsonl", "go together"},
		{"writers in replay", "--workload x --queries y --writers 2", "file order"},
		{"too few messages", "--sessions 10 --messages 5", "--messages at least --sessions"},
		{"more writers than sessions", "--sessions 2 --messages 10 --writers 3", "at least as many sessions"},
		{"no searches", "--searches 0", "--searches"},
		{"worker by hand", "--worker 1", "set by bench itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := cli(t, db, "", append([]string{"bench"}, strings.Fields(tc.args)...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, errOut, exitUsage, tc.want)
			}
		})
	}
}

func TestParseWorkloadErrors(t *testing.T) {
	const ns = `{"op":"new_session","id":"s1","source":"cli","model":null}` + "\n"
	for _, tc := range []struct{ name, in, want string }{
		{"unknown op", ns + "\n" + `{"op":"fork","id":"s2"}`, `line 3: unknown op "fork"`},
		{"no op", `{"id":"s1"}`, "line 1: no \"op\" key"},
		{"not json", ns + "{oops", "line 2:"},
		{"append before its session", `{"op":"append","session_id":"s9","role":"user","content":"x"}`, `line 1: append to session "s9"`},
		{"session twice", ns + ns, "line 2: session \"s1\" was already created on line 1"},
		{"empty", "\n\n", "no operations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseWorkload(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if got := sessiondb.ErrorCode(err); got != sessiondb.EINVALID {
				t.Errorf("code = %q, want %q", got, sessiondb.EINVALID)
			}
		})
	}
}

func TestParseQueries(t *testing.T) {
	qs, err := parseQueries(strings.NewReader("# c\n\nword\tdocker\nphrase\t\"a b\"\tx\nmixed\tdocker 部署\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []benchQuery{{"word", "docker"}, {"phrase", "\"a b\"\tx"}, {"mixed", "docker 部署"}}
	if !slices.Equal(qs, want) {
		t.Fatalf("queries = %q, want %q", qs, want)
	}
	for _, tc := range []struct{ in, want string }{
		{"word docker\n", "line 1: want LABEL<TAB>QUERY"},
		{"Word\tdocker\n", `line 1: label "Word"`},
		{"w\ta\nw\tb\n", `line 2: label "w" already used on line 1`},
		{"# only comments\n", "no queries"},
	} {
		if _, err := parseQueries(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseQueries(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	// The README's example: for n = 15, p95 = s[13] + 0.3·(s[14] − s[13]).
	s := make([]float64, 15)
	for i := range s {
		s[i] = float64(i * i)
	}
	for _, tc := range []struct {
		name   string
		sorted []float64
		q      float64
		want   float64
	}{
		{"p95 of 15", s, 0.95, s[13] + 0.3*(s[14]-s[13])},
		{"median of 15", s, 0.5, s[7]},
		{"median of 4", []float64{1, 2, 4, 8}, 0.5, 3},
		{"p99 of 2", []float64{10, 20}, 0.99, 19.9},
		{"max", s, 1, s[14]},
		{"min", s, 0, s[0]},
		{"one sample", []float64{5}, 0.95, 5},
		{"none", nil, 0.5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := quantile(tc.sorted, tc.q); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

// TestBalance: the shares partition the sessions, each in order, and no two
// shares differ by more than the longest session's messages.
func TestBalance(t *testing.T) {
	plan, err := workload.NewPlan(1, 100, 4000)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(plan.Sessions))
	longest := 0
	for i := range all {
		all[i] = i
		longest = max(longest, plan.Sessions[i].Messages)
	}
	for _, n := range []int{1, 3, 8} {
		shares := balance(plan, all, n)
		var got []int
		lo, hi := math.MaxInt, 0
		for _, s := range shares {
			if !slices.IsSorted(s) {
				t.Errorf("n=%d: share %v not in order", n, s)
			}
			load := 0
			for _, i := range s {
				load += plan.Sessions[i].Messages
			}
			lo, hi = min(lo, load), max(hi, load)
			got = append(got, s...)
		}
		slices.Sort(got)
		if !slices.Equal(got, all) {
			t.Errorf("n=%d: shares hold %v, want every session once", n, got)
		}
		if hi-lo > longest {
			t.Errorf("n=%d: loads %d..%d differ by more than the longest session (%d)", n, lo, hi, longest)
		}
	}
}
