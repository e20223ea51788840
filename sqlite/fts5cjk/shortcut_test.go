//go:build sqlite_fts5 || fts5

package fts5cjk_test

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// TestTokensShortcut compares cjk_unicode61 without arguments, which takes
// the plain-CJK shortcut, with cjk_unicode61 'remove_diacritics 1' (the
// same options, spelled out, so every token goes through unicode61) on
// random text: CJK runs next to breaks, Latin, digits, diacritics, kana
// marks, fullwidth forms, CJK punctuation, emoji, NUL and broken UTF-8.
func TestTokensShortcut(t *testing.T) {
	pieces := strings.Fields("项目 数据库 大别山 東京 の こんにちは コーヒー ガ が ゛ ゜ ー ヽ 서울 한국어 々 〆 〇 㐀 豈 鿿 ㇰ ᄀ 안 " +
		"alpha Bravo É é e\u0301 Ａ ａ １ ２0 _ x 🚀")
	pieces = append(pieces, " ", "  ", ".", ",", "!", "\n", "\t", "，", "。", "、", "「", "」", "（", "）", "：", "！", "\u3000",
		"〜", "・", "\x00", "\x80", "\xe9\xa1", "\xe9\xa1\xb9\x80", "\xef\xbc\x8c\x80", "\xff", "-", "'", "\"")
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for n := 1 + rng.Intn(12); n > 0; n-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		checkShortcut(t, b.String())
	}
}

// checkShortcut fails t unless cjk_unicode61 without arguments (the
// shortcut) and with 'remove_diacritics 1' (the default spelled out, no
// shortcut) tokenize text alike.
func checkShortcut(t *testing.T, text string) {
	t.Helper()
	got, err := fts5cjk.Tokens(text)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fts5cjk.Tokens(text, "remove_diacritics", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Tokens(%q)\n got %+v\nwant %+v", text, got, want)
	}
}

// TestPlainRanges checks the shortcut's lists code point by code point
// against unicode61 itself (through cjk_unicode61 with its options spelled
// out, which never takes the shortcut): every plain code point is CJK and
// is a token of its own bytes, and every break code point separates tokens.
func TestPlainRanges(t *testing.T) {
	var plain, breaks []rune
	for r := rune(0); r <= 0x10FFFF; r++ {
		p, b := fts5cjk.ShortcutLists(r)
		if p {
			if !fts5cjk.IsCJK(r) {
				t.Fatalf("plain code point %U is not CJK", r)
			}
			plain = append(plain, r)
		}
		if b {
			breaks = append(breaks, r)
		}
	}
	if len(plain) < 38000 || len(breaks) < 100 {
		t.Fatalf("lists hold %d plain and %d break code points: shorter than written", len(plain), len(breaks))
	}
	var b strings.Builder
	for _, r := range plain {
		b.WriteRune(r)
		b.WriteByte(' ')
	}
	toks, err := fts5cjk.Tokens(b.String(), "remove_diacritics", "1")
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) != len(plain) {
		t.Fatalf("%d tokens for %d plain code points", len(toks), len(plain))
	}
	for i, r := range plain {
		if toks[i].Text != string(r) || toks[i].Start != 4*i || toks[i].End != 4*i+3 {
			t.Fatalf("plain code point %U: token %+v", r, toks[i])
		}
	}
	b.Reset()
	b.WriteString("a")
	for _, r := range breaks {
		b.WriteRune(r)
		b.WriteString("a")
	}
	if toks, err = fts5cjk.Tokens(b.String(), "remove_diacritics", "1"); err != nil {
		t.Fatal(err)
	}
	if len(toks) != len(breaks)+1 {
		t.Fatalf("%d tokens around %d break code points", len(toks), len(breaks))
	}
	for i, tk := range toks {
		if tk.Text != "a" {
			t.Fatalf("break code point %U joins a token: %+v", breaks[i-1], tk)
		}
	}
}
