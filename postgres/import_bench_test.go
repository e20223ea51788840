//go:build sqlite_fts5 || fts5

package postgres

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
	"github.com/sessiondb/sessiondb/internal/testenv"
)

// BenchmarkImport measures ImportSessions of an export of the shared
// workload (SESSIONDB_BENCH_MESSAGES messages, default 100,000; 100 per
// session) into an empty database, and reports messages/s.
//
//	SESSIONDB_BENCH_MESSAGES=20000 go test -tags sqlite_fts5 -run '^$' -bench BenchmarkImport -benchtime 3x ./postgres/
func BenchmarkImport(b *testing.B) {
	ctx := context.Background()
	src, err := Open(ctx, testenv.Postgres(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	n := benchMessages()
	loadWorkload(b, src, n)
	var data bytes.Buffer
	enc := export.NewJSONL(&data, export.Options{})
	err = src.ExportSessions(ctx, sessiondb.ExportSelection{}, func(x *sessiondb.ExportedSession) error {
		return enc.Encode(&export.Item{Session: x.Session, Messages: x.Messages})
	})
	if err == nil {
		err = enc.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
	var spent time.Duration
	for b.Loop() {
		b.StopTimer()
		dst, err := Open(ctx, testenv.Postgres(b), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		rep, err := dst.ImportSessions(ctx, bytes.NewReader(data.Bytes()), sessiondb.ImportOptions{})
		spent += time.Since(start)
		if err != nil || rep.Messages != n || rep.Failed != 0 {
			b.Fatalf("import: %v (report: %d messages, %d failed)", err, rep.Messages, rep.Failed)
		}
		b.StopTimer()
		dst.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/spent.Seconds(), "messages/s")
}
