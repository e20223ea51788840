package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/workload"
)

// benchWorkerEnv is set in the environment of the worker processes bench
// starts. The sessiondb binary ignores it; a test binary that stands in for
// sessiondb (see bench_test.go) uses it to route the worker to Run.
const benchWorkerEnv = "SESSIONDB_BENCH_WORKER"

// Bench settings fixed by the replay format (/work/shared/bench/README.md).
const (
	benchSearchLimit = 20
	benchListLimit   = 20
	// benchStatsSessions is the window of the usage read: the newest
	// sessions' usage by day.
	benchStatsSessions = 100
)

// benchOptions are the command line of `sessiondb bench`.
type benchOptions struct {
	sessions, messages  int
	writers, procs      int
	searches            int
	seed                uint64
	workload, queryFile string
	asJSON              bool
	bands               bool   // time the banded query set (generated mode)
	bandRounds          int    // warm passes over the banded set
	scale               string // SIZE[=PATH],… : one database per size
	scaleDir            string // where --scale keeps databases without a PATH

	// Hidden: set on the worker processes of --procs.
	worker int    // this worker's process number (1..procs); 0 in the parent
	runTag string // session id tag shared by the parent and its workers
}

func newBenchCommand() *command {
	o := &benchOptions{}
	return &command{
		name:     "bench",
		synopsis: "measure append, search and list speed on a generated or replayed workload",
		usage: `Usage: sessiondb [--db PATH] bench [--sessions N] [--messages N] [--writers N] [--procs N]
                 [--searches N] [--seed S] [--bands=false] [--band-rounds N] [--json]
       sessiondb [--db PATH] bench --workload FILE.jsonl --queries FILE.txt [--json]
       sessiondb bench --scale SIZE[=PATH],SIZE[=PATH]... [--scale-dir DIR] [--writers N] [--json]

Appends a realistic agent workload through the public API, one message per
call (each durable when it returns), then times searches and the session
list on the result, in the spirit of pgbench. Run it on a scratch database.

Generated mode (the default) plans --sessions sessions holding --messages
messages in all: English of varied length, about 15% Chinese, Japanese or
Korean, assistant tool calls with JSON arguments, tool results, reasoning.
The content depends only on --seed. Each of --writers goroutines owns a
share of the sessions (shares hold about as many messages each) and
appends their turns interleaved; --procs N adds N worker processes (this
binary, re-run) on the same file, each running --writers goroutines on its
own share. Reported: appends/s, append latency p50/p95/p99, errors,
search latency per query class (--searches timed calls each after one
warm-up), list-20 latency, the other interactive reads on the listed
session with the most messages (its last 50 messages, its lineage, its id
by a unique prefix, and the usage by day of the newest 100 sessions, a
window of the same size at any history size), file size and peak memory.

The banded query set (generated and --scale modes; --bands=false skips
it): 244 different queries drawn from the generator's vocabulary, in
bands (frequent, medium and rare words, phrases, prefixes, CJK of one, two
and three or more characters, Korean, mixed scripts, one rarer source,
OR/NOT). Each runs once as the first search of a store opened for it
alone (cold, in a shuffled order), then --band-rounds more times on the
warm store (each round in another shuffled order). Reported per band:
p50, p95 and p99 of the cold and of the warm calls, and how many queries
found nothing.

Scale mode builds one generated database per size (SIZE messages in
SIZE/100 sessions, --writers goroutines) at PATH, or at DIR/bench-SIZE.db,
and measures the reads on each. A file that already holds SIZE messages is
reused as it is (nothing is appended, appends are not reported); any other
existing file is an error. It prints each size's report and then the
growth of every p50 from the first size to each later one.

Replay mode reads a workload written by make_workload.py (format:
shared/bench/README.md), checks every line, then replays it in file order
with one create-session or append call per line, and times each query of
the query file (1 warm-up + --searches calls) and the session list.

Options:
  --sessions N         sessions to generate (default 200)
  --messages N         messages to generate, in all (default 10000)
  --writers N          appending goroutines per process (default 1)
  --procs N            extra worker processes appending to the same file (default 0)
  --searches N         timed calls per query and for the list (default 15)
  --seed S             generator seed (default 1)
  --workload FILE      replay this JSON Lines workload (needs --queries)
  --queries FILE       LABEL<TAB>QUERY lines to time after the replay
  --bands=false        skip the banded query set
  --band-rounds N      warm passes over the banded query set (default 1)
  --scale LIST         sizes to measure, SIZE[=PATH] separated by commas
  --scale-dir DIR      where --scale keeps a size without a PATH
  --json               print one JSON object

Examples:
  sessiondb --db /tmp/bench.db bench --writers 8
  sessiondb --db /tmp/bench.db bench --sessions 1000 --messages 100000 --procs 2 --json
  sessiondb --db /tmp/b.db bench --workload workload.jsonl --queries queries.txt --json
  sessiondb bench --scale 100000,1000000 --scale-dir /var/tmp/bench --writers 8
`,
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&o.sessions, "sessions", 200, "")
			fs.IntVar(&o.messages, "messages", 10000, "")
			fs.IntVar(&o.writers, "writers", 1, "")
			fs.IntVar(&o.procs, "procs", 0, "")
			fs.IntVar(&o.searches, "searches", 15, "")
			fs.Uint64Var(&o.seed, "seed", 1, "")
			fs.StringVar(&o.workload, "workload", "", "")
			fs.StringVar(&o.queryFile, "queries", "", "")
			fs.BoolVar(&o.asJSON, "json", false, "")
			fs.BoolVar(&o.bands, "bands", true, "")
			fs.IntVar(&o.bandRounds, "band-rounds", 1, "")
			fs.StringVar(&o.scale, "scale", "", "")
			fs.StringVar(&o.scaleDir, "scale-dir", "", "")
			fs.IntVar(&o.worker, "worker", 0, "")
			fs.StringVar(&o.runTag, "run-tag", "", "")
		},
		run: o.run,
	}
}

