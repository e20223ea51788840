package postgres

// What PostgreSQL stores for search, built in Go from a message's fields
// (see DESIGN.md, "Search"). The insert path calls
//
//	func indexMessage(in indexInput) (indexRow, error)
//
// once per message and writes the row's fields into the columns of
// migrations/0002_search.sql:
//
//	messages.tsv       tsvector  = indexRow.TSV      (text input form; cast with $n::tsvector)
//	messages.doclen    integer   = indexRow.DocLen
//	messages.tsv_cjk   tsvector  = indexRow.TSVCJK   (NULL for tool rows)
//	messages.doclen_cjk integer  = indexRow.DocLenCJK
//	messages.tsv_state smallint  = indexRow.State
//	messages.trigram   boolean   = indexRow.Trigram
//
// The error is the tokenizer's (out of memory); indexMessage never fails
// on the message's bytes. searchColumns, searchPlaceholders and
// indexRow.args spell those columns for an INSERT:
//
//	"INSERT INTO messages (..., " + searchColumns + ") VALUES (..., " + searchPlaceholders(n) + ")"
//	args = append(args, row.args()...)
//
// Every row must get them: a NULL tsv is never found.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// PostgreSQL's tsvector limits (tsearch/ts_type.h): a lexeme is at most
// 2046 bytes, a position at most 16383 (larger ones are silently clamped),
// a lexeme keeps at most 256 positions (later ones are silently dropped),
// and the lexemes and positions of one tsvector take under 1 MiB.
const (
	maxLexemeBytes   = 2046
	maxPosition      = 16383
	maxLexemePos     = 256
	maxTSVectorBytes = 1000000 // kept under 1 MiB, with room for the headers
)

// toolPrefixChars is how much of a tool result the word index holds, in
// characters as SQLite's substr counts them (schema/fts.sql).
const toolPrefixChars = 8192

// Index states (messages.tsv_state): whether the stored tsvectors say
// exactly what the FTS5 indexes would.
const (
	// stateExact: the tsvectors answer every query as FTS5 does.
	stateExact = 0
	// statePositions: every lexeme is present, but positions were dropped
	// (past 16383, or past a lexeme's 256th) or a lexeme was cut to 2046
	// bytes: phrases may be missed or mismatched. Search finds such a row
	// by its lexemes alone and checks it in Go.
	statePositions = 1
	// stateIncomplete: markers or lexemes were dropped to keep the tsvector
	// under 1 MiB. Search reads such a row for every query and checks it in
	// Go, and ranks it last.
	stateIncomplete = 2
)

// oneCharMarker starts the marker lexemes of the word tsvector: for each
// CJK character c of a token that sorts at or above U+1100 (every token
// beginning with CJK), the lexeme marker+c, so a one-character CJK query
// finds those tokens with one index lookup, as the SQLite backend reads the
// word index's vocabulary. No token holds a control character, so a marker
// never equals a token, and markers carry no position.
const oneCharMarker = "\x02"

// impactMarker, two decimal digits (the tier) and a lexeme make the impact
// markers of a tsvector: the lexeme's bm25 weight in the row (impact),
// quantized to tiers of impactStep, for every lexeme whose impact reaches
// minImpactTier. A one-word query ranks its matches tier by tier from the
// highest (rankTiers in search.go) and reads only the rows of the tiers it
// needs: GIN finds them by the marker.
const impactMarker = "\x03"

// bm25 parameters (FTS5's defaults) and the reference average document
// length the impacts are computed with (the shared workload's is 56).
const (
	bm25K1        = 1.2
	bm25B         = 0.75
	refAvgDocLen  = 64
	impactStep    = 0.05
	minImpactTier = 20 // impact 1.0; the highest is 2.2 (k1+1), tier 44
)

// impact is bm25's term weight for a term occurring tf times in a document
// of doclen tokens, without the idf: tf·(k1+1) / (tf + k1·(1 − b + b·doclen/avgdl)).
func impact(tf, doclen int) float64 {
	return float64(tf) * (bm25K1 + 1) / (float64(tf) + bm25K1*(1-bm25B+bm25B*float64(doclen)/refAvgDocLen))
}

