package sessiondb

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxQueryChars is the longest search query accepted; longer input is cut.
const MaxQueryChars = 2048

// ftsSpecial are the characters Hermes turns into spaces before a query
// reaches FTS5 (`%` is handled apart).
const ftsSpecial = `+{}():"^@/#&|~[]<>,;!?$=\'`

var (
	quotedPhraseRE = regexp.MustCompile(`"[^"]*"`)
	starRunRE      = regexp.MustCompile(`\*+`)
	// Python's \s and \w are Unicode-aware; Go's are ASCII, so spell them out.
	leadingStarRE = regexp.MustCompile(`(^|[\pZ\t\n\v\f\r\x1c-\x1f\x85])\*`)
	compoundRE    = regexp.MustCompile(`[\p{L}\p{N}_]+(?:[._-][\p{L}\p{N}_]+)+`)
)

// SanitizeQuery turns user input into an FTS5 query following Hermes'
// steps in order: cap at 2048 characters; keep balanced "phrases" intact
// (an unmatched quote becomes a space); turn FTS5 operator characters into
// spaces (`%` too unless the query holds CJK, where the LIKE route needs
// it); collapse `*` runs and drop a `*` that starts a word; drop one dangling
// AND/OR/NOT at each end; quote compounds such as chat-send, P2.2 and
// my-app.config.ts as phrases.
//
// Where Hermes would still hand FTS5 a syntax error (and return nothing),
// the result is repaired instead: operators without an operand on each side
// are dropped and words FTS5 cannot parse bare are quoted. Repeated terms
// are then collapsed (CollapseRepeats): `a* OR a* OR a*` costs what `a*`
// costs. A query that is valid after Hermes' steps and repeats nothing is
// returned exactly as Hermes returns it. An empty result means "search
// nothing".
func SanitizeQuery(q string) string {
	if utf8.RuneCountInString(q) > MaxQueryChars {
		q = string([]rune(q)[:MaxQueryChars])
	}
	// FTS5 ends a query at NUL and splits words only at space, tab, CR and
	// LF: every other control character becomes a space.
	q = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, ScrubText(q))

	var phrases []string
	q = quotedPhraseRE.ReplaceAllStringFunc(q, func(p string) string {
		phrases = append(phrases, p)
		return "\x00Q" + strconv.Itoa(len(phrases)-1) + "\x00"
	})
	q = strings.ReplaceAll(q, `"`, " ")
	q = strings.Map(func(r rune) rune {
		if strings.ContainsRune(ftsSpecial, r) {
			return ' '
		}
		return r
	}, q)
	if strings.Contains(q, "%") && !ContainsCJK(q) {
		q = strings.ReplaceAll(q, "%", " ")
	}
	q = starRunRE.ReplaceAllString(q, "*")
	q = leadingStarRE.ReplaceAllString(q, "$1")
	q = trimLeadingOperator(strings.TrimSpace(q))
	q = trimTrailingOperator(q)
	q = compoundRE.ReplaceAllString(q, `"$0"`)
	for i, p := range phrases {
		q = strings.Replace(q, "\x00Q"+strconv.Itoa(i)+"\x00", p, 1)
	}
	q = strings.TrimSpace(q)
	if ContainsCJK(q) {
		return CollapseRepeats(q) // the CJK routes requote every token (QuoteTokens)
	}
	return CollapseRepeats(repairFTS(q))
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

func isPySpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// operatorPrefix returns the length of a leading AND/OR/NOT (any case)
// that ends at a word boundary, or 0.
func operatorPrefix(s string) int {
	for _, op := range []string{"AND", "OR", "NOT"} {
		if len(s) >= len(op) && strings.EqualFold(s[:len(op)], op) {
			r, _ := utf8.DecodeRuneInString(s[len(op):])
			if len(s) == len(op) || !isWordRune(r) {
				return len(op)
			}
		}
	}
	return 0
}

// trimLeadingOperator drops one leading AND/OR/NOT and the space after it.
func trimLeadingOperator(s string) string {
	n := operatorPrefix(s)
	if n == 0 {
		return s
	}
	return strings.TrimLeftFunc(s[n:], isPySpace)
}

