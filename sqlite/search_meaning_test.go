package sqlite_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// meaningDocs is a small corpus whose documents tell the meanings of a
// query apart: alpha and beta adjacent, apart, in the other order, alone.
var meaningDocs = []string{
	"alpha beta",                     // 0: adjacent
	"alpha then later beta",          // 1: both, apart
	"beta before alpha",              // 2: both, other order
	"alpha only here",                // 3
	"beta only here",                 // 4
	"alphabet soup",                  // 5: alpha as a prefix only
	"chat-send worked",               // 6: compound
	"send chat now",                  // 7: compound words, other order
	"deployment done",                // 8
	"deploy now",                     // 9
	"the and word",                   // 10: lower-case and as a word
	"alpha beta and deploy together", // 11
}

// meaningStore holds meaningDocs; ids[i] is the id of document i.
func meaningStore(t *testing.T) (*sbStore, []int64) {
	s := sbOpen(t)
	s.session("meaning", "cli")
	ids := make([]int64, len(meaningDocs))
	for i, d := range meaningDocs {
		ids[i] = s.msg("meaning", "user", d)
	}
	return s, ids
}

// docsWith returns the ids of the documents for which keep is true: the
// expected hits, computed from the corpus rather than written down.
func docsWith(ids []int64, keep func(words []string, text string) bool) []int64 {
	var out []int64
	for i, d := range meaningDocs {
		if keep(strings.Fields(d), d) {
			out = append(out, ids[i])
		}
	}
	return sbSorted(out...)
}

