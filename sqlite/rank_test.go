package sqlite_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestSearchRankEqualsBM25 checks that a rank-ordered search page is the
// page ORDER BY rank (FTS5's bm25) gives, row for row, although search only
// scores the matches that can reach the page: frequent and rare terms,
// phrases, OR, NOT, prefixes, ties, offsets, source filters, and filtered
// rows among the best matches (inactive, hidden), few and many.
func TestSearchRankEqualsBM25(t *testing.T) {
	s := sbOpen(t)
	rng := rand.New(rand.NewSource(7))
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
		"india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"}
	sources := []string{"cli", "telegram", "discord"}
	for i := range sources {
		s.session(fmt.Sprintf("s%d", i), sources[i])
	}
	for i := 0; i < 1500; i++ {
		var text []string
		if i%10 == 0 {
			text = []string{"alpha", "bravo"} // many identical rows: ties
		} else {
			for n := 1 + rng.Intn(60); n > 0; n-- {
				// Zipf-like: low indexes are frequent.
				text = append(text, words[int(float64(len(words))*rng.Float64()*rng.Float64())])
			}
		}
		role := []string{"user", "assistant"}[i%2]
		s.msg(fmt.Sprintf("s%d", i%3), role, strings.Join(text, " "))
	}
	// Scattered filtered rows, and the 40 best "golf" rows inactive: more
	// than a page's worth of filtered rows ahead of the answer.
	s.exec(t, `UPDATE messages SET active = 0, compacted = 0 WHERE id % 17 = 3`)
	s.exec(t, `UPDATE messages SET display_kind = 'hidden' WHERE id % 23 = 5`)
	s.exec(t, `UPDATE messages SET active = 0, compacted = 0 WHERE id IN (
		SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'golf' ORDER BY rank LIMIT 40)`)

	// want returns the page FTS5 ranks and snippets itself: id, then snippet.
	want := func(q string, o sessiondb.SearchOptions) []string {
		t.Helper()
		cond, args := "", []any{q}
		if o.Sources != nil {
			cond = " AND s.source = ?"
			args = append(args, o.Sources[0])
		}
		rows, err := s.raw.Query(`SELECT m.id, snippet(messages_fts, -1, '>>>', '<<<', '...', 40) FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
			JOIN sessions s ON s.id = m.session_id
			WHERE messages_fts MATCH ? AND (m.active = 1 OR m.compacted = 1)
			AND COALESCE(m.display_kind, '') <> 'hidden'`+cond+` ORDER BY rank LIMIT ? OFFSET ?`,
			append(args, o.Limit, o.Offset)...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		page := []string{}
		for rows.Next() {
			var id int64
			var snippet string
			if err := rows.Scan(&id, &snippet); err != nil {
				t.Fatal(err)
			}
			page = append(page, fmt.Sprint(id), snippet)
		}
		return page
	}
	queries := []string{"alpha", "bravo", "papa", "golf", "alpha bravo", `"alpha bravo"`,
		"oscar OR papa", "alpha NOT bravo", "jul*", "delta echo foxtrot"}
	options := []sessiondb.SearchOptions{
		{Limit: 20},
		{Limit: 5, Offset: 7},
		{Limit: 60},
		{Limit: 10, Sources: []string{"telegram"}},
	}
	for _, q := range queries {
		for _, o := range options {
			got := []string{}
			for _, h := range s.search(t, q, o) {
				got = append(got, fmt.Sprint(h.ID), sbSnippet(h))
			}
			if w := want(q, o); !reflect.DeepEqual(got, w) {
				t.Errorf("Search(%q, limit %d offset %d sources %v)\n got %v\nwant %v", q, o.Limit, o.Offset, o.Sources, got, w)
			}
		}
	}
}
