package sqlite_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite"
)

// fixedNow is the clock every test store uses: 2026-05-01T00:00:00Z.
var fixedNow = time.Unix(1777593600, 0)

// MustOpen opens a store on a new file in a temporary directory.
func MustOpen(tb testing.TB) *sqlite.DB {
	tb.Helper()
	return MustOpenPath(tb, filepath.Join(tb.TempDir(), "state.db"))
}

// MustOpenPath opens a store on path and closes it when the test ends.
func MustOpenPath(tb testing.TB, path string) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// fixture copies a Hermes fixture database into a temporary directory and
// returns the copy's path; the originals are never opened for writing.
func fixture(tb testing.TB, name string) string {
	tb.Helper()
	src := testenv.Shared("fixtures", name)
	in, err := os.Open(src)
	if err != nil {
		tb.Fatalf("fixture %s: %v (the Hermes fixtures live in ../shared/fixtures next to the repository)", name, err)
	}
	defer in.Close()
	dst := filepath.Join(tb.TempDir(), "state.db")
	out, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
	return dst
}

var ctx = context.Background()
