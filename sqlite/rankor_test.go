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

// bm25Best returns the ids of the K best rows of q in index table by plain
// bm25, ties with the K-th included, in ORDER BY bm25, rowid order.
func bm25Best(t *testing.T, s *sbStore, table, q string, k int) []int64 {
	t.Helper()
	rows, err := s.raw.Query(fmt.Sprintf(`SELECT rowid, bm25(%[1]s) FROM %[1]s WHERE %[1]s MATCH ? ORDER BY bm25(%[1]s), rowid`, table), q)
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
// returns for q and K on index table: the ids of the K best rows, ties
// included, or not ranked (SQLITE_RANGE).
func orTop(t *testing.T, s *sbStore, table, q string, k int) (ids []int64, ranked bool) {
	t.Helper()
	mode := "topand"
	if strings.Contains(q, " OR ") {
		mode = "topor"
	}
	return modeTop(t, s, table, q, k, "'"+mode+"'")
}

// modeTop runs sessiondb_bm25(table, k, 'table', mode...) for q: the ids
// of the K best rows it returns, or not ranked (SQLITE_RANGE).
func modeTop(t *testing.T, s *sbStore, table, q string, k int, mode string, args ...any) (ids []int64, ranked bool) {
	t.Helper()
	var x string
	err := s.raw.QueryRow(fmt.Sprintf("SELECT sessiondb_bm25(%[1]s, %[2]d, '%[1]s', %[3]s) FROM %[1]s WHERE %[1]s MATCH ? LIMIT 1", table, k, mode), append(args, q)...).Scan(&x)
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
	return textStore(t, 4000, 5, func(i int, rng *rand.Rand) string {
		switch {
		case i%97 == 0:
			return "alpha alpha" // a run of ties
		case i%89 == 0:
			return strings.Repeat("bravo ", 1+i%3)
		case i%61 == 0:
			return "alpha bravo " + strings.Repeat("filler ", rng.Intn(40))
		case i%3 == 0:
			return strings.Repeat("alpha ", 1+rng.Intn(3)) + strings.Repeat("filler ", rng.Intn(60))
		case i%5 == 0:
			return strings.Repeat("filler ", rng.Intn(60)) + strings.Repeat("bravo ", 1+rng.Intn(4))
		case i%7 == 0:
			return "charlie " + strings.Repeat("filler ", rng.Intn(9))
		}
		return "filler delta " + strings.Repeat("echo ", rng.Intn(30))
	})
}

// textStore holds n messages, the i-th (from 1) of text text(i, rng),
// alternately in a cli and a telegram session.
func textStore(t *testing.T, n int, seed int64, text func(i int, rng *rand.Rand) string) *sbStore {
	s := sbOpen(t)
	for i, src := range []string{"cli", "telegram"} {
		s.session(fmt.Sprintf("s%d", i), src)
	}
	rng := rand.New(rand.NewSource(seed))
	tx, err := s.raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := tx.Exec(`INSERT INTO messages(session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)`,
			fmt.Sprintf("s%d", i%2), text(i, rng), 1700000000+i); err != nil {
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
// have answered a page's K (28). A query holding CJK text is searched in
// the CJK index, as its quoted tokens.
func checkOr(t *testing.T, s *sbStore, stage string, queries []string, summarized bool) {
	t.Helper()
	for _, q := range queries {
		table, match := "messages_fts", q
		if sessiondb.ContainsCJK(q) {
			table, match = "messages_fts_cjk", sessiondb.QuoteTokens(q)
		}
		for _, k := range []int{1, 28, 400} {
			got, used := orTop(t, s, table, match, k)
			if want := bm25Best(t, s, table, match, k); !reflect.DeepEqual(got, want) && used {
				t.Errorf("%s: %q K=%d:\n got %.200s\nwant %.200s", stage, q, k, fmt.Sprint(got), fmt.Sprint(want))
			}
			if k == 28 && used != summarized {
				t.Errorf("%s: %q K=%d: ranked from the summaries %v, want %v", stage, q, k, used, summarized)
			}
		}
		for _, o := range []sessiondb.SearchOptions{{Limit: 20}, {Limit: 5, Offset: 60}, {Limit: 10, Sources: []string{"telegram"}}} {
			if got, want := rankGot(t, s, q, o), rankWantIn(t, s, table, match, o); !reflect.DeepEqual(got, want) {
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
	if err := s.raw.QueryRow(`SELECT count(*) FROM sessiondb_rank_terms WHERE fts = 'messages_fts' AND term IN ('alpha', 'bravo')`).Scan(&n); err != nil || n != 2 {
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

// TestSearchMixedFromCountOnlySummaries: a Latin word beside CJK text
// ("alpha 部署") is searched in the CJK index, where the word's summary
// holds rankCountOnly times as many rows a range as a bigram's (it spares
// counting the word's rows): such a query gets plain bm25's K best and
// pages, fresh, and after rows below the summaries' through changed.
func TestSearchMixedFromCountOnlySummaries(t *testing.T) {
	sqlite.SetRankSummaryScale(t, 200, 8)
	s := textStore(t, 3000, 11, func(i int, rng *rand.Rand) string {
		switch {
		case i%53 == 0:
			return "alpha 部署" // a run of ties
		case i%7 == 0:
			return "alpha " + strings.Repeat("部署 ", 1+rng.Intn(3)) + strings.Repeat("filler ", rng.Intn(30))
		case i%3 == 0:
			return strings.Repeat("alpha ", 1+rng.Intn(3)) + strings.Repeat("filler ", rng.Intn(50))
		case i%4 == 0:
			return "服务器" + strings.Repeat("部署", 1+rng.Intn(3)) + strings.Repeat(" filler", rng.Intn(20))
		}
		return "filler " + strings.Repeat("echo ", rng.Intn(30))
	})
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// alpha: about 1,400 rows, in ranges of 512; 部署: ranges of 8.
	var alpha, bigram int
	if err := s.raw.QueryRow(`SELECT (SELECT length(ranges) / 76 FROM sessiondb_rank_terms WHERE fts = 'messages_fts_cjk' AND term = 'alpha'),
		(SELECT length(ranges) / 76 FROM sessiondb_rank_terms WHERE fts = 'messages_fts_cjk' AND term = '部署')`).Scan(&alpha, &bigram); err != nil {
		t.Fatal(err)
	}
	if alpha < 2 || alpha > 4 || bigram < 100 {
		t.Fatalf("alpha's summary on the CJK index: %d ranges (want 2 to 4, of 512 rows); 部署's: %d (want 100 or more, of 8)", alpha, bigram)
	}
	queries := []string{"alpha 部署", "部署 alpha", "filler 部署"}
	checkOr(t, s, "fresh", queries, true)
	s.exec(t, `DELETE FROM messages WHERE id IN (SELECT rowid FROM messages_fts_cjk WHERE messages_fts_cjk MATCH '"alpha" "部署"' ORDER BY rank LIMIT 5)`)
	s.exec(t, `UPDATE messages SET content = 'alpha alpha 部署' WHERE id IN (10, 1500, 2001)`)
	for i := range 20 {
		s.add(sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: []string{"alpha 部署", "部署", "alpha"}[i%3]})
	}
	checkOr(t, s, "changed", queries, true)
}
