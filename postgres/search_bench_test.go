//go:build sqlite_fts5 || fts5

package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/internal/workload"
)

// benchMessages is the corpus size of BenchmarkSearch (SESSIONDB_BENCH_MESSAGES
// overrides it).
func benchMessages() int {
	if n, err := strconv.Atoi(os.Getenv("SESSIONDB_BENCH_MESSAGES")); err == nil && n > 0 {
		return n
	}
	return 100000
}

// loadWorkload fills db with the shared workload's sessions and messages,
// indexed by indexMessage and copied with COPY; it reports messages/s.
func loadWorkload(tb testing.TB, db *DB, messages int) {
	tb.Helper()
	ctx := context.Background()
	plan, err := workload.NewPlan(1, messages/100, messages)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	var srows, mrows [][]any
	id := int64(0)
	ts := 1.7e9
	for i, s := range plan.Sessions {
		sid := fmt.Sprintf("s%05d", i)
		srows = append(srows, []any{sid, s.Source, s.Model, ts})
		st := plan.Stream(i, sid)
		for turn := st.NextTurn(); turn != nil; turn = st.NextTurn() {
			for _, m := range turn {
				id++
				ts += 0.5
				var content *string
				switch c := m.Content.(type) {
				case string:
					content = &c
				case nil:
				default:
					b, _ := json.Marshal(c)
					s := string(b)
					content = &s
				}
				var toolName, toolCalls *string
				if m.ToolName != "" {
					toolName = &m.ToolName
				}
				if len(m.ToolCalls) > 0 {
					s := string(m.ToolCalls)
					toolCalls = &s
				}
				x, err := indexMessage(indexInput{Role: m.Role, Content: content, ToolName: toolName, ToolCalls: toolCalls, Source: s.Source})
				if err != nil {
					tb.Fatal(err)
				}
				mrows = append(mrows, []any{id, sid, m.Role, content, toolName, toolCalls, ts, x.TSV, x.DocLen, x.TSVCJK, x.DocLenCJK, x.State, x.Trigram})
			}
		}
	}
	indexed := time.Since(start)
	if _, err := db.pool.CopyFrom(ctx, pgx.Identifier{"sessions"}, []string{"id", "source", "model", "started_at"}, pgx.CopyFromRows(srows)); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.pool.CopyFrom(ctx, pgx.Identifier{"messages"}, []string{"id", "session_id", "role", "content", "tool_name", "tool_calls", "timestamp",
		"tsv", "doclen", "tsv_cjk", "doclen_cjk", "tsv_state", "trigram"}, pgx.CopyFromRows(mrows)); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, "VACUUM ANALYZE messages"); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("%d messages: indexMessage %.0f/s, with COPY and VACUUM ANALYZE %.0f/s", len(mrows),
		float64(len(mrows))/indexed.Seconds(), float64(len(mrows))/time.Since(start).Seconds())
}

// BenchmarkSearch measures search at 100,000 messages of the shared
// workload and reports p50/p95 per query class; it logs the plan of the
// one-character CJK query.
//
//	go test -tags sqlite_fts5 -run '^$' -bench BenchmarkSearch -benchtime 50x ./postgres/
//
// SESSIONDB_BENCH_POSTGRES names a database to load once and keep.
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	url := os.Getenv("SESSIONDB_BENCH_POSTGRES") // a database kept between runs
	if url == "" {
		url = testenv.Postgres(b)
	}
	db, err := Open(ctx, url, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var have int
	if err := db.pool.QueryRow(ctx, "SELECT count(*) FROM messages").Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have == 0 {
		loadWorkload(b, db, benchMessages())
	}
	for _, c := range []struct{ name, query string }{
		{"frequent_word", "docker"},
		{"cjk_2char", "项目"},
		{"cjk_3plus", "大别山项目"},
		{"cjk_2char_ko", "서울"},
		{"cjk_1char", "山"},
		{"cjk_1char_hits", "项"},
		{"phrase", `"docker compose"`},
		{"prefix", "dep*"},
	} {
		b.Run(c.name, func(b *testing.B) {
			if strings.HasPrefix(c.name, "cjk_1char") || c.name == "cjk_2char" || c.name == "frequent_word" {
				logPlan(b, db, c.query)
			}
			var took []time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				hits, err := db.Search(ctx, c.query, sessiondb.SearchOptions{})
				if err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
				n = len(hits)
			}
			reportLatencies(b, took)
			b.ReportMetric(float64(n), "hits")
		})
	}
	// The session list as the agent's picker reads it: 20 newest, with
	// each one's preview and last activity.
	b.Run("list_20", func(b *testing.B) {
		var took []time.Duration
		n := 0
		for b.Loop() {
			t0 := time.Now()
			rows, _, err := db.ListSessions(ctx, sessiondb.ListOptions{Limit: 20})
			if err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(t0))
			n = len(rows)
		}
		reportLatencies(b, took)
		b.ReportMetric(float64(n), "rows")
	})
}

// reportLatencies reports the median and the 95th percentile of took.
func reportLatencies(b *testing.B, took []time.Duration) {
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95-ms")
}

// logPlan logs EXPLAIN ANALYZE of the last statement a search of query
// runs to read its hits.
func logPlan(b *testing.B, db *DB, query string) {
	ctx := context.Background()
	var stmt string
	var args []any
	searchHook = func(st string, a []any) { stmt, args = st, a }
	_, err := db.Search(ctx, query, sessiondb.SearchOptions{Fields: []string{"id"}})
	searchHook = nil
	if err != nil {
		b.Fatal(err)
	}
	rows, err := db.pool.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF) "+stmt, args...)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			b.Fatal(err)
		}
		plan = append(plan, line)
	}
	b.Logf("plan of %q:\n%s", query, strings.Join(plan, "\n"))
}

// BenchmarkIndexMessage measures indexMessage on the shared workload's
// messages, in parallel (what a sync's first copy spends on search).
func BenchmarkIndexMessage(b *testing.B) {
	plan, err := workload.NewPlan(2, 20, 2000)
	if err != nil {
		b.Fatal(err)
	}
	var ins []indexInput
	for i, s := range plan.Sessions {
		st := plan.Stream(i, "s")
		for turn := st.NextTurn(); turn != nil; turn = st.NextTurn() {
			for _, m := range turn {
				in := indexInput{Role: m.Role, Source: s.Source}
				if c, ok := m.Content.(string); ok {
					in.Content = &c
				}
				if m.ToolName != "" {
					in.ToolName = &m.ToolName
				}
				if len(m.ToolCalls) > 0 {
					c := string(m.ToolCalls)
					in.ToolCalls = &c
				}
				ins = append(ins, in)
			}
		}
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := indexMessage(ins[i%len(ins)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
