package sessiondb

import (
	"context"
	"regexp"
	"strings"
	"time"
)

// Routing rules both backends share (see sqlite/DESIGN.md, "Search").

// TrigramRouteOK reports whether a CJK query (without its outer quotes)
// may use the trigram index: three or more CJK characters, and no CJK
// token shorter than three CJK characters (the trigram index cannot find
// those).
func TrigramRouteOK(raw string) bool {
	if CountCJK(raw) < 3 {
		return false
	}
	for _, t := range QueryTerms(raw) {
		if n := CountCJK(t); n > 0 && n < 3 {
			return false
		}
	}
	return true
}

// TrigramEligible reports whether every term of the sanitised query q has
// at least three characters: the trigram index may then answer a Latin
// query the word index found nothing for.
func TrigramEligible(q string) bool {
	terms := QueryTerms(strings.TrimSpace(strings.Trim(q, `"`)))
	for _, t := range terms {
		if len([]rune(t)) < 3 {
			return false
		}
	}
	return len(terms) > 0
}

// MaxLikeTerms bounds how many distinct terms a LIKE scan matches, so the
// generated SQL expression stays small (SQLite's depth limit is 1000).
const MaxLikeTerms = 64

// CapTerms drops repeated terms and keeps at most MaxLikeTerms.
func CapTerms(terms []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range terms {
		if !seen[t] && len(out) < MaxLikeTerms {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// likeTokenRE splits a query for the LIKE routes: "phrases" or words.
var likeTokenRE = regexp.MustCompile(`"[^"]+"|\S+`)

// CleanTerm strips the quotes and prefix stars of a query token.
func CleanTerm(tok string) string {
	return strings.TrimSpace(strings.Trim(strings.Trim(tok, `"`), "*"))
}

// LikeTokens splits a query into the tokens the LIKE routes read:
// "phrases" and whitespace-separated words.
func LikeTokens(q string) []string { return likeTokenRE.FindAllString(q, -1) }

// LikeTerm is one term of a LIKE scan, negated or not.
type LikeTerm struct {
	Text string
	Not  bool
}

// LikeGroups reads q with the boolean shape the LIKE scans keep: OR (any
// case) separates groups, the terms of a group are ANDed, NOT negates the
// next term, AND and NEAR are ignored. Repeated terms of a group count
// once and at most MaxLikeTerms terms take part in all; a group without
// a positive term is dropped (it cannot be matched on its own).
func LikeGroups(q string) [][]LikeTerm {
	var groups [][]LikeTerm
	var cur []LikeTerm
	negate := false
	for _, tok := range LikeTokens(q) {
		switch strings.ToUpper(tok) {
		case "OR":
			if len(cur) > 0 {
				groups = append(groups, cur)
				cur = nil
			}
			negate = false
		case "AND", "NEAR":
		case "NOT":
			negate = true
		default:
			if t := CleanTerm(tok); t != "" {
				cur = append(cur, LikeTerm{t, negate})
				negate = false
			}
		}
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	budget := MaxLikeTerms
	var out [][]LikeTerm
	for _, g := range groups {
		seen := map[LikeTerm]bool{}
		var kept []LikeTerm
		positive := false
		for _, t := range g {
			if !seen[t] && budget > 0 {
				seen[t] = true
				kept = append(kept, t)
				budget--
				positive = positive || !t.Not
			}
		}
		if positive {
			out = append(out, kept)
		}
	}
	return out
}

// SearchTimeout is the ETIMEOUT error of a search (op) that ran past ctx's
// deadline, saying how long it had and how to narrow the query.
func SearchTimeout(ctx context.Context, start time.Time, op string) *Error {
	took := "its time budget"
	if deadline, ok := ctx.Deadline(); ok && deadline.After(start) {
		took = deadline.Sub(start).Round(10 * time.Millisecond).String()
	}
	return &Error{Code: ETIMEOUT, Err: context.DeadlineExceeded, Message: op + " took longer than " + took +
		" and was stopped; narrow the query: fewer OR alternatives, longer prefixes than a*, fewer words in a phrase, or only some sources or roles"}
}

// PrepareSearch does what every backend's Search does first: it checks
// o.Fields (returned in canonical order, nil for all), sanitises the query
// (q is "" when there is nothing to search: no hits), refuses one of more
// than MaxQueryTerms terms, and fills in the default Limit and a
// non-negative Offset.
func PrepareSearch(query string, o SearchOptions) (q string, fields []string, _ SearchOptions, err error) {
	if fields, err = CheckSearchFields(o.Fields); err != nil {
		return "", nil, o, err
	}
	if strings.TrimSpace(query) == "" {
		return "", fields, o, nil
	}
	if q = SanitizeQuery(query); q == "" {
		return "", fields, o, nil
	}
	if err := CheckQueryTerms(q); err != nil {
		return "", nil, o, err
	}
	if o.Limit <= 0 {
		o.Limit = DefaultSearchLimit
	}
	o.Offset = max(o.Offset, 0)
	return q, fields, o, nil
}

// WantsContext reports whether fields (CheckSearchFields' result) asks
// for the hits' context.
func WantsContext(fields []string) bool {
	if fields == nil {
		return true
	}
	for _, f := range fields {
		if f == "context" {
			return true
		}
	}
	return false
}

// CJKRoute is where a query holding CJK text is answered.
type CJKRoute int

// The CJK routes, as Hermes' search_messages chooses them.
const (
	RouteSubstring CJKRoute = iota // a LIKE scan for any token, newest first
	RouteBigram                    // the CJK bigram index
	RouteOneChar                   // one CJK character: from the indexes' terms
	RouteTrigram                   // the trigram index
)

// RouteCJK routes raw, a sanitised query holding CJK text without its
// outer quotes: a query with % (which the tokenizers drop) goes to the
// substring scan; with the bigram index usable, a query without a lone CJK
// character goes to it, and a query that is one character (isCJK: one the
// bigram tokenizer splits) to the one-character route; else, with the
// trigram index usable, a query whose CJK tokens all have three characters
// or more goes to it; anything else to the substring scan. An index is
// usable when it is present and current and the search wants no row it
// leaves out (WantsUnindexed).
func RouteCJK(raw string, bigram, trigram bool, isCJK func(rune) bool) CJKRoute {
	if strings.Contains(raw, "%") {
		return RouteSubstring
	}
	if bigram {
		if !HasLoneCJKRun(raw) {
			return RouteBigram
		}
		if c := []rune(raw); len(c) == 1 && isCJK(c[0]) {
			return RouteOneChar
		}
	}
	if trigram && TrigramRouteOK(raw) {
		return RouteTrigram
	}
	return RouteSubstring
}

// WantsUnindexed reports whether a search asks for rows the CJK and
// trigram indexes leave out (tool rows, cron and subagent sessions).
func WantsUnindexed(o SearchOptions) bool {
	for _, r := range o.Roles {
		if r == RoleTool {
			return true
		}
	}
	for _, s := range o.Sources {
		if s == "cron" || s == "subagent" {
			return true
		}
	}
	return false
}
