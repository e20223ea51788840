package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/workload"
)

// bandResult is one band of the banded query set: how many queries it
// holds, how many found nothing, and the latency of the first call of each
// on a store just opened (cold) and of a later call on a warm store.
type bandResult struct {
	band    string
	Queries int            `json:"queries"`
	Empty   int            `json:"empty"` // queries that found nothing
	Cold    latencySummary `json:"cold"`
	Warm    latencySummary `json:"warm"`
}

// bandResults marshals as an object keyed by band, in workload.Bands order.
type bandResults []bandResult

// MarshalJSON implements json.Marshaler.
func (bs bandResults) MarshalJSON() ([]byte, error) {
	return marshalKeyed(bs, func(b bandResult) string { return b.band })
}

// measureBands times the banded query set (workload.QuerySet). Cold: each
// query once, as the first search of a store opened for it alone (the way
// `sessiondb search` runs), in a shuffled order; the operating system's
// page cache stays warm, so this is cold-ish: SQLite's own cache, the
// prepared statements and the Go pools are new. Warm: every query once
// more on db, in another shuffled order, rounds times. A query that
// repeats measures a cache; 244 different ones measure the index.
func (o *benchOptions) measureBands(ctx context.Context, e *env, db sessiondb.Store, rounds int) (bandResults, error) {
	qs := workload.QuerySet()
	r := rand.New(rand.NewPCG(o.seed, 0xba4d))
	cold := make([]time.Duration, len(qs))
	warm := make([][]time.Duration, len(qs))
	hits := make([]int, len(qs))
	bar := newProgress(e.stderr, "query set")
	total := int64(len(qs) * (1 + rounds))
	done := int64(0)
	search := func(s sessiondb.Store, q workload.BandQuery) (time.Duration, int, error) {
		opts := sessiondb.SearchOptions{Limit: benchSearchLimit, Sources: q.Sources}
		t0 := time.Now()
		found, err := s.Search(ctx, q.Query, opts)
		d := time.Since(t0)
		if err != nil {
			return 0, 0, fmt.Errorf("search %s query %q (sources %v): %w", q.Band, q.Query, q.Sources, err)
		}
		done++
		bar.update(done, total)
		return d, len(found), nil
	}
	for _, i := range r.Perm(len(qs)) {
		s, err := e.openRead(ctx)
		if err != nil {
			return nil, err
		}
		d, n, err := search(s, qs[i])
		s.Close()
		if err != nil {
			return nil, err
		}
		cold[i], hits[i] = d, n
	}
	for range rounds {
		for _, i := range r.Perm(len(qs)) {
			d, _, err := search(db, qs[i])
			if err != nil {
				return nil, err
			}
			warm[i] = append(warm[i], d)
		}
	}
	bar.done()
	var out bandResults
	for _, band := range workload.Bands {
		res := bandResult{band: band}
		var c, w []time.Duration
		for i, q := range qs {
			if q.Band != band {
				continue
			}
			res.Queries++
			if hits[i] == 0 {
				res.Empty++
			}
			c = append(c, cold[i])
			w = append(w, warm[i]...)
		}
		res.Cold, res.Warm = summarize(c), summarize(w)
		out = append(out, res)
	}
	return out, nil
}

// printBands writes the band table of a report.
func printBands(w io.Writer, bs bandResults) {
	fmt.Fprintln(w, "band\tqueries\tempty\tcold p50\tp95\tp99\twarm p50\tp95\tp99 ms")
	for _, b := range bs {
		fmt.Fprintf(w, "%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n", b.band, b.Queries, b.Empty,
			b.Cold.P50, b.Cold.P95, b.Cold.P99, b.Warm.P50, b.Warm.P95, b.Warm.P99)
	}
}
