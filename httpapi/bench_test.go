package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/httpapi"
	"github.com/sessiondb/sessiondb/internal/servetest"
	"github.com/sessiondb/sessiondb/internal/workload"
	"github.com/sessiondb/sessiondb/sqlite"
	"github.com/sessiondb/sessiondb/web"
)

// The performance figures of `sessiondb serve` (BENCHMARKS.md) run on a
// copy of the 100,000-message bench database: SESSIONDB_BENCH_DB names it
// (sqlite's BenchmarkSearch caches one as $TMPDIR/sessiondb-bench-100k-v1.db;
// `sessiondb bench --messages 100000` makes another). Without it they skip.
// They report times and never assert them.

func benchDB(tb testing.TB) (*sqlite.DB, string) {
	tb.Helper()
	src := os.Getenv("SESSIONDB_BENCH_DB")
	if src == "" {
		tb.Skip("SESSIONDB_BENCH_DB is not set (a copy of the 100k-message bench database is measured)")
	}
	dst := servetest.CopyDB(tb, src)
	db, err := sqlite.Open(dst, sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db, dst
}

// serverPaths are the requests measured: searches of the sqlite bench's
// query classes, the list, and transcript pages.
func serverPaths(tb testing.TB, db *sqlite.DB) map[string]string {
	tb.Helper()
	list, _, err := db.ListSessions(context.Background(), sessiondb.ListOptions{Limit: 1})
	if err != nil || len(list) == 0 {
		tb.Fatalf("list: %v", err)
	}
	id := url.PathEscape(list[0].ID)
	return map[string]string{
		"search_word":   "/api/v1/search?q=docker",
		"search_phrase": "/api/v1/search?q=" + url.QueryEscape(`"docker deployment"`),
		"search_prefix": "/api/v1/search?q=deploy*",
		"search_cjk":    "/api/v1/search?q=" + url.QueryEscape("项目"),
		"search_cjk5":   "/api/v1/search?q=" + url.QueryEscape("大别山项目"),
		"list":          "/api/v1/sessions?limit=20",
		"list_50":       "/api/v1/sessions?limit=50",
		"list_activity": "/api/v1/sessions?limit=50&sort=activity",
		"messages":      "/api/v1/sessions/" + id + "/messages?limit=200",
		"messages_tail": "/api/v1/sessions/" + id + "/messages?tail=50",
	}
}

// BenchmarkServer measures the server time of one request (the handler
// behind the middleware, no network) and reports its p50 and p99.
func BenchmarkServer(b *testing.B) {
	db, _ := benchDB(b)
	srv, err := httpapi.New(httpapi.Config{Store: db})
	if err != nil {
		b.Fatal(err)
	}
	paths := serverPaths(b, db)
	names := make([]string, 0, len(paths))
	for n := range paths {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			do := func() {
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+paths[name], nil))
				if rec.Code != 200 {
					b.Fatalf("%s: %d %s", paths[name], rec.Code, rec.Body)
				}
			}
			do() // warm-up
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				do()
				times = append(times, time.Since(start))
			}
			b.StopTimer()
			b.ReportMetric(ms(pct(times, 50)), "p50-ms")
			b.ReportMetric(ms(pct(times, 99)), "p99-ms")
		})
	}
}

