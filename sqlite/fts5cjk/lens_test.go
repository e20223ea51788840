//go:build sqlite_fts5 || fts5

package fts5cjk_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// TestRankKeptLengths: the row lengths sessiondb_bm25 keeps in memory on a
// connection are used on its next queries and never outlive a change.
// One connection ranks "alpha" (rows of distinct lengths, so every score
// differs) after each change made on another connection, and must get
// bm25's K best and their scores bit for bit: rows rewritten and logged,
// a row above through changed (not logged), rows changed while the log was
// stopped and started again (its seq moved on: a gap), the log trimmed past
// what the connection saw, its seq set back, through lowered, changes
// made and rolled back in its own write transaction, and the index made
// again with another tokenizer (only the schema tells); a row of 70,000
// tokens is never kept. The same with the
// lengths kept as they are looked up, read in whole from the first query
// (the next query of another word then reads lengths from memory), and
// with no memory for them (none kept).
func TestRankKeptLengths(t *testing.T) {
	for _, c := range []struct {
		name     string
		after    int
		maxBytes int64
		kept     bool // the second query reads lengths from memory
		loaded   bool // the first query of another word too
	}{
		{"looked up", 1 << 30, 64 << 20, true, false},
		{"read in", 0, 64 << 20, true, true},
		{"no memory", 0, 0, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			after, maxBytes := fts5cjk.SetLensLoad(c.after, c.maxBytes)
			defer fts5cjk.SetLensLoad(after, maxBytes)
			testRankKeptLengths(t, c.kept, c.loaded)
		})
	}
}

