package sessiondb_test

import (
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/sessiondb/sessiondb"
)

func TestTrigramRules(t *testing.T) {
	for _, tc := range []struct {
		q               string
		routeOK, latin3 bool
	}{
		{"大别山项目", true, true},
		{"项目", false, false},
		{"大别山 项目", false, false},
		{"大别山 ab", true, false},
		{"docker", false, true},
		{`"docker compose"`, false, true},
		{"ab OR docker", false, false},
	} {
		if got := sessiondb.TrigramRouteOK(strings.Trim(tc.q, `"`)); got != tc.routeOK {
			t.Errorf("TrigramRouteOK(%q) = %v", tc.q, got)
		}
		if got := sessiondb.TrigramEligible(tc.q); got != tc.latin3 {
			t.Errorf("TrigramEligible(%q) = %v", tc.q, got)
		}
	}
}

func TestLikeGroups(t *testing.T) {
	type lt = sessiondb.LikeTerm
	for _, tc := range []struct {
		q    string
		want [][]lt
	}{
		{"a b", [][]lt{{{"a", false}, {"b", false}}}},
		{"a OR b", [][]lt{{{"a", false}}, {{"b", false}}}},
		{"a or b", [][]lt{{{"a", false}}, {{"b", false}}}},
		{`a NOT "b c" AND d*`, [][]lt{{{"a", false}, {"b c", true}, {"d", false}}}},
		{"NOT a OR b", [][]lt{{{"b", false}}}}, // a group without a positive term is dropped
		{"a a NEAR a", [][]lt{{{"a", false}}}},
	} {
		if got := sessiondb.LikeGroups(tc.q); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("LikeGroups(%q) = %v, want %v", tc.q, got, tc.want)
		}
	}
	many := strings.Repeat("w ", 10) + strings.Repeat("x ", 3)
	for i := range 100 {
		many += " t" + strings.Repeat("z", i)
	}
	n := 0
	for _, g := range sessiondb.LikeGroups(many) {
		n += len(g)
	}
	if n != sessiondb.MaxLikeTerms {
		t.Errorf("LikeGroups kept %d terms, want %d", n, sessiondb.MaxLikeTerms)
	}
	if got := sessiondb.CapTerms([]string{"a", "b", "a"}); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("CapTerms = %v", got)
	}
	if got := sessiondb.CleanTerm(`"abc"`) + sessiondb.CleanTerm("def*"); got != "abcdef" {
		t.Errorf("CleanTerm = %q", got)
	}
}

func TestRouteCJK(t *testing.T) {
	isCJK := func(r rune) bool { return unicode.Is(unicode.Han, r) }
	for _, tc := range []struct {
		raw             string
		bigram, trigram bool
		want            sessiondb.CJKRoute
	}{
		{"项目", true, true, sessiondb.RouteBigram},
		{"100%完成", true, true, sessiondb.RouteSubstring},
		{"库", true, true, sessiondb.RouteOneChar},
		{"库", false, true, sessiondb.RouteSubstring},
		{"大别山项目 库", true, true, sessiondb.RouteSubstring}, // a lone run, a CJK token under 3
		{"大别山项目 a库", true, true, sessiondb.RouteSubstring},
		{"大别山项目", false, true, sessiondb.RouteTrigram},
		{"大别山项目", false, false, sessiondb.RouteSubstring},
		{"项目", false, true, sessiondb.RouteSubstring},
	} {
		if got := sessiondb.RouteCJK(tc.raw, tc.bigram, tc.trigram, isCJK); got != tc.want {
			t.Errorf("RouteCJK(%q, %v, %v) = %v, want %v", tc.raw, tc.bigram, tc.trigram, got, tc.want)
		}
	}
	if sessiondb.WantsUnindexed(sessiondb.SearchOptions{Sources: []string{"cli"}}) ||
		!sessiondb.WantsUnindexed(sessiondb.SearchOptions{Roles: []string{"tool"}}) ||
		!sessiondb.WantsUnindexed(sessiondb.SearchOptions{Sources: []string{"cli", "cron"}}) {
		t.Error("WantsUnindexed")
	}
}

func TestPrepareSearch(t *testing.T) {
	q, fields, o, err := sessiondb.PrepareSearch("  chat-send  ", sessiondb.SearchOptions{Offset: -3, Fields: []string{"snippet", "id"}})
	if err != nil || q != `"chat-send"` || !reflect.DeepEqual(fields, []string{"id", "snippet"}) || o.Limit != sessiondb.DefaultSearchLimit || o.Offset != 0 {
		t.Errorf("PrepareSearch = %q %v %+v %v", q, fields, o, err)
	}
	if sessiondb.WantsContext(fields) || !sessiondb.WantsContext(nil) {
		t.Error("WantsContext")
	}
	if q, _, _, err := sessiondb.PrepareSearch("   ", sessiondb.SearchOptions{}); q != "" || err != nil {
		t.Errorf("blank: %q %v", q, err)
	}
	if _, _, _, err := sessiondb.PrepareSearch(manyWords(sessiondb.MaxQueryTerms+1), sessiondb.SearchOptions{}); sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Errorf("too many terms: %v", err)
	}
}

func manyWords(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(" w")
		b.WriteString(strings.Repeat("x", i))
	}
	return b.String()
}
