package sqlite

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/workload"
)

func TestZZScratch(t *testing.T) {
	path := os.Getenv("ZZ_DB")
	if path == "" {
		t.Skip()
	}
	ctx := context.Background()
	db, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type st struct {
		stmt string
		args []any
	}
	var stmts []st
	band := os.Getenv("ZZ_BAND")
	set := workload.QuerySet()
	if qs := os.Getenv("ZZ_Q"); qs != "" {
		set = nil
		for _, q := range strings.Split(qs, ",") {
			set = append(set, workload.BandQuery{Band: band, Query: q})
		}
	}
	for _, bq := range set {
		if bq.Band != band {
			continue
		}
		q := bq.Query
		stmts = nil
		searchHook = func(on querier, stmt string, args []any) { stmts = append(stmts, st{stmt, args}) }
		o := sessiondb.SearchOptions{Limit: 20, Sources: bq.Sources}
		db.Search(ctx, q, o)
		got := stmts
		searchHook = nil
		best := make([]time.Duration, len(got))
		var total time.Duration = 1 << 60
		for r := 0; r < 7; r++ {
			t0 := time.Now()
			db.Search(ctx, q, o)
			total = min(total, time.Since(t0))
			for i, s := range got {
				t0 := time.Now()
				rows, err := db.read.QueryContext(ctx, s.stmt, s.args...)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
				}
				rows.Close()
				d := time.Since(t0)
				if r == 0 || d < best[i] {
					best[i] = d
				}
			}
		}
		var n int
		db.read.QueryRowContext(ctx, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", q).Scan(&n)
		var kinds []string
		for _, s := range got {
			k := s.stmt
			if len(k) > 60 {
				k = k[:60]
			}
			kinds = append(kinds, strings.ReplaceAll(k, "\n", " "))
		}
		t.Logf("%-14q matches %7d search %8v stmts %v", q, n, total, best)
		if os.Getenv("ZZ_V") != "" {
			t.Logf("   %q", kinds)
		}
	}
}
