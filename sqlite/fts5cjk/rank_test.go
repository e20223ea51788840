//go:build sqlite_fts5 || fts5

package fts5cjk_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// TestRankContract checks sessiondb_bm25(t, K) and sessiondb_bm25(t, K,
// 't') row by row against bm25(t): every row among the K best by bm25 (all
// rows tied with the K-th included) gets exactly bm25's value, bit for
// bit, and every other row gets either that value or 1e300. Rows have three
// columns, lengths past 127 tokens (multi-byte docsize varints) and many
// exact ties; queries are single words, phrases, prefixes and expressions
// of several phrases. The function is also called twice per row, as a
// WHERE term and an ORDER BY term are: both calls must give the same value.
// Rows come in ascending rowid order, as searches read them, and also in
// descending order.
func TestRankContract(t *testing.T) {
	db := rankDB(t)
	// The read-ahead keeps only the rows that can still rank while it reads,
	// in threshold passes over a buffer of at least 4,096 rows; 1 and 5 make
	// a pass after almost every row of these small tables.
	for _, flush := range []int{4096, 1, 5} {
		t.Run(fmt.Sprintf("flush%d", flush), func(t *testing.T) {
			defer fts5cjk.SetRankFlushMin(fts5cjk.SetRankFlushMin(flush))
			testRankContract(t, db)
		})
	}
}

func testRankContract(t *testing.T, db *sql.DB) {
	queries := []string{"alpha", "bravo", "juliet", "项目", `"alpha bravo"`, `"数据 项目"`, "ind*",
		"c:golf", "alpha OR juliet", "alpha NOT bravo", "golf hotel", "nomatch"}
	for _, q := range queries {
		for _, k := range []int{1, 5, 28, 400, 5000} {
			calls := []string{fmt.Sprintf("sessiondb_bm25(t, %d)", k), fmt.Sprintf("sessiondb_bm25(t, %d, 't')", k)}
			for i, call := range append(calls, calls[1]) {
				order := "rowid"
				if i == 2 {
					order = "rowid DESC"
				}
				rows, err := db.Query(`SELECT rowid, bm25(t), `+call+`, `+call+` FROM t WHERE t MATCH ? ORDER BY `+order, q)
				if err != nil {
					t.Fatalf("%s MATCH %s: %v", call, q, err)
				}
				type scored struct {
					id              int64
					want, got, got2 float64
				}
				var all []scored
				for rows.Next() {
					var s scored
					if err := rows.Scan(&s.id, &s.want, &s.got, &s.got2); err != nil {
						t.Fatal(err)
					}
					if s.got2 != s.got {
						t.Errorf("%s MATCH %s: row %d: second call %v, first %v", call, q, s.id, s.got2, s.got)
					}
					all = append(all, s)
				}
				if err := rows.Close(); err != nil {
					t.Fatal(err)
				}
				best := make([]float64, len(all))
				for i, s := range all {
					best[i] = s.want
				}
				slices.Sort(best)
				kth := 0.0 // bm25 is negative: the K best are the smallest
				if len(best) > 0 {
					kth = best[min(k, len(best))-1]
				}
				wrong := 0
				for _, s := range all {
					if s.got != s.want && (s.want <= kth || s.got != 1e300) {
						if wrong++; wrong <= 3 {
							t.Errorf("%s MATCH %s: row %d got %v, bm25 %v (K-th best %v)", call, q, s.id, s.got, s.want, kth)
						}
					}
				}
			}
		}
	}
}

