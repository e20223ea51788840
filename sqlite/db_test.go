package sqlite_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// mainFileSessions counts the sessions in the database file itself, not
// in its WAL: an immutable read ignores the WAL.
func mainFileSessions(tb testing.TB, path string) int {
	tb.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path+"?immutable=1")
	if err != nil {
		tb.Fatal(err)
	}
	defer raw.Close()
	return count(tb, raw, "SELECT COUNT(*) FROM sessions")
}

// holdOpen keeps a connection of another client open on path until the
// test ends, so that closing the store is not the file's last close
// (which checkpoints the WAL by itself).
func holdOpen(tb testing.TB, path string) {
	tb.Helper()
	raw := rawDB(tb, path)
	if _, err := raw.Exec("SELECT COUNT(*) FROM sessions"); err != nil {
		tb.Fatal(err)
	}
}

// TestWritePatience: a write that finds the write lock held keeps trying
// for the store's WritePatience, then fails with EBUSY naming that
// patience (in milliseconds below a second, not "0s"); once the lock is
// free the same write succeeds.
func TestWritePatience(t *testing.T) {
	for _, patience := range []time.Duration{time.Second, 200 * time.Millisecond} {
		t.Run(patience.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }, WritePatience: patience})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			conn, err := rawDB(t, path).Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"})
			if got := sessiondb.ErrorCode(err); got != sessiondb.EBUSY {
				t.Fatalf("write under a held lock: code %q (%v), want EBUSY", got, err)
			}
			if !strings.Contains(err.Error(), "for over "+patience.String()) {
				t.Errorf("error %q does not name the patience of %v", err, patience)
			}
			if waited := time.Since(start); waited < patience {
				t.Errorf("gave up after %v, before its patience of %v", waited, patience)
			}
			if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"}); err != nil {
				t.Fatalf("write once the lock is free: %v", err)
			}
		})
	}
}

// TestCloseCheckpointsAndReleases: Close copies the WAL into the database
// file even while another client keeps the file open, and releases every
// connection of the store, its readers' included: when it was the last
// client, no -wal or -shm is left.
func TestCloseCheckpointsAndReleases(t *testing.T) {
	t.Run("checkpoint while another client has the file open", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		MustOpenPath(t, path).Close()
		holdOpen(t, path)
		db := MustOpenPath(t, path)
		sessCreate(t, db, sessiondb.NewSession{ID: "s1", Source: "cli"})
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if got := mainFileSessions(t, path); got != 1 {
			t.Errorf("%d sessions in the database file after Close, want 1", got)
		}
	})
	t.Run("no sidecar left after the last close", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		db := MustOpenPath(t, path)
		sessCreate(t, db, sessiondb.NewSession{ID: "s1", Source: "cli"})
		if _, total, err := db.ListSessions(ctx, sessiondb.ListOptions{}); err != nil || total != 1 {
			t.Fatalf("ListSessions: %d, %v", total, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path + "-wal", path + "-shm"} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s left after Close", filepath.Base(p))
			}
		}
	})
}

// TestWritesCheckpointAsTheyGo: the WAL is copied into the database file
// every 50 writes, not only at Close, so it does not grow while another
// client keeps the file open.
func TestWritesCheckpointAsTheyGo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	MustOpenPath(t, path).Close()
	holdOpen(t, path)
	db := MustOpenPath(t, path)
	// 60 writes: fewer than SQLite's own checkpoint after 1,000 WAL pages
	// would need, more than 50 even counting the open's own writes.
	for i := range 60 {
		sessCreate(t, db, sessiondb.NewSession{ID: "s" + strings.Repeat("x", i), Source: "cli"})
	}
	if got := mainFileSessions(t, path); got < 40 {
		t.Errorf("%d of 60 sessions in the database file before Close, want at least 40", got)
	}
}