func (o *benchOptions) check() error {
	switch {
	case o.searches < 1:
		return usagef("--searches must be at least 1")
	case o.bandRounds < 1:
		return usagef("--band-rounds must be at least 1")
	case o.scale != "" && o.workload != "":
		return usagef("--scale generates its databases: it does not replay --workload")
	case o.scale != "":
		return nil // sizes are checked by parseScale
	case (o.workload == "") != (o.queryFile == ""):
		return usagef("--workload and --queries go together")
	case o.workload != "" && (o.writers != 1 || o.procs != 0):
		return usagef("a replay runs its lines in file order: --writers and --procs apply to the generated workload only")
	case o.workload != "":
		return nil
	case o.sessions < 1 || o.messages < o.sessions:
		return usagef("--sessions must be at least 1 and --messages at least --sessions")
	case o.writers < 1 || o.procs < 0:
		return usagef("--writers must be at least 1 and --procs at least 0")
	case o.writers*(o.procs+1) > o.sessions:
		return usagef("%d writers in %d processes need at least as many sessions (--sessions %d)", o.writers*(o.procs+1), o.procs+1, o.sessions)
	}
	return nil
}

func (o *benchOptions) run(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		return usagef("bench takes no arguments")
	}
	if err := o.check(); err != nil {
		return err
	}
	if o.worker > 0 {
		return o.runWorker(ctx, e)
	}
	if o.scale != "" {
		return o.runScale(ctx, e)
	}
	rep, err := o.measure(ctx, e, false)
	if err != nil {
		return err
	}
	return o.report(e.stdout, rep)
}

// report prints rep and fails when appends failed.
func (o *benchOptions) report(w io.Writer, rep *benchReport) error {
	var err error
	if o.asJSON {
		// One compact line: easy to pick out of a log, and still one object.
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		err = enc.Encode(rep)
	} else {
		err = rep.print(w)
	}
	if err != nil {
		return err
	}
	return rep.failed()
}

func (r *benchReport) failed() error {
	if r.Errors > 0 {
		return fmt.Errorf("%d appends or session creations failed; the first: %s", r.Errors, r.FirstError)
	}
	return nil
}

// measure runs one bench on the database e names: the appends (replayed,
// or generated unless reuse), then the reads.
func (o *benchOptions) measure(ctx context.Context, e *env, reuse bool) (*benchReport, error) {
	var (
		rep     *benchReport
		queries []benchQuery
		ops     []replayOp
		err     error
	)
	if o.workload != "" {
		// Both files are read and checked before the database is touched.
		if ops, err = readWorkload(o.workload); err != nil {
			return nil, err
		}
		if queries, err = readQueries(o.queryFile); err != nil {
			return nil, err
		}
	} else {
		for _, q := range workload.Queries {
			queries = append(queries, benchQuery{q.Label, q.Query})
		}
	}
	db, err := e.openWrite(ctx, true)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	switch {
	case reuse:
		rep, err = reusedReport(ctx, db)
	case o.workload != "":
		rep, err = o.replay(ctx, e, db, ops)
	default:
		rep, err = o.generate(ctx, e, db)
	}
	if err != nil {
		return nil, err
	}
	// The parsed workload is garbage now: collect it before timing reads,
	// so that no read pays for a collection of the append phase's heap.
	ops = nil
	runtime.GC()
	if err := o.measureReads(ctx, e, db, queries, rep); err != nil {
		return nil, err
	}
	if o.bands && o.workload == "" {
		if rep.Bands, err = o.measureBands(ctx, e, db, o.bandRounds); err != nil {
			return nil, err
		}
	}
	// The settings the store ran with, as SQLite reports them, and its
	// files' sizes.
	if d, ok := db.(sessiondb.DurabilityReporter); ok {
		rep.JournalMode = d.JournalMode()
		if rep.Synchronous, err = d.Synchronous(ctx); err != nil {
			return nil, err
		}
	}
	if f, ok := db.(sessiondb.FileStore); ok {
		if fi, err := os.Stat(f.Path()); err == nil {
			rep.DBBytes = fi.Size()
		}
		if fi, err := os.Stat(f.Path() + "-wal"); err == nil {
			rep.WALBytes = fi.Size()
		}
	} else {
		rep.Store = "database server"
	}
	rep.PeakRSSMB = peakRSSMB()
	return rep, nil
}