func testRankKeptLengths(t *testing.T, kept, loaded bool) {
	ctx := context.Background()
	db := summaryDB(t)
	text := func(id, pad int) string { return strings.Repeat("pad-x ", pad) + fmt.Sprint("alpha n", id) }
	fill := func(tx execer) {
		for id := 1; id <= 300; id++ {
			if _, err := tx.ExecContext(ctx, `INSERT INTO t(rowid, x) VALUES (?, ?)`, id, text(id, (id*37)%301)); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill(db)
	// A row too long for a kept length (65,535 tokens or more).
	if _, err := db.Exec(`UPDATE t SET x = x || ? WHERE rowid = 150`, strings.Repeat(" tail", 70000)); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO state_meta VALUES ('sessiondb_rank_through', '300')`,
		`INSERT INTO sessiondb_rank_dirty(id) VALUES (1)`, // the log has begun
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	reader, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	const k = 12
	scores := func(stmt string) (ids []int64, vals []float64) {
		t.Helper()
		return idScores(t, reader, stmt)
	}
	check := func(stage string, ks ...int) {
		t.Helper()
		if ks == nil {
			ks = []int{k, 400} // 400: every row
		}
		for _, k := range ks {
			gotIDs, got := scores(fmt.Sprintf(`SELECT rowid, sessiondb_bm25(t, %d, 't') AS r FROM t WHERE t MATCH 'alpha' ORDER BY r, rowid LIMIT %[1]d`, k))
			wantIDs, want := scores(fmt.Sprintf(`SELECT rowid, bm25(t) AS r FROM t WHERE t MATCH 'alpha' ORDER BY r, rowid LIMIT %d`, k))
			if !slices.Equal(gotIDs, wantIDs) || !slices.Equal(got, want) {
				t.Errorf("%s: K=%d best %.300v %.300v\nwant %.300v %.300v", stage, k, gotIDs, got, wantIDs, want)
			}
		}
	}
	// The best rows are the shortest: 1 (pad 37), 9 (pad 32), ...
	shortest := func() int64 {
		ids, _ := scores(`SELECT rowid, bm25(t) FROM t WHERE t MATCH 'alpha' ORDER BY 2 LIMIT 1`)
		return ids[0]
	}
	lengthen := func(id int64) string {
		// longer past alpha, where its positions do not tell
		return fmt.Sprintf(`UPDATE t SET x = x || '%s' WHERE rowid = %d`, strings.Repeat(" tail", 400), id)
	}
	logged := func(id int64) string { return fmt.Sprintf(`INSERT INTO sessiondb_rank_dirty(id) VALUES (%d)`, id) }

	// The first two ranked statements of a connection keep nothing; the
	// third keeps what it looks up.
	for _, stage := range []string{"first", "second", "third"} {
		check(stage, k)
	}
	before := fts5cjk.LensKept()
	check("again", k)
	if got := fts5cjk.LensKept() > before; got != kept {
		t.Fatalf("the second query read lengths kept by the first: %v, want %v", got, kept)
	}
	before = fts5cjk.LensKept()
	if _, vals := scores(`SELECT rowid, sessiondb_bm25(t, 5, 't') AS r FROM t WHERE t MATCH 'n122' ORDER BY r LIMIT 5`); len(vals) != 1 {
		t.Fatalf("n122: %d rows, want 1", len(vals))
	}
	if got := fts5cjk.LensKept() > before; got != loaded {
		t.Fatalf("the first query of another word read lengths from memory: %v, want %v", got, loaded)
	}

	best := shortest()
	execAll(t, db, lengthen(best), logged(best))
	check("a kept row rewritten and logged")

	// Rows above through are not logged, nor kept.
	execAll(t, db, `INSERT INTO t(rowid, x) VALUES (301, 'alpha')`)
	check("a row above through")
	execAll(t, db, `UPDATE t SET x = 'alpha `+strings.Repeat("pad-x ", 500)+`' WHERE rowid = 301`)
	check("a row above through rewritten")

	// The log stopped (summaries cleared: through gone, the log emptied,
	// its seq moved on by one), a row changed unlogged, the log started
	// again at the same through; the reader saw none of it.
	best = shortest()
	execAll(t, db, `DELETE FROM state_meta WHERE key = 'sessiondb_rank_through'`, `DELETE FROM sessiondb_rank_dirty`,
		`INSERT INTO sessiondb_rank_dirty(id) VALUES (0)`, `DELETE FROM sessiondb_rank_dirty`,
		lengthen(best), `INSERT INTO state_meta VALUES ('sessiondb_rank_through', '300')`)
	check("changed while the log was stopped")

	// The same, with the reader querying while the log is stopped.
	best = shortest()
	execAll(t, db, `DELETE FROM state_meta WHERE key = 'sessiondb_rank_through'`)
	check("the log stopped")
	execAll(t, db, lengthen(best), `INSERT INTO state_meta VALUES ('sessiondb_rank_through', '300')`)
	check("the log started again")

	// Changes logged, then the log trimmed past them.
	check("before a trim")
	best = shortest()
	execAll(t, db, lengthen(best), logged(best), `DELETE FROM sessiondb_rank_dirty`)
	check("the log trimmed")

	// The log's seq set back below what the reader saw, then a logged
	// change: a log that restarted.
	check("before the seq goes back")
	best = shortest()
	execAll(t, db, `UPDATE sqlite_sequence SET seq = 0 WHERE name = 'sessiondb_rank_dirty'`, lengthen(best), logged(best))
	check("the seq set back")

	// through lowered: rows above it are no longer logged.
	check("before through goes down")
	execAll(t, db, `UPDATE state_meta SET value = '250' WHERE key = 'sessiondb_rank_through'`)
	ids, _ := scores(`SELECT rowid, bm25(t) FROM t WHERE t MATCH 'alpha' AND rowid > 250 ORDER BY 2 LIMIT 1`)
	execAll(t, db, lengthen(ids[0]))
	check("through lowered")
	execAll(t, db, `UPDATE state_meta SET value = '300' WHERE key = 'sessiondb_rank_through'`)

	// In the reader's own write transaction: a change it sees, rolled
	// back; another connection's logged change then takes the same seq.
	check("before a transaction")
	best = shortest()
	execAll(t, reader, "BEGIN IMMEDIATE", lengthen(best), logged(best))
	check("in a write transaction")
	execAll(t, reader, "ROLLBACK")
	check("rolled back")
	ids, _ = scores(`SELECT rowid, bm25(t) FROM t WHERE t MATCH 'alpha' ORDER BY 2 LIMIT 2`)
	execAll(t, db, lengthen(ids[1]), logged(ids[1]))
	check("another change after the rollback")

	// The index made again, '-' now part of a token: every row shorter,
	// nothing logged.
	check("before the index is made again")
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	execAll(t, tx, `DROP TABLE t`, `CREATE VIRTUAL TABLE t USING fts5(x, tokenize="unicode61 tokenchars '-'")`)
	fill(tx)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	check("the index made again")
}
