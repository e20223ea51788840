package sqlite_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// topIDs is what sessiondb_bm25's 'top' (or, with term, 'topterm') returns
// for q and K: the ids of the K best rows, ties included, and whether they
// came from the term's range summary.
func topIDs(t *testing.T, s *sbStore, q string, k int, term bool) (ids []int64, hits int64, summary bool) {
	return topIDsOf(t, s, "messages_fts", q, k, term)
}

// topIDsOf is topIDs on index table.
func topIDsOf(t *testing.T, s *sbStore, table, q string, k int, term bool) (ids []int64, hits int64, summary bool) {
	t.Helper()
	mode := "top"
	if term {
		mode = "topterm"
	}
	var x string
	if err := s.raw.QueryRow(fmt.Sprintf("SELECT sessiondb_bm25(%[1]s, %[2]d, '%[1]s', '%[3]s') FROM %[1]s WHERE %[1]s MATCH ? LIMIT 1", table, k, mode), q).Scan(&x); err != nil {
		t.Fatalf("%s %q K=%d: %v", mode, q, k, err)
	}
	return decodeTop(t, x)
}

// decodeTop reads what sessiondb_bm25's 'top' modes return.
func decodeTop(t *testing.T, x string) (ids []int64, hits int64, summary bool) {
	t.Helper()
	var v struct {
		Hits int64   `json:"hits"`
		Seek int     `json:"seek"`
		IDs  []int64 `json:"ids"`
	}
	if err := json.Unmarshal([]byte(x), &v); err != nil {
		t.Fatal(err)
	}
	return v.IDs, v.Hits, v.Seek == 1
}

// fewRows are summarized words in a few hundred rows only (checkSummaries).
var fewRows = map[string]bool{"filler": true, "Padding": true}

// isPhrase reports whether q is a quoted phrase of several words, whose
// rows a summary does not count ("hits" -1).
func isPhrase(q string) bool { return strings.Contains(q, " ") }

// checkSummaries compares, for each query, the K best from the summaries
// with those of a pass over every row (ties included, or exactly K when
// the summary skipped ranges of ties), and search pages with plain bm25's;
// summarized says whether the summary must have answered.
func checkSummaries(t *testing.T, s *sbStore, stage string, queries []string, summarized bool) {
	t.Helper()
	for _, q := range queries {
		for _, k := range []int{1, 28, 600} {
			got, gotHits, used := topIDs(t, s, q, k, true)
			want, wantHits, _ := topIDs(t, s, q, k, false)
			if used && isPhrase(q) {
				if gotHits != -1 {
					t.Errorf("%s: %q K=%d: %d hits from a summary, want -1 (not counted)", stage, q, k, gotHits)
				}
				gotHits = wantHits
			}
			// A large K, or a word in few rows whose best rows tie across
			// most ranges, is read in one pass: asserted only on words in
			// thousands of rows, for a page.
			if k <= 28 && !fewRows[q] && used != summarized {
				t.Errorf("%s: %q K=%d: from the summary %v, want %v", stage, q, k, used, summarized)
			}
			// From a summary that skipped ranges of rows tied with the
			// K-th best, exactly the K best (the pass adds every tie).
			if used && len(got) == k && len(want) > k {
				want = want[:k]
			}
			if gotHits != wantHits || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %q K=%d: %d hits %.200s\nwant %d hits %.200s", stage, q, k, gotHits, fmt.Sprint(got), wantHits, fmt.Sprint(want))
			}
		}
		for _, o := range []sessiondb.SearchOptions{
			{Limit: 20}, {Limit: 3, Offset: 700, Sources: []string{"telegram"}},
		} {
			if got, want := rankGot(t, s, q, o), rankWant(t, s, q, o); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: Search(%q, limit %d offset %d sources %v exclude %v)\n got %.300v\nwant %.300v",
					stage, q, o.Limit, o.Offset, o.Sources, o.ExcludeSources, got, want)
			}
		}
	}
}

