package workload

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// BandQuery is one query of the banded benchmark set: its band, the query
// text and, for the source band, the sources it is limited to.
type BandQuery struct {
	Band    string
	Query   string
	Sources []string
}

// Bands are the query bands of QuerySet, in report order:
//
//	frequent  single English words of ranks 20–43 of the Zipf vocabulary
//	medium    ranks 101–148, every other word
//	rare      ranks 206–253 (the tail), every other word
//	phrase    the quoted bigrams the generator writes, and quoted pairs of
//	          frequent words (mostly adjacent only by chance)
//	prefix    word prefixes (prefix*) across the frequency range
//	cjk1      single Chinese characters
//	cjk2      two-character Chinese and Japanese words
//	cjk3      Chinese and Japanese words of three or more characters
//	korean    Korean words
//	mixed     an English word and a CJK or Korean word
//	source    frequent and medium words limited to one of the rarer sources
//	boolean   OR and NOT of two words
var Bands = []string{"frequent", "medium", "rare", "phrase", "prefix", "cjk1", "cjk2", "cjk3", "korean", "mixed", "source", "boolean"}

// QuerySet returns the banded query set: 244 different queries drawn from
// the vocabulary the generator writes, so that their frequencies follow
// the corpus (the set does not depend on the seed; the corpus' counts do
// only slightly).
func QuerySet() []BandQuery {
	var qs []BandQuery
	add := func(band, q string, sources ...string) { qs = append(qs, BandQuery{band, q, sources}) }
	en := english.words
	for i := 19; i < 43; i++ {
		add("frequent", en[i])
	}
	for i := 100; i < 148; i += 2 {
		add("medium", en[i])
	}
	for i := 205; i < 253; i += 2 {
		add("rare", en[i])
	}
	for _, b := range bigrams {
		add("phrase", `"`+b+`"`)
	}
	for i := range 9 {
		add("phrase", fmt.Sprintf(`"%s %s"`, en[19+i], en[20+2*i]))
	}
	seen := map[string]bool{}
	for i := 19; len(seen) < 20; i += 9 {
		w := en[i]
		p := w[:max(3, len(w)-3)]
		if !seen[p] {
			seen[p] = true
			add("prefix", p+"*")
		}
	}
	for _, c := range chineseChars {
		add("cjk1", c)
	}
	for _, w := range chinese.words[:4] {
		add("cjk1", firstRune(w))
	}
	cjk2 := cjkWords(2, 2, chinese.words, 16)
	cjk2 = append(cjk2, cjkWords(2, 2, japanese.words, 4)...)
	for _, w := range cjk2 {
		add("cjk2", w)
	}
	cjk3 := cjkWords(3, 99, chinese.words, 5)
	cjk3 = append(cjk3, cjkWords(3, 99, japanese.words, 15)...)
	for _, w := range cjk3 {
		add("cjk3", w)
	}
	for i := 0; i < 40; i += 2 {
		add("korean", korean.words[i])
	}
	for i := range 8 {
		add("mixed", en[19+3*i]+" "+cjk2[i])
	}
	for i := range 4 {
		add("mixed", en[60+5*i]+" "+japanese.words[i])
		add("mixed", en[30+7*i]+" "+korean.words[1+2*i])
	}
	rare := Sources.words[1:] // telegram … api_server: each rejects most top rows
	for i := range 10 {
		add("source", en[19+2*i], rare[i%len(rare)])
		add("source", en[100+4*i], rare[(i+2)%len(rare)])
	}
	for i := range 6 {
		add("boolean", en[100+6*i]+" OR "+en[205+6*i])
		add("boolean", en[19+4*i]+" NOT "+en[60+5*i])
	}
	return qs
}

func firstRune(s string) string {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}

// cjkWords returns the first n words of list whose length in characters is
// within [lo, hi] and that are not all kana of one script (a Japanese word
// of kana is kept: it is what users type).
func cjkWords(lo, hi int, list []string, n int) []string {
	var out []string
	for _, w := range list {
		if c := utf8.RuneCountInString(w); c >= lo && c <= hi && !strings.ContainsAny(w, " ") {
			out = append(out, w)
			if len(out) == n {
				break
			}
		}
	}
	return out
}
