//go:build unix

package sqlite_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
	"github.com/sessiondb/sessiondb/internal/workload"
	"github.com/sessiondb/sessiondb/sqlite"
)

// Issue 19 finding 1 on the scale it was found: the bench database (the
// shape `sessiondb bench --sessions 1000 --messages 100000` writes: the
// internal/workload generator, every session's turns appended in turn, so
// message ids interleave across sessions) exported with export --all,
// imported into an empty database and exported again must come back byte
// for byte. Building it takes 10–22 s on two shared cores, the whole test
// 30–55 s (130 s under -race), so the default run is the full 100k in
// JSON Lines; -long adds the JSON array format. The import that kept only
// ids above sqlite_sequence lost 5 of the 1,000 sessions (3,603 messages)
// to UNIQUE constraint errors.
func TestReliabilityImportRoundTrip(t *testing.T) {
	const sessions, messages = 1000, 100_000
	formats := []string{"jsonl"}
	if *longRun {
		formats = append(formats, "json")
	}
	dir := t.TempDir()

	start := time.Now()
	src := filepath.Join(dir, "bench.db")
	buildInterleaved(t, src, sessions, messages)
	built := time.Since(start)

	exportFile := func(db *sqlite.DB, format, path string) time.Duration {
		t.Helper()
		start := time.Now()
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w := bufio.NewWriterSize(f, 1<<20)
		enc, err := export.NewEncoder(format, w, export.Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = db.ExportSessions(ctx, sqlite.ExportSelection{}, func(x *sqlite.ExportedSession) error {
			it := export.ItemOf(x)
			return enc.Encode(&it)
		})
		if err == nil {
			err = enc.Close()
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			t.Fatalf("export to %s: %v", path, err)
		}
		return time.Since(start)
	}

	srcDB := MustOpenPath(t, src)
	for _, format := range formats {
		first, second := filepath.Join(dir, "first."+format), filepath.Join(dir, "second."+format)
		exported := exportFile(srcDB, format, first)

		dst := MustOpenPath(t, filepath.Join(dir, "restored-"+format+".db"))
		in, err := os.Open(first)
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		rep, err := dst.ImportSessions(ctx, in, sqlite.ImportOptions{})
		imported := time.Since(start)
		in.Close()
		if err != nil {
			t.Fatalf("import %s: %v", format, err)
		}
		if rep.Imported != sessions || rep.Failed != 0 || rep.Messages != messages || rep.Renumbered != 0 || len(rep.Errors) != 0 {
			knownBug(t, "import of the bench export (%s): %d of %d sessions, %d of %d messages, %d renumbered, %d failed; first errors %v",
				format, rep.Imported, sessions, rep.Messages, messages, rep.Renumbered, rep.Failed, rep.Errors[:min(len(rep.Errors), 3)])
		}
		exportFile(dst, format, second)
		if diff := diffFiles(t, first, second); diff != "" {
			knownBug(t, "export → import → export (%s) of the bench database differs: %s", format, diff)
		}
		if n, err := dst.MessageCount(ctx); err != nil || n != messages {
			t.Errorf("restored database holds %d messages (%v), want %d", n, err, messages)
		}
		fi, _ := os.Stat(first)
		t.Logf("%s: %d sessions, %d messages: built in %s, exported in %s (%.1f MiB), imported in %s; the second export is identical",
			format, sessions, messages, built.Round(time.Millisecond), exported.Round(time.Millisecond),
			float64(fi.Size())/(1<<20), imported.Round(time.Millisecond))
	}
}

// buildInterleaved writes the bench database's shape to path: sessions
// sessions planned by internal/workload holding messages messages, each
// session's next turn appended in turn, as one `sessiondb bench` writer
// does (here a thousand messages per transaction, to build it quickly).
func buildInterleaved(t *testing.T, path string, sessions, messages int) {
	t.Helper()
	db, err := sqlite.Open(path, sqlite.Options{Synchronous: "NORMAL", Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	plan, err := workload.NewPlan(1, sessions, messages)
	if err != nil {
		t.Fatal(err)
	}
	streams := make([]*workload.Stream, sessions)
	for i, p := range plan.Sessions {
		id := fmt.Sprintf("bench-%05d", i)
		ns := sessiondb.NewSession{ID: id, Source: p.Source, Model: p.Model, StartedAt: 1767225600 + float64(i)}
		if _, err := db.CreateSession(ctx, ns); err != nil {
			t.Fatal(err)
		}
		streams[i] = plan.Stream(i, id)
	}
	var batch []sessiondb.NewMessage
	flush := func() {
		if _, err := db.AppendBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		batch = batch[:0]
	}
	for active := streams; len(active) > 0; {
		next := active[:0]
		for _, s := range active {
			turn := s.NextTurn()
			if turn == nil {
				continue
			}
			batch = append(batch, turn...)
			if len(batch) >= 1000 {
				flush()
			}
			next = append(next, s)
		}
		active = next
	}
	flush()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// diffFiles compares two JSON Lines files line by line and describes the
// first difference ("" when they are equal).
func diffFiles(t *testing.T, a, b string) string {
	t.Helper()
	fa, err := os.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	ra, rb := bufio.NewReaderSize(fa, 1<<20), bufio.NewReaderSize(fb, 1<<20)
	for line := 1; ; line++ {
		la, erra := ra.ReadBytes('\n')
		lb, errb := rb.ReadBytes('\n')
		if !bytes.Equal(la, lb) {
			x, y := decodeLines(t, la), decodeLines(t, lb)
			if len(x) == 1 && len(y) == 1 {
				return fmt.Sprintf("line %d, session %v:\n%s", line, x[0]["id"], diffKeys(x[0], y[0]))
			}
			return fmt.Sprintf("line %d: %.200q vs %.200q", line, la, lb)
		}
		if errors.Is(erra, io.EOF) && errors.Is(errb, io.EOF) {
			return ""
		}
		if erra != nil || errb != nil {
			t.Fatalf("read %s, %s: %v, %v", a, b, erra, errb)
		}
	}
}
