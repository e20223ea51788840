package sqlite_test

import (
	"testing"

	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite"
)

// TestPythonChangesUnderTermSummaries: a Hermes process (Python's SQLite,
// 3.40 on Debian 12) deletes, rewrites and appends rows of a file with term
// summaries and a rare source's summaries, as replace_messages does; our
// triggers run in its process, it keeps an intact file, and our searches
// still equal bm25, read from the summaries (the source's too: none of its
// rows was deleted).
func TestPythonChangesUnderTermSummaries(t *testing.T) {
	python := testenv.Python(t, "to play a Hermes process changing rows")
	sqlite.SetRankSummaryScale(t, 50, 8)
	s := rankScaleStore(t)
	denseWhatsapp(t, s)
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	const script = pythonWithoutCJK + `q = lambda s, *a: con.execute(s, a).fetchone()[0]
con.execute("BEGIN IMMEDIATE")
best = [r[0] for r in con.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'quebec'"
                                   " AND rowid NOT IN (SELECT id FROM messages WHERE session_id = 's3') ORDER BY rank LIMIT 12")]
con.execute("DELETE FROM messages WHERE id IN (%s)" % ",".join(str(i) for i in best))
con.execute("UPDATE messages SET content = 'romeo romeo romeo quebec' WHERE id IN (10, 5000, 99)")
for i in range(30):
    con.execute("INSERT INTO messages (session_id, role, content, timestamp, active) VALUES (?, 'user', ?, ?, 1)",
                ("s3" if i % 3 == 0 else "s1", "quebec romeo %d" % i, 1900000000 + i))
con.execute("COMMIT")
print(json.dumps({"version": sqlite3.sqlite_version, "dirty": q("SELECT count(*) FROM sessiondb_rank_dirty"),
                  "integrity": q("PRAGMA integrity_check")}))
`
	var py struct {
		Version   string
		Dirty     int
		Integrity string
	}
	runPythonJSON(t, &py, python, script, s.db.Path())
	t.Logf("Python's SQLite %s", py.Version)
	if py.Dirty != 15 || py.Integrity != "ok" {
		t.Fatalf("after Python's changes: %d rows logged (want 15: 12 deleted, 3 rewritten, one of whatsapp's), integrity %q", py.Dirty, py.Integrity)
	}
	checkSummaries(t, s, "after Python's changes", []string{"quebec", "romeo"}, true)
	// (no signal source in this store: its summaries are never used)
	checkSourceSummaries(t, s, "after Python's changes", []string{"quebec", "romeo"}, true, false)
}