// trimTrailingOperator drops one AND/OR/NOT at the end that follows a space.
func trimTrailingOperator(s string) string {
	t := strings.TrimRightFunc(s, isPySpace)
	for _, op := range []string{"AND", "OR", "NOT"} {
		if len(t) > len(op) && strings.EqualFold(t[len(t)-len(op):], op) {
			r, _ := utf8.DecodeLastRuneInString(t[:len(t)-len(op)])
			if isPySpace(r) {
				return strings.TrimRightFunc(t[:len(t)-len(op)], isPySpace)
			}
		}
	}
	return s
}

// ftsItem is one unit of an FTS5 query: a "phrase", a bareword or an
// operator.
type ftsItem struct {
	text string
	op   bool
}

// repairFTS returns q unchanged when FTS5 can parse it, and otherwise a
// parseable form: barewords with characters FTS5 does not accept are quoted
// (a trailing * kept as a prefix marker) and operators lacking an operand
// on either side are dropped; a NOT with nothing before it drops the term it
// negates too (there is nothing to subtract it from).
func repairFTS(q string) string {
	items, changed := splitFTS(q)
	var out []ftsItem
	for i := 0; i < len(items); i++ {
		it := items[i]
		if it.op && (len(out) == 0 || out[len(out)-1].op) {
			changed = true
			if it.text == "NOT" && len(out) == 0 {
				i++
			}
			continue
		}
		out = append(out, it)
	}
	for len(out) > 0 && out[len(out)-1].op {
		out = out[:len(out)-1]
		changed = true
	}
	if !changed {
		return q
	}
	parts := make([]string, len(out))
	for i, it := range out {
		parts[i] = it.text
	}
	return strings.Join(parts, " ")
}

func splitFTS(q string) (items []ftsItem, changed bool) {
	for i := 0; i < len(q); {
		r, n := utf8.DecodeRuneInString(q[i:])
		switch {
		case isPySpace(r):
			i += n
		case r == '"':
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 { // cannot happen: quotes come in pairs here
				items = append(items, ftsItem{text: quoteFTS(q[i+1:])})
				return items, true
			}
			j := i + 1 + end + 1
			if j < len(q) && q[j] == '*' {
				j++
			}
			items = append(items, ftsItem{text: q[i:j]})
			i = j
		default:
			j := i
			for j < len(q) {
				r, n := utf8.DecodeRuneInString(q[j:])
				if isPySpace(r) || r == '"' {
					break
				}
				j += n
			}
			word := q[i:j]
			i = j
			if word == "AND" || word == "OR" || word == "NOT" {
				items = append(items, ftsItem{text: word, op: true})
				continue
			}
			body, star := strings.CutSuffix(word, "*")
			switch {
			case body == "":
				changed = true
			case bareword(body) && !(star && (body == "AND" || body == "OR" || body == "NOT")):
				items = append(items, ftsItem{text: word})
			default:
				changed = true
				if star {
					items = append(items, ftsItem{text: quoteFTS(body) + "*"})
				} else {
					items = append(items, ftsItem{text: quoteFTS(body)})
				}
			}
		}
	}
	return items, changed
}

