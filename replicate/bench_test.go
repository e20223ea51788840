package replicate_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sessiondb/sessiondb/replicate"
)

// BenchmarkFirstCopy times a first copy of a source of 200 sessions of 100
// messages into a fresh database, and reports messages/s. The sessiondb
// sync command on a generated 100k-message file measures the same at
// scale (BENCHMARKS.md).
func BenchmarkFirstCopy(b *testing.B) {
	src := newSource(b, "bench", 200, 100)
	var copied, seconds float64
	for i := 0; b.Loop(); i++ {
		db, _ := MustOpenPG(b)
		rep, err := replicate.Sync(context.Background(), src.path, db, replicate.Options{Origin: fmt.Sprint("b", i)})
		if err != nil {
			b.Fatal(err)
		}
		copied += float64(rep.Messages)
		seconds += rep.Seconds
	}
	b.ReportMetric(copied/seconds, "messages/s")
}
