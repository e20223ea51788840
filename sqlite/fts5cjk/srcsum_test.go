//go:build sqlite_fts5 || fts5

package fts5cjk_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// TestRankSourceSummaries: 'top' limited to one source's rows and naming
// that source ranks from the term's summary in the source
// (sessiondb_rank_sources) when it holds, and gets exactly the K best of
// bm25 over the source's rows, every source's rows counted: a dense source
// (its ids a bitmap) and a sparse one (an array), after logged rewrites
// and rows past through (read whole). It does not use the summary while a
// session moved into the source (another digest: answered by a pass, the
// same), once the log was trimmed past its seen, or once the summaries'
// log stopped (no through); on the one connection, digests are kept per
// source and forgotten when the file changes.
func TestRankSourceSummaries(t *testing.T) {
	defer fts5cjk.SetRangeReadCost(fts5cjk.SetRangeReadCost(0))
	ctx := context.Background()
	db := summaryDB(t)
	execAll(t, db, `CREATE TABLE sessions(id TEXT PRIMARY KEY, source TEXT)`,
		`CREATE TABLE messages(id INTEGER PRIMARY KEY, session_id TEXT)`,
		`INSERT INTO sessions VALUES ('x1', 'x'), ('x2', 'x'), ('y1', 'y'), ('z1', 'z'), ('z2', 'z')`)
	// add inserts row id of t, with text, as a message of session.
	add := func(id int, text, session string) {
		t.Helper()
		execAll(t, db, fmt.Sprintf(`INSERT INTO t(rowid, x) VALUES (%d, '%s')`, id, text),
			fmt.Sprintf(`INSERT INTO messages VALUES (%d, '%s')`, id, session))
	}
	for id := 1; id <= 3000; id++ {
		session := "z1"
		switch {
		case id >= 1200 && id < 1500:
			session = "x1" // a dense run of x
		case id%37 == 0:
			session = "x2"
		case id%41 == 0:
			session = "z2" // moved into x below
		case id == 7 || id == 1100 || id == 2200 || id == 2999:
			session = "y1" // few and far apart: an array
		}
		text := "a " + strings.Repeat("c ", id%23) + "b"
		if id%5 == 0 {
			text = "a a " + text
		}
		if id%11 == 0 {
			text = "b c" // without a
		}
		add(id, text, session)
	}
	const through, per = 3000, 8
	summarize(t, db, through, per, "a")
	// (and another key, as a file has many)
	execAll(t, db, fmt.Sprintf(`INSERT INTO state_meta VALUES ('sessiondb_rank_through', '%d'), ('fts_storage', '2')`, through))
	for _, src := range []string{"x", "y"} {
		var b []byte
		if err := db.QueryRow(fmt.Sprintf(`SELECT sessiondb_bm25(t, %d, 't', 'ranges', '0,%d', sessiondb_source_ids(?)) FROM t WHERE t MATCH 'a' LIMIT 1`, per, through), src).Scan(&b); err != nil {
			t.Fatal(err)
		}
		if len(b) < 8 || (len(b)-8)%76 != 0 {
			t.Fatalf("source %s: a summary of %d bytes", src, len(b))
		}
		if _, err := db.Exec(`INSERT INTO sessiondb_rank_sources VALUES ('t', 'a', ?, ?, 0, ?, ?)`,
			src, through, int64(binary.LittleEndian.Uint64(b)), b[8:]); err != nil {
			t.Fatal(err)
		}
	}
	reader, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	// check compares, for each source and K, the named call with bm25 over
	// the source's rows; used says whether x's and y's summaries answer.
	check := func(stage string, usedX, usedY bool) {
		t.Helper()
		var all int
		if err := reader.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE t MATCH 'a'`).Scan(&all); err != nil {
			t.Fatal(err)
		}
		for _, src := range []string{"x", "y"} {
			want, scores := idScores(t, reader, `SELECT t.rowid, bm25(t) FROM t JOIN messages AS m ON m.id = t.rowid
				JOIN sessions AS s ON s.id = m.session_id WHERE t MATCH 'a' AND s.source = ? ORDER BY bm25(t), t.rowid`, src)
			for _, k := range []int{1, 5, 28} {
				var x string
				if err := reader.QueryRowContext(ctx, fmt.Sprintf(`SELECT sessiondb_bm25(t, %d, 't', 'top', sessiondb_source_ids(?1), NULL, NULL, ?1)
					FROM t WHERE t MATCH 'a' LIMIT 1`, k), src).Scan(&x); err != nil {
					t.Fatalf("%s: %s K=%d: %v", stage, src, k, err)
				}
				res := decodeTop(t, x)
				n := topK(scores, k)
				if res.Seek == 1 && len(res.IDs) == k {
					n = min(k, len(want)) // ranges of ties skipped: exactly the K best
				}
				used := map[string]bool{"x": usedX, "y": usedY}[src]
				if res.Hits != all || !slices.Equal(res.IDs, want[:n]) || (res.Seek == 1) != used {
					t.Errorf("%s: %s K=%d: %d hits, from the summary %v, ids %v\nwant %d hits, %v, ids %v",
						stage, src, k, res.Hits, res.Seek == 1, res.IDs, all, used, want[:n])
				}
			}
		}
	}
	check("fresh", true, true)
	check("again (digests kept)", true, true)

	// x's rows rewritten to rank first (logged), rows of both past through.
	rewriteLogged(t, db, []rowText{{1300, "a a a"}, {37 * 20, "a a a"}, {1400, "b"}})
	add(3001, "a a a a", "x1")
	add(3002, "a a", "y1")
	check("rewritten, appended", true, true)

	execAll(t, db, `UPDATE sessions SET source = 'x' WHERE id = 'z2'`)
	check("a session moved into x", false, true)
	execAll(t, db, `UPDATE sessions SET source = 'z' WHERE id = 'z2'`)
	check("moved back", true, true)

	execAll(t, db, `INSERT INTO state_meta VALUES ('sessiondb_rank_gone', '1')`)
	check("log trimmed past the summaries", false, false)
	execAll(t, db, `DELETE FROM state_meta WHERE key = 'sessiondb_rank_gone'`)
	check("log whole again", true, true)

	execAll(t, db, `DELETE FROM state_meta WHERE key = 'sessiondb_rank_through'`)
	check("the log stopped", false, false)
}
