package sqlite_test

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/sqlite"
)

// TestOpenStampedFileTakesNoWriteLock: a file whose identity is complete
// (a db_file_generation token and its application_id, or a token Hermes
// derives no id from) opens while another process holds the write lock:
// the open has nothing to stamp, so it does not wait for the lock. A token
// with no application_id yet gets the derived one.
func TestOpenStampedFileTakesNoWriteLock(t *testing.T) {
	open := func(t *testing.T, path string) error {
		t.Helper()
		db, err := sqlite.Open(path, sqlite.Options{WritePatience: 200 * time.Millisecond})
		if err == nil {
			db.Close()
		}
		return err
	}
	appID := func(t *testing.T, path string) int64 {
		t.Helper()
		return int64(count(t, rawDB(t, path), "PRAGMA application_id"))
	}
	// underLock opens path while a write transaction of another connection
	// holds the lock.
	underLock := func(t *testing.T, path string) {
		t.Helper()
		raw := rawDB(t, path)
		raw.SetMaxOpenConns(1)
		rawExec(t, raw, "BEGIN IMMEDIATE")
		err := open(t, path)
		rawExec(t, raw, "ROLLBACK")
		if err != nil {
			t.Fatalf("open of a stamped file while another connection holds the write lock: %v", err)
		}
	}

	t.Run("token and application_id", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := open(t, path); err != nil {
			t.Fatal(err)
		}
		before := appID(t, path)
		if before == 0 {
			t.Fatal("a new file has no application_id")
		}
		underLock(t, path)
		if got := appID(t, path); got != before {
			t.Errorf("application_id %d after a reopen, was %d", got, before)
		}
	})

	t.Run("a token Hermes derives no id from", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := open(t, path); err != nil {
			t.Fatal(err)
		}
		raw := rawDB(t, path)
		rawExec(t, raw, "UPDATE state_meta SET value = 'not-a-hex-token' WHERE key = 'db_file_generation'")
		rawExec(t, raw, "PRAGMA application_id = 0")
		underLock(t, path)
		if got := appID(t, path); got != 0 {
			t.Errorf("application_id = %d, want none for a token Hermes derives none from", got)
		}
	})

	t.Run("a token without its application_id", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := open(t, path); err != nil {
			t.Fatal(err)
		}
		raw := rawDB(t, path)
		const token = "8badf00d0123456789abcdef01234567"
		rawExec(t, raw, "UPDATE state_meta SET value = ? WHERE key = 'db_file_generation'", token)
		rawExec(t, raw, "PRAGMA application_id = 0")
		if err := open(t, path); err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.ParseUint(token[:8], 16, 32)
		if got, want := appID(t, path), int64(n&0x7FFFFFFF); got != want {
			t.Errorf("application_id = %d, want %d, derived from the token", got, want)
		}
	})
}
