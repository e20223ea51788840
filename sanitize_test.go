package sessiondb_test

import (
	"fmt"
	"strings"
	"testing"

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
		{`a AND OR`, `a`},        // the trailing OR, then the AND left dangling
		{`"" alpha`, `"" alpha`}, // an empty phrase is a phrase
		{`alpha AND*`, `alpha "AND"*`},
		{`alpha OR*`, `alpha "OR"*`},
		{`alpha NOT*`, `alpha "NOT"*`},
		{`AND*`, ``},
		// Every ASCII letter and digit is a bareword character, the edges too.
		{`09 az AZ`, `09 az AZ`},
		{`x/ y@ z`, `x  y  z`},
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
