package sqlite_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// sumTop is what sessiondb_bm25's 'topsum' returns for the terms of a
// prefix, ORed, checked against prefix: the ids of the K best rows, ties
// included, or not ranked (SQLITE_RANGE).
func sumTop(t *testing.T, s *sbStore, terms []string, prefix string, k int) (ids []int64, ranked bool) {
	t.Helper()
	q := make([]string, len(terms))
	for i, w := range terms {
		q[i] = `"` + w + `"`
	}
	return modeTop(t, s, "messages_fts", strings.Join(q, " OR "), k, "'topsum', NULL, ?", prefix)
}

// prefixTermsOf lists the terms of the word index beginning with prefix,
// from fts5vocab (every one of them, read from their doclists).
func prefixTermsOf(t *testing.T, s *sbStore, prefix string) []string {
	t.Helper()
	s.exec(t, `CREATE VIRTUAL TABLE IF NOT EXISTS temp.words USING fts5vocab(main, messages_fts, row)`)
	rows, err := s.raw.Query(`SELECT term FROM temp.words WHERE term >= ? ORDER BY term`, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var w string
		if err := rows.Scan(&w); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(w, prefix) {
			break
		}
		out = append(out, w)
	}
	return out
}

// TestSearchPrefixFromSummaries: a prefix stands for the terms it
// begins (sessiondb_prefix_terms): one term is searched as that term, and
// several, each a token, are ranked as one phrase from their summaries
// ('topsum'). Either way the K best (ties included) are plain bm25's of
// the prefix, and search pages, snippets included, are ORDER BY bm25's:
// with rows holding one, two or three of the terms, a term without a
// summary, prefixes of one term and of none, more terms than are ranked
// so, fresh, after the best rows were deleted and rewritten, after rows
// with a new term were appended, and after a refresh.
func TestSearchPrefixFromSummaries(t *testing.T) {
	sqlite.SetRankSummaryScale(t, 200, 8)
	s := textStore(t, 4000, 7, func(i int, rng *rand.Rand) string {
		filler := strings.Repeat("filler ", rng.Intn(40))
		switch {
		case i%97 == 0:
			return "alpha alphabet" // a run of ties, holding two terms
		case i%89 == 0:
			return "alpha alphabet alpine " + filler // three terms
		case i%83 == 0:
			return "alpine alphabet " + filler // two terms, not the first
		case i%61 == 0:
			return "alpine " + filler // alpine: too few rows for a summary
		case i%5 == 0:
			return strings.Repeat("alphabet ", 1+rng.Intn(3)) + filler
		case i%3 == 0:
			return filler + strings.Repeat("alpha ", 1+rng.Intn(4))
		case i%7 == 0:
			return "bravo q" + fmt.Sprint(i%20) + " " + filler // q0 … q19: more terms than ranked so
		}
		return "filler delta " + strings.Repeat("echo ", rng.Intn(30))
	})
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.raw.QueryRow(`SELECT count(*) FROM sessiondb_rank_terms WHERE fts = 'messages_fts' AND term IN ('alpha', 'alphabet', 'alpine')`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d of alpha, alphabet and alpine summarized (%v), want alpha and alphabet", n, err)
	}
	check := func(stage string) {
		t.Helper()
		for _, p := range []string{"alp", "alpha", "al", "a"} {
			terms := prefixTermsOf(t, s, p)
			for _, k := range []int{1, 28, 400} {
				got, ranked := sumTop(t, s, terms, p, k)
				if want := bm25Best(t, s, "messages_fts", p+"*", k); !ranked || !reflect.DeepEqual(got, want) {
					t.Errorf("%s: topsum %q (prefix %s) K=%d, ranked %v:\n got %.200s\nwant %.200s", stage, terms, p, k, ranked, fmt.Sprint(got), fmt.Sprint(want))
				}
			}
			// Not the prefix's terms (one left out, or one added): not
			// ranked, whatever the query.
			if _, ranked := sumTop(t, s, terms[1:], p, 28); ranked {
				t.Errorf("%s: topsum %q for prefix %s (%q): ranked, want not", stage, terms[1:], p, terms)
			}
			if _, ranked := sumTop(t, s, append(terms, "bravo"), p, 28); ranked {
				t.Errorf("%s: topsum %q for prefix %s: ranked, want not", stage, append(terms, "bravo"), p)
			}
		}
		for _, q := range []string{"alp*", "ALPHA*", "alphab*", "alpi*", "al*", "q*", "q1*", "zz*", "bra*"} {
			for _, o := range []sessiondb.SearchOptions{{Limit: 20}, {Limit: 5, Offset: 60}, {Limit: 10, Sources: []string{"telegram"}}, {Limit: 20, Offset: 20, Sources: []string{"telegram"}}, {Limit: 3, Offset: 700}} {
				if got, want := rankGot(t, s, q, o), rankWantIn(t, s, "messages_fts", q, o); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: Search(%q, limit %d offset %d sources %v)\n got %.300v\nwant %.300v", stage, q, o.Limit, o.Offset, o.Sources, got, want)
				}
			}
		}
	}
	check("fresh")
	s.exec(t, `DELETE FROM messages WHERE id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'alp*' ORDER BY rank LIMIT 5)`)
	s.exec(t, `UPDATE messages SET content = 'alphabet alphabet alpha' WHERE id IN (10, 1500, 3001)`)
	s.exec(t, `UPDATE messages SET content = 'alpha alpine' WHERE id IN (20, 2222)`)
	for i := range 30 {
		s.add(sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: []string{"alpha", "alphanumeric alpha", "alphabet alpha", "alpo"}[i%4]})
	}
	check("changed")
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	check("refreshed")
}