// TestRankPlace checks sessiondb_bm25(t, K, 't', 'place'): on every row
// the filtered query returns, in its order, the place is the row's index
// when the rows were read ahead (one phrase), and NULL otherwise.
func TestRankPlace(t *testing.T) {
	db := rankDB(t)
	for _, q := range []string{"alpha", "juliet", "项目", `"alpha bravo"`, "ind*", "c:golf", "alpha OR juliet", "golf hotel"} {
		readAhead := !strings.ContainsAny(q, " ") || strings.HasPrefix(q, `"`)
		for _, k := range []int{1, 5, 28, 400} {
			score := fmt.Sprintf("sessiondb_bm25(t, %d, 't')", k)
			rows, err := db.Query(fmt.Sprintf(`SELECT rowid, sessiondb_bm25(t, %d, 't', 'place') FROM t
				WHERE t MATCH ? AND %s < 1e300 ORDER BY %s`, k, score, score), q)
			if err != nil {
				t.Fatalf("%s, K=%d: %v", q, k, err)
			}
			i := 0
			for ; rows.Next(); i++ {
				var id int64
				var place sql.NullInt64
				if err := rows.Scan(&id, &place); err != nil {
					t.Fatal(err)
				}
				if readAhead && (!place.Valid || place.Int64 != int64(i)) || !readAhead && place.Valid {
					t.Errorf("%s, K=%d: row %d (#%d of the query) has place %v", q, k, id, i, place)
				}
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if i < min(k, 3) {
				t.Errorf("%s, K=%d: only %d rows", q, k, i)
			}
		}
	}
	if _, err := db.Exec(`SELECT sessiondb_bm25(t, 5, 't', 'other') FROM t WHERE t MATCH 'alpha'`); err == nil {
		t.Error("an unknown mode was accepted")
	}
}

// rankDB returns a database holding the table t(a, b, c) that the rank
// tests query: 3,000 rows of a skewed vocabulary, many of them tied.
func rankDB(t *testing.T) *sql.DB {
	t.Helper()
	db := openDB(t, filepath.Join(t.TempDir(), "t.db"))
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(a, b, c, tokenize='cjk_unicode61')`); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(11))
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet 项目 数据")
	text := func(n int) string {
		var w []string
		for range n {
			w = append(w, words[int(float64(len(words))*rng.Float64()*rng.Float64())])
		}
		return strings.Join(w, " ")
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3000; i++ {
		a, b, c := text(1+rng.Intn(40)), text(rng.Intn(5)), ""
		switch {
		case i%9 == 0:
			a, b = "alpha bravo", "" // identical rows: ties
		case i%13 == 0:
			c = text(130 + rng.Intn(300))
		}
		if _, err := tx.Exec(`INSERT INTO t(rowid, a, b, c) VALUES (?, ?, ?, ?)`, i, a, b, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestRankMissingLength: when a matching row's length is missing from
// t_docsize (the index out of step with its lengths), the read-ahead fails
// as corrupt instead of ranking with a made-up length.
func TestRankMissingLength(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "t.db"))
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(a, tokenize='cjk_unicode61')`); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 50; i++ {
		if _, err := db.Exec(`INSERT INTO t(rowid, a) VALUES (?, ?)`, i, "alpha"+strings.Repeat(" filler", i)); err != nil {
			t.Fatal(err)
		}
	}
	query := func() error {
		rows, err := db.Query(`SELECT rowid FROM t WHERE t MATCH 'alpha' AND sessiondb_bm25(t, 5, 't') < 1e300`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}
	if err := query(); err != nil {
		t.Fatal(err)
	}
	// Row 1, the shortest, has the best bound: its length is read first.
	if _, err := db.Exec(`DELETE FROM t_docsize WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	var se sqlite3.Error
	if err := query(); !errors.As(err, &se) || se.Code != sqlite3.ErrCorrupt {
		t.Fatalf("query with a length missing: %v; want SQLITE_CORRUPT", err)
	}
}

// TestRankKOutOfRange: a K of 0, below 0 or above the largest K the
// function keeps scores for (100,000) means "score every row": every row
// gets exactly bm25, none is ranked last, and no K-sized buffer is made.
func TestRankKOutOfRange(t *testing.T) {
	db := rankDB(t)
	for _, k := range []int64{0, -5, 100001, 1<<32 + 3} { // 2^32+3 would be 3 as a C int
		for _, call := range []string{fmt.Sprintf("sessiondb_bm25(t, %d)", k), fmt.Sprintf("sessiondb_bm25(t, %d, 't')", k)} {
			rows, err := db.Query(`SELECT bm25(t), ` + call + ` FROM t WHERE t MATCH 'alpha'`)
			if err != nil {
				t.Fatalf("%s: %v", call, err)
			}
			var n, wrong int
			for rows.Next() {
				var want, got float64
				if err := rows.Scan(&want, &got); err != nil {
					t.Fatal(err)
				}
				n++
				if got != want {
					wrong++
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", call, err)
			}
			if n == 0 || wrong != 0 {
				t.Errorf("%s: %d of %d rows differ from bm25", call, wrong, n)
			}
		}
	}
}

// TestRankTop checks sessiondb_bm25(t, K, 't', 'top') against ORDER BY
// bm25(t), rowid: its "ids" are exactly the rows whose bm25 is at least as
// good as the K-th best (ties with it included), in that order, and its
// "hits" the number of matches; a query
// of several phrases, which is not read ahead, fails with SQLITE_RANGE.
func TestRankTop(t *testing.T) {
	db := rankDB(t)
	for _, flush := range []int{4096, 1, 5} {
		defer fts5cjk.SetRankFlushMin(fts5cjk.SetRankFlushMin(flush))
		for _, q := range []string{"alpha", "bravo", "juliet", "项目", `"alpha bravo"`, `"数据 项目"`, "ind*", "c:golf", "nomatch"} {
			want, scores := bm25Order(t, db, q)
			for _, k := range []int{1, 5, 28, 400, 5000} {
				var top sql.NullString
				err := db.QueryRow(fmt.Sprintf(`SELECT sessiondb_bm25(t, %d, 't', 'top') FROM t WHERE t MATCH ? LIMIT 1`, k), q).Scan(&top)
				if len(want) == 0 {
					if err != sql.ErrNoRows {
						t.Errorf("flush %d, %s, K=%d: %v %v; want no row", flush, q, k, top, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("flush %d, %s, K=%d: %v", flush, q, k, err)
				}
				var res struct {
					Hits int
					IDs  []int64
				}
				if err := json.Unmarshal([]byte(top.String), &res); err != nil {
					t.Fatalf("flush %d, %s, K=%d: %q: %v", flush, q, k, top.String, err)
				}
				got := res.IDs
				if res.Hits != len(want) {
					t.Errorf("flush %d, %s, K=%d: %d hits, want %d", flush, q, k, res.Hits, len(want))
				}
				n := topK(scores, k)
				if !slices.Equal(got, want[:n]) {
					t.Errorf("flush %d, %s, K=%d: top %v\nwant %v", flush, q, k, got, want[:n])
				}
				// Among allowed rowids only: the K best of those, by the
				// same scores, ties with the K-th included; hits still
				// count every row. Dense ids are kept as a bitmap, sparse
				// ones (the last set: ids far apart) as a sorted array.
				for a, allow := range []func(int64) bool{
					func(id int64) bool { return id%3 == 0 },
					func(id int64) bool { return id%7 == 1 || id > 10_000 },
					func(int64) bool { return false },
					func(id int64) bool { return id%5 == 2 },
					func(id int64) bool { return id >= 100 && id < 400 },  // rows on both sides
					func(id int64) bool { return id >= 300 && id%2 == 0 }, // the least id in two bytes
				} {
					var ids []string
					var wantA []int64
					var scoresA []float64
					for i, id := range want {
						if allow(id) {
							wantA = append(wantA, id)
							scoresA = append(scoresA, scores[i])
						}
					}
					for id := int64(-2); id < 12_000; id++ {
						if allow(id) {
							ids = append(ids, strconv.FormatInt(id, 10))
						}
					}
					if a == 3 {
						ids = append(ids, "-9223372036854775808", "9223372036854775807")
					}
					slices.Reverse(ids) // any order
					n := min(k, len(wantA))
					for n > 0 && n < len(wantA) && scoresA[n] == scoresA[n-1] {
						n++
					}
					// as a text, and as sessiondb_idset's blob (with a NULL
					// left out)
					for form, arg := range map[string]string{
						"?2": strings.Join(ids, ","),
						"(SELECT sessiondb_idset(value) FROM json_each(?2))": "[" + strings.Join(append(ids, "null"), ",") + "]",
					} {
						var top string
						err := db.QueryRow(fmt.Sprintf(`SELECT sessiondb_bm25(t, %d, 't', 'top', %s) FROM t WHERE t MATCH ?1 LIMIT 1`, k, form), q, arg).Scan(&top)
						if err != nil {
							t.Fatalf("flush %d, %s, K=%d, allowed %s: %v", flush, q, k, form, err)
						}
						res.IDs = nil
						if err := json.Unmarshal([]byte(top), &res); err != nil {
							t.Fatalf("flush %d, %s, K=%d, allowed %s: %q: %v", flush, q, k, form, top, err)
						}
						if res.Hits != len(want) || !slices.Equal(res.IDs, wantA[:n]) {
							t.Errorf("flush %d, %s, K=%d, allowed %s: %d hits, top %v\nwant %d hits, %v", flush, q, k, form, res.Hits, res.IDs, len(want), wantA[:n])
						}
					}
				}
			}
		}
	}
	var se sqlite3.Error
	err := db.QueryRow(`SELECT sessiondb_bm25(t, 5, 't', 'top') FROM t WHERE t MATCH 'alpha OR bravo' LIMIT 1`).Scan(new(string))
	if !errors.As(err, &se) || se.Code != sqlite3.ErrRange {
		t.Errorf("top of two phrases: %v; want SQLITE_RANGE", err)
	}
	for _, bad := range []struct{ mode, allowed string }{{"top", "1,x"}, {"top", "1,,2"}, {"top", "1 2"}, {"place", "1"}} {
		err := db.QueryRow(`SELECT sessiondb_bm25(t, 5, 't', ?1, ?2) FROM t WHERE t MATCH 'alpha' LIMIT 1`, bad.mode, bad.allowed).Scan(new(sql.NullString))
		if err == nil {
			t.Errorf("%s with allowed rowids %q: no error", bad.mode, bad.allowed)
		}
	}
}

// TestIdSet: sessiondb_idset's blob is a bitmap from the least id when the
// ids are dense, their ascending array when sparse, an empty array for no
// id (NULLs left out); it refuses an argument that is not an integer, and
// sessiondb_bm25 refuses a malformed blob.
func TestIdSet(t *testing.T) {
	db := rankDB(t)
	for ids, want := range map[string]string{
		"[3, 1, 2, 2]":              "42" + "0100000000000000" + "07",
		"[10, null, 17]":            "42" + "0A00000000000000" + "8100",
		"[]":                        "41",
		"[null]":                    "41",
		"[1000000, 1]":              "41" + "0100000000000000" + "40420F0000000000",
		"[-1, 9223372036854775807]": "41" + "FFFFFFFFFFFFFFFF" + "FFFFFFFFFFFFFF7F",
	} {
		var got string
		if err := db.QueryRow(`SELECT hex(sessiondb_idset(value)) FROM json_each(?)`, ids).Scan(&got); err != nil || got != want {
			t.Errorf("sessiondb_idset of %s: %s, %v; want %s", ids, got, err, want)
		}
	}
	if err := db.QueryRow(`SELECT sessiondb_idset(value) FROM json_each('[1, "2"]')`).Scan(new([]byte)); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Errorf("sessiondb_idset of a text: %v; want an error", err)
	}
	for _, bad := range []string{"", "42", "42" + "01000000000000", "41" + "01000000000000", "41" + "0200000000000000" + "0100000000000000", "43"} {
		var se sqlite3.Error
		err := db.QueryRow(`SELECT sessiondb_bm25(t, 5, 't', 'top', unhex(?)) FROM t WHERE t MATCH 'alpha' LIMIT 1`, bad).Scan(new(sql.NullString))
		if !errors.As(err, &se) || se.Code != sqlite3.ErrMismatch {
			t.Errorf("allowed rowids as the blob %q: %v; want SQLITE_MISMATCH", bad, err)
		}
	}
	var top string
	if err := db.QueryRow(`SELECT sessiondb_bm25(t, 5, 't', 'top', unhex('41')) FROM t WHERE t MATCH 'alpha' LIMIT 1`).Scan(&top); err != nil || !strings.Contains(top, `"ids":[]`) {
		t.Errorf("allowed rowids as the empty set: %s, %v; want no id", top, err)
	}
}

// TestRankPhraseFromSummary: 'topterm' on a phrase of several tokens reads
// its rows from a token's range summary without counting them ("hits"
// -1, "seek" 1), ordered by bm25's term g, which is bm25's order for any
// IDF, and equals ORDER BY bm25(t), rowid. Except when two rows' g differ
// by a rounding: here g(3 times in 20 tokens) is one ulp above g(once in
// 4), at an average length of exactly 12, and bm25 (100 rows, the phrase
// in 2) rounds both to one score, a tie it orders by rowid; the function
// must notice and read every row instead ("seek" 0).
func TestRankPhraseFromSummary(t *testing.T) {
	defer fts5cjk.SetRangeReadCost(fts5cjk.SetRangeReadCost(0))
	db := summaryDB(t)
	words := func(s string, n int) string { // s, then y up to n tokens
		w := strings.Fields(s)
		for len(w) < n {
			w = append(w, "y")
		}
		return strings.Join(w, " ")
	}
	texts := []string{words("a b x x", 4), words("a b a b a b", 20)}
	// 12 tokens each: the average stays 12. "c d" is 2 or 3 times in the
	// rows of c's first range (64 rows), once in its second.
	for i := 3; i <= 100; i++ {
		f := 1
		if i <= 66 {
			f = 2 + i%2
		}
		texts = append(texts, words(strings.Repeat("c d ", f)+strings.Repeat("e ", i%5), 12))
	}
	for i, text := range texts {
		if _, err := db.Exec(`INSERT INTO t(rowid, x) VALUES (?, ?)`, i+1, text); err != nil {
			t.Fatal(err)
		}
	}
	summarize(t, db, 100, 64, "a", "b", "c")
	for _, c := range []struct {
		q    string
		seek bool
	}{
		{`"a b"`, false}, // the near-tie: every row read
		{`"b a"`, true},  // a token without a summary: the other one's
		{`"c d"`, true},
		{`"c d c"`, true},
		{`"d e"`, false}, // no token has a summary
	} {
		want, scores := bm25Order(t, db, c.q)
		if len(want) == 0 {
			t.Fatalf("%s: no row", c.q)
		}
		if c.q == `"a b"` && (len(want) != 2 || scores[0] != scores[1] || want[0] != 1) {
			t.Fatalf(`"a b": bm25 %v for rows %v, want a tie led by row 1 (the test's premise)`, scores, want)
		}
		for _, k := range []int{1, 2, 28} {
			res := topTerm(t, db, "t", c.q, k)
			n := topK(scores, k)
			if !slices.Equal(res.IDs, want[:n]) {
				t.Errorf("%s K=%d: top %v, want %v", c.q, k, res.IDs, want[:n])
			}
			if !c.seek && res.Hits != len(want) {
				t.Errorf("%s K=%d: %d hits, want %d", c.q, k, res.Hits, len(want))
			}
			if (res.Seek == 1) != c.seek || (c.seek && res.Hits != -1) {
				t.Errorf("%s K=%d: seek %d, hits %d; want from a summary: %v", c.q, k, res.Seek, res.Hits, c.seek)
			}
		}
	}
}

// TestRankCJKRunFromLeastBigram: a run of CJK characters is read from a
// summary only when every bigram of the run has one, and then from the
// least of them: 数据 is in 240 rows (60 ranges), 据库 in 60 (15 ranges,
// all 数据库), so 数据库 is read from 据库's ranges ("seek" 1, at most 15
// read), with bm25's K best. With 据库's summary gone, no range is read,
// every row is ("seek" 0).
func TestRankCJKRunFromLeastBigram(t *testing.T) {
	defer fts5cjk.SetRangeReadCost(fts5cjk.SetRangeReadCost(1))
	db := summaryDB(t)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE messages_fts_cjk USING fts5(x, tokenize='cjk_unicode61')`); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 240; i++ {
		// 数据 more often and in shorter rows than in the run: its
		// ranges bound far above the run's rows
		text := "数据 数据 数据 数据" + strings.Repeat(" 表格", i%2)
		switch {
		case i%4 == 0 && i <= 20: // the best five, in 据库's first two ranges
			text = "数据库 数据库 数据库"
		case i%4 == 0:
			text = "数据库" + strings.Repeat(" 文件", 5+i%7)
		}
		if _, err := db.Exec(`INSERT INTO messages_fts_cjk(rowid, x) VALUES (?, ?)`, i, text); err != nil {
			t.Fatal(err)
		}
	}
	summarizeIn(t, db, "messages_fts_cjk", 240, 4, "数据", "据库")
	var want []int64
	var scores []float64
	rows, err := db.Query(`SELECT rowid, bm25(messages_fts_cjk) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH '数据库' ORDER BY 2, 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var score float64
		if err := rows.Scan(&id, &score); err != nil {
			t.Fatal(err)
		}
		want, scores = append(want, id), append(scores, score)
	}
	if err := rows.Err(); err != nil || len(want) != 60 {
		t.Fatalf("数据库 in %d rows (%v), want 60", len(want), err)
	}
	for _, c := range []struct {
		drop string
		seek int
	}{{"", 1}, {"据库", 0}} {
		if c.drop != "" {
			if _, err := db.Exec(`DELETE FROM sessiondb_rank_terms WHERE term = ?`, c.drop); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range []int{1, 5} {
			before := fts5cjk.RangesRead()
			res := topTerm(t, db, "messages_fts_cjk", "数据库", k)
			read := fts5cjk.RangesRead() - before
			// from a summary, rows tied with the K-th may be left out
			if n := topK(scores, k); res.Seek != c.seek || len(res.IDs) < k || len(res.IDs) > n || !slices.Equal(res.IDs, want[:len(res.IDs)]) {
				t.Errorf("summary of %q dropped, K=%d: seek %d, top %v; want seek %d, top %v", c.drop, k, res.Seek, res.IDs, c.seek, want[:n])
			}
			if c.seek == 1 && (read == 0 || read > 15) {
				t.Errorf("K=%d: %d ranges read, want 1 to 15 (据库's)", k, read)
			}
			if c.seek == 0 && read != 0 {
				t.Errorf("summary of %q dropped, K=%d: %d ranges read, want none", c.drop, k, read)
			}
		}
	}
}

// TestRankPhraseGivesUp: a phrase whose rows lie in its token's ranges of
// the lowest bounds (a rare phrase of a frequent word) is given up on
// after an eighth of the token's rows were read range by range, and read
// in one pass instead ("seek":0), with the same K best.
func TestRankPhraseGivesUp(t *testing.T) {
	defer fts5cjk.SetRangeReadCost(fts5cjk.SetRangeReadCost(0))
	db := summaryDB(t)
	for i := 1; i <= 200; i++ {
		text := "c" + strings.Repeat(" y", i%7) // short rows: high bounds
		if i > 128 {
			text = strings.Repeat("y ", 40) + "c" // long rows: the last ranges
		}
		if i == 190 || i == 199 {
			text += " z"
		}
		if _, err := db.Exec(`INSERT INTO t(rowid, x) VALUES (?, ?)`, i, text); err != nil {
			t.Fatal(err)
		}
	}
	summarize(t, db, 200, 64, "c")
	want, scores := bm25Order(t, db, `"c z"`)
	res := topTerm(t, db, "t", `"c z"`, 1)
	if n := topK(scores, 1); res.Seek != 0 || !slices.Equal(res.IDs, want[:n]) {
		t.Errorf(`"c z" K=1: seek %d, top %v; want seek 0 (given up), top %v`, res.Seek, res.IDs, want[:n])
	}
}

// TestRankTiesSkipRanges: rows tying with the K-th best in every range of
// a term's summary (equal lengths) are read in rowid order, and the ranges
// after the first of them are skipped: 'topterm' answers from the summary
// ("seek" 1; reading every tied range is more than a quarter of the rows,
// which would give up), with bm25's K best in its order, and no row tied
// with the K-th after it (only the first of them are known). The range of
// the best row
// also holds a tied row of a large rowid (read first, it must not stop the
// reading of the tied rows before it).
func TestRankTiesSkipRanges(t *testing.T) {
	defer fts5cjk.SetRangeReadCost(fts5cjk.SetRangeReadCost(0))
	db := summaryDB(t)
	for i := 1; i <= 800; i++ {
		text := "y y y y y y"
		switch {
		case i == 300 || i == 350:
			text = "c" // the best rows
		case i%4 == 1 || i == 351:
			text = "c y y y" // the tied rows
		case i%4 == 2:
			text = "c" + strings.Repeat(" y", 30+i%5) // far below them
		}
		if _, err := db.Exec(`INSERT INTO t(rowid, x) VALUES (?, ?)`, i, text); err != nil {
			t.Fatal(err)
		}
	}
	summarize(t, db, 800, 8, "c")
	// The fewest ranges that hold the K best: those of rows 300 and 350
	// (the phrase reads both, their bound being highest), then those of
	// the first tied rows, 4 to a range.
	ranges := map[string][]int64{"c": {1, 3, 4}, `"c y"`: {3, 3, 5}}
	for _, q := range []string{"c", `"c y"`} {
		want, _ := bm25Order(t, db, q)
		for i, k := range []int{1, 3, 10} {
			read := fts5cjk.RangesRead()
			res := topTerm(t, db, "t", q, k)
			if n := fts5cjk.RangesRead() - read; n != ranges[q][i] {
				t.Errorf("%s K=%d: %d ranges read, want %d", q, k, n, ranges[q][i])
			}
			if !slices.Equal(res.IDs, want[:k]) {
				t.Errorf("%s K=%d: top %v, want %v", q, k, res.IDs, want[:k])
			}
			if res.Seek != 1 {
				t.Errorf("%s K=%d: not answered from the summary (seek %d)", q, k, res.Seek)
			}
			if q == "c" && res.Hits != len(want) {
				t.Errorf("%s K=%d: %d hits, want %d", q, k, res.Hits, len(want))
			}
		}
	}
}

// TestRankGiveUpShare: a term whose K best lie in its first ranges by
// bound is read from its summary while that costs less than a pass: up to
// a quarter of its rows on the word index, and up to half of them on the
// CJK index (whose pass looks up more lengths). Here the K = 4 best, one
// in each of four ranges of 8 of the term's 64 rows, take 32 rows.
func TestRankGiveUpShare(t *testing.T) {
	defer fts5cjk.SetRangeReadCost(fts5cjk.SetRangeReadCost(0))
	db := summaryDB(t)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE messages_fts_cjk USING fts5(x)`); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"t", "messages_fts_cjk"} {
		for i := 1; i <= 64; i++ {
			text := "c" + strings.Repeat(" y", 20+i%3) // long rows, far below
			if i%8 == 1 && i < 64 {
				text = "c" + strings.Repeat(" y", i/8) // each range's best: 1 to 8 tokens
			}
			if _, err := db.Exec(`INSERT INTO `+table+`(rowid, x) VALUES (?, ?)`, i, text); err != nil {
				t.Fatal(err)
			}
		}
		summarizeIn(t, db, table, 64, 8, "c")
		want, _ := bm25Order(t, db, "c")
		res := topTerm(t, db, table, "c", 4)
		if wantSeek := map[string]int{"t": 0, "messages_fts_cjk": 1}[table]; res.Seek != wantSeek || !slices.Equal(res.IDs, want[:4]) {
			t.Errorf("%s: seek %d, top %v; want seek %d, top %v", table, res.Seek, res.IDs, wantSeek, want[:4])
		}
	}
}

// TestRankOrFromSummaries: 'topor' on "A OR B", and 'topand' on "A B",
// return exactly the K best
// of bm25 (ties with the K-th included, in bm25's order) when A or B has a
// range summary: rows of either word alone, of both, short and long, runs
// of identical rows; changed rows logged in the summaries' ranges and rows
// past their through (read whole); a phrase and a word without a summary
// (read whole). Without any usable summary, or when reading range by range
// would cost more than a pass, it does not rank (SQLITE_RANGE).
func TestRankOrFromSummaries(t *testing.T) {
	defer fts5cjk.SetRangeReadCost(fts5cjk.SetRangeReadCost(0))
	db := summaryDB(t)
	rng := rand.New(rand.NewSource(9))
	text := func(i int) string {
		switch {
		case i%41 == 0:
			return "a a b" // a run of ties, both words
		case i%37 == 0:
			return "b b" // a run of ties
		case i%3 == 0:
			return strings.Repeat("a ", 1+rng.Intn(3)) + strings.Repeat("y ", rng.Intn(40))
		case i%4 == 0:
			return strings.Repeat("y ", rng.Intn(40)) + strings.Repeat("b ", 1+rng.Intn(4))
		case i%11 == 0:
			return "a " + strings.Repeat("y ", rng.Intn(30)) + " b y"
		}
		return "c " + strings.Repeat("y ", rng.Intn(20))
	}
	for i := 1; i <= 900; i++ {
		if _, err := db.Exec(`INSERT INTO t(rowid, x) VALUES (?, ?)`, i, text(i)); err != nil {
			t.Fatal(err)
		}
	}
	summarize(t, db, 800, 8, "a", "b") // in ranges of 8 rows
	// Rows changed below through, logged: a's and b's best rows made
	// worse, rows made the best.
	rewriteLogged(t, db, []rowText{{123, "b b b"}, {124, "y y y y y y y y y y y a"}, {369, "a"}, {410, "a b"}, {656, ""}})
	top := func(q string, k int) ([]int64, error) {
		mode := "topand"
		if strings.Contains(q, " OR ") {
			mode = "topor"
		}
		res, err := topOf(t, db, fmt.Sprintf(`SELECT sessiondb_bm25(t, %d, 't', '%s') FROM t WHERE t MATCH ? LIMIT 1`, k, mode), q)
		if err != nil {
			return nil, err
		}
		if res.Seek != 1 || res.Hits != -1 {
			t.Errorf("%s K=%d: seek %d, hits %d; want 1, -1 (not counted)", q, k, res.Seek, res.Hits)
		}
		return res.IDs, nil
	}
	for _, q := range []string{"a OR b", "b OR a", `a OR "b y"`, `"y b" OR a`, "b OR c", "a OR zz", "a OR a",
		"a b", "b AND a", `a "b y"`, "y b", "a y"} {
		want, scores := bm25Order(t, db, q)
		for _, k := range []int{1, 5, 28, 200} {
			got, err := top(q, k)
			if err != nil {
				t.Fatalf("%s K=%d: %v", q, k, err)
			}
			if n := topK(scores, k); !slices.Equal(got, want[:n]) {
				t.Errorf("%s K=%d: top %v, want %v", q, k, got, want[:n])
			}
		}
	}
	isRange := func(err error) bool {
		var se sqlite3.Error
		return errors.As(err, &se) && se.Code == sqlite3.ErrRange
	}
	for _, q := range []string{"c OR y", `"a y" OR zz`, "c y"} {
		if _, err := top(q, 28); !isRange(err) {
			t.Errorf("%s (no summary): %v, want SQLITE_RANGE", q, err)
		}
	}
	// A range reckoned as costly as a pass over a million rows: the
	// function gives up on the first range it would read; A AND B then
	// reads every row holding both instead of span by span, the same.
	fts5cjk.SetRangeReadCost(1 << 20)
	if _, err := top("a OR zz", 28); !isRange(err) {
		t.Errorf("a OR zz, ranges too costly: %v, want SQLITE_RANGE", err)
	}
	for _, q := range []string{"a b", "b AND a"} {
		want, scores := bm25Order(t, db, q)
		for _, k := range []int{1, 28} {
			got, err := top(q, k)
			if n := topK(scores, k); err != nil || !slices.Equal(got, want[:n]) {
				t.Errorf("%s K=%d, spans too costly: top %v (%v), want %v", q, k, got, err, want[:n])
			}
		}
	}
}

// summaryDB opens a database holding t, an FTS5 table of one column, and
// the summaries' tables as sessiondb makes them (not their triggers, which
// need a messages table).
func summaryDB(t *testing.T) *sql.DB {
	t.Helper()
	db := openDB(t, filepath.Join(t.TempDir(), "p.db"))
	ddl, err := os.ReadFile(filepath.Join("..", "schema", "rank.sql"))
	if err != nil {
		t.Fatal(err)
	}
	var code []string
	for _, line := range strings.Split(string(ddl), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			code = append(code, line)
		}
	}
	stmts := []string{`CREATE VIRTUAL TABLE t USING fts5(x)`, `CREATE TABLE state_meta(key TEXT PRIMARY KEY, value TEXT)`}
	for _, stmt := range strings.Split(strings.Join(code, "\n"), ";") {
		if strings.Contains(stmt, "CREATE TABLE") {
			stmts = append(stmts, stmt)
		}
	}
	if len(stmts) != 5 {
		t.Fatalf("rank.sql: %d tables, want 3", len(stmts)-2)
	}
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// summarize stores the summaries of terms of t through rowid through, in
// ranges of per rows, as seen at the dirty log's start.
func summarize(t *testing.T, db *sql.DB, through, per int, terms ...string) {
	t.Helper()
	summarizeIn(t, db, "t", through, per, terms...)
}

// summarizeIn is summarize for the FTS5 table named table.
func summarizeIn(t *testing.T, db *sql.DB, table string, through, per int, terms ...string) {
	t.Helper()
	for _, term := range terms {
		if _, err := db.Exec(fmt.Sprintf(`INSERT INTO sessiondb_rank_terms VALUES ('%[3]s', ?1, %[1]d, 0,
			(SELECT sessiondb_bm25(%[3]s, %[2]d, '%[3]s', 'ranges', '0,%[1]d') FROM %[3]s WHERE %[3]s MATCH '"' || ?1 || '"' LIMIT 1))`, through, per, table), term); err != nil {
			t.Fatal(err)
		}
	}
}

// rowText is a row of t and its new text.
type rowText struct {
	id   int
	text string
}

// rewriteLogged gives rows of t new texts and logs their ids in
// sessiondb_rank_dirty, as the triggers on messages do.
func rewriteLogged(t *testing.T, db *sql.DB, rows []rowText) {
	t.Helper()
	for _, r := range rows {
		if _, err := db.Exec(`UPDATE t SET x = ? WHERE rowid = ?`, r.text, r.id); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO sessiondb_rank_dirty(id) VALUES (?)`, r.id); err != nil {
			t.Fatal(err)
		}
	}
}