// TestSearchRankFromSummaries: a one-word query of a summarized term gets
// exactly the K best of a pass over every row (ties, hits, and search pages
// equal to ORDER BY bm25) from the summary, and so does a phrase of a
// summarized word (its ids and pages; its rows not counted): right after
// it is made, after
// rows below its through were deleted, updated and inserted and rows were
// appended (the dirty log and the new rows are read whole), past the dirty
// rows a summary is read with (every row is read instead), and after a
// refresh, which empties the log.
func TestSearchRankFromSummaries(t *testing.T) {
	sqlite.SetRankSummaryScale(t, 50, 8)
	s := rankScaleStore(t)
	// "romeo quebec" in 600 rows, the shortest first: a phrase the
	// summaries answer.
	s.insertRows(t, "s1", 600, 1700010000, func(i int) string {
		return strings.Repeat("romeo quebec ", 1+i%2) + strings.Repeat("tango ", i/12)
	})
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	terms := s.strings(t, "SELECT term FROM sessiondb_rank_terms WHERE fts = 'messages_fts' ORDER BY term")
	// zulu to tango are each in more than half of the rows: no summary.
	if want := []string{"filler", "padding", "quebec", "romeo", "sierra"}; !reflect.DeepEqual(terms, want) {
		t.Fatalf("summarized terms %v, want %v", terms, want)
	}
	queries := []string{"quebec", "romeo", `"sierra"`, "filler", "Padding", `"romeo quebec"`}
	checkSummaries(t, s, "fresh", queries, true)
	// Not one summarized word, a phrase in few rows of its words (given up
	// on): a pass over every row. (A prefix never asks for a summary:
	// 'topterm' says the query is not one.)
	for _, q := range []string{"zulu", `"quebec sierra"`} {
		if _, _, used := topIDs(t, s, q, 28, true); used {
			t.Errorf("%s answered from a summary", q)
		}
	}
	for _, q := range []string{"quebe*", `"quebec romeo"`, "quebec NOT romeo"} {
		o := sessiondb.SearchOptions{Limit: 20}
		if got, want := rankGot(t, s, q, o), rankWant(t, s, q, o); !reflect.DeepEqual(got, want) {
			t.Errorf("Search(%q)\n got %.300v\nwant %.300v", q, got, want)
		}
	}

	// Changes below through: the best quebec rows deleted, rows rewritten
	// to rank first, a deleted id used again, new rows above through.
	s.exec(t, `DELETE FROM messages WHERE id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'quebec' ORDER BY rank LIMIT 6)`)
	s.exec(t, `UPDATE messages SET content = 'romeo romeo quebec' WHERE id IN (100, 2000, 4001)`)
	s.exec(t, `UPDATE messages SET content = 'nothing of them' WHERE id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'sierra' ORDER BY rank LIMIT 5)`)
	var reuse int64
	if err := s.raw.QueryRow(`SELECT MIN(id) + 1 FROM messages WHERE id + 1 NOT IN (SELECT id FROM messages)`).Scan(&reuse); err != nil {
		t.Fatal(err)
	}
	s.exec(t, fmt.Sprintf(`INSERT INTO messages(id, session_id, role, content, timestamp) VALUES (%d, 's1', 'user', 'quebec', 1700000000)`, reuse))
	for i := range 40 {
		s.add(sessiondb.NewMessage{SessionID: "s2", Role: "user", Content: fmt.Sprintf("quebec %s filler", []string{"romeo", "sierra romeo", "victor"}[i%3])})
	}
	var dirty int
	if err := s.raw.QueryRow("SELECT count(*) FROM sessiondb_rank_dirty").Scan(&dirty); err != nil || dirty < 15 || dirty > 64 {
		t.Fatalf("%d rows in the dirty log (%v), want 15 to 64", dirty, err)
	}
	checkSummaries(t, s, "changed", queries, true)

	// A refresh mends the ranges, takes the new rows in, empties the log.
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var left, behind int
	if err := s.raw.QueryRow(`SELECT (SELECT count(*) FROM sessiondb_rank_dirty),
		(SELECT count(*) FROM sessiondb_rank_terms WHERE through < (SELECT MAX(id) FROM messages))`).Scan(&left, &behind); err != nil || left != 0 || behind != 0 {
		t.Fatalf("after a refresh: %d rows in the log, %d summaries behind (%v)", left, behind, err)
	}
	checkSummaries(t, s, "refreshed", queries, true)

	// Rows deleted in the middle, nothing appended: a refresh mends those
	// ranges only.
	s.exec(t, `DELETE FROM messages WHERE id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'romeo' AND rowid BETWEEN 3000 AND 6000 LIMIT 5)`)
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, s, "deleted, refreshed", queries, true)

	// More changed rows than a search reads range by range: a pass over
	// every row answers, the same.
	s.exec(t, `UPDATE messages SET content = content || ' quebec' WHERE id % 97 = 3`)
	checkSummaries(t, s, "many changes", queries, false)
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, s, "many changes, refreshed", queries, true)

	// Rebuilding the index drops the summaries and makes them again.
	if err := s.db.RebuildFTS(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, s, "rebuilt", queries, true)

	// doctor checks them against the index; optimize makes them again.
	if c := diagnose(t, s.db.Path())["term summaries"]; c.Status != sqlite.CheckOK {
		t.Errorf("doctor on sound summaries: %+v", c)
	}
	// (doctor checks the largest three; --full, every one)
	var largest string
	if err := s.raw.QueryRow(`SELECT term FROM sessiondb_rank_terms ORDER BY length(ranges) DESC LIMIT 1`).Scan(&largest); err != nil {
		t.Fatal(err)
	}
	s.exec(t, `UPDATE sessiondb_rank_terms SET ranges = CAST(substr(ranges, 1, 8) || x'7f000000' || substr(ranges, 13) AS BLOB) WHERE term = ?`, largest)
	if c := diagnose(t, s.db.Path())["term summaries"]; c.Status != sqlite.CheckFail || !strings.Contains(c.Detail, strconv.Quote(largest)) || c.Fix != "sessiondb optimize" {
		t.Errorf("doctor on a wrong count: %+v", c)
	}
	rep, err := s.db.Optimize(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	var all int
	if err := s.raw.QueryRow("SELECT count(*) FROM sessiondb_rank_terms").Scan(&all); err != nil || rep.Summarized != all || all < len(terms) {
		t.Errorf("optimize reports %d terms summarized; the file has %d (%v), at least %d of the word index", rep.Summarized, all, err, len(terms))
	}
	if c := diagnose(t, s.db.Path())["term summaries"]; c.Status != sqlite.CheckOK {
		t.Errorf("doctor after optimize: %+v", c)
	}
	checkSummaries(t, s, "optimized", queries, true)
}