// impactTier is impact's tier.
func impactTier(tf, doclen int) int { return int(impact(tf, doclen) / impactStep) }

// impactLexeme is the marker of lex in tier.
func impactLexeme(tier int, lex string) string {
	return impactMarker + string(rune('0'+tier/10)) + string(rune('0'+tier%10)) + lex
}

// invalidByteMarker, followed by two hex digits, stands in a lexeme for a
// byte that is not valid UTF-8 (PostgreSQL only stores valid UTF-8): one
// way, prefixes kept, never equal to a token's own text.
const invalidByteMarker = "\x01"

// indexInput is what indexing reads of a message and its session.
// Content, ToolName and ToolCalls are the texts exactly as the SQLite
// backend stores them (any bytes; nil for NULL).
type indexInput struct {
	Role        string
	Content     *string
	ToolName    *string
	ToolCalls   *string
	Source      string  // the session's source
	ModelConfig *string // the session's model_config
}

// indexRow is what PostgreSQL stores for a message's search.
type indexRow struct {
	TSV       string  // word index (unicode61): tsvector text form
	DocLen    int     // FTS5's document length in the word index (messages_fts_docsize, all columns)
	TSVCJK    *string // CJK bigram index (cjk_unicode61); nil for tool rows
	DocLenCJK int     // FTS5's document length in the bigram index (0 for tool rows)
	State     int     // stateExact, statePositions or stateIncomplete (the worse of the two tsvectors)
	Trigram   bool    // the row belongs in the trigram index
}

// searchColumns are the columns indexRow fills, in args' order.
const searchColumns = "tsv, doclen, tsv_cjk, doclen_cjk, tsv_state, trigram"

// searchPlaceholders returns the placeholders of searchColumns from $n on,
// with the casts the tsvector text needs.
func searchPlaceholders(n int) string {
	p := func(i int) string { return "$" + strconv.Itoa(n+i) }
	return p(0) + "::tsvector, " + p(1) + ", " + p(2) + "::tsvector, " + p(3) + ", " + p(4) + ", " + p(5)
}

// args returns the row's values in searchColumns' order.
func (x indexRow) args() []any {
	return []any{x.TSV, x.DocLen, x.TSVCJK, x.DocLenCJK, x.State, x.Trigram}
}

var (
	tokenizersOnce sync.Once
	wordTok        *fts5cjk.Tokenizer
	cjkTok         *fts5cjk.Tokenizer
	tokenizersErr  error
)

// tokenizers returns the process's unicode61 and cjk_unicode61 tokenizers,
// created on first use and kept for the life of the process.
func tokenizers() (word, cjk *fts5cjk.Tokenizer, err error) {
	tokenizersOnce.Do(func() {
		if wordTok, tokenizersErr = fts5cjk.NewTokenizer("unicode61"); tokenizersErr != nil {
			return
		}
		cjkTok, tokenizersErr = fts5cjk.NewTokenizer("cjk_unicode61")
	})
	return wordTok, cjkTok, tokenizersErr
}

// indexTexts are the column texts of the word, bigram and trigram indexes
// for a message, as the SQLite backend's content views give them.
func wordTexts(in indexInput) [3]string {
	content := deref(in.Content)
	if in.Role == sessiondb.RoleTool {
		content = sqliteSubstr(content, toolPrefixChars)
	}
	return [3]string{content, deref(in.ToolName), deref(in.ToolCalls)}
}

func cjkTexts(in indexInput) [3]string {
	return [3]string{deref(in.Content), deref(in.ToolName), deref(in.ToolCalls)}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// indexMessage builds what PostgreSQL stores for a message's search.
func indexMessage(in indexInput) (indexRow, error) {
	word, cjk, err := tokenizers()
	if err != nil {
		return indexRow{}, err
	}
	var out indexRow
	b := getBuilder()
	defer builders.Put(b)
	if err := b.columns(word, wordTexts(in), true); err != nil {
		return indexRow{}, err
	}
	out.TSV, out.DocLen, out.State = b.text()
	if in.Role != sessiondb.RoleTool {
		b = getBuilder()
		defer builders.Put(b)
		if err := b.columns(cjk, cjkTexts(in), false); err != nil {
			return indexRow{}, err
		}
		s, n, state := b.text()
		out.TSVCJK, out.DocLenCJK, out.State = &s, n, max(out.State, state)
		out.Trigram = in.Source != "cron" && in.Source != "subagent" && !delegated(in.ModelConfig)
	}
	return out, nil
}

// delegated reports whether model_config names a delegating parent: what
// json_extract(model_config, '$._delegate_from') IS NOT NULL says in the
// SQLite trigram view (invalid JSON counts as an empty object; the first
// of repeated keys wins, as in SQLite).
func delegated(modelConfig *string) bool {
	if modelConfig == nil || !json.Valid([]byte(*modelConfig)) {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(*modelConfig))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		if k == "_delegate_from" {
			return !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
		}
	}
	return false
}