func pct(ts []time.Duration, p float64) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkLoad: 64 clients (SESSIONDB_LOAD_CLIENTS) over HTTP (every other
// request a search, each a different query of the banded set; list and
// transcript pages in between) for SESSIONDB_LOAD_SECONDS (default 30) while
// one writer appends ten messages a second and an event stream follows.
// Each client sends its next request as soon as the last is answered (a
// closed loop: latency is then the queue of 64 requests), or, with
// SESSIONDB_LOAD_PAUSE (a duration such as 250ms), waits that long in
// between, as a person reading the page would. It asserts no error and
// reports the latencies.
func BenchmarkLoad(b *testing.B) {
	db, path := benchDB(b)
	srv, err := httpapi.New(httpapi.Config{Store: db})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Close(context.Background())
	secs := 30
	if s := os.Getenv("SESSIONDB_LOAD_SECONDS"); s != "" {
		secs, _ = strconv.Atoi(s)
	}
	clients := 64
	if s := os.Getenv("SESSIONDB_LOAD_CLIENTS"); s != "" {
		clients, _ = strconv.Atoi(s)
	}
	var pause time.Duration
	if s := os.Getenv("SESSIONDB_LOAD_PAUSE"); s != "" {
		if pause, err = time.ParseDuration(s); err != nil {
			b.Fatalf("SESSIONDB_LOAD_PAUSE: %v", err)
		}
	}
	paths := serverPaths(b, db)
	// Half the requests are searches, each a different query of the banded
	// set (workload.QuerySet: 244 queries, rare to frequent, CJK, Korean,
	// filters) so that no cache answers them; the rest list and page.
	var searches []string
	for _, q := range workload.QuerySet() {
		u := "/api/v1/search?q=" + url.QueryEscape(q.Query)
		for _, src := range q.Sources {
			u += "&source=" + url.QueryEscape(src)
		}
		searches = append(searches, u)
	}
	others := []string{paths["list_50"], paths["messages"], paths["list"], paths["messages_tail"]}
	next := func(client, i int) string {
		if i%2 == 0 {
			return searches[(client*7+i/2)%len(searches)]
		}
		return others[(i/2)%len(others)]
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()

	// the writer: another handle on the file, as Hermes would be
	w, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	list, _, _ := db.ListSessions(ctx, sessiondb.ListOptions{Limit: 1})
	var appended, writeErrs atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			<-tick.C
			if _, err := w.AppendMessage(context.Background(), sessiondb.NewMessage{SessionID: list[0].ID, Role: "assistant", Content: "load test message docker"}); err != nil {
				writeErrs.Add(1)
			} else {
				appended.Add(1)
			}
		}
	})
	var events atomic.Int64
	wg.Go(func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/v1/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			for _, c := range buf[:n] {
				if c == '\n' {
					events.Add(1)
				}
			}
			if err != nil {
				return
			}
		}
	})

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var mu sync.Mutex
	var all []time.Duration
	var errs atomic.Int64
	var firstErr atomic.Value
	for c := range clients {
		wg.Go(func() {
			var mine []time.Duration
			for i := c; ctx.Err() == nil; i++ {
				start := time.Now()
				path := next(c, i)
				resp, err := client.Get(ts.URL + path)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("%s: status %d", path, resp.StatusCode)
					}
				}
				if err != nil {
					if ctx.Err() != nil {
						break
					}
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				mine = append(mine, time.Since(start))
				if pause > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(pause):
					}
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	b.Logf("%d s, %d clients, pause %v: %d requests (%.0f/s), %d errors, p50 %.2f ms, p99 %.2f ms, max %.2f ms; writer appended %d (%d errors); event stream %d lines",
		secs, clients, pause, len(all), float64(len(all))/float64(secs), errs.Load(), ms(pct(all, 50)), ms(pct(all, 99)), ms(pct(all, 100)),
		appended.Load(), writeErrs.Load(), events.Load())
	if errs.Load() > 0 || writeErrs.Load() > 0 {
		b.Errorf("%d request errors, %d write errors; first: %v", errs.Load(), writeErrs.Load(), firstErr.Load())
	}
}

// TestPageWeight: the page's script and style, gzipped as served, stay
// within 150 kB.
func TestPageWeight(t *testing.T) {
	srv, err := httpapi.New(httpapi.Config{Store: newFixture(t, nil).db, Assets: web.FS()})
	if err != nil {
		t.Fatal(err)
	}
	n := srv.GzipSize(".js", ".css")
	t.Logf("JS + CSS gzipped: %d bytes", n)
	if n > 150_000 {
		t.Errorf("JS + CSS gzipped: %d bytes, over 150 kB", n)
	}
}
