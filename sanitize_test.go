package sessiondb_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb"
)

func TestSanitizeQuery(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		// API.md §5 examples.
		{`hello world`, `hello world`},
		{`hello AND`, `hello`},
		{`OR world`, `world`},
		{`***`, ``},
		{`deploy*`, `deploy*`},
		{`C++`, `C`},
		{`"unterminated`, `unterminated`},
		{`(problem`, `problem`},
		{`{test}`, `test`},
		{`"exact phrase"`, `"exact phrase"`},
		{`"docker networking" setup`, `"docker networking" setup`},
		{`"hello world" OR "foo bar"`, `"hello world" OR "foo bar"`},
		{`chat-send`, `"chat-send"`},
		{`docker-compose-up`, `"docker-compose-up"`},
		{`chat-send OR deploy-prod`, `"chat-send" OR "deploy-prod"`},
		{`"chat-send"`, `"chat-send"`},
		{`"my chat-send thing"`, `"my chat-send thing"`},
		{`P2.2`, `"P2.2"`},
		{`simulate.p2.test.ts`, `"simulate.p2.test.ts"`},
		{`my-app.config`, `"my-app.config"`},
		{`my-app.config.ts`, `"my-app.config.ts"`},
		{`OR hello`, `hello`},
		{`FUNCNAMEMARKER_UNIQUE`, `"FUNCNAMEMARKER_UNIQUE"`},
		// Hermes' own results for other inputs.
		{`NOT NOT x`, ``}, // Hermes: `NOT x`, an FTS5 syntax error
		{`100%完成`, `100%完成`},
		{`100% done`, `100  done`},
		{`TODO: fix`, `TODO  fix`},
		{`a-b "c-d" e-f`, `"a-b" "c-d" "e-f"`},
		{`v1.2-beta_3`, `"v1.2-beta_3"`},
		{`x or`, `x`},
		{`and`, ``},
		{`大别山项目`, `大别山项目`},
		{`ANDROID phone`, `ANDROID phone`},
		// Where Hermes hands FTS5 a syntax error, sessiondb repairs the query.
		{`a AND OR b`, `a AND b`},
		{`AND OR`, ``},
		{`foo. bar`, `"foo." bar`},
		{`-x`, `"-x"`},
	} {
		if got := sessiondb.SanitizeQuery(tt.in); got != tt.want {
			t.Errorf("SanitizeQuery(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSanitizeQueryCapsLength(t *testing.T) {
	got := sessiondb.SanitizeQuery(strings.Repeat("a", 5000))
	if len(got) != sessiondb.MaxQueryChars {
		t.Fatalf("len = %d, want %d", len(got), sessiondb.MaxQueryChars)
	}
}

func TestCJKHelpers(t *testing.T) {
	for _, s := range []string{"记忆", "ひらがな", "カタカナ", "안녕하세요", "기억", "mixed 中文"} {
		if !sessiondb.ContainsCJK(s) {
			t.Errorf("ContainsCJK(%q) = false", s)
		}
	}
	for _, s := range []string{"", "hello", "café", "🚀"} {
		if sessiondb.ContainsCJK(s) {
			t.Errorf("ContainsCJK(%q) = true", s)
		}
	}
	for s, want := range map[string]bool{"山": true, "山 docker": true, "a山b": true, "大山": false, "大山 项目": false, "": false} {
		if got := sessiondb.HasLoneCJKRun(s); got != want {
			t.Errorf("HasLoneCJKRun(%q) = %v, want %v", s, got, want)
		}
	}
	if got, want := sessiondb.QuoteTokens(`记忆系统 or 断裂"连接`), `"记忆系统" OR "断裂""连接"`; got != want {
		t.Errorf("QuoteTokens = %q, want %q", got, want)
	}
}

func TestSanitizeQueryCollapsesRepeats(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{strings.Repeat("a* OR ", 340) + "a*", `a*`},
		{`a a b a`, `a b`},
		{`docker AND compose AND docker`, `docker AND compose`},
		{`"x y" OR "x y" OR z`, `"x y" OR z`},
		{`a b OR a b OR c`, `a b OR c`},
		{`x NOT b NOT b`, `x NOT b`},
		{`x NOT b c c`, `x NOT b c`},
		{`chat-send chat-send`, `"chat-send"`},
		{`项目 or 项目 OR 项目`, `项目`},
		// Nothing repeats where it could be dropped: the query is kept.
		{`x NOT b b`, `x NOT b b`},             // the LIKE routes read it as x AND NOT b AND b
		{`a NOT b a NOT b`, `a NOT b a NOT b`}, // FTS5: a NOT (b a) NOT b
		{`a or a`, `a or a`},                   // FTS5 reads "or" as a word, the LIKE routes as OR
		{`a"b" a`, `a"b" a`},                   // the LIKE routes read a"b" as one word
		{`a* OR A*`, `a* OR A*`},
		{`hello world`, `hello world`},
		// The only CJK character is a separator (U+3000, an ideographic
		// space) that would go with the repeat: the query would change
		// route, so it is kept (found by FuzzSanitizeQuery).
		{"%\u3000%", "%\u3000%"},
		{"a\u3000a", "a\u3000a"},
		{"项 a\u3000a", "项 a"},
	} {
		if got := sessiondb.SanitizeQuery(tt.in); got != tt.want {
			t.Errorf("SanitizeQuery(%.60q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCollapseRepeatsKeepsMatches: for random queries over a few words,
// FTS5 finds the same rows with and without the repeats collapsed.
func TestCollapseRepeatsKeepsMatches(t *testing.T) {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(x)`); err != nil {
		t.Skipf("no FTS5 (build with -tags sqlite_fts5): %v", err)
	}
	words := []string{"a", "b", "c", "d"}
	for mask := 1; mask < 1<<len(words); mask++ { // every non-empty subset, in both orders
		var doc []string
		for i, w := range words {
			if mask&(1<<i) != 0 {
				doc = append(doc, w)
			}
		}
		for _, d := range []string{strings.Join(doc, " "), strings.Join(reversed(doc), " ")} {
			if _, err := db.Exec(`INSERT INTO t(x) VALUES (?)`, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	match := func(q string) string {
		rows, err := db.Query(`SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid`, q)
		if err != nil {
			t.Fatalf("MATCH %q: %v", q, err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			rows.Scan(&id)
			ids = append(ids, id)
		}
		return strings.Join(ids, ",")
	}
	operands := []string{"a", "b", "c", "a*", `"a b"`, `"b a"`, "d"}
	ops := []string{"AND", "OR", "NOT", "", "", ""} // "" joins terms (implicit AND)
	rng := rand.New(rand.NewPCG(1, 2))
	collapsed := 0
	for range 3000 {
		parts := []string{operands[rng.IntN(len(operands))]}
		for range rng.IntN(7) {
			if op := ops[rng.IntN(len(ops))]; op != "" {
				parts = append(parts, op)
			}
			parts = append(parts, operands[rng.IntN(len(operands))])
		}
		q := strings.Join(parts, " ")
		got := sessiondb.CollapseRepeats(q)
		if got == q {
			continue
		}
		collapsed++
		if len(got) >= len(q) {
			t.Fatalf("CollapseRepeats(%q) = %q: not shorter", q, got)
		}
		if a, b := match(q), match(got); a != b {
			t.Fatalf("MATCH %q finds %s, collapsed to %q finds %s", q, a, got, b)
		}
		if again := sessiondb.CollapseRepeats(got); again != got {
			t.Fatalf("CollapseRepeats(%q) = %q, again %q", q, got, again)
		}
	}
	if collapsed < 500 {
		t.Fatalf("only %d of 3000 queries had repeats to collapse", collapsed)
	}
}

func TestCheckQueryTerms(t *testing.T) {
	words := make([]string, sessiondb.MaxQueryTerms+1)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	for _, tt := range []struct {
		q  string
		ok bool
	}{
		{strings.Join(words[:sessiondb.MaxQueryTerms], " OR "), true},
		{strings.Join(words, " OR "), false},
		{strings.Join(words, " "), false},
		{`"` + strings.Join(words, " ") + `"`, false}, // a phrase counts one per word
		{strings.Repeat("a* OR ", 340) + "a*", true},  // repeats count once
		{strings.Repeat("a* or ", 20) + "a*", false},  // FTS5 reads "or" as a word: 41 terms
		{strings.Join(words[:20], " ") + " 项目 " + strings.Join(words[20:], " "), false},
	} {
		err := sessiondb.CheckQueryTerms(sessiondb.SanitizeQuery(tt.q))
		if tt.ok != (err == nil) {
			t.Errorf("CheckQueryTerms(%.50q) = %v, want ok %v", tt.q, err, tt.ok)
		}
		if err != nil && (sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "too complex") || !strings.Contains(err.Error(), "Narrow it")) {
			t.Errorf("CheckQueryTerms(%.50q) = %v, want EINVALID saying it is too complex and how to narrow it", tt.q, err)
		}
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// hermesSpecial is the list of characters Hermes' _sanitize_fts5_query
// turns into spaces, spelled out here one by one (not taken from the code
// under test), so that dropping any one of them from the sanitiser fails.
var hermesSpecial = []rune{'+', '{', '}', '(', ')', ':', '"', '^', '@', '/', '#', '&', '|', '~', '[', ']', '<', '>', ',', ';', '!', '?', '$', '=', '\\', '\''}

func TestSanitizeQueryNeutralisesEachSpecialCharacter(t *testing.T) {
	for _, c := range hermesSpecial {
		t.Run(fmt.Sprintf("%q", c), func(t *testing.T) {
			for _, tt := range []struct{ in, want string }{
				{"alpha" + string(c) + "beta", "alpha beta"},
				{string(c) + "alpha", "alpha"},
				{"alpha" + string(c), "alpha"},
				{"alpha " + string(c) + " beta", "alpha   beta"},
			} {
				if got := sessiondb.SanitizeQuery(tt.in); got != tt.want {
					t.Errorf("SanitizeQuery(%q) = %q, want %q", tt.in, got, tt.want)
				}
			}
		})
	}
}

func TestSanitizeQueryKeepsOtherCharacters(t *testing.T) {
	// Neighbours of the list that Hermes leaves to FTS5 (or to its compound
	// and prefix rules): none of them becomes a space.
	for _, tt := range []struct{ in, want string }{
		{`alpha-beta`, `"alpha-beta"`},
		{`alpha.beta`, `"alpha.beta"`},
		{`alpha_beta`, `"alpha_beta"`},
		{`alpha*`, `alpha*`},
		{`alpha*beta`, `"alpha*beta"`},
		{"alpha`beta", "\"alpha`beta\""},
		{`café`, `café`},
	} {
		if got := sessiondb.SanitizeQuery(tt.in); got != tt.want {
			t.Errorf("SanitizeQuery(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSanitizeQueryPercent(t *testing.T) {
	// % is neutralised like the list, except in a query holding CJK, where
	// the LIKE route takes it literally.
	for _, tt := range []struct{ in, want string }{
		{`100%done`, `100 done`},
		{`%alpha`, `alpha`},
		{`100%完成`, `100%完成`},
		{`完成 100%`, `完成 100%`},
	} {
		if got := sessiondb.SanitizeQuery(tt.in); got != tt.want {
			t.Errorf("SanitizeQuery(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSanitizeQueryControlCharacters(t *testing.T) {
	// Every control character (and DEL) becomes a space: FTS5 stops at NUL
	// and splits words only at space, tab, CR and LF.
	for _, c := range []rune{0x00, 0x01, 0x09, 0x0a, 0x0d, 0x1b, 0x1f, 0x7f} {
		in := "alpha" + string(c) + "beta"
		if got, want := sessiondb.SanitizeQuery(in), "alpha beta"; got != want {
			t.Errorf("SanitizeQuery(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := sessiondb.SanitizeQuery("alpha\u0080beta"), "alpha\u0080beta"; got != want {
		t.Errorf("SanitizeQuery(U+0080 between words) = %q, want %q (not a C0 control)", got, want)
	}
}

// searchCJKRanges are the ranges Hermes' search treats as CJK (API.md §5),
// written out here independently of IsCJK.
var searchCJKRanges = []struct {
	name   string
	lo, hi rune
}{
	{"CJK unified ideographs", 0x4E00, 0x9FFF},
	{"CJK extension A", 0x3400, 0x4DBF},
	{"CJK extension B", 0x20000, 0x2A6DF},
	{"CJK symbols and punctuation", 0x3000, 0x303F},
	{"Hiragana", 0x3040, 0x309F},
	{"Katakana", 0x30A0, 0x30FF},
	{"Hangul", 0xAC00, 0xD7AF},
}

func inSearchCJK(r rune) bool {
	for _, rg := range searchCJKRanges {
		if r >= rg.lo && r <= rg.hi {
			return true
		}
	}
	return false
}

// TestIsCJKRanges checks each range's first and last code point and the
// neighbour outside each end (which may open the next range: the symbols
// block ends where Hiragana starts).
func TestIsCJKRanges(t *testing.T) {
	for _, rg := range searchCJKRanges {
		for _, r := range []rune{rg.lo - 1, rg.lo, rg.hi, rg.hi + 1} {
			want := r == rg.lo || r == rg.hi || inSearchCJK(r)
			if got := sessiondb.IsCJK(r); got != want {
				t.Errorf("%s: IsCJK(%U) = %v, want %v", rg.name, r, got, want)
			}
			s := "x" + string(r) + string(r) + "y"
			if r >= 0xD800 && r <= 0xDFFF {
				continue
			}
			if got := sessiondb.CountCJK(s); got != map[bool]int{true: 2, false: 0}[want] {
				t.Errorf("%s: CountCJK(%q) = %d", rg.name, s, got)
			}
		}
	}
}

func TestQueryTermsSplitsAtPythonSpaces(t *testing.T) {
	// Python's str.split() also splits at the separators U+001C..U+001F.
	for _, sep := range []string{" ", "\t", "\x1c", "\x1d", "\x1e", "\x1f", "\u00a0"} {
		q := "alpha" + sep + "OR" + sep + "beta"
		if got := sessiondb.QueryTerms(q); len(got) != 2 || got[0] != "alpha" || got[1] != "beta" {
			t.Errorf("QueryTerms(%q) = %q, want [alpha beta]", q, got)
		}
	}
	if got := sessiondb.QueryTerms("alpha\x1bbeta"); len(got) != 1 {
		t.Errorf("QueryTerms splits at U+001B: %q", got)
	}
}