// topResult is the JSON of sessiondb_bm25's 'top' modes.
type topResult struct {
	Hits int
	Seek int
	IDs  []int64
}

// topTerm returns sessiondb_bm25(table, k, 'table', 'topterm') for q.
func topTerm(t *testing.T, db *sql.DB, table, q string, k int) topResult {
	t.Helper()
	res, err := topOf(t, db, fmt.Sprintf(`SELECT sessiondb_bm25(%[1]s, %[2]d, '%[1]s', 'topterm') FROM %[1]s WHERE %[1]s MATCH ? LIMIT 1`, table, k), q)
	if err != nil {
		t.Fatalf("%s K=%d: %v", q, k, err)
	}
	return res
}

// topOf runs stmt, a call of one of sessiondb_bm25's 'top' modes on a
// query's first row, and decodes its JSON; or returns the call's error.
func topOf(t *testing.T, db *sql.DB, stmt string, args ...any) (topResult, error) {
	t.Helper()
	var x string
	if err := db.QueryRow(stmt, args...).Scan(&x); err != nil {
		return topResult{}, err
	}
	return decodeTop(t, x), nil
}

// decodeTop decodes the JSON of a 'top' mode.
func decodeTop(t *testing.T, x string) topResult {
	t.Helper()
	var res topResult
	if err := json.Unmarshal([]byte(x), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// bm25Order returns the rows of t matching q in the order of ORDER BY
// bm25(t), rowid, and their scores.
func bm25Order(t *testing.T, db *sql.DB, q string) (ids []int64, scores []float64) {
	t.Helper()
	return idScores(t, db, `SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid`, q)
}

// queryer is a *sql.DB or a *sql.Conn.
type queryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// execer is a *sql.DB, a *sql.Conn or a *sql.Tx.
type execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

// idScores runs stmt, whose rows are (rowid, score), and returns both.
func idScores(t *testing.T, q queryer, stmt string, args ...any) (ids []int64, scores []float64) {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var score float64
		if err := rows.Scan(&id, &score); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		scores = append(scores, score)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids, scores
}

// execAll runs each statement on c.
func execAll(t *testing.T, c execer, stmts ...string) {
	t.Helper()
	for _, stmt := range stmts {
		if _, err := c.ExecContext(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// topK is how many of the rows ordered by scores are among the K best:
// K, and the rows tied with the K-th.
func topK(scores []float64, k int) int {
	n := min(k, len(scores))
	for n < len(scores) && scores[n] == scores[n-1] {
		n++
	}
	return n
}

// TestRankSumFromSummaries: 'topsum', the terms of a prefix ORed and
// ranked as the one phrase of the prefix, gets exactly bm25's K best of
// the prefix (ties included): rows holding one, two or three of the terms,
// a term without a summary, rows changed below the summaries' through
// (logged) and rows past it. Terms that are not the prefix's (one left
// out, one added, a term of two tokens), no summary, or ranges too costly
// to read: not ranked (SQLITE_RANGE).
func TestRankSumFromSummaries(t *testing.T) {
	defer fts5cjk.SetRangeReadCost(fts5cjk.SetRangeReadCost(0))
	db := summaryDB(t)
	rng := rand.New(rand.NewSource(4))
	text := func(i int) string {
		filler := strings.Repeat("y ", rng.Intn(30))
		switch {
		case i%41 == 0:
			return "ab abc" // a run of ties, two terms
		case i%43 == 0:
			return "abc abd " + filler // two terms, not the first
		case i%47 == 0:
			return "ab abc abd " + filler // three terms
		case i%3 == 0:
			return strings.Repeat("ab ", 1+rng.Intn(3)) + filler
		case i%4 == 0:
			return filler + strings.Repeat("abc ", 1+rng.Intn(4))
		case i%13 == 0:
			return "abd " + filler // abd: no summary
		}
		return "c " + filler
	}
	for i := 1; i <= 900; i++ {
		if _, err := db.Exec(`INSERT INTO t(rowid, x) VALUES (?, ?)`, i, text(i)); err != nil {
			t.Fatal(err)
		}
	}
	summarize(t, db, 800, 8, "ab", "abc")
	rewriteLogged(t, db, []rowText{{123, "abc abc abc"}, {124, "y y y y y y y y ab"}, {369, "ab abd"}, {410, "abd abc ab"}, {656, ""}})
	top := func(terms []string, prefix string, k int) ([]int64, error) {
		res, err := topOf(t, db, fmt.Sprintf(`SELECT sessiondb_bm25(t, %d, 't', 'topsum', NULL, ?) FROM t WHERE t MATCH ? LIMIT 1`, k),
			prefix, `"`+strings.Join(terms, `" OR "`)+`"`)
		if err != nil {
			return nil, err
		}
		if res.Seek != 1 || res.Hits != -1 {
			t.Errorf("%s K=%d: seek %d, hits %d; want 1, -1 (not counted)", terms, k, res.Seek, res.Hits)
		}
		return res.IDs, nil
	}
	for _, c := range []struct {
		prefix string
		terms  []string
	}{{"ab", []string{"ab", "abc", "abd"}}, {"abc", []string{"abc"}}, {"a", []string{"ab", "abc", "abd"}}} {
		want, scores := bm25Order(t, db, c.prefix+"*")
		for _, k := range []int{1, 5, 28, 200} {
			got, err := top(c.terms, c.prefix, k)
			if n := topK(scores, k); err != nil || !slices.Equal(got, want[:n]) {
				t.Errorf("%s* K=%d: top %v (%v), want %v", c.prefix, k, got, err, want[:n])
			}
		}
	}
	isRange := func(err error) bool {
		var se sqlite3.Error
		return errors.As(err, &se) && se.Code == sqlite3.ErrRange
	}
	for _, c := range []struct {
		prefix string
		terms  []string
	}{
		{"ab", []string{"ab", "abc"}},             // one left out
		{"ab", []string{"ab", "abc", "abd", "c"}}, // one added
		{"ab", []string{"abc", "ab", "abd"}},      // out of order
		{"ab", []string{"ab", "ab", "abd"}},       // a term's start taken for it
		{"ab", []string{"ab", "abc", "abd y"}},    // two tokens
		{"abd", []string{"abd"}},                  // one term: no summary
		{"c", []string{"c"}},                      // no summary
	} {
		if _, err := top(c.terms, c.prefix, 28); !isRange(err) {
			t.Errorf("%s* as %q: %v, want SQLITE_RANGE", c.prefix, c.terms, err)
		}
	}
	fts5cjk.SetRangeReadCost(1 << 20)
	if _, err := top([]string{"ab", "abc", "abd"}, "ab", 28); !isRange(err) {
		t.Errorf("ab*, ranges too costly: %v, want SQLITE_RANGE", err)
	}
}

// TestRankAllFromSummaries: 'topall', a query of several terms each
// counted from its summary (bm25's IDFs) and every matching row read
// once, gets exactly bm25's K best (ties included), with rows changed
// below the summaries' through (logged: those ranges counted by FTS5),
// rows past it, and a term without a summary (counted by a pass); a
// summary whose count is made wrong shows in the order, so the count does
// come from it. A phrase of several tokens, or no term with a summary: not
// ranked (SQLITE_RANGE).
func TestRankAllFromSummaries(t *testing.T) {
	defer fts5cjk.SetRangeReadCost(fts5cjk.SetRangeReadCost(0))
	db := summaryDB(t)
	rng := rand.New(rand.NewSource(3))
	for i := 1; i <= 900; i++ {
		var w []string
		for range 1 + rng.Intn(7) {
			w = append(w, []string{"a", "b", "c", "y", "y", "y", "y", "y", "y", "y"}[rng.Intn(10)]) // a, b, c: in under half the rows
		}
		if i%9 == 0 {
			w = []string{"a", "b", "c"} // a run of ties
		}
		if _, err := db.Exec(`INSERT INTO t(rowid, x) VALUES (?, ?)`, i, strings.Join(w, " ")); err != nil {
			t.Fatal(err)
		}
	}
	summarize(t, db, 800, 8, "a", "b", "c")
	// 40 rows below through lose a (logged: their ranges counted by FTS5)
	if _, err := db.Exec(`CREATE TEMP TABLE lost AS SELECT rowid AS id FROM t WHERE t MATCH 'a' AND rowid <= 800 AND rowid % 9 <> 0 LIMIT 40`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE t SET x = 'y' WHERE rowid IN (SELECT id FROM lost)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO sessiondb_rank_dirty(id) SELECT id FROM lost`); err != nil {
		t.Fatal(err)
	}
	rewriteLogged(t, db, []rowText{{123, "b b b"}, {124, "y c"}, {369, "a"}, {656, ""}})
	top := func(q string, k int) ([]int64, error) {
		res, err := topOf(t, db, fmt.Sprintf(`SELECT sessiondb_bm25(t, %d, 't', 'topall', NULL, NULL, ?1) FROM t WHERE t MATCH ?1 LIMIT 1`, k), q)
		return res.IDs, err
	}
	queries := []string{"a b", "a OR b", "b c", "a OR c OR b", "a b NOT c", "c AND (a OR b)", "b a c", "a y", "y OR b"}
	matches := func(q string) bool {
		want, scores := bm25Order(t, db, q)
		ok := true
		for _, k := range []int{1, 5, 28, 200} {
			got, err := top(q, k)
			if err != nil {
				t.Fatalf("%s K=%d: %v", q, k, err)
			}
			ok = ok && slices.Equal(got, want[:topK(scores, k)])
		}
		return ok
	}
	for _, q := range queries {
		if !matches(q) {
			t.Errorf("%s: 'topall' differs from bm25's K best", q)
		}
	}
	for _, q := range []string{`a "b c"`, "y AND y"} {
		var se sqlite3.Error
		if _, err := top(q, 28); !errors.As(err, &se) || se.Code != sqlite3.ErrRange {
			t.Errorf("%s (a phrase, or no term with a summary): %v, want SQLITE_RANGE", q, err)
		}
	}
	// a's summary counting 200 rows too many: its IDF falls, and so does
	// its weight against b's.
	var blob []byte
	if err := db.QueryRow(`SELECT ranges FROM sessiondb_rank_terms WHERE term = 'a'`).Scan(&blob); err != nil {
		t.Fatal(err)
	}
	blob[len(blob)-76+8] += 200 // the last range's n (4 bytes, little-endian, after its 8-byte hi); no row of it changed
	if _, err := db.Exec(`UPDATE sessiondb_rank_terms SET ranges = ? WHERE term = 'a'`, blob); err != nil {
		t.Fatal(err)
	}
	if matches("a OR b") {
		t.Error("a OR b: a's count made wrong in its summary, yet the K best are bm25's: the count is not read from it")
	}
}

// TestRankAllTiesPastBuffer: 'topall' with more rows tied at the K-th best
// than its buffer first holds (256) returns every one of them.
func TestRankAllTiesPastBuffer(t *testing.T) {
	defer fts5cjk.SetRangeReadCost(fts5cjk.SetRangeReadCost(0))
	db := summaryDB(t)
	for i := 1; i <= 900; i++ {
		x := "a y y y b y"
		if i%2 == 0 {
			x = "a b" // 450 rows tied at the best
		}
		if _, err := db.Exec(`INSERT INTO t(rowid, x) VALUES (?, ?)`, i, x); err != nil {
			t.Fatal(err)
		}
	}
	summarize(t, db, 900, 8, "a", "b")
	want, scores := bm25Order(t, db, "a b")
	res, err := topOf(t, db, `SELECT sessiondb_bm25(t, 5, 't', 'topall', NULL, NULL, ?1) FROM t WHERE t MATCH ?1 LIMIT 1`, "a b")
	if err != nil {
		t.Fatal(err)
	}
	if n := topK(scores, 5); n != 450 || !slices.Equal(res.IDs, want[:n]) {
		t.Errorf("a b K=5: %d rows, want the %d tied with the best", len(res.IDs), n)
	}
}

// TestRankReusesBuffers: a ranking takes over the row and instance
// buffers that an earlier one on the same connection freed (rank.c,
// rankSpareTake), whether it then needs more room or less, and ranks and
// lists instances as a fresh one does: exactly ORDER BY bm25's K best, and
// instances from which sessiondb_snippet_at makes snippet()'s snippets.
func TestRankReusesBuffers(t *testing.T) {
	db := rankDB(t)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Every row buffered before the first pass: the buffers outgrow what
	// a smaller ranking left.
	defer fts5cjk.SetRankFlushMin(fts5cjk.SetRankFlushMin(1 << 20))
	queries := []string{"juliet", "alpha", "项目", "alpha", "juliet", `"alpha bravo"`}
	before := fts5cjk.SparesTaken()
	for _, q := range queries {
		want, scores := bm25Order(t, db, q)
		var x string
		if err := conn.QueryRowContext(ctx, `SELECT sessiondb_bm25(t, 7, 't', 'top') FROM t WHERE t MATCH ? LIMIT 1`, q).Scan(&x); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var res topInst
		if err := json.Unmarshal([]byte(x), &res); err != nil {
			t.Fatal(err)
		}
		if n := topK(scores, 7); !slices.Equal(res.IDs, want[:n]) {
			t.Fatalf("%s: top %v\nwant %v", q, res.IDs, want[:n])
		}
		checkSnippetsAt(t, db, "t", "a, b, c", q, res)
	}
	// Each ranking after the first takes both buffers of the one before.
	if got, want := fts5cjk.SparesTaken()-before, int64(2*(len(queries)-1)); got < want {
		t.Fatalf("%d buffers taken over in %d rankings on one connection, want %d or more", got, len(queries), want)
	}
}
