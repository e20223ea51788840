package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"
	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// bm25Best returns the ids of the K best rows of q by plain bm25, ties
// with the K-th included, in ORDER BY bm25, rowid order.
func bm25Best(t *testing.T, s *sbStore, q string, k int) []int64 {
	t.Helper()
	rows, err := s.raw.Query(`SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ? ORDER BY bm25(messages_fts), rowid`, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	var last float64
	for rows.Next() {
		var id int64
		var score float64
		if err := rows.Scan(&id, &score); err != nil {
			t.Fatal(err)
		}
		if len(ids) >= k && score != last {
			break
		}
		ids, last = append(ids, id), score
	}
	return ids
}

// orTop is what sessiondb_bm25's 'topor' (for "A OR B", else 'topand')
// returns for q and K: the ids of the K best rows, ties included, or not
// ranked (SQLITE_RANGE).
func orTop(t *testing.T, s *sbStore, q string, k int) (ids []int64, ranked bool) {
	t.Helper()
	mode := "topand"
	if strings.Contains(q, " OR ") {
		mode = "topor"
	}
	var x string
	err := s.raw.QueryRow(fmt.Sprintf("SELECT sessiondb_bm25(messages_fts, %d, 'messages_fts', '%s') FROM messages_fts WHERE messages_fts MATCH ? LIMIT 1", k, mode), q).Scan(&x)
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrRange {
		return nil, false
	}
	if err == sql.ErrNoRows {
		return nil, true // no row: the function never runs, the page is empty
	}
	if err != nil {
		t.Fatalf("%s %q K=%d: %v", mode, q, k, err)
	}
	var v struct {
		Seek int     `json:"seek"`
		IDs  []int64 `json:"ids"`
	}
	if err := json.Unmarshal([]byte(x), &v); err != nil || v.Seek != 1 {
		t.Fatalf("%s %q K=%d: %s (%v)", mode, q, k, x, err)
	}
	return v.IDs, true
}

// orStore holds "alpha" and "bravo" in rows of every shape: either word
// alone, short or long, once or often, both in a few rows, runs of
// identical rows (ties), and the best rows of each spread over the ids.
func orStore(t *testing.T) *sbStore {
	s := sbOpen(t)
	for i, src := range []string{"cli", "telegram"} {
		s.session(fmt.Sprintf("s%d", i), src)
	}
	rng := rand.New(rand.NewSource(5))
	tx, err := s.raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4000; i++ {
		var text string
		switch {
		case i%97 == 0:
			text = "alpha alpha" // a run of ties
		case i%89 == 0:
			text = strings.Repeat("bravo ", 1+i%3)
		case i%61 == 0:
			text = "alpha bravo " + strings.Repeat("filler ", rng.Intn(40))
		case i%3 == 0:
			text = strings.Repeat("alpha ", 1+rng.Intn(3)) + strings.Repeat("filler ", rng.Intn(60))
		case i%5 == 0:
			text = strings.Repeat("filler ", rng.Intn(60)) + strings.Repeat("bravo ", 1+rng.Intn(4))
		case i%7 == 0:
			text = "charlie " + strings.Repeat("filler ", rng.Intn(9))
		default:
			text = "filler delta " + strings.Repeat("echo ", rng.Intn(30))
		}
		if _, err := tx.Exec(`INSERT INTO messages(session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)`,
			fmt.Sprintf("s%d", i%2), text, 1700000000+i); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	s.exec(t, `UPDATE sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE session_id = sessions.id)`)
	return s
}

// checkOr compares the K best of 'topor' and 'topand' with plain bm25's, and search
// pages with ORDER BY bm25; summarized says whether the summaries must
// have answered a page's K (28).
func checkOr(t *testing.T, s *sbStore, stage string, queries []string, summarized bool) {
	t.Helper()
	for _, q := range queries {
		for _, k := range []int{1, 28, 400} {
			got, used := orTop(t, s, q, k)
			if want := bm25Best(t, s, q, k); !reflect.DeepEqual(got, want) && used {
				t.Errorf("%s: %q K=%d:\n got %.200s\nwant %.200s", stage, q, k, fmt.Sprint(got), fmt.Sprint(want))
			}
			if k == 28 && used != summarized {
				t.Errorf("%s: %q K=%d: ranked from the summaries %v, want %v", stage, q, k, used, summarized)
			}
		}
		for _, o := range []sessiondb.SearchOptions{{Limit: 20}, {Limit: 5, Offset: 60}, {Limit: 10, Sources: []string{"telegram"}}} {
			if got, want := rankGot(t, s, q, o), rankWant(t, s, q, o); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: Search(%q, limit %d offset %d sources %v)\n got %.300v\nwant %.300v", stage, q, o.Limit, o.Offset, o.Sources, got, want)
			}
		}
	}
}

// TestSearchRankOrFromSummaries: "A OR B" and "A B" (AND) with a summary
// for A or B get
// exactly the K best of plain bm25 (ties included) and the same pages,
// fresh, after rows below the summaries' through were deleted, rewritten
// and appended (read whole), after a refresh, and when neither has a
// usable summary (not ranked: the statement answers).
func TestSearchRankOrFromSummaries(t *testing.T) {
	sqlite.SetRankSummaryScale(t, 200, 8)
	s := orStore(t)
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.raw.QueryRow(`SELECT count(*) FROM sessiondb_rank_terms WHERE term IN ('alpha', 'bravo')`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d of alpha and bravo summarized (%v), want both", n, err)
	}
	queries := []string{"alpha OR bravo", "bravo OR alpha", "Alpha OR charlie", "charlie OR bravo",
		`alpha OR "bravo filler"`, "alpha OR nothing", "alpha OR alpha",
		"alpha bravo", "bravo AND Alpha", `alpha "bravo filler"`, "filler bravo", "charlie bravo", "alpha nothing"}
	checkOr(t, s, "fresh", queries, true)
	// Neither summarized: not ranked (the statement's pass answers).
	checkOr(t, s, "no summary", []string{`"alpha alpha" OR "bravo bravo"`, `"alpha filler" OR nothing`, `"alpha filler" "filler filler"`}, false)

	s.exec(t, `DELETE FROM messages WHERE id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'alpha OR bravo' ORDER BY rank LIMIT 5)`)
	s.exec(t, `UPDATE messages SET content = 'bravo bravo bravo' WHERE id IN (10, 1500, 3001)`)
	s.exec(t, `UPDATE messages SET content = 'alpha bravo' WHERE id IN (20, 2222)`)
	for i := range 30 {
		s.add(sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: []string{"alpha", "bravo alpha", "bravo bravo", "charlie"}[i%4]})
	}
	checkOr(t, s, "changed", queries, true)
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkOr(t, s, "refreshed", queries, true)
}