// TestRankRangesBoundEveryRow checks the summary sessiondb_bm25's 'ranges'
// makes against the rows themselves: ranges in rowid order cover the ids
// asked for, each counts its rows of the term exactly, and every row is
// beaten by a point of its range's frontier (as frequent or more, as short
// or shorter), also when more distinct rows than the frontier holds share
// a range and its points must be merged.
func TestRankRangesBoundEveryRow(t *testing.T) {
	s := sbOpen(t)
	s.session("s1", "cli")
	rng := rand.New(rand.NewSource(5))
	tx, err := s.raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3000; i++ {
		text := strings.Repeat("filler ", rng.Intn(40))
		if i%3 != 0 {
			// frequencies and lengths that rarely beat each other
			f := 1 + rng.Intn(30)
			text += strings.Repeat("kilo ", f) + strings.Repeat("pad ", f*3+rng.Intn(50))
		}
		if _, err := tx.Exec(`INSERT INTO messages(session_id, role, content, timestamp) VALUES ('s1', 'user', ?, ?)`, text, 1700000000+i); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	type row struct{ id, f, n int64 }
	var rows []row
	q, err := s.raw.Query(`SELECT m.rowid, length(m.content) - length(replace(m.content, 'kilo ', 'kilo')), d.sz
		FROM messages_fts m JOIN messages_fts_docsize d ON d.id = m.rowid WHERE messages_fts MATCH 'kilo' ORDER BY m.rowid`)
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var r row
		var sz []byte
		if err := q.Scan(&r.id, &r.f, &sz); err != nil {
			t.Fatal(err)
		}
		for len(sz) > 0 { // one varint per column
			v, n := uvarintFTS(sz)
			r.n += v
			sz = sz[n:]
		}
		rows = append(rows, r)
	}
	q.Close()
	for _, per := range []int{1, 7, 64, 500} {
		for _, span := range [][2]int64{{-1 << 62, 1 << 40}, {rows[10].id, rows[900].id}, {rows[5].id + 1, rows[5].id + 1}} {
			var blob []byte
			if err := s.raw.QueryRow(fmt.Sprintf("SELECT sessiondb_bm25(messages_fts, %d, 'messages_fts', 'ranges', ?) FROM messages_fts WHERE messages_fts MATCH 'kilo' LIMIT 1", per),
				fmt.Sprintf("%d,%d", span[0], span[1])).Scan(&blob); err != nil {
				t.Fatal(err)
			}
			lo, i, ranges := span[0], 0, 0
			for ; len(blob) >= 76; blob = blob[76:] {
				hi := int64(binary.LittleEndian.Uint64(blob))
				n := int(int32(binary.LittleEndian.Uint32(blob[8:])))
				got := 0
				for ; i < len(rows) && rows[i].id <= hi; i++ {
					r := rows[i]
					if r.id < lo {
						continue
					}
					got++
					beaten := false
					for p := 0; p < 8; p++ {
						f := int64(int32(binary.LittleEndian.Uint32(blob[12+8*p:])))
						l := int64(int32(binary.LittleEndian.Uint32(blob[16+8*p:])))
						beaten = beaten || (f >= r.f && l <= r.n)
					}
					if !beaten {
						t.Errorf("%d a range, [%d, %d]: row %d (f %d, %d tokens) beaten by no point of (%d, %d]", per, span[0], span[1], r.id, r.f, r.n, lo-1, hi)
					}
				}
				if got != n || (n > per) {
					t.Errorf("%d a range, [%d, %d]: range (%d, %d] counts %d rows, holds %d", per, span[0], span[1], lo-1, hi, n, got)
				}
				lo = hi + 1
				ranges++
			}
			if len(blob) != 0 || (ranges > 0 && lo-1 != span[1]) {
				t.Errorf("%d a range, [%d, %d]: %d bytes left over, last range ends at %d", per, span[0], span[1], len(blob), lo-1)
			}
			for ; i < len(rows) && rows[i].id <= span[1]; i++ {
				if rows[i].id >= span[0] {
					t.Errorf("%d a range, [%d, %d]: row %d in no range", per, span[0], span[1], rows[i].id)
				}
			}
		}
	}
}

