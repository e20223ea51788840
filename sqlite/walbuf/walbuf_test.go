package walbuf_test

import (
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite/walbuf"
)

// open opens path with journal_mode=WAL and synchronous=FULL on one
// connection, through this VFS or (plain) the default one.
func open(t *testing.T, path string, plain bool) *sql.DB {
	t.Helper()
	walbuf.Register()
	dsn := "file:" + path + "?_journal_mode=WAL&_synchronous=FULL"
	if !plain {
		dsn += "&vfs=" + walbuf.Name
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func run(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func count(t *testing.T, db *sql.DB, q string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestGathersWALWrites: a commit of a few pages reaches the WAL in one
// write instead of two per page, and (synchronous=FULL) before the sync
// that makes it durable, never later at the wal-index barrier.
func TestGathersWALWrites(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "g.db"), false)
	run(t, db, "CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)", "CREATE INDEX t_b ON t(b)")
	asked0, done0, late0 := walbuf.Counts()
	const commits = 200
	for i := range commits {
		if _, err := db.Exec("INSERT INTO t(b) VALUES (randomblob(?))", 1000+i); err != nil {
			t.Fatal(err)
		}
	}
	asked, done, late := walbuf.Counts()
	asked, done, late = asked-asked0, done-done0, late-late0
	if asked < 4*commits {
		t.Fatalf("SQLite asked for %d WAL writes in %d commits: the test no longer writes several pages a commit", asked, commits)
	}
	if done > commits+commits/10 {
		t.Fatalf("%d WAL writes reached the file for %d asked in %d commits: not gathered", done, asked, commits)
	}
	if late != 0 {
		t.Fatalf("%d commits were still in the buffer after their sync", late)
	}
}

// TestOthersSeeEveryCommit: after each commit, a connection on the default
// VFS in this process and, at the end, a separate process read everything
// committed.
func TestOthersSeeEveryCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	w := open(t, path, false)
	run(t, w, "CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)")
	r := open(t, path, true)
	for i := 1; i <= 100; i++ {
		if _, err := w.Exec("INSERT INTO t(b) VALUES (randomblob(3000))"); err != nil {
			t.Fatal(err)
		}
		if n := count(t, r, "SELECT count(*) FROM t"); n != int64(i) {
			t.Fatalf("after commit %d the reader sees %d rows", i, n)
		}
	}
	python := testenv.Python(t, "to read the file as another SQLite library")
	out, err := exec.Command(python, "-c", fmt.Sprintf(
		"import sqlite3; c = sqlite3.connect(%q); print(c.execute('SELECT count(*), sum(length(b)) FROM t').fetchone(), c.execute('PRAGMA integrity_check').fetchone()[0])", path)).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "(100, 300000) ok" {
		t.Fatalf("another process reads %s, want (100, 300000) ok", got)
	}
}

// TestLargeAndRolledBackTransactions: a transaction far larger than the
// buffer and the page cache (so SQLite spills frames before the commit and
// rewrites some in place), one rolled back, and the file after a reopen.
func TestLargeAndRolledBackTransactions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	db := open(t, path, false)
	run(t, db, "PRAGMA cache_size=20", "CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER, b BLOB)")
	run(t, db, "BEGIN",
		"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 5000) INSERT INTO t(n, b) SELECT i, randomblob(4000) FROM s",
		"UPDATE t SET n = n * 2 WHERE id % 3 = 0",
		"COMMIT")
	run(t, db, "BEGIN",
		"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 2000) INSERT INTO t(n, b) SELECT -i, randomblob(4000) FROM s",
		"ROLLBACK")
	want := count(t, db, "SELECT sum(n) FROM t")
	if n := count(t, db, "SELECT count(*) FROM t"); n != 5000 {
		t.Fatalf("%d rows, want 5000", n)
	}
	run(t, db, "INSERT INTO t(n, b) VALUES (1, x'00')")
	r := open(t, path, true)
	if got := count(t, r, "SELECT sum(n) FROM t"); got != want+1 {
		t.Fatalf("another connection reads sum %d, want %d", got, want+1)
	}
	var ok string
	if err := r.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q %v", ok, err)
	}
	db.Close()
	r.Close()
	again := open(t, path, false)
	if got := count(t, again, "SELECT sum(n) FROM t"); got != want+1 {
		t.Fatalf("after reopening: sum %d, want %d", got, want+1)
	}
}

// TestStatementJournalSpills: a statement whose journal outgrows the
// in-memory threshold moves it to a temporary file and succeeds, on this
// VFS and on the default one. With a threshold of 4 MiB the spill wrote
// 4 MiB in one call, which the unix VFS reports as a full disk, and every
// such statement failed with "database or disk is full" (issue 19).
func TestStatementJournalSpills(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			db := open(t, filepath.Join(t.TempDir(), "s.db"), plain)
			run(t, db,
				"CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB CHECK (length(b) > 0))",
				"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 2500) INSERT INTO t(b) SELECT randomblob(3000) FROM s",
				"BEGIN",
				"INSERT INTO t(b) VALUES (x'01')",
				"UPDATE t SET b = randomblob(3000)", // journals ~2,500 pages: 10 MB
				"COMMIT",
			)
			if n := count(t, db, "SELECT COUNT(*) FROM t WHERE length(b) = 3000"); n != 2501 {
				t.Errorf("%d rows updated, want 2501", n)
			}
		})
	}
}