// ---- report ----

// benchReport is the result of one bench run. Its JSON keys follow the
// replay format; the generated mode reports the same keys.
type benchReport struct {
	Mode            string         `json:"mode"` // "generated", "replay" or "reused" (--scale: a database already built)
	AppendsPerS     float64        `json:"appends_per_s"`
	AppendSeconds   float64        `json:"append_seconds"`
	Messages        int            `json:"messages"` // appends that succeeded
	Sessions        int            `json:"sessions"`
	Writers         int            `json:"writers"`   // appending goroutines per process
	Processes       int            `json:"processes"` // 1 + --procs
	Seed            *uint64        `json:"seed,omitempty"`
	Workload        string         `json:"workload,omitempty"`
	Append          latencySummary `json:"append"`
	Errors          int            `json:"errors"`
	FirstError      string         `json:"first_error,omitempty"`
	Queries         queryResults   `json:"queries"`
	List            listResult     `json:"list"`
	Reads           []readResult   `json:"reads,omitempty"`
	Bands           bandResults    `json:"bands,omitempty"`
	DBBytes         int64          `json:"db_bytes"`
	WALBytes        int64          `json:"wal_bytes"`
	JournalMode     string         `json:"journal_mode"`
	Synchronous     string         `json:"synchronous"`
	PeakRSSMB       float64        `json:"peak_rss_mb,omitempty"`
	WorkerPeakRSSMB float64        `json:"worker_peak_rss_mb,omitempty"` // the largest of the --procs workers
	Store           string         `json:"store,omitempty"`              // "database server" (no file sizes), or "" for a file
}

type latencySummary struct {
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
}

