package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// appendTexts appends texts as user messages of a new session, one second
// apart, and returns their ids.
func appendTexts(t *testing.T, db *DB, texts []string) []int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli", StartedAt: 1.7e9}); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(texts))
	for i, text := range texts {
		id, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: text, Timestamp: 1.7e9 + float64(i+1)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

// hitIndexes returns the hits as indexes into ids (-1 for an unknown id).
func hitIndexes(hits []sessiondb.SearchHit, ids []int64) []int {
	out := make([]int, len(hits))
	for i, h := range hits {
		out[i] = slices.Index(ids, h.ID)
	}
	return out
}

// TestSearchRankOrder: a one-word query ranks by bm25's weight of the word
// in the row (impact tiers, DESIGN.md "Ranking"), then shorter rows, then
// by id, from the tokens of a few matches or tier by tier for many; the
// length is that of the index searched; a word too long for impact markers
// is ranked by ts_rank.
func TestSearchRankOrder(t *testing.T) {
	w43 := strings.Repeat("w", maxLexemeBytes-3) // the longest word with impact markers
	w44 := strings.Repeat("w", maxLexemeBytes-2) // the shortest without
	filler := func(n int) string { return strings.Repeat(" filler", n) }
	cjkTail := " 项目项目项目项目项目项目" // one word, eleven bigrams
	// Enough matches that "docker" is ranked tier by tier: many of tier 23,
	// low ones of no tier, longer than the rows of a case.
	var many, low []string
	for range 70 {
		many = append(many, "docker"+filler(40))
	}
	for range 5 {
		low = append(low, "docker"+filler(300))
	}
	for _, tc := range []struct {
		name   string
		q      string
		texts  []string // appended in this order
		limit  int
		offset int
		want   []int // the hits, as indexes of texts
	}{
		{"the longest word with impact markers: three times in three words before once in one", w43,
			[]string{w43, w43 + " " + w43 + " " + w43}, 10, 0, []int{1, 0}},
		{"a word too long for impact markers: twice before once in as many words", w44,
			[]string{w44 + " y z", w44 + " " + w44 + " x"}, 10, 0, []int{1, 0}},
		// a prefix query: the word of 2044 bytes has no tier, the other word's
		// is 30
		{"a word too long for impact markers ranks after a prefix's other words", "ww*",
			[]string{w44, "wwx" + filler(10)}, 10, 0, []int{1, 0}},
		// impact 1.03 (tier 20, the lowest ranked) before impact 0.81
		{"the lowest tier ranks before the rows below it", "docker",
			[]string{"docker" + filler(99), "docker docker" + filler(138)}, 10, 0, []int{1, 0}},
		// the same, ranked tier by tier: tier 20 is read as a tier, not
		// with the rows below it
		{"the lowest tier ranks before the rows below it, tier by tier", "docker",
			append(append(append([]string{}, many...), "docker"+filler(99), "docker docker"+filler(138)), low...), 2, 70, []int{71, 70}},
		// the same tier in the word index; more bigrams would rank the
		// first row lower
		{"a word ranks by the word index's length", "docker",
			[]string{"docker" + cjkTail, "docker x"}, 10, 0, []int{0, 1}},
		{"a word ranks by the word index's length, tier by tier", "docker",
			append(append([]string{}, many...), "docker"+cjkTail, "docker x"), 2, 0, []int{70, 71}},
		// two words and eight bigrams, four words and four bigrams
		{"CJK ranks by the bigram index's length", "项目",
			[]string{"项目 我们在大别山里部署", "项目 a b c"}, 10, 0, []int{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openInternal(t, Options{})
			ids := appendTexts(t, db, tc.texts)
			hits, err := db.Search(context.Background(), tc.q, sessiondb.SearchOptions{Limit: tc.limit, Offset: tc.offset})
			if err != nil {
				t.Fatal(err)
			}
			if got := hitIndexes(hits, ids); !slices.Equal(got, tc.want) {
				t.Errorf("hits %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSearchLossyRows: rows whose word tsvector lost positions (a lexeme
// past its 256th, a token past position 16383) are found by their lexemes
// and checked in Go on their tokens: a phrase they hold only in another
// order is no hit, and a page whose first rows are rejected fills from the
// rows after them.
func TestSearchLossyRows(t *testing.T) {
	db := openInternal(t, Options{})
	lossy := strings.Repeat("filler ", 17000) + "needle haystack"
	ids := appendTexts(t, db, []string{"haystack needle", lossy, lossy, lossy})
	var states []int
	rows, err := db.pool.Query(context.Background(), "SELECT tsv_state FROM messages ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s int
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		states = append(states, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []int{stateExact, statePositions, statePositions, statePositions}; !slices.Equal(states, want) {
		t.Fatalf("tsv_state %v, want %v: the rows are not the lossy ones the test is about", states, want)
	}
	for _, tc := range []struct {
		name string
		q    string
		o    sessiondb.SearchOptions
		want []int
	}{
		{"a phrase in another order is no hit", `"haystack needle"`, sessiondb.SearchOptions{}, []int{0}},
		{"a phrase past position 16383", `"needle haystack"`, sessiondb.SearchOptions{Sort: "oldest"}, []int{1, 2, 3}},
		{"a phrase across position 16383", `"filler needle"`, sessiondb.SearchOptions{Sort: "oldest"}, []int{1, 2, 3}},
		{"a page past rejected rows", `"haystack needle"`, sessiondb.SearchOptions{Sort: "newest", Limit: 1}, []int{0}},
		{"a page past rows rejected by an OR", `"haystack needle" OR "filler haystack"`, sessiondb.SearchOptions{Sort: "newest", Limit: 1}, []int{0}},
		{"a page of lossy rows", `"needle haystack"`, sessiondb.SearchOptions{Sort: "newest", Limit: 2, Offset: 1}, []int{2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := db.Search(context.Background(), tc.q, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := hitIndexes(hits, ids); !slices.Equal(got, tc.want) {
				t.Errorf("hits %v, want %v", got, tc.want)
			}
		})
	}
}