// uvarintFTS reads one of SQLite's big-endian varints.
func uvarintFTS(b []byte) (int64, int) {
	var v int64
	for i := 0; i < 9 && i < len(b); i++ {
		if i == 8 {
			return v<<8 | int64(b[i]), 9
		}
		v = v<<7 | int64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return v, len(b)
}

// TestRefreshTermSeesAnotherWriter: a refresh computes a term's next
// summary in a read snapshot and writes it in a later transaction; another
// process may refresh the same term in between, mending the ranges its
// deletes left dirty and emptying the log. The late write must not put the
// older summary back (whose log entries are gone): it computes again, and
// the summary agrees with the index.
func TestRefreshTermSeesAnotherWriter(t *testing.T) {
	sqlite.SetRankSummaryScale(t, 50, 8)
	s := rankScaleStore(t)
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	other, err := sqlite.Open(s.db.Path(), sqlite.Options{}) // another process, as far as the file knows
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	deleteBest := `DELETE FROM messages WHERE id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'quebec' ORDER BY rank LIMIT 6)`
	s.exec(t, deleteBest)
	raced := 0
	sqlite.SetRankRefreshHook(t, func(term string) {
		if term != "quebec" || raced > 0 {
			return
		}
		raced++
		s.exec(t, deleteBest)
		if _, err := other.SummarizeTerms(ctx, nil); err != nil {
			t.Error(err)
		}
	})
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if raced != 1 {
		t.Fatalf("the other writer ran %d times, want once (the test's premise)", raced)
	}
	d, err := sqlite.Diagnose(ctx, s.db.Path(), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Checks {
		if c.Name == "term summaries" && c.Status != sqlite.CheckOK {
			t.Errorf("doctor --full: %+v", c)
		}
	}
	checkSummaries(t, s, "after the race", []string{"quebec"}, true)
}

// TestKeptLengthsAcrossClearedSummaries: a connection that ranked with the
// row lengths it keeps (rank.c, RankConn) gets bm25's K best and scores
// bit for bit after the summaries were cleared, rows changed while their
// log was stopped, and the summaries made again through the same id, all
// without it: clearing moves the log's seq on, which it finds.
func TestKeptLengthsAcrossClearedSummaries(t *testing.T) {
	sqlite.SetRankSummaryScale(t, 50, 8)
	s := rankScaleStore(t)
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	reader, err := s.raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	scores := func(stmt string) (ids []int64, vals []float64) {
		t.Helper()
		rows, err := reader.QueryContext(ctx, stmt)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var v float64
			if err := rows.Scan(&id, &v); err != nil {
				t.Fatal(err)
			}
			ids, vals = append(ids, id), append(vals, v)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return ids, vals
	}
	const top = `SELECT rowid, %s AS r FROM messages_fts WHERE messages_fts MATCH 'quebec' ORDER BY r, rowid LIMIT 12`
	check := func(stage string) []int64 {
		t.Helper()
		gotIDs, got := scores(fmt.Sprintf(top, "sessiondb_bm25(messages_fts, 12, 'messages_fts')"))
		wantIDs, want := scores(fmt.Sprintf(top, "bm25(messages_fts)"))
		if !reflect.DeepEqual(gotIDs, wantIDs) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: K best %v %v\nwant %v %v", stage, gotIDs, got, wantIDs, want)
		}
		return wantIDs
	}
	check("first") // the first two ranked statements keep nothing
	check("second")
	check("third")
	best := check("again")
	var through string
	if err := s.raw.QueryRow(`SELECT value FROM state_meta WHERE key = 'sessiondb_rank_through'`).Scan(&through); err != nil {
		t.Fatal(err)
	}
	if err := sqlite.ClearTermSummaries(s.db); err != nil {
		t.Fatal(err)
	}
	s.exec(t, fmt.Sprintf(`UPDATE messages SET content = content || '%s' WHERE id IN (%d, %d, %d)`,
		strings.Repeat(" padding", 300), best[0], best[1], best[2]))
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var again string
	if err := s.raw.QueryRow(`SELECT value FROM state_meta WHERE key = 'sessiondb_rank_through'`).Scan(&again); err != nil || again != through {
		t.Fatalf("through %s after the summaries were made again (%v), want %s as before (the test's premise)", again, err, through)
	}
	check("summaries cleared, rows changed, summaries made again")
}

// sourceTop is what sessiondb_bm25's 'top' returns for q limited to the
// rows of source src: with named, the source named (its summary may
// answer), else its ids alone (a pass over every row).
func sourceTop(t *testing.T, s *sbStore, q, src string, k int, named bool) (ids []int64, hits int64, summary bool) {
	t.Helper()
	name := "NULL"
	if named {
		name = "?2"
	}
	var x string
	if err := s.raw.QueryRow(fmt.Sprintf("SELECT sessiondb_bm25(messages_fts, %d, 'messages_fts', 'top', sessiondb_source_ids(?2), NULL, NULL, %s)"+
		" FROM messages_fts WHERE messages_fts MATCH ?1 LIMIT 1", k, name), q, src).Scan(&x); err != nil {
		t.Fatalf("top %q in %s K=%d: %v", q, src, k, err)
	}
	return decodeTop(t, x)
}

// checkSourceSummaries compares, for each query limited to whatsapp (and
// to signal, whose few ids are kept as an array), the K best from the
// source's summary with those of a pass over every row (ties included, or
// exactly K when ranges of ties were skipped), and search pages with plain
// bm25's; whatsapp and signal say whether each source's summary must have
// answered.
func checkSourceSummaries(t *testing.T, s *sbStore, stage string, queries []string, whatsapp, signal bool) {
	t.Helper()
	for _, q := range queries {
		for _, c := range []struct {
			src string
			k   int
		}{{"whatsapp", 1}, {"signal", 1}, {"whatsapp", 28}, {"signal", 28}, {"whatsapp", 300}} {
			got, gotHits, used := sourceTop(t, s, q, c.src, c.k, true)
			summarized := whatsapp
			if c.src == "signal" {
				summarized = signal
			}
			want, wantHits, _ := sourceTop(t, s, q, c.src, c.k, false)
			// For K=28 the words of whatsapp's dense run only: the others
			// tie across many ranges or hold few rows of it (one pass).
			if (c.k == 1 || (c.k == 28 && c.src == "whatsapp" && (q == "quebec" || q == "romeo"))) && used != summarized {
				t.Errorf("%s: %q in %s K=%d: from the source's summary %v, want %v", stage, q, c.src, c.k, used, summarized)
			}
			if used && len(got) == c.k && len(want) > c.k {
				want = want[:c.k]
			}
			if gotHits != wantHits || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %q in %s K=%d: %d hits %.200s\nwant %d hits %.200s", stage, q, c.src, c.k, gotHits, fmt.Sprint(got), wantHits, fmt.Sprint(want))
			}
		}
		for _, o := range []sessiondb.SearchOptions{
			{Limit: 20, Sources: []string{"whatsapp"}}, {Limit: 5, Offset: 40, Sources: []string{"whatsapp"}},
			{Limit: 3, Sources: []string{"signal"}},
		} {
			if got, want := rankGot(t, s, q, o), rankWant(t, s, q, o); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: Search(%q, limit %d offset %d sources %v)\n got %.300v\nwant %.300v",
					stage, q, o.Limit, o.Offset, o.Sources, got, want)
			}
		}
	}
}

