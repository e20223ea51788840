package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
	"github.com/sessiondb/sessiondb/sqlite/walbuf"
)

// TestDefaultSettings reads, from a store opened with the zero Options, the
// settings the README and DESIGN.md promise: every write durable when it
// returns (synchronous=FULL, through the WAL-gathering VFS), WAL, the busy
// timeouts of the writer and of the readers, read-only readers, foreign
// keys, and private file modes.
func TestDefaultSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new-home")
	path := filepath.Join(dir, "state.db")
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })

	for _, tt := range []struct{ name, got, want string }{
		{"writer synchronous", sqlite.WriterPragma(t, db, "synchronous"), "2"}, // FULL
		{"writer journal_mode", sqlite.WriterPragma(t, db, "journal_mode"), "wal"},
		{"writer busy_timeout", sqlite.WriterPragma(t, db, "busy_timeout"), "1000"},
		{"writer foreign_keys", sqlite.WriterPragma(t, db, "foreign_keys"), "1"},
		{"writer journal_size_limit", sqlite.WriterPragma(t, db, "journal_size_limit"), "67108864"}, // 64 MiB (DESIGN.md)
		{"reader busy_timeout", sqlite.ReaderPragma(t, db, "busy_timeout"), "5000"},
		{"reader journal_mode", sqlite.ReaderPragma(t, db, "journal_mode"), "wal"},
		{"JournalMode()", db.JournalMode(), "wal"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if got, err := db.Synchronous(ctx); err != nil || got != "full" {
		t.Errorf("Synchronous() = %q, %v; want full", got, err)
	}
	if err := sqlite.ReaderExec(db, "CREATE TABLE reader_wrote(x)"); err == nil {
		t.Errorf("a reader connection could write: want a read-only pool")
	}

	// The commit of an append goes through the WAL-gathering VFS.
	asked0, _, _ := walbuf.Counts()
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "durable"}); err != nil {
		t.Fatal(err)
	}
	if asked, _, _ := walbuf.Counts(); asked <= asked0 {
		t.Errorf("no WAL write went through the %s VFS (asked %d before, %d after)", walbuf.Name, asked0, asked)
	}

	for _, f := range []struct {
		path string
		want os.FileMode
	}{{dir, 0o700}, {path, 0o600}, {path + "-wal", 0o600}, {path + "-shm", 0o600}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f.path), err)
			continue
		}
		if got := fi.Mode().Perm(); got != f.want {
			t.Errorf("%s has mode %o, want %o", filepath.Base(f.path), got, f.want)
		}
	}
}

// TestSynchronousOption: the setting asked for is the one the writer runs
// with, and only FULL uses the WAL-gathering VFS (it relies on the sync at
// every commit).
func TestSynchronousOption(t *testing.T) {
	for _, tt := range []struct{ option, pragma, name string }{
		{"NORMAL", "1", "normal"},
		{"full", "2", "full"},
		{"EXTRA", "3", "extra"},
	} {
		t.Run(tt.option, func(t *testing.T) {
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), sqlite.Options{Synchronous: tt.option})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if got := sqlite.WriterPragma(t, db, "synchronous"); got != tt.pragma {
				t.Errorf("PRAGMA synchronous = %s, want %s", got, tt.pragma)
			}
			if got, err := db.Synchronous(ctx); err != nil || got != tt.name {
				t.Errorf("Synchronous() = %q, %v; want %q", got, err, tt.name)
			}
		})
	}
	if _, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), sqlite.Options{Synchronous: "OFF"}); sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Errorf("Open with synchronous OFF: %v, want EINVALID", err)
	}
}
