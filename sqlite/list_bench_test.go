package sqlite_test

import (
	"os"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// BenchmarkListSessions times the session list (20 rows, preview and last
// activity) on the file SESSIONDB_BENCH_LIST_DB names, opened read-only,
// e.g. a database `sessiondb bench` built (BENCHMARKS.md, "Scale"):
//
//	SESSIONDB_BENCH_LIST_DB=/work/bench-1m/bench.db \
//	  go test -tags sqlite_fts5 -run '^$' -bench BenchmarkListSessions ./sqlite/
func BenchmarkListSessions(b *testing.B) {
	path := os.Getenv("SESSIONDB_BENCH_LIST_DB")
	if path == "" {
		b.Skip("SESSIONDB_BENCH_LIST_DB names no database")
	}
	db, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, bc := range []struct {
		name string
		o    sessiondb.ListOptions
	}{
		{"newest", sessiondb.ListOptions{Limit: 20}},
		{"page3", sessiondb.ListOptions{Limit: 20, Offset: 40}},
		{"activity", sessiondb.ListOptions{Limit: 20, OrderByActivity: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rows, _, err := db.ListSessions(ctx, bc.o)
			if err != nil || len(rows) == 0 {
				b.Fatalf("list: %d rows, %v", len(rows), err)
			}
			for b.Loop() {
				if _, _, err := db.ListSessions(ctx, bc.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