// bareword reports whether FTS5 accepts s unquoted: ASCII letters and
// digits, '_', and any non-ASCII character.
func bareword(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 && c != '_' && c != 0x1a && !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// quoteFTS makes s one FTS5 string (a phrase), doubling inner quotes.
func quoteFTS(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// QuoteTokens quotes every whitespace-separated token of q as an FTS5
// phrase, keeping AND/OR/NOT as operators (the CJK and trigram routes), and
// drops operators that lack an operand.
func QuoteTokens(q string) string {
	fields := strings.FieldsFunc(q, isPySpace)
	for i, f := range fields {
		if !isOperator(f) {
			fields[i] = quoteFTS(f)
		} else {
			fields[i] = strings.ToUpper(f)
		}
	}
	return repairFTS(strings.Join(fields, " "))
}

func isOperator(s string) bool {
	return strings.EqualFold(s, "AND") || strings.EqualFold(s, "OR") || strings.EqualFold(s, "NOT")
}

// QueryTerms returns the non-operator whitespace-separated tokens of q.
func QueryTerms(q string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(q, isPySpace) {
		if !isOperator(f) {
			out = append(out, f)
		}
	}
	return out
}

// IsCJK reports whether r is in the ranges Hermes' search treats as CJK.
func IsCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x3000 && r <= 0x303F || r >= 0x3040 && r <= 0x309F || r >= 0x30A0 && r <= 0x30FF ||
		r >= 0xAC00 && r <= 0xD7AF
}

// ContainsCJK reports whether s holds any CJK character.
func ContainsCJK(s string) bool { return CountCJK(s) > 0 }

// CountCJK counts the CJK characters of s.
func CountCJK(s string) int {
	n := 0
	for _, r := range s {
		if IsCJK(r) {
			n++
		}
	}
	return n
}

// HasLoneCJKRun reports whether s holds a CJK run of exactly one character
// (runs end at any non-CJK character), which the bigram index cannot find.
func HasLoneCJKRun(s string) bool {
	run := 0
	for _, r := range s {
		if IsCJK(r) {
			run++
			continue
		}
		if run == 1 {
			return true
		}
		run = 0
	}
	return run == 1
}

// MaxQueryTerms is the most terms a search query may hold once repeats are
// collapsed: a word or a prefix counts one, a quoted phrase one per word
// (an empty one none).
// Operators need an operand on each side, so a query has fewer of them.
// Each term is a read of the index (a prefix of one or two characters reads
// a large part of it) and ORed terms multiply the work of ranking every
// match: on 100,000 messages, 32 ORed words take about a second.
const MaxQueryTerms = 32

// CheckQueryTerms returns an EINVALID error when the sanitised query q
// (SanitizeQuery's result) holds more than MaxQueryTerms terms.
func CheckQueryTerms(q string) error {
	n := 0
	items, _, _ := scanQuery(q, ContainsCJK(q))
	for _, it := range items {
		switch {
		case it.op != "":
		case it.text[0] == '"':
			n += len(strings.FieldsFunc(strings.Trim(it.text, `"*`), isPySpace))
		default:
			n++
		}
	}
	if n > MaxQueryTerms {
		return Errorf(EINVALID, "search query too complex: %d terms (a quoted phrase counts one per word, repeats once); at most %d are searched at once. Narrow it: keep the most distinctive words, drop OR alternatives, or run several searches", n, MaxQueryTerms)
	}
	return nil
}

// queryItem is one token of a sanitised query and its byte span.
type queryItem struct {
	start, end int
	text       string
	op         string // "AND", "OR" or "NOT" for an operator, else ""
}

// scanQuery splits q into "phrases" (a trailing * included), barewords
// and operators. With anyCase, and/or/not of any case are operators (the
// CJK routes read them so); otherwise only upper case ones are, as FTS5
// reads them, and ambiguous reports a lower or mixed case one (read as an
// operator by the LIKE routes). glued reports two tokens with no space
// between them (the LIKE routes read them as one).
func scanQuery(q string, anyCase bool) (items []queryItem, ambiguous, glued bool) {
	for i := 0; i < len(q); {
		r, n := utf8.DecodeRuneInString(q[i:])
		if isPySpace(r) {
			i += n
			continue
		}
		j := i + 1
		if r == '"' {
			end := strings.IndexByte(q[j:], '"')
			if end < 0 {
				j = len(q)
			} else {
				j += end + 1
			}
			if j < len(q) && q[j] == '*' {
				j++
			}
		} else {
			for j = i; j < len(q); {
				r, n := utf8.DecodeRuneInString(q[j:])
				if isPySpace(r) || r == '"' {
					break
				}
				j += n
			}
		}
		it := queryItem{start: i, end: j, text: q[i:j]}
		if isOperator(it.text) {
			switch {
			case it.text == strings.ToUpper(it.text) || anyCase:
				it.op = strings.ToUpper(it.text)
			default:
				ambiguous = true
			}
		}
		if len(items) > 0 && items[len(items)-1].end == i {
			glued = true
		}
		items = append(items, it)
		i = j
	}
	return items, ambiguous, glued
}

// CollapseRepeats removes repeated terms from a sanitised query where that
// cannot change what it finds, in FTS5 and in the LIKE routes alike. FTS5
// binds adjacent terms tightest, then NOT, then AND, then OR, so the query
// is an OR of AND-chains of NOT-chains of term sequences; repeats are
// dropped at each level: a term repeated in its sequence (`a* a*`), a
// repeated `NOT x`, a repeated AND operand, a repeated OR alternative
// (`a* OR a*`). The first term of a negated sequence is kept apart, as
// the LIKE routes negate only that one. The rest of q is kept byte for
// byte. A query this cannot read safely (an operator without operands, a
// lower case or/and/not, words glued to phrases) is returned unchanged.
func CollapseRepeats(q string) string {
	cjk := ContainsCJK(q)
	items, ambiguous, glued := scanQuery(q, cjk)
	if ambiguous || glued || len(items) == 0 {
		return q
	}
	for i, it := range items {
		if it.op != "" && (i == 0 || i == len(items)-1 || items[i-1].op != "") {
			return q
		}
	}
	drop := make([]bool, len(items))
	dropped := false
	dropSpan := func(s itemSpan, withOp bool) {
		for i := s.lo; i < s.hi; i++ {
			drop[i] = true
		}
		if withOp {
			drop[s.lo-1] = true
		}
		dropped = true
	}
	key := func(s itemSpan) string {
		var parts []string
		for i := s.lo; i < s.hi; i++ {
			if !drop[i] {
				parts = append(parts, items[i].text)
			}
		}
		return strings.Join(parts, " ")
	}
	seenAlt := map[string]bool{}
	for ai, alt := range splitItems(items, itemSpan{0, len(items)}, "OR") {
		seenOperand := map[string]bool{}
		for oi, operand := range splitItems(items, alt, "AND") {
			seenNot := map[string]bool{}
			for si, seq := range splitItems(items, operand, "NOT") {
				seen := map[string]bool{}
				first := seq.lo
				if si > 0 {
					first++ // the LIKE routes negate only the first term
				}
				for i := first; i < seq.hi; i++ {
					if seen[items[i].text] {
						dropSpan(itemSpan{i, i + 1}, false)
					}
					seen[items[i].text] = true
				}
				if si > 0 {
					if k := key(seq); seenNot[k] {
						dropSpan(seq, true)
					} else {
						seenNot[k] = true
					}
				}
			}
			if k := key(operand); seenOperand[k] && oi > 0 {
				dropSpan(operand, true)
			} else {
				seenOperand[k] = true
			}
		}
		if k := key(alt); seenAlt[k] && ai > 0 {
			dropSpan(alt, true)
		} else {
			seenAlt[k] = true
		}
	}
	if !dropped {
		return q
	}
	// Cut every run of dropped items with the space before it; the first
	// item is never dropped.
	var b strings.Builder
	pos := 0
	for i := 0; i < len(items); {
		if !drop[i] {
			i++
			continue
		}
		j := i
		for j < len(items) && drop[j] {
			j++
		}
		b.WriteString(q[pos:items[i-1].end])
		pos = items[j-1].end
		i = j
	}
	b.WriteString(q[pos:])
	out := strings.TrimSpace(b.String())
	if ContainsCJK(out) != cjk {
		// Only CJK separators (U+3000 and its neighbours) went with the
		// repeats: the query would leave the CJK routes, which requote
		// its tokens, for FTS5's syntax. It stays as it was.
		return q
	}
	return out
}

// itemSpan is items[lo:hi].
type itemSpan struct{ lo, hi int }

// splitItems splits s at the operator op.
func splitItems(items []queryItem, s itemSpan, op string) []itemSpan {
	var out []itemSpan
	lo := s.lo
	for i := s.lo; i < s.hi; i++ {
		if items[i].op == op {
			out = append(out, itemSpan{lo, i})
			lo = i + 1
		}
	}
	return append(out, itemSpan{lo, s.hi})
}
