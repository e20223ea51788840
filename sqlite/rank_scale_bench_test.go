//go:build linux

package sqlite_test

import (
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/sessiondb/sessiondb"
)

// BenchmarkRankScale times the ranked-search queries of issue 17 on the
// database named by SESSIONDB_RANK_PROBE_DB (a copy: it is opened for
// writing), with a breakdown of where the time goes, and logs the median
// thread CPU time (and wall time) of 21 calls of each; skipped without it.
// Run it once: -bench RankScale -benchtime 1x (see BENCHMARKS.md).
// SESSIONDB_RANK_PROBE_SEARCH or _SQL (with _Q) instead repeat one search
// or statement 200 times, for a profiler.
func BenchmarkRankScale(t *testing.B) {
	path := os.Getenv("SESSIONDB_RANK_PROBE_DB")
	if path == "" {
		t.Skip("SESSIONDB_RANK_PROBE_DB not set")
	}
	db := MustOpenPath(t, path)
	raw, err := sql.Open("sessiondb_sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	queries := []struct{ table, q string }{
		{"messages_fts", "docker"},
		{"messages_fts", `"docker deployment"`},
		{"messages_fts", "deploy*"},
		{"messages_fts_cjk", `"数据库迁移"`},
		{"messages_fts_cjk", `"项目"`},
	}
	// p50 is the median CPU time of the calling thread (the load on the
	// machine inflates wall time, not this).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() time.Duration {
		var ts syscall.Timespec
		if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
			t.Fatal(e)
		}
		return time.Duration(ts.Nano())
	}
	var wall time.Duration // the wall-clock median of the last p50
	p50 := func(n int, f func()) time.Duration {
		f()
		lat := make([]time.Duration, n)
		walls := make([]time.Duration, n)
		for i := range lat {
			t0, w0 := cpu(), time.Now()
			f()
			lat[i], walls[i] = cpu()-t0, time.Since(w0)
		}
		slices.Sort(lat)
		slices.Sort(walls)
		wall = walls[n/2]
		return lat[n/2]
	}
	n := 21
	if q := os.Getenv("SESSIONDB_RANK_PROBE_SEARCH"); q != "" {
		// profile one search: run it 200 times
		for range 200 {
			if _, err := db.Search(ctx, q, sessiondb.SearchOptions{Limit: 20}); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if stmt := os.Getenv("SESSIONDB_RANK_PROBE_SQL"); stmt != "" {
		if strings.HasPrefix(stmt, "EXPLAIN") {
			rows, err := raw.Query(stmt, os.Getenv("SESSIONDB_RANK_PROBE_Q"))
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				t.Log(id, parent, detail)
			}
			return
		}
		// profile one statement: run it 200 times
		var v any
		for range 200 {
			if err := raw.QueryRow(stmt, os.Getenv("SESSIONDB_RANK_PROBE_Q")).Scan(&v); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, qq := range queries {
		search := p50(n, func() {
			if _, err := db.Search(ctx, qq.q, sessiondb.SearchOptions{Limit: 20}); err != nil {
				t.Fatal(err)
			}
		})
		line := fmt.Sprintf("%-22s search %7.2f ms (wall %7.2f)", qq.q, float64(search.Microseconds())/1000, float64(wall.Microseconds())/1000)
		for _, probe := range []struct{ name, sql string }{
			{"count", "SELECT count(*) FROM %[1]s WHERE %[1]s MATCH ?"},
			{"rank", "SELECT count(*) FROM %[1]s WHERE %[1]s MATCH ? AND sessiondb_bm25(%[1]s, 28, '%[1]s') < 1e300"},
			{"ahead", "SELECT sessiondb_bm25(%[1]s, 28, '%[1]s') < 1e300 FROM %[1]s WHERE %[1]s MATCH ? LIMIT 1"},
			{"top", "SELECT length(sessiondb_bm25(%[1]s, 28, '%[1]s', 'top')) FROM %[1]s WHERE %[1]s MATCH ? LIMIT 1"},
			{"p2nosnip", "SELECT count(*) FROM json_each((SELECT sessiondb_bm25(%[1]s, 28, '%[1]s', 'top') FROM %[1]s WHERE %[1]s MATCH ?1 LIMIT 1)) AS top JOIN messages m ON m.id = top.value JOIN sessions s ON s.id = m.session_id"},
			{"p2snip", "SELECT count(x) FROM (SELECT CASE WHEN top.key < 20 THEN (SELECT sessiondb_snippet(%[1]s, -1, '>>>', '<<<', '...', 40, m.content, m.tool_name, m.tool_calls) FROM %[1]s WHERE %[1]s MATCH ?1 AND %[1]s.rowid = m.id) END AS x FROM json_each((SELECT sessiondb_bm25(%[1]s, 28, '%[1]s', 'top') FROM %[1]s WHERE %[1]s MATCH ?1 LIMIT 1)) AS top JOIN messages m ON m.id = top.value JOIN sessions s ON s.id = m.session_id)"},
			{"bm25top", "SELECT max(rowid) FROM (SELECT rowid FROM %[1]s WHERE %[1]s MATCH ? ORDER BY bm25(%[1]s) LIMIT 20)"},
		} {
			var cnt int64
			d := p50(n, func() {
				if err := raw.QueryRow(fmt.Sprintf(probe.sql, qq.table), qq.q).Scan(&cnt); err != nil {
					cnt = -1 // (the function of this build lacks the mode)
				}
			})
			line += fmt.Sprintf("  %s %7.2f ms (%d)", probe.name, float64(d.Microseconds())/1000, cnt)
		}
		t.Log(line)
	}
}

const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID (Linux)
