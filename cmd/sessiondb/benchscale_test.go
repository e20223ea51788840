package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/workload"
)

// checkBands checks a report's banded query set: every band, in order,
// with its queries counted and its latencies ordered.
func checkBands(t *testing.T, rep map[string]any) {
	t.Helper()
	bands, ok := rep["bands"].(map[string]any)
	if !ok || len(bands) != len(workload.Bands) {
		t.Fatalf("bands = %v, want the bands %v", rep["bands"], workload.Bands)
	}
	total := 0
	for _, b := range workload.Bands {
		n := num(t, rep, "bands."+b+".queries")
		total += int(n)
		if n < 12 || num(t, rep, "bands."+b+".empty") > n {
			t.Errorf("band %s: %v queries, %v empty", b, n, num(t, rep, "bands."+b+".empty"))
		}
		for _, phase := range []string{"cold", "warm"} {
			p := "bands." + b + "." + phase + "."
			p50, p95, p99 := num(t, rep, p+"p50_ms"), num(t, rep, p+"p95_ms"), num(t, rep, p+"p99_ms")
			if p50 <= 0 || p95 < p50 || p99 < p95 {
				t.Errorf("band %s %s: p50 %v, p95 %v, p99 %v", b, phase, p50, p95, p99)
			}
		}
	}
	if total != len(workload.QuerySet()) {
		t.Errorf("bands hold %d queries, want the set's %d", total, len(workload.QuerySet()))
	}
}

func TestBenchBands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bench.db")
	rep, _ := benchJSON(t, db, "--sessions", "4", "--messages", "300", "--searches", "1", "--band-rounds", "2")
	checkBands(t, rep)
	checkReads(t, rep, []string{"word", "phrase", "prefix", "cjk3", "cjk2"})

	out := mustCLI(t, db, "bench", "--sessions", "2", "--messages", "20", "--searches", "1")
	for _, want := range []string{"query set", "frequent", "cjk1", "korean", "boolean", "warm p50"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	rep, _ = benchJSON(t, db, "--sessions", "2", "--messages", "20", "--searches", "1", "--bands=false")
	if _, ok := rep["bands"]; ok {
		t.Error("--bands=false still ran the query set")
	}
}

func TestBenchScale(t *testing.T) {
	dir := t.TempDir()
	scaleJSON := func(args ...string) map[string]any {
		t.Helper()
		out := mustCLI(t, "", append([]string{"bench", "--searches", "1", "--json"}, args...)...)
		var rep map[string]any
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("bench --scale --json: %v\n%s", err, out)
		}
		return rep
	}
	other := filepath.Join(dir, "other.db")
	rep := scaleJSON("--scale", "200,400="+other, "--scale-dir", dir, "--writers", "2")
	sizes, _ := rep["sizes"].([]any)
	if rep["mode"] != "scale" || len(sizes) != 2 {
		t.Fatalf("mode %v, %d sizes; want scale, 2", rep["mode"], len(sizes))
	}
	for i, want := range []struct {
		size float64
		path string
	}{{200, filepath.Join(dir, "bench-200.db")}, {400, other}} {
		s := sizes[i].(map[string]any)
		r := s["report"].(map[string]any)
		if s["size"] != want.size || s["path"] != want.path || r["mode"] != "generated" || r["messages"] != want.size || r["sessions"] != want.size/100 {
			t.Errorf("size %d: %v at %v, report mode %v with %v messages in %v sessions; want %v generated at %s in %v sessions",
				i, s["size"], s["path"], r["mode"], r["messages"], r["sessions"], want.size, want.path, want.size/100)
		}
		checkBands(t, r)
		if m, _ := storeCounts(t, want.path); m != int64(want.size) {
			t.Errorf("%s holds %d messages, want %v", want.path, m, want.size)
		}
	}
	growth, _ := rep["growth"].([]any)
	if len(growth) != 1 {
		t.Fatalf("growth = %v, want one entry", rep["growth"])
	}
	g := map[string]any{"g": growth[0]}
	if num(t, g, "g.from") != 200 || num(t, g, "g.to") != 400 || num(t, g, "g.list") <= 0 || num(t, g, "g.queries.word") <= 0 ||
		num(t, g, "g.reads.show-tail-50") <= 0 || num(t, g, "g.reads.stats-newest-100") <= 0 {
		t.Errorf("growth = %v", growth[0])
	}
	for _, b := range workload.Bands {
		if num(t, g, "g.bands_warm."+b) <= 0 || num(t, g, "g.bands_cold."+b) <= 0 {
			t.Errorf("growth of band %s missing: %v", b, growth[0])
		}
	}

	// A second run reuses both files as they are: nothing is appended.
	rep = scaleJSON("--scale", "200,400="+other, "--scale-dir", dir, "--bands=false")
	for i, want := range []float64{200, 400} {
		r := rep["sizes"].([]any)[i].(map[string]any)["report"].(map[string]any)
		if r["mode"] != "reused" || r["messages"] != want {
			t.Errorf("second run, size %v: mode %v, %v messages; want reused, %v", want, r["mode"], r["messages"], want)
		}
	}
	if m, _ := storeCounts(t, other); m != 400 {
		t.Errorf("reusing %s appended to it: %d messages", other, m)
	}
	out := mustCLI(t, "", "bench", "--searches", "1", "--scale", "200,400="+other, "--scale-dir", dir)
	for _, want := range []string{"== 200 messages", "== 400 messages", "reused database", "growth of p50 from 200 to 400 messages", "frequent (warm)", "list-20", "resolve-prefix"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}

	// A file of another size is not appended to.
	_, errOut, code := cli(t, "", "", "bench", "--scale", "300="+other)
	if code == 0 || !strings.Contains(errOut, "holds 400 messages, not 300") {
		t.Errorf("exit %d, stderr %q; want an error naming the file's 400 messages", code, errOut)
	}
	for _, tc := range []struct{ args, want string }{
		{"--scale 50 --scale-dir " + dir, "at least 100"},
		{"--scale 1000", "--scale-dir"},
		{"--scale 1000 --scale-dir " + dir + " --writers 20", "at least as many sessions"},
		{"--scale 1000 --workload x --queries y", "does not replay"},
		{"--band-rounds 0", "--band-rounds"},
	} {
		_, errOut, code := cli(t, filepath.Join(dir, "x.db"), "", append([]string{"bench"}, strings.Fields(tc.args)...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("bench %s: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bench-1000.db")); err == nil {
		t.Error("a refused --scale run created its database")
	}
}