// TestSearchFromSourceSummaries: a one-word query limited to a rare source
// gets exactly the K best of a pass over that source's rows (ties, every
// source's rows counted, search pages equal to ORDER BY bm25) from the
// summary of the word's rows in that source: right after optimize made
// it, after a row of the source was rewritten and rows appended (read
// whole); not while a session moved into the source or a row of it was
// deleted (the source's ids are no longer those it was made from), nor
// once the log was trimmed past it (the live upkeep refreshes the terms'
// summaries alone); optimize makes it again; emptied summaries take it
// with them.
func TestSearchFromSourceSummaries(t *testing.T) {
	sqlite.SetRankSummaryScale(t, 50, 8)
	s := rankScaleStore(t)
	denseWhatsapp(t, s)
	// signal (s8): four rows far apart.
	s.session("s8", "signal")
	s.exec(t, `UPDATE messages SET session_id = 's8', content = 'quebec romeo ' || id WHERE id IN (100, 3000, 6000, 8999)`)
	s.exec(t, `UPDATE sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE session_id = sessions.id)`)
	// s9, of cli: 40 rows, moved into whatsapp and back below.
	s.session("s9", "cli")
	for i := range 40 {
		s.msg("s9", "user", strings.Repeat("quebec ", 1+i%3)+"romeo filler")
	}
	summarize := func() {
		t.Helper()
		if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	summarize()
	sources := s.strings(t, "SELECT DISTINCT source FROM sessiondb_rank_sources ORDER BY source")
	if !reflect.DeepEqual(sources, []string{"signal", "whatsapp"}) { // the others hold a third
		t.Fatalf("source summaries of %v, want signal's and whatsapp's", sources)
	}
	queries := []string{"quebec", "romeo", "sierra", "filler", "padding"}
	checkSourceSummaries(t, s, "fresh", queries, true, true)

	s.exec(t, `UPDATE sessions SET source = 'whatsapp' WHERE id = 's9'`)
	checkSourceSummaries(t, s, "a session moved in", queries, false, true)
	s.exec(t, `UPDATE sessions SET source = 'cli' WHERE id = 's9'`)
	checkSourceSummaries(t, s, "moved back", queries, true, true)

	// A row of the source rewritten to rank first (logged: its range is
	// read whole), rows appended past through.
	s.exec(t, `UPDATE messages SET content = 'quebec quebec romeo' WHERE id = (SELECT MIN(id) FROM messages WHERE session_id = 's3')`)
	for i := range 12 {
		s.msg("s3", "user", strings.Repeat("romeo ", 1+i%2)+"quebec")
	}
	checkSourceSummaries(t, s, "rewritten, appended", queries, true, true)

	s.exec(t, `DELETE FROM messages WHERE id = (SELECT MAX(id) FROM messages WHERE session_id = 's3' AND id < 9500)`)
	checkSourceSummaries(t, s, "a row of it deleted", queries, false, true)
	summarize()
	checkSourceSummaries(t, s, "made again", queries, true, true)

	s.exec(t, `UPDATE messages SET content = content || ' sierra' WHERE id = 10`)
	if err := sqlite.RefreshTermSummaries(s.db); err != nil {
		t.Fatal(err)
	}
	checkSourceSummaries(t, s, "log trimmed", queries, false, false)
	if c := diagnose(t, s.db.Path())["term summaries"]; c.Status != sqlite.CheckOK || !strings.Contains(c.Detail, "summaries of rare sources no longer used") {
		t.Errorf("doctor with the sources' summaries unused: %+v", c)
	}
	summarize()
	checkSourceSummaries(t, s, "made again after the trim", queries, true, true)

	// doctor --full counts a source's ranges too (every source's rows).
	if c := diagnoseFull(t, s.db.Path())["term summaries"]; c.Status != sqlite.CheckOK || strings.Contains(c.Detail, "no longer used") {
		t.Errorf("doctor on sound summaries: %+v", c)
	}
	s.exec(t, `UPDATE sessiondb_rank_sources SET ranges = CAST(substr(ranges, 1, 8) || x'7f000000' || substr(ranges, 13) AS BLOB) WHERE term = 'quebec'`)
	if c := diagnoseFull(t, s.db.Path())["term summaries"]; c.Status != sqlite.CheckFail || !strings.Contains(c.Detail, `"quebec" in source "whatsapp"`) {
		t.Errorf("doctor on a source's wrong count: %+v", c)
	}

	if err := sqlite.ClearTermSummaries(s.db); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.raw.QueryRow("SELECT count(*) FROM sessiondb_rank_sources").Scan(&left); err != nil || left != 0 {
		t.Errorf("%d source summaries left with the terms' emptied (%v)", left, err)
	}
}

// strings returns the one column of query's rows.
func (s *sbStore) strings(t *testing.T, query string) []string {
	t.Helper()
	rows, err := s.raw.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// insertRows adds n user messages to session in one transaction, the i-th
// with text(i) at ts+i, and sets the sessions' message counts.
func (s *sbStore) insertRows(t *testing.T, session string, n int, ts float64, text func(i int) string) {
	t.Helper()
	tx, err := s.raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for i := range n {
		if _, err := tx.Exec(`INSERT INTO messages(session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)`, session, text(i), ts+float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	s.exec(t, `UPDATE sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE session_id = sessions.id)`)
}

// denseWhatsapp adds a run of 600 rows of whatsapp (s3) to rankScaleStore's
// rows, where it held 2 % of them: 8 % in all, still rare, and its ranges
// dense there.
func denseWhatsapp(t *testing.T, s *sbStore) {
	t.Helper()
	s.insertRows(t, "s3", 600, 1710000000, func(i int) string {
		text := strings.Repeat("quebec ", 1+i%4) + strings.Repeat("romeo ", i%3) + strings.Repeat("tango ", i%17) + "sierra"
		if i%5 == 0 {
			text += " filler padding"
		}
		return text
	})
}