// sqliteSubstr is SQLite's substr(s, 1, n) on a TEXT value: n characters,
// a character being a byte and the continuation bytes (10xxxxxx) after a
// byte ≥ 0xC0, and the text ending at its first NUL byte.
func sqliteSubstr(s string, n int) string {
	i := 0
	for ; i < len(s) && s[i] != 0 && n > 0; n-- {
		c := s[i]
		i++
		if c >= 0xC0 {
			for i < len(s) && s[i]&0xC0 == 0x80 {
				i++
			}
		}
	}
	return s[:i]
}

// tsvBuilder collects the lexemes of one tsvector with their positions.
// Builders are pooled: their maps and slices are reused.
type tsvBuilder struct {
	index   map[string]int // lexeme → its entry
	entries []tsvEntry     // in first-seen order
	markers []string       // lexemes without position
	chars   map[rune]bool  // CJK characters with a one-character marker
	doclen  int
	state   int
	toks    []fts5cjk.Token
}

// tsvEntry is one lexeme: its positions (ascending, 1-based, at most
// maxLexemePos) and how often it occurs.
type tsvEntry struct {
	lex string
	pos []int
	tf  int
}

var builders = sync.Pool{New: func() any { return &tsvBuilder{index: map[string]int{}, chars: map[rune]bool{}} }}

func getBuilder() *tsvBuilder {
	b := builders.Get().(*tsvBuilder)
	clear(b.index)
	clear(b.chars)
	b.entries, b.markers, b.doclen, b.state = b.entries[:0], b.markers[:0], 0, stateExact
	return b
}

// columns adds the tokens of the texts, column after column: FTS5
// position p of column c becomes base(c)+p+1, each column's base leaving
// one unused position after the previous column, so a phrase (<->) never
// spans two columns. With markers, the one-character markers are added.
func (b *tsvBuilder) columns(tok *fts5cjk.Tokenizer, texts [3]string, markers bool) error {
	base := 0
	for _, text := range texts {
		var err error
		if b.toks, err = tok.AppendTokens(b.toks[:0], text); err != nil {
			return fmt.Errorf("index message: %w", err)
		}
		p := -1
		for _, t := range b.toks {
			if !t.Colocated || p < 0 {
				p++
			}
			lex, cut := lexeme(t.Text)
			if cut {
				b.state = max(b.state, statePositions) // another long token may share it
			}
			i, seen := b.index[lex]
			if !seen {
				i = len(b.entries)
				b.index[lex] = i
				if i < cap(b.entries) {
					b.entries = b.entries[:i+1]
					b.entries[i] = tsvEntry{lex: lex, pos: b.entries[i].pos[:0]}
				} else {
					b.entries = append(b.entries, tsvEntry{lex: lex})
				}
			}
			e := &b.entries[i]
			e.tf++
			switch at := base + p + 1; {
			case at > maxPosition || len(e.pos) == maxLexemePos:
				b.state = max(b.state, statePositions)
			case len(e.pos) == 0 || e.pos[len(e.pos)-1] != at:
				e.pos = append(e.pos, at)
			}
			if markers && t.Text >= "\u1100" {
				for _, r := range t.Text {
					if fts5cjk.IsCJK(r) && !b.chars[r] {
						b.chars[r] = true
						b.markers = append(b.markers, oneCharMarker+string(r))
					}
				}
			}
		}
		b.doclen += p + 1
		base += p + 2
	}
	return nil
}

