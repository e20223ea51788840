package sqlite_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// topIDs is what sessiondb_bm25's 'top' (or, with term, 'topterm') returns
// for q and K: the ids of the K best rows, ties included, and whether they
// came from the term's range summary.
func topIDs(t *testing.T, s *sbStore, q string, k int, term bool) (ids []int64, hits int64, summary bool) {
	t.Helper()
	mode := "top"
	if term {
		mode = "topterm"
	}
	var x string
	if err := s.raw.QueryRow(fmt.Sprintf("SELECT sessiondb_bm25(messages_fts, %d, 'messages_fts', '%s') FROM messages_fts WHERE messages_fts MATCH ? LIMIT 1", k, mode), q).Scan(&x); err != nil {
		t.Fatalf("%s %q K=%d: %v", mode, q, k, err)
	}
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

// checkSummaries compares, for each query, the K best from the summaries
// with those of a pass over every row, and search pages with plain bm25's;
// summarized says whether the summary must have answered.
func checkSummaries(t *testing.T, s *sbStore, stage string, queries []string, summarized bool) {
	t.Helper()
	for _, q := range queries {
		for _, k := range []int{1, 28, 600} {
			got, gotHits, used := topIDs(t, s, q, k, true)
			want, wantHits, _ := topIDs(t, s, q, k, false)
			// A large K, or a word in few rows whose best rows tie across
			// most ranges, is read in one pass: asserted only on words in
			// thousands of rows, for a page.
			if k <= 28 && !fewRows[q] && used != summarized {
				t.Errorf("%s: %q K=%d: from the summary %v, want %v", stage, q, k, used, summarized)
			}
			if gotHits != wantHits || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %q K=%d: %d hits %.200v\nwant %d hits %.200v", stage, q, k, gotHits, got, wantHits, want)
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
// equal to ORDER BY bm25) from the summary: right after it is made, after
// rows below its through were deleted, updated and inserted and rows were
// appended (the dirty log and the new rows are read whole), past the dirty
// rows a summary is read with (every row is read instead), and after a
// refresh, which empties the log.
func TestSearchRankFromSummaries(t *testing.T) {
	sqlite.SetRankSummaryScale(t, 50, 8)
	s := rankScaleStore(t)
	if err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var terms []string
	rows, err := s.raw.Query("SELECT term FROM sessiondb_rank_terms ORDER BY term")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var term string
		rows.Scan(&term)
		terms = append(terms, term)
	}
	rows.Close()
	// zulu to tango are each in more than half of the rows: no summary.
	if want := []string{"filler", "padding", "quebec", "romeo", "sierra"}; !reflect.DeepEqual(terms, want) {
		t.Fatalf("summarized terms %v, want %v", terms, want)
	}
	queries := []string{"quebec", "romeo", `"sierra"`, "filler", "Padding"}
	checkSummaries(t, s, "fresh", queries, true)
	// Not one summarized word: a pass over every row. (A prefix never asks
	// for a summary: 'topterm' says the query is not one.)
	for _, q := range []string{"zulu", `"quebec romeo"`} {
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
	if err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var left, behind int
	if err := s.raw.QueryRow(`SELECT (SELECT count(*) FROM sessiondb_rank_dirty),
		(SELECT count(*) FROM sessiondb_rank_terms WHERE through < (SELECT MAX(id) FROM messages))`).Scan(&left, &behind); err != nil || left != 0 || behind != 0 {
		t.Fatalf("after a refresh: %d rows in the log, %d summaries behind (%v)", left, behind, err)
	}
	checkSummaries(t, s, "refreshed", queries, true)

	// More changed rows than a search reads range by range: a pass over
	// every row answers, the same.
	s.exec(t, `UPDATE messages SET content = content || ' quebec' WHERE id % 97 = 3`)
	checkSummaries(t, s, "many changes", queries, false)
	if err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, s, "many changes, refreshed", queries, true)

	// Rebuilding the index drops the summaries and makes them again.
	if err := s.db.RebuildFTS(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, s, "rebuilt", queries, true)
}