type queryResult struct {
	label string
	Query string  `json:"query"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	Hits  int     `json:"hits"`
}

// queryResults marshals as an object keyed by label, in query-file order.
type queryResults []queryResult

// MarshalJSON implements json.Marshaler.
func (qs queryResults) MarshalJSON() ([]byte, error) {
	return marshalKeyed(qs, func(q queryResult) string { return q.label })
}

// marshalKeyed marshals items as one JSON object keyed by key(item), in
// their order (a map would sort the keys).
func marshalKeyed[T any](items []T, key func(T) string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(key(it))
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type listResult struct {
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	Rows int     `json:"rows"`
}

// readResult times one of the other interactive reads (interactiveReads).
type readResult struct {
	Read string  `json:"read"`
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	Rows int     `json:"rows"`
}

// quantile returns the q-quantile of sorted samples, linearly interpolated
// at rank q·(n−1) (numpy's default method): the median for q = 0.5, and
// for n = 15 and q = 0.95, s[13] + 0.3·(s[14] − s[13]).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := q * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (rank-float64(lo))*(sorted[hi]-sorted[lo])
}

// sortedMillis returns the durations in milliseconds, ascending.
func sortedMillis(ds []time.Duration) []float64 {
	ms := make([]float64, len(ds))
	for i, d := range ds {
		ms[i] = float64(d) / float64(time.Millisecond)
	}
	slices.Sort(ms)
	return ms
}

// round3 rounds to three decimals (microseconds, for milliseconds).
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func summarize(ds []time.Duration) latencySummary {
	ms := sortedMillis(ds)
	return latencySummary{round3(quantile(ms, 0.5)), round3(quantile(ms, 0.95)), round3(quantile(ms, 0.99))}
}

func (r *benchReport) setAppendRate(elapsed time.Duration) {
	r.AppendSeconds = round3(elapsed.Seconds())
	if elapsed > 0 {
		r.AppendsPerS = math.Round(float64(r.Messages)/elapsed.Seconds()*10) / 10
	}
}

func (r *benchReport) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	switch r.Mode {
	case "replay":
		fmt.Fprintf(tw, "replayed %s: %d sessions, %d messages, in file order\n", r.Workload, r.Sessions, r.Messages)
	case "reused":
		fmt.Fprintf(tw, "reused database: %d sessions, %d messages (no appends timed)\n", r.Sessions, r.Messages)
	default:
		fmt.Fprintf(tw, "generated workload (seed %d): %d sessions, %d writer(s) in each of %d process(es)\n",
			*r.Seed, r.Sessions, r.Writers, r.Processes)
	}
	if r.Mode != "reused" {
		fmt.Fprintf(tw, "appends\t%d in %.3f s = %.1f/s, errors %d\n", r.Messages, r.AppendSeconds, r.AppendsPerS, r.Errors)
		fmt.Fprintf(tw, "append latency\tp50 %.3f ms, p95 %.3f ms, p99 %.3f ms\n", r.Append.P50, r.Append.P95, r.Append.P99)
	}
	if r.FirstError != "" {
		fmt.Fprintf(tw, "first error\t%s\n", r.FirstError)
	}
	fmt.Fprintln(tw)
	// The query text comes last: tabwriter cannot align double-width CJK.
	fmt.Fprintln(tw, "read\thits\tp50 ms\tp95 ms\tquery")
	for _, q := range r.Queries {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%s\n", q.label, q.Hits, q.P50, q.P95, q.Query)
	}
	fmt.Fprintf(tw, "list-%d\t%d\t%.3f\t%.3f\t(newest first)\n", benchListLimit, r.List.Rows, r.List.P50, r.List.P95)
	for _, x := range r.Reads {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t\n", x.Read, x.Rows, x.P50, x.P95)
	}
	fmt.Fprintln(tw)
	if len(r.Bands) > 0 {
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(tw, "query set: first call on a new store (cold), then on the warm store")
		printBands(tw, r.Bands)
		fmt.Fprintln(tw)
	}
	if r.Store == "" {
		fmt.Fprintf(tw, "file\t%.1f MB (db %.1f MB + wal %.1f MB), journal %s, synchronous %s\n",
			mb(r.DBBytes+r.WALBytes), mb(r.DBBytes), mb(r.WALBytes), r.JournalMode, r.Synchronous)
	} else {
		fmt.Fprintf(tw, "store\t%s (no file sizes)\n", r.Store)
	}
	if r.PeakRSSMB > 0 {
		fmt.Fprintf(tw, "peak RSS\t%.1f MB", r.PeakRSSMB)
		if r.WorkerPeakRSSMB > 0 {
			fmt.Fprintf(tw, " (largest worker %.1f MB)", r.WorkerPeakRSSMB)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// peakRSSMB returns this process's peak resident set size (VmHWM) in MiB,
// or 0 where /proc/self/status is missing.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0
			}
			return math.Round(kb/1024*10) / 10
		}
	}
	return 0
}

// ---- reads ----

type benchQuery struct{ label, query string }

// measureReads times each query (search, limit 20) and the session list
// (limit 20, newest first): one untimed warm-up, then o.searches timed calls.
func (o *benchOptions) measureReads(ctx context.Context, e *env, db sessiondb.Store, queries []benchQuery, rep *benchReport) error {
	bar := newProgress(e.stderr, "searching")
	total := int64(len(queries) + 1)
	samples := make([]time.Duration, o.searches)
	rep.Queries = queryResults{}
	for i, q := range queries {
		opts := sessiondb.SearchOptions{Limit: benchSearchLimit}
		hits, err := db.Search(ctx, q.query, opts)
		if err != nil {
			return fmt.Errorf("search %s (%s): %w", q.label, q.query, err)
		}
		for j := range samples {
			t0 := time.Now()
			if _, err := db.Search(ctx, q.query, opts); err != nil {
				return fmt.Errorf("search %s (%s): %w", q.label, q.query, err)
			}
			samples[j] = time.Since(t0)
		}
		ms := sortedMillis(samples)
		rep.Queries = append(rep.Queries, queryResult{label: q.label, Query: q.query,
			P50: round3(quantile(ms, 0.5)), P95: round3(quantile(ms, 0.95)), Hits: len(hits)})
		bar.update(int64(i+1), total)
	}
	opts := sessiondb.ListOptions{Limit: benchListLimit}
	rows, _, err := db.ListSessions(ctx, opts)
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	for j := range samples {
		t0 := time.Now()
		if _, _, err := db.ListSessions(ctx, opts); err != nil {
			return fmt.Errorf("list sessions: %w", err)
		}
		samples[j] = time.Since(t0)
	}
	ms := sortedMillis(samples)
	rep.List = listResult{P50: round3(quantile(ms, 0.5)), P95: round3(quantile(ms, 0.95)), Rows: len(rows)}
	if rep.Reads, err = interactiveReads(ctx, db, rows, samples); err != nil {
		return err
	}
	bar.update(total, total)
	bar.done()
	return nil
}

// interactiveReads times the reads a person waits for besides search and
// the list, on the listed session with the most messages: the last 50 of
// its messages (show), its lineage, the resolution of a unique prefix of its
// id, and the usage by day of the newest benchStatsSessions sessions (a
// window of the same size at every history size, as one month is of a long
// history). Each is one untimed call, then len(samples) timed ones.
func interactiveReads(ctx context.Context, db sessiondb.Store, listed []sessiondb.SessionSummary, samples []time.Duration) ([]readResult, error) {
	if len(listed) == 0 {
		return nil, nil
	}
	s := listed[0]
	for _, r := range listed[1:] {
		if r.MessageCount > s.MessageCount {
			s = r
		}
	}
	id := s.ID
	prefix := id[:len(id)-1]
	if got, err := db.ResolveSessionID(ctx, prefix); err != nil || got != id {
		prefix = id // the shorter prefix is ambiguous here
	}
	type read struct {
		name string
		call func() (int, error)
	}
	reads := []read{
		{"show-tail-50", func() (int, error) {
			ms, err := db.Messages(ctx, id, sessiondb.MessageFilter{Limit: 50, Latest: true})
			return len(ms), err
		}},
		{"lineage", func() (int, error) {
			n, err := db.Lineage(ctx, id)
			return lineageSize(n), err
		}},
		{"resolve-prefix", func() (int, error) {
			_, err := db.ResolveSessionID(ctx, prefix)
			return 1, err
		}},
	}
	if u, ok := db.(sessiondb.UsageReporter); ok {
		since := 0.0
		window, _, err := db.ListSessions(ctx, sessiondb.ListOptions{Limit: 1, Offset: benchStatsSessions - 1})
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		if len(window) == 1 {
			since = window[0].StartedAt
		}
		reads = append(reads, read{fmt.Sprintf("stats-newest-%d", benchStatsSessions), func() (int, error) {
			rows, err := u.UsageStats(ctx, sessiondb.UsageByDay, since)
			return len(rows), err
		}})
	}
	var out []readResult
	for _, r := range reads {
		rows, err := r.call()
		if err != nil {
			return nil, fmt.Errorf("%s of session %s: %w", r.name, id, err)
		}
		for j := range samples {
			t0 := time.Now()
			if _, err := r.call(); err != nil {
				return nil, fmt.Errorf("%s of session %s: %w", r.name, id, err)
			}
			samples[j] = time.Since(t0)
		}
		ms := sortedMillis(samples)
		out = append(out, readResult{Read: r.name, P50: round3(quantile(ms, 0.5)), P95: round3(quantile(ms, 0.95)), Rows: rows})
	}
	return out, nil
}

// lineageSize counts the sessions of a lineage tree.
func lineageSize(n *sessiondb.LineageNode) int {
	if n == nil {
		return 0
	}
	c := 1
	for _, k := range n.Children {
		c += lineageSize(k)
	}
	return c
}

// showProgress redraws bar from count every 200 ms until the returned stop
// is called; it does nothing when the bar is off (not a terminal).
func showProgress(bar *progress, count func() int64, total int64) (stop func()) {
	if !bar.on {
		return func() {}
	}
	halt := every(200*time.Millisecond, func() { bar.update(count(), total) })
	return func() {
		halt()
		bar.update(count(), total)
		bar.done()
	}
}

// every calls f every d on its own goroutine until the returned stop is
// called; stop returns once f can no longer run.
func every(d time.Duration, f func()) (stop func()) {
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				f()
			}
		}
	}()
	return func() { close(quit); <-exited }
}

// ---- replay ----

// replayOp is one workload line, ready to run: a session to create or a
// message to append.
type replayOp struct {
	line    int
	session *sessiondb.NewSession
	message *sessiondb.NewMessage
}

// workloadLine is every key a workload line may carry.
type workloadLine struct {
	Op           string          `json:"op"`
	ID           string          `json:"id"`
	Source       string          `json:"source"`
	Model        *string         `json:"model"`
	SessionID    string          `json:"session_id"`
	Role         string          `json:"role"`
	Content      *string         `json:"content"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	ToolName     *string         `json:"tool_name"`
	ToolCallID   *string         `json:"tool_call_id"`
	Reasoning    *string         `json:"reasoning"`
	FinishReason *string         `json:"finish_reason"`
	TokenCount   *int64          `json:"token_count"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// readWorkload reads and checks a whole workload file.
func readWorkload(path string) ([]replayOp, error) { return parseFile(path, "workload", parseWorkload) }

// parseFile opens path and parses it with parse; errors name the file.
func parseFile[T any](path, what string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, sessiondb.Errorf(sessiondb.EINVALID, "%s: %v", what, err)
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return v, nil
}

// parseWorkload parses the replay format: one JSON object per line, op
// new_session or append, blank lines ignored, unknown keys ignored. Errors
// name the line.
func parseWorkload(r io.Reader) ([]replayOp, error) {
	var ops []replayOp
	created := map[string]int{} // session id → line of its new_session
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	for n := 1; sc.Scan(); n++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var l workloadLine
		if err := json.Unmarshal(text, &l); err != nil {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "line %d: %v", n, err)
		}
		switch l.Op {
		case "new_session":
			if l.ID == "" {
				return nil, sessiondb.Errorf(sessiondb.EINVALID, "line %d: new_session without an id", n)
			}
			if first, ok := created[l.ID]; ok {
				return nil, sessiondb.Errorf(sessiondb.EINVALID, "line %d: session %q was already created on line %d", n, l.ID, first)
			}
			created[l.ID] = n
			ops = append(ops, replayOp{line: n, session: &sessiondb.NewSession{ID: l.ID, Source: l.Source, Model: deref(l.Model)}})
		case "append":
			if _, ok := created[l.SessionID]; !ok {
				return nil, sessiondb.Errorf(sessiondb.EINVALID, "line %d: append to session %q before its new_session line", n, l.SessionID)
			}
			m := &sessiondb.NewMessage{SessionID: l.SessionID, Role: l.Role, ToolName: deref(l.ToolName),
				ToolCallID: deref(l.ToolCallID), Reasoning: l.Reasoning, FinishReason: deref(l.FinishReason),
				TokenCount: l.TokenCount}
			if l.Content != nil {
				m.Content = *l.Content
			}
			if len(l.ToolCalls) > 0 && string(l.ToolCalls) != "null" {
				m.ToolCalls = l.ToolCalls // the structured value; the store serialises it
			}
			ops = append(ops, replayOp{line: n, message: m})
		case "":
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "line %d: no \"op\" key", n)
		default:
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "line %d: unknown op %q (want new_session or append)", n, l.Op)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "read: %v", err)
	}
	if len(ops) == 0 {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "no operations")
	}
	return ops, nil
}

var queryLabel = regexp.MustCompile(`^[a-z0-9_]+$`)

func readQueries(path string) ([]benchQuery, error) { return parseFile(path, "queries", parseQueries) }

// parseQueries parses LABEL<TAB>QUERY lines (split at the first tab);
// blank lines and lines starting with # are ignored. The query is kept
// verbatim.
func parseQueries(r io.Reader) ([]benchQuery, error) {
	var qs []benchQuery
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		label, query, ok := strings.Cut(line, "\t")
		switch {
		case !ok:
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "line %d: want LABEL<TAB>QUERY", n)
		case !queryLabel.MatchString(label):
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "line %d: label %q: want lowercase letters, digits and _", n, label)
		case seen[label] > 0:
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "line %d: label %q already used on line %d", n, label, seen[label])
		}
		seen[label] = n
		qs = append(qs, benchQuery{label, query})
	}
	if err := sc.Err(); err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "read: %v", err)
	}
	if len(qs) == 0 {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "no queries")
	}
	return qs, nil
}

// replay runs ops in order, one public call each, and times the loop.
func (o *benchOptions) replay(ctx context.Context, e *env, db sessiondb.Store, ops []replayOp) (*benchReport, error) {
	rep := &benchReport{Mode: "replay", Workload: o.workload, Writers: 1, Processes: 1}
	lat := make([]time.Duration, 0, len(ops))
	for _, op := range ops {
		if op.message != nil {
			rep.Messages++
		} else {
			rep.Sessions++
		}
	}
	var done atomic.Int64
	stop := showProgress(newProgress(e.stderr, "replaying"), done.Load, int64(rep.Messages))
	defer stop()
	start := time.Now()
	for _, op := range ops {
		if op.session != nil {
			if _, err := db.CreateSession(ctx, *op.session); err != nil {
				return nil, fmt.Errorf("workload line %d: %w", op.line, err)
			}
			continue
		}
		t0 := time.Now()
		if _, err := db.AppendMessage(ctx, *op.message); err != nil {
			return nil, fmt.Errorf("workload line %d: %w", op.line, err)
		}
		lat = append(lat, time.Since(t0))
		done.Add(1)
	}
	rep.setAppendRate(time.Since(start))
	rep.Append = summarize(lat)
	return rep, nil
}

// ---- generated ----

// shareResult is what one process (or one writer) appended.
type shareResult struct {
	Appends    int             `json:"appends"`
	Errors     int             `json:"errors"`
	FirstError string          `json:"first_error,omitempty"`
	Latencies  []time.Duration `json:"latency_ns"`
	PeakRSSMB  float64         `json:"peak_rss_mb,omitempty"`
}

func (r *shareResult) add(o shareResult) {
	r.Appends += o.Appends
	r.Errors += o.Errors
	if r.FirstError == "" {
		r.FirstError = o.FirstError
	}
	r.Latencies = append(r.Latencies, o.Latencies...)
}

func benchSessionID(tag string, i int) string { return fmt.Sprintf("bench-%s-%05d", tag, i) }

// appendShare appends the sessions of process proc (of procs), split among
// its writers. Sessions go to processes, then to writers, so that every
// share holds about as many messages (see balance): the run measures all
// writers at work, not the tail of the one that drew the longest sessions.
func appendShare(ctx context.Context, db sessiondb.Store, plan *workload.Plan, tag string, proc, procs, writers int, done *atomic.Int64) shareResult {
	all := make([]int, len(plan.Sessions))
	for i := range all {
		all[i] = i
	}
	shares := balance(plan, balance(plan, all, procs)[proc], writers)
	results := make([]shareResult, writers)
	var wg sync.WaitGroup
	for w, own := range shares {
		wg.Go(func() { results[w] = appendSessions(ctx, db, plan, tag, own, done) })
	}
	wg.Wait()
	var total shareResult
	for _, r := range results {
		total.add(r)
	}
	return total
}

// balance splits sessions into n shares of about equal message counts:
// longest session first, each to the share with the fewest messages so far
// (the lowest-numbered on a tie). Each share lists its sessions in order.
func balance(plan *workload.Plan, sessions []int, n int) [][]int {
	order := slices.Clone(sessions)
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(plan.Sessions[b].Messages, plan.Sessions[a].Messages)
	})
	shares := make([][]int, n)
	load := make([]int, n)
	for _, i := range order {
		k := 0
		for j := range load {
			if load[j] < load[k] {
				k = j
			}
		}
		shares[k] = append(shares[k], i)
		load[k] += plan.Sessions[i].Messages
	}
	for _, s := range shares {
		slices.Sort(s)
	}
	return shares
}

// appendSessions is one writer: it creates its sessions as it reaches them
// and appends one turn of each in turn, one AppendMessage per message, until
// all are complete. Failures are counted, not fatal.
func appendSessions(ctx context.Context, db sessiondb.Store, plan *workload.Plan, tag string, own []int, done *atomic.Int64) shareResult {
	var res shareResult
	fail := func(err error) {
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	type open struct {
		index   int
		stream  *workload.Stream
		created bool
	}
	active := make([]*open, len(own))
	for k, i := range own {
		active[k] = &open{index: i, stream: plan.Stream(i, benchSessionID(tag, i))}
	}
	for len(active) > 0 && ctx.Err() == nil {
		for k := 0; k < len(active) && ctx.Err() == nil; {
			s := active[k]
			turn := s.stream.NextTurn()
			if turn == nil {
				active = slices.Delete(active, k, k+1)
				continue
			}
			if !s.created {
				p := plan.Sessions[s.index]
				ns := sessiondb.NewSession{ID: benchSessionID(tag, s.index), Source: p.Source, Model: p.Model}
				if _, err := db.CreateSession(ctx, ns); err != nil {
					fail(fmt.Errorf("create session %s: %w", ns.ID, err))
				}
				s.created = true
			}
			for _, m := range turn {
				t0 := time.Now()
				_, err := db.AppendMessage(ctx, m)
				d := time.Since(t0)
				if err != nil {
					fail(err)
				} else {
					res.Appends++
					res.Latencies = append(res.Latencies, d)
				}
				done.Add(1)
			}
			k++
		}
	}
	return res
}

func (o *benchOptions) generate(ctx context.Context, e *env, db sessiondb.Store) (*benchReport, error) {
	plan, err := workload.NewPlan(o.seed, o.sessions, o.messages)
	if err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "%v", err)
	}
	var tag [4]byte
	if _, err := rand.Read(tag[:]); err != nil {
		return nil, err
	}
	o.runTag = hex.EncodeToString(tag[:]) // new sessions on every run, even on a used file
	l, err := e.where()
	if err != nil {
		return nil, err
	}
	workers, err := o.startWorkers(ctx, l, e.connectTimeout)
	if err != nil {
		return nil, err
	}
	var done atomic.Int64
	count := func() int64 {
		n := done.Load()
		for _, w := range workers {
			n += w.done.Load()
		}
		return n
	}
	stop := showProgress(newProgress(e.stderr, "appending"), count, int64(o.messages))
	start := time.Now()
	for _, w := range workers {
		w.start()
	}
	total := appendShare(ctx, db, plan, o.runTag, 0, o.procs+1, o.writers, &done)
	var werr error
	workerRSS := 0.0
	for _, w := range workers {
		out := <-w.result
		if out.err != nil {
			werr = errors.Join(werr, out.err)
			continue
		}
		total.add(*out.res)
		workerRSS = max(workerRSS, out.res.PeakRSSMB)
	}
	elapsed := time.Since(start)
	stop()
	if err := ctx.Err(); err != nil {
		return nil, err // interrupted: the workers were killed too
	}
	if werr != nil {
		return nil, werr
	}
	seed := o.seed
	rep := &benchReport{Mode: "generated", Messages: total.Appends, Sessions: o.sessions, Writers: o.writers,
		Processes: o.procs + 1, Seed: &seed, Errors: total.Errors, FirstError: total.FirstError,
		WorkerPeakRSSMB: workerRSS}
	rep.setAppendRate(elapsed)
	rep.Append = summarize(total.Latencies)
	return rep, nil
}

// ---- worker processes ----

// benchWorker is one worker process of --procs, seen from the parent.
//
// Protocol: the worker opens the database and prints {"ready":true}; it
// starts appending when it reads a line on stdin, prints {"done":N} every
// 200 ms, and ends with {"result":{...}} (a shareResult) on stdout.
type benchWorker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	done   atomic.Int64
	ready  chan error // receives once: nil when ready, else why not
	result chan workerOutcome
}

type workerOutcome struct {
	res *shareResult
	err error
}

type workerMessage struct {
	Ready  bool         `json:"ready,omitempty"`
	Done   int64        `json:"done,omitempty"`
	Result *shareResult `json:"result,omitempty"`
}

// startWorkers starts o.procs worker processes (this executable, re-run in
// worker mode) and waits until each has opened the database.
func (o *benchOptions) startWorkers(ctx context.Context, l location, connectTimeout time.Duration) ([]*benchWorker, error) {
	if o.procs == 0 {
		return nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--procs: cannot find this executable to re-run it: %w", err)
	}
	var workers []*benchWorker
	kill := func() {
		for _, w := range workers {
			_ = w.cmd.Process.Kill()
			<-w.result
		}
	}
	for k := 1; k <= o.procs; k++ {
		w := &benchWorker{ready: make(chan error, 1), result: make(chan workerOutcome, 1)}
		args := []string{"bench", "--worker", strconv.Itoa(k),
			"--procs", strconv.Itoa(o.procs), "--writers", strconv.Itoa(o.writers),
			"--sessions", strconv.Itoa(o.sessions), "--messages", strconv.Itoa(o.messages),
			"--seed", strconv.FormatUint(o.seed, 10), "--run-tag", o.runTag}
		env := append(os.Environ(), benchWorkerEnv+"=1")
		if l.pg {
			// A URL may hold a password: the workers read it from the
			// environment, not from a command line any user can list.
			env = append(env, dbEnv+"="+l.name)
			if connectTimeout > 0 {
				args = append([]string{"--connect-timeout", connectTimeout.String()}, args...)
			}
		} else {
			args = append([]string{"--db", l.name}, args...)
		}
		w.cmd = exec.CommandContext(ctx, exe, args...)
		w.cmd.Env = env
		w.cmd.Stderr = &w.stderr
		if w.stdin, err = w.cmd.StdinPipe(); err != nil {
			kill()
			return nil, err
		}
		stdout, err := w.cmd.StdoutPipe()
		if err != nil {
			kill()
			return nil, err
		}
		if err := w.cmd.Start(); err != nil {
			kill()
			return nil, fmt.Errorf("start bench worker %d: %w", k, err)
		}
		workers = append(workers, w)
		go w.read(k, stdout)
	}
	for _, w := range workers {
		if err := <-w.ready; err != nil {
			kill()
			return nil, err
		}
	}
	return workers, nil
}

// start tells a ready worker to begin appending.
func (w *benchWorker) start() {
	_, _ = io.WriteString(w.stdin, "go\n")
	_ = w.stdin.Close()
}

// read follows a worker's stdout until it exits, then reports the outcome.
func (w *benchWorker) read(k int, stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<30)
	var res *shareResult
	var bad error
	ready := false
	for sc.Scan() {
		var m workerMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			bad = fmt.Errorf("unexpected output %.80q", sc.Text())
			continue
		}
		switch {
		case m.Ready:
			ready = true
			w.ready <- nil
		case m.Result != nil:
			res = m.Result
		default:
			w.done.Store(m.Done)
		}
	}
	err := w.cmd.Wait()
	if err == nil {
		err = bad
	}
	if err == nil && res == nil {
		err = errors.New("exited without a result")
	}
	if err != nil {
		err = fmt.Errorf("bench worker %d: %v: %s", k, err, strings.TrimSpace(w.stderr.String()))
		res = nil
	}
	if !ready {
		w.ready <- err
	}
	w.result <- workerOutcome{res, err}
}

// runWorker is the worker side of --procs: append this process's share of
// the plan and report it on stdout.
func (o *benchOptions) runWorker(ctx context.Context, e *env) error {
	if o.worker > o.procs || o.runTag == "" {
		return usagef("--worker is set by bench itself on its worker processes")
	}
	plan, err := workload.NewPlan(o.seed, o.sessions, o.messages)
	if err != nil {
		return sessiondb.Errorf(sessiondb.EINVALID, "%v", err)
	}
	db, err := e.openWrite(ctx, true)
	if err != nil {
		return err
	}
	defer db.Close()
	var mu sync.Mutex
	enc := json.NewEncoder(e.stdout)
	send := func(m workerMessage) error {
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(m)
	}
	if err := send(workerMessage{Ready: true}); err != nil {
		return err
	}
	if _, err := bufio.NewReader(e.stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("bench worker %d: no start signal: %w", o.worker, err)
	}
	var done atomic.Int64
	stop := every(200*time.Millisecond, func() { _ = send(workerMessage{Done: done.Load()}) })
	res := appendShare(ctx, db, plan, o.runTag, o.worker, o.procs+1, o.writers, &done)
	stop()
	if err := ctx.Err(); err != nil {
		return err
	}
	res.PeakRSSMB = peakRSSMB()
	return send(workerMessage{Result: &res})
}
