package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// The tests of this file pin what Recover's user sees at the edges its other
// tests do not reach (TESTING.md: recover.go's mutation survivors).

// smallSource returns a store file with one session and one message, closed.
func smallSource(tb testing.TB) string {
	tb.Helper()
	src := filepath.Join(tb.TempDir(), "state.db")
	db, err := sqlite.Open(src, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "hello"}); err != nil {
		tb.Fatal(err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	return src
}

// TestRecoverClock: the report's duration is measured with the given clock,
// from before the copy to after the verification; without one Recover uses
// the system clock.
func TestRecoverClock(t *testing.T) {
	src := smallSource(t)
	t.Run("given clock", func(t *testing.T) {
		calls := 0
		opts := sqlite.RecoverOptions{Now: func() time.Time {
			calls++
			if calls == 1 {
				return fixedNow
			}
			return fixedNow.Add(90 * time.Second)
		}}
		rep, err := sqlite.Recover(ctx, src, filepath.Join(t.TempDir(), "new.db"), opts)
		if err != nil {
			t.Fatalf("recover: %v", err)
		}
		if rep.DurationSeconds != 90 {
			t.Errorf("duration %v s, want the clock's 90", rep.DurationSeconds)
		}
	})
	t.Run("no clock", func(t *testing.T) {
		rep, err := sqlite.Recover(ctx, src, filepath.Join(t.TempDir(), "new.db"), sqlite.RecoverOptions{})
		if err != nil {
			t.Fatalf("recover: %v", err)
		}
		if !rep.Complete || rep.DurationSeconds < 0 {
			t.Errorf("complete=%v duration %v s", rep.Complete, rep.DurationSeconds)
		}
	})
}

// TestRecoverRefusesAliasesOfTheSource: an output path that names one of
// the source's files by another route (a symlinked directory, a hard link)
// is refused as the source, and nothing is written.
func TestRecoverRefusesAliasesOfTheSource(t *testing.T) {
	src := fixture(t, "hermes-v23.db")
	srcDir := filepath.Dir(src)
	before := bundleHash(t, src)
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(srcDir, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.db")
	if err := os.Link(src, hard); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dst string }{
		{"the source's WAL through a symlinked directory", filepath.Join(link, "state.db-wal")},
		{"the source's journal through a symlinked directory", filepath.Join(link, "state.db-journal")},
		{"a hard link to the source", hard},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := sqlite.Recover(ctx, src, tc.dst, recoverOpts)
			if err == nil {
				t.Fatalf("recover succeeded: %+v", rep)
			}
			if got := sessiondb.ErrorCode(err); got != sessiondb.EINVALID || !strings.Contains(err.Error(), "is the source or one of its files") {
				t.Errorf("code %s, want %s (the output is the source): %v", got, sessiondb.EINVALID, err)
			}
		})
	}
	if bundleHash(t, src) != before {
		t.Error("the source bundle changed")
	}
	noLeftovers(t, srcDir, "state.db")
	noLeftovers(t, dir, "link", "hard.db")
}

// TestRecoverFreeSpaceBoundary: a recovery needs twice the source bundle's
// size free (the private copy and the new file); exactly that much is
// enough, a byte less is refused with both figures in MiB.
func TestRecoverFreeSpaceBoundary(t *testing.T) {
	src := fixture(t, "hermes-v23.db")
	var size int64
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if fi, err := os.Stat(src + suffix); err == nil {
			size += fi.Size()
		}
	}
	need := uint64(2 * size)
	if need < 1<<20 {
		t.Fatalf("the source bundle holds %d bytes: too small for the MiB figures to say anything", size)
	}
	for _, tc := range []struct {
		name string
		free uint64
		ok   bool
	}{
		{"exactly enough", need, true},
		{"one byte short", need - 1, false},
		{"half a MiB free", 1 << 19, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sqlite.SetFreeBytes(t, func(string) (uint64, error) { return tc.free, nil })
			rep, err := sqlite.Recover(ctx, src, filepath.Join(t.TempDir(), "new.db"), recoverOpts)
			if tc.ok {
				if err != nil || !rep.Complete {
					t.Fatalf("recover with %d bytes free for %d needed: %v", tc.free, need, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("recover with %d bytes free for %d needed succeeded", tc.free, need)
			}
			msg := err.Error()
			wantNeed := fmt.Sprintf("needs about %.1f MiB", float64(need)/(1<<20))
			wantFree := fmt.Sprintf(", %.1f MiB are free", float64(tc.free)/(1<<20))
			if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(msg, wantNeed) || !strings.Contains(msg, wantFree) {
				t.Errorf("error %q (code %s), want EINVALID with %q and %q", msg, sessiondb.ErrorCode(err), wantNeed, wantFree)
			}
		})
	}
}

// TestRecoverUnreadableSidecar: a sidecar of the source that cannot be
// copied (here a directory where the journal would be) fails the recovery;
// skipping it could recover a half-written transaction.
func TestRecoverUnreadableSidecar(t *testing.T) {
	src := smallSource(t)
	if err := os.Mkdir(src+"-journal", 0o700); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rep, err := sqlite.Recover(ctx, src, filepath.Join(dir, "new.db"), recoverOpts)
	if err == nil {
		t.Fatalf("recover succeeded: %+v", rep)
	}
	if got := sessiondb.ErrorCode(err); got != sessiondb.EINVALID || !strings.Contains(err.Error(), "copy "+src+"-journal") {
		t.Errorf("code %s: %v; want EINVALID naming the journal", got, err)
	}
	noLeftovers(t, dir)
}
