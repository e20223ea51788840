package sqlite_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite"
)

// hermesSessionWrites plays a Hermes process (Python's own SQLite, as old
// as 3.34) on a file sessiondb made: it creates, archives, hides, branches
// off, unarchives and deletes sessions, the writes that touch the columns
// of idx_sessions_unlisted, then checks the file.
const hermesSessionWrites = `
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
now = time.time()
con.execute("BEGIN IMMEDIATE")
for i in range(30):
    con.execute("INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', ?)", ("py-%02d" % i, now + i))
for i in range(0, 30, 3):
    con.execute("INSERT INTO sessions (id, source, started_at, parent_session_id) VALUES (?, 'cli', ?, ?)", ("py-child-%02d" % i, now + 40 + i, "py-%02d" % i))
con.execute("UPDATE sessions SET archived = 1 WHERE id IN ('py-01', 'py-02', 'py-03', 'py-04')")
con.execute("UPDATE sessions SET hidden = 1 WHERE id IN ('py-04', 'py-05')")
con.execute("UPDATE sessions SET archived = 0 WHERE id = 'py-02'")
con.execute("UPDATE sessions SET parent_session_id = NULL WHERE id = 'py-child-03'")
con.execute("DELETE FROM sessions WHERE id IN ('py-child-06', 'py-07')")
con.execute("UPDATE sessions SET message_count = message_count + 1, last_activity_at = ?", (now + 100,))
con.execute("COMMIT")
print(con.execute("PRAGMA integrity_check").fetchone()[0])
`

// TestHermesWritesKeepUnlistedIndex: sessiondb's one index of its own
// stays consistent under a Hermes process's writes, and the listing's
// total read through it is the count of the rows listed.
func TestHermesWritesKeepUnlistedIndex(t *testing.T) {
	python := testenv.Python(t, "to play a Hermes process")
	path := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, path)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "go-root", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-c", hermesSessionWrites, path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python3: %v\n%s", err, stderr.String())
	}
	if got := bytes.TrimSpace(stdout.Bytes()); string(got) != "ok" {
		t.Fatalf("integrity_check after the Hermes writes = %q, want ok", got)
	}
	raw := rawDB(t, path)
	if n := count(t, raw, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'idx_sessions_unlisted'"); n != 1 {
		t.Fatalf("idx_sessions_unlisted: %d, want the index sessiondb created", n)
	}
	for _, o := range []sessiondb.ListOptions{
		{Limit: 3}, {Limit: 3, Offset: 24}, {Limit: 3, Offset: 40}, {Limit: 2, IncludeArchived: true},
		{Limit: 2, IncludeHidden: true}, {Limit: 2, IncludeChildren: true}, {Limit: 1, IncludeArchived: true, IncludeHidden: true, IncludeChildren: true},
		{Limit: 2, ArchivedOnly: true}, {Limit: 2, Sources: []string{"cli"}},
	} {
		checkTotal(t, db, o)
	}
	// Without the index (a file Hermes rebuilt), the total is counted.
	if _, err := raw.Exec("DROP INDEX idx_sessions_unlisted"); err != nil {
		t.Fatal(err)
	}
	ro, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	checkTotal(t, ro, sessiondb.ListOptions{Limit: 3})
}

// checkTotal compares a listing's total with the length of the same
// listing unpaged.
func checkTotal(t *testing.T, db *sqlite.DB, o sessiondb.ListOptions) {
	t.Helper()
	page, total, err := db.ListSessions(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	all := o
	all.Limit, all.Offset = -1, 0
	rows, _, err := db.ListSessions(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(rows) {
		t.Errorf("%+v: total %d, want %d (rows listed unpaged)", o, total, len(rows))
	}
	if want := min(max(len(rows)-o.Offset, 0), o.Limit); len(page) != want {
		t.Errorf("%+v: page of %d rows, want %d", o, len(page), want)
	}

}