// text returns the tsvector's text input form, the document length and
// the state, dropping markers, then positions, then lexemes, past the size
// limit.
func (b *tsvBuilder) text() (string, int, int) {
	for _, e := range b.entries {
		if tier := impactTier(e.tf, b.doclen); tier >= minImpactTier && len(e.lex)+3 <= maxLexemeBytes {
			b.markers = append(b.markers, impactLexeme(tier, e.lex))
		}
	}
	size := 0
	for _, e := range b.entries {
		size += tsvEntrySize(e.lex, len(e.pos))
	}
	for _, m := range b.markers {
		size += tsvEntrySize(m, 0)
	}
	if size > maxTSVectorBytes {
		b.state = max(b.state, statePositions)
		for len(b.markers) > 0 && size > maxTSVectorBytes {
			size -= tsvEntrySize(b.markers[len(b.markers)-1], 0)
			b.markers = b.markers[:len(b.markers)-1]
			b.state = stateIncomplete // its rank tier is unknown to the walk
		}
		// Positions go next, from the lexemes seen last; then lexemes.
		for i := len(b.entries) - 1; i >= 0 && size > maxTSVectorBytes; i-- {
			e := &b.entries[i]
			size += tsvEntrySize(e.lex, 0) - tsvEntrySize(e.lex, len(e.pos))
			e.pos = e.pos[:0]
		}
		for size > maxTSVectorBytes {
			size -= tsvEntrySize(b.entries[len(b.entries)-1].lex, 0)
			b.entries = b.entries[:len(b.entries)-1]
			b.state = stateIncomplete
		}
	}
	sort.Slice(b.entries, func(i, j int) bool { return b.entries[i].lex < b.entries[j].lex })
	sort.Strings(b.markers)
	var s strings.Builder
	s.Grow(size + 2*(len(b.entries)+len(b.markers)))
	for _, m := range b.markers {
		if s.Len() > 0 {
			s.WriteByte(' ')
		}
		writeQuoted(&s, m)
	}
	var num [8]byte
	for _, e := range b.entries {
		if s.Len() > 0 {
			s.WriteByte(' ')
		}
		writeQuoted(&s, e.lex)
		for j, p := range e.pos {
			if j == 0 {
				s.WriteByte(':')
			} else {
				s.WriteByte(',')
			}
			s.Write(strconv.AppendInt(num[:0], int64(p), 10))
		}
	}
	return s.String(), b.doclen, b.state
}

// tsvEntrySize bounds what a lexeme with n positions takes in a tsvector:
// its entry, its bytes (aligned) and its positions.
func tsvEntrySize(lex string, n int) int {
	size := 4 + len(lex)
	if n > 0 {
		size += 1 + 2 + 2*n
	}
	return size
}

// writeQuoted writes lex as a quoted lexeme of tsvector (or tsquery) text
// input: quotes doubled, backslashes escaped.
func writeQuoted(s *strings.Builder, lex string) {
	s.WriteByte('\'')
	for i := 0; i < len(lex); i++ {
		switch c := lex[i]; c {
		case '\'':
			s.WriteString("''")
		case '\\':
			s.WriteString(`\\`)
		default:
			s.WriteByte(c)
		}
	}
	s.WriteByte('\'')
}

// lexeme is the PostgreSQL lexeme standing for an FTS5 token: bytes that
// are not valid UTF-8 become invalidByteMarker and two hex digits, and the
// result is cut, at a character boundary, to maxLexemeBytes (cut reports
// it). The query side maps its tokens the same way; both keep prefixes.
func lexeme(token string) (lex string, cut bool) {
	if len(token) <= maxLexemeBytes && utf8.ValidString(token) {
		return token, false
	}
	var b strings.Builder
	for i := 0; i < len(token); {
		r, n := utf8.DecodeRuneInString(token[i:])
		piece := token[i : i+n]
		if r == utf8.RuneError && n == 1 {
			piece = fmt.Sprintf("%s%02x", invalidByteMarker, token[i])
		}
		if b.Len()+len(piece) > maxLexemeBytes {
			return b.String(), true
		}
		b.WriteString(piece)
		i += n
	}
	return b.String(), false
}
