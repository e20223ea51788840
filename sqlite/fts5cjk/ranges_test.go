package fts5cjk_test

import (
	"fmt"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// hermesCJKRanges are the code point ranges Hermes' cjk_unicode61
// (native/fts5_cjk/fts5_cjk.c, cjk_is_cjk) splits into bigrams, copied here
// from Hermes' source, not from ours: an index written by one program must
// be read by the other, so every range has to match to the code point.
var hermesCJKRanges = []struct {
	name   string
	lo, hi rune
}{
	{"Hangul syllables", 0xAC00, 0xD7A3},
	{"Hangul Jamo", 0x1100, 0x11FF},
	{"Hangul compatibility Jamo", 0x3130, 0x318F},
	{"Hangul Jamo extended-A", 0xA960, 0xA97F},
	{"Hangul Jamo extended-B", 0xD7B0, 0xD7FF},
	{"CJK unified ideographs", 0x4E00, 0x9FFF},
	{"CJK extension A", 0x3400, 0x4DBF},
	{"CJK compatibility ideographs", 0xF900, 0xFAFF},
	{"CJK extensions B to F and compatibility supplement", 0x20000, 0x2FA1F},
	{"Hiragana", 0x3040, 0x309F},
	{"Katakana", 0x30A0, 0x30FF},
	{"Katakana phonetic extensions", 0x31F0, 0x31FF},
}

func inHermesCJK(r rune) bool {
	for _, rg := range hermesCJKRanges {
		if r >= rg.lo && r <= rg.hi {
			return true
		}
	}
	return false
}

// splitsIntoBigrams reports whether the C tokenizer treats r as CJK: three
// r in a row make two bigrams; any other token character makes one token.
// r is declared a token character (tokenchars), so that unassigned code
// points at a range's edge reach the CJK test instead of being separators.
func splitsIntoBigrams(t *testing.T, r rune) bool {
	t.Helper()
	s := string([]rune{r, r, r})
	toks, err := fts5cjk.Tokens(s, "tokenchars", string(r))
	if err != nil {
		t.Fatalf("Tokens(%U×3): %v", r, err)
	}
	switch len(toks) {
	case 2:
		return true
	case 1:
		return false
	}
	t.Fatalf("Tokens(%U×3) = %+v: want one token or two bigrams", r, toks)
	return false
}

// TestCJKRangesMatchHermes checks each of Hermes' ranges at its first and
// last code point and at the neighbour just outside each end, in the C
// tokenizer and in the Go mirror (IsCJK). A neighbour may fall in the next
// range (Hiragana ends where Katakana starts): then it must be CJK too.
func TestCJKRangesMatchHermes(t *testing.T) {
	for _, rg := range hermesCJKRanges {
		t.Run(rg.name, func(t *testing.T) {
			for _, r := range []rune{rg.lo - 1, rg.lo, rg.hi, rg.hi + 1} {
				if r >= 0xD800 && r <= 0xDFFF {
					continue // a surrogate has no UTF-8 form: nothing to tokenize
				}
				want := inHermesCJK(r)
				if r == rg.lo || r == rg.hi {
					want = true
				}
				if got := splitsIntoBigrams(t, r); got != want {
					t.Errorf("tokenizer: %U split into bigrams = %v, want %v", r, got, want)
				}
				if got := fts5cjk.IsCJK(r); got != want {
					t.Errorf("IsCJK(%U) = %v, want %v", r, got, want)
				}
			}
		})
	}
}

// TestCJKEverydayKorean: everyday Korean chat text mixes syllables with
// compatibility Jamo (ㅋㅋ, ㅠㅠ), which Hermes bigrams too.
func TestCJKEverydayKorean(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"ㅋㅋㅋ", []string{"ㅋㅋ", "ㅋㅋ"}},
		{"좋아요ㅠㅠ", []string{"좋아", "아요", "요ㅠ", "ㅠㅠ"}},
		{"캘린더", []string{"캘린", "린더"}},
	} {
		toks, err := fts5cjk.Tokens(tt.text)
		if err != nil {
			t.Fatal(err)
		}
		if got := tokenTexts(toks); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func tokenTexts(toks []fts5cjk.Token) []string {
	out := make([]string, len(toks))
	for i, tk := range toks {
		out[i] = tk.Text
	}
	return out
}