func hasWord(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

func hasPrefix(words []string, p string) bool {
	for _, x := range words {
		if strings.HasPrefix(x, p) {
			return true
		}
	}
	return false
}

// TestSearchSpecialCharacterMeansSpace: each character the sanitiser
// neutralises separates two words exactly as a space does (both words,
// anywhere, any order); kept, FTS5 would read it as syntax or quote the
// pair as a phrase and find only the adjacent pair.
func TestSearchSpecialCharacterMeansSpace(t *testing.T) {
	s, ids := meaningStore(t)
	both := docsWith(ids, func(w []string, _ string) bool { return hasWord(w, "alpha") && hasWord(w, "beta") })
	if got := sbSet(s.search(t, "alpha beta", sessiondb.SearchOptions{Limit: 50})); !reflect.DeepEqual(got, both) {
		t.Fatalf("alpha beta = %v, want %v", got, both)
	}
	for _, c := range `+{}():"^@/#&|~[]<>,;!?$=\'%` {
		q := "alpha" + string(c) + "beta"
		if got := sbSet(s.search(t, q, sessiondb.SearchOptions{Limit: 50})); !reflect.DeepEqual(got, both) {
			t.Errorf("Search(%q) = %v, want %v (the documents with both words)", q, got, both)
		}
	}
}

// TestSearchQueryMeaning pins what sanitised constructs mean by their hits.
func TestSearchQueryMeaning(t *testing.T) {
	s, ids := meaningStore(t)
	word := func(w string) func([]string, string) bool {
		return func(ws []string, _ string) bool { return hasWord(ws, w) }
	}
	and := func(fs ...func([]string, string) bool) func([]string, string) bool {
		return func(ws []string, d string) bool {
			for _, f := range fs {
				if !f(ws, d) {
					return false
				}
			}
			return true
		}
	}
	not := func(f func([]string, string) bool) func([]string, string) bool {
		return func(ws []string, d string) bool { return !f(ws, d) }
	}
	or := func(a, b func([]string, string) bool) func([]string, string) bool {
		return func(ws []string, d string) bool { return a(ws, d) || b(ws, d) }
	}
	for _, tt := range []struct {
		query string
		keep  func([]string, string) bool
	}{
		// Phrases: adjacent words in order only.
		{`"alpha beta"`, func(_ []string, d string) bool { return strings.Contains(d, "alpha beta") }},
		// A prefix phrase: the last word is a prefix.
		{`"alpha be"*`, func(_ []string, d string) bool { return strings.Contains(d, "alpha be") }},
		// A prefix word, and a leading * that is dropped (not a prefix).
		{`deploy*`, func(ws []string, _ string) bool { return hasPrefix(ws, "deploy") }},
		{`*deploy`, word("deploy")},
		{`alpha*`, func(ws []string, _ string) bool { return hasPrefix(ws, "alpha") }},
		{`alpha**`, func(ws []string, _ string) bool { return hasPrefix(ws, "alpha") }},
		// A compound is a phrase of its parts: found in order only.
		{`chat-send`, func(_ []string, d string) bool { return strings.Contains(d, "chat-send") }},
		// Operators in their places.
		{`alpha OR deploy`, or(word("alpha"), word("deploy"))},
		{`alpha NOT beta`, and(word("alpha"), not(word("beta")))},
		{`alpha AND beta`, and(word("alpha"), word("beta"))},
		// Operators in odd places are dropped, not errors.
		{`alpha OR`, word("alpha")},
		{`OR alpha`, word("alpha")},
		{`alpha AND OR beta`, and(word("alpha"), word("beta"))},
		{`NOT beta`, word("beta")}, // a leading NOT is dropped, as Hermes does
		{`alpha NOT`, word("alpha")},
		// Lower-case operators are words (FTS5's operators are upper-case).
		{`alpha and beta`, and(word("alpha"), word("and"), word("beta"))},
		// Special characters between words: both words, anywhere.
		{`alpha: (beta)`, and(word("alpha"), word("beta"))},
		{`"alpha beta" deploy`, and(func(_ []string, d string) bool { return strings.Contains(d, "alpha beta") }, word("deploy"))},
		// An empty phrase matches every row: it leaves the other terms.
		{`"" alpha`, word("alpha")},
		// A word ending in an operator's name and * is a prefix word.
		{`alpha AND*`, and(word("alpha"), word("and"))},
		// An unmatched quote is a space.
		{`"alpha beta`, and(word("alpha"), word("beta"))},
	} {
		want := docsWith(ids, tt.keep)
		if len(want) == 0 {
			t.Fatalf("%q: the corpus has no document for it: the test would prove nothing", tt.query)
		}
		if got := sbSet(s.search(t, tt.query, sessiondb.SearchOptions{Limit: 50})); !reflect.DeepEqual(got, want) {
			t.Errorf("Search(%q) = %v, want %v (sanitised: %q)", tt.query, got, want, sessiondb.SanitizeQuery(tt.query))
		}
	}
}

// TestSearchRankedPageUnderSourceFilter: the best-ranked matches are in a
// source the filter rejects; a small page at an offset must still hold the
// right rows of the other source, in rank order, each with its snippet.
// With few rejected rows the page is answered from the best matches the
// ranking reads ahead (only rows placed on the page get a snippet, so the
// rejected ones push page rows past them); with many, another route.
func TestSearchRankedPageUnderSourceFilter(t *testing.T) {
	for _, rejected := range []int{3, 6, 12} {
		t.Run(fmt.Sprintf("%d rejected", rejected), func(t *testing.T) {
			testRankedPageUnderSourceFilter(t, rejected)
		})
	}
}

func testRankedPageUnderSourceFilter(t *testing.T, rejected int) {
	s := sbOpen(t)
	s.session("tg", "telegram")
	s.session("cli", "cli")
	// Telegram rows rank first (short, the term three times); cli rows
	// rank by length, so their order is known without being written down.
	for i := 0; i < rejected; i++ {
		s.msg("tg", "user", "pagerank pagerank pagerank")
	}
	for i := 0; i < 12; i++ {
		s.msg("cli", "user", "pagerank "+strings.Repeat("filler ", i+1)+fmt.Sprintf("end%d", i))
	}
	all := s.search(t, "pagerank", sessiondb.SearchOptions{Limit: 100})
	if len(all) != rejected+12 || all[0].Source != "telegram" {
		t.Fatalf("unfiltered search: %d hits, first from %q; want %d, telegram first", len(all), all[0].Source, rejected+12)
	}
	var cli []sessiondb.SearchHit
	for _, h := range all {
		if h.Source == "cli" {
			cli = append(cli, h)
		}
	}
	for _, o := range []sessiondb.SearchOptions{
		{Sources: []string{"cli"}, Limit: 3, Offset: 2},
		{ExcludeSources: []string{"telegram"}, Limit: 3, Offset: 2},
		{Sources: []string{"cli"}, Limit: 2, Offset: 9},
		{Sources: []string{"cli"}, Limit: 1},
		{Sources: []string{"cli"}, Limit: 2, Offset: 1},
	} {
		got := s.search(t, "pagerank", o)
		want := cli[o.Offset:min(o.Offset+o.Limit, len(cli))]
		if !reflect.DeepEqual(sbIDs(got), sbIDs(want)) {
			t.Errorf("%+v: ids %v, want %v", o, sbIDs(got), sbIDs(want))
			continue
		}
		for i, h := range got {
			if h.Snippet == nil || !strings.Contains(*h.Snippet, ">>>pagerank<<<") {
				t.Errorf("%+v: hit %d (id %d) has snippet %v, want the marked match", o, i, h.ID, h.Snippet)
			} else if *h.Snippet != sbSnippet(want[i]) {
				t.Errorf("%+v: hit %d snippet %q, want %q as in the unfiltered search", o, i, *h.Snippet, sbSnippet(want[i]))
			}
			if h.Source != "cli" || h.SessionID != "cli" || h.Role != "user" || h.Timestamp == 0 {
				t.Errorf("%+v: incomplete hit %+v", o, h)
			}
		}
	}
}
