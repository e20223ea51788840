package postgres

import (
	"sort"
	"strings"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// Snippets are made in Go by the rules of FTS5's snippet(t, -1, '>>>',
// '<<<', '...', 40), which the SQLite backend's sessiondb_snippet
// (sqlite/fts5cjk/snippet.c) follows too: the row's columns are tokenized
// with the index's tokenizer, the query's phrase instances found on the
// tokens, the best 40-token fragment chosen and cut from the text.

const (
	snippetOpen   = ">>>"
	snippetClose  = "<<<"
	snippetEllips = "..."
	snippetTokens = 40
)

// inst is one phrase instance: FTS5's xInst.
type inst struct{ phrase, col, off, size int }

// rowDoc is a row's columns in one index: the texts (nil for NULL) and
// their tokens.
type rowDoc struct {
	texts []*string
	toks  [][]fts5cjk.Token
}

func (r rowDoc) doc() doc {
	d := make(doc, len(r.toks))
	for c, ts := range r.toks {
		col := make([]string, 0, len(ts))
		for _, t := range ts {
			if !t.Colocated {
				col = append(col, t.Text)
			}
		}
		d[c] = col
	}
	return d
}

// tokenizeRow tokenizes texts with tok.
func tokenizeRow(tok *fts5cjk.Tokenizer, texts []*string) (rowDoc, error) {
	r := rowDoc{texts: texts, toks: make([][]fts5cjk.Token, len(texts))}
	for c, t := range texts {
		if t == nil {
			continue
		}
		toks, err := tok.Tokens(*t)
		if err != nil {
			return r, err
		}
		r.toks[c] = toks
	}
	return r, nil
}

// instances returns the instances of the phrases live in a matching row,
// in FTS5's order: by column and offset, then by phrase.
func instances(root *qnode, d doc) []inst {
	var out []inst
	for _, p := range root.live(d, nil) {
		for c, col := range d {
			for _, off := range p.at(col) {
				out = append(out, inst{p.index, c, off, len(p.tokens)})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.col != b.col {
			return a.col < b.col
		}
		if a.off != b.off {
			return a.off < b.off
		}
		return a.phrase < b.phrase
	})
	return out
}

// makeSnippet returns the snippet of a row, or nil where FTS5 returns NULL
// (the chosen column is NULL).
func makeSnippet(r rowDoc, insts []inst, nPhrase int) *string {
	const nToken = snippetTokens
	bestCol, bestStart, bestScore := 0, 0, 0
	seen := make([]bool, nPhrase)
	score := func(col, pos int, center bool) (int, int) {
		clear(seen)
		n, first, last := 0, -1, 0
		for _, x := range insts {
			if x.col == col && x.off >= pos && x.off < pos+nToken {
				if seen[x.phrase] {
					n++
				} else {
					n += 1000
				}
				seen[x.phrase] = true
				if first < 0 {
					first = x.off
				}
				last = x.off + x.size
			}
		}
		if !center {
			return n, 0
		}
		adj := first - (nToken-(last-first))/2
		if size := len(r.toks[col]); adj+nToken > size {
			adj = size - nToken
		}
		return n, max(adj, 0)
	}
	for c := range r.toks {
		firsts := sentenceStarts(r, c)
		size := len(r.toks[c])
		for _, x := range insts {
			if x.col != c {
				continue
			}
			if n, adj := score(c, x.off, true); n > bestScore {
				bestScore, bestCol, bestStart = n, c, adj
			}
			if len(firsts) > 0 && size > nToken {
				i := sort.SearchInts(firsts, x.off+1) - 1 // the last start at or before the instance
				if f := firsts[i]; f < x.off {
					n, _ := score(c, f, false)
					if f == 0 {
						n += 120
					} else {
						n += 100
					}
					if n > bestScore {
						bestScore, bestCol, bestStart = n, c, f
					}
				}
			}
		}
	}
	if bestCol >= len(r.texts) || r.texts[bestCol] == nil {
		return nil
	}
	var out strings.Builder
	text, toks := *r.texts[bestCol], r.toks[bestCol]
	to := bestStart + nToken - 1
	if bestStart > 0 {
		out.WriteString(snippetEllips)
	}
	run := newRun(insts, bestCol)
	for run.start >= 0 && run.start < bestStart {
		run.next()
	}
	off := cut(&out, text, toks, run, bestStart, to)
	if to >= len(toks)-1 {
		appendText(&out, text[off:])
	} else {
		out.WriteString(snippetEllips)
	}
	s := out.String()
	return &s
}

// sentenceStarts are the positions of column c's tokens that start a
// sentence: the first, and any after '.' or ':' and white space.
func sentenceStarts(r rowDoc, c int) []int {
	toks := r.toks[c]
	if len(toks) == 0 {
		return nil
	}
	text := *r.texts[c]
	out := []int{0}
	for p := 1; p < len(toks); p++ {
		i := toks[p].Start - 1
		var ch byte
		for ; i >= 0; i-- {
			ch = text[i]
			if ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r' {
				break
			}
		}
		if i != toks[p].Start-1 && i >= 0 && (ch == '.' || ch == ':') {
			out = append(out, p)
		}
	}
	return out
}

// run walks a column's instances, overlapping ones joined (highlighted as
// one): [start, end], -1 when none is left.
type run struct {
	insts      []inst
	i, col     int
	start, end int
}

func newRun(insts []inst, col int) *run {
	r := &run{insts: insts, col: col}
	r.next()
	return r
}

func (r *run) next() {
	r.start, r.end = -1, -1
	for ; r.i < len(r.insts); r.i++ {
		x := r.insts[r.i]
		if x.col != r.col {
			continue
		}
		end := x.off - 1 + x.size
		switch {
		case r.start < 0:
			r.start, r.end = x.off, end
		case x.off <= r.end:
			r.end = max(r.end, end)
		default:
			return
		}
	}
}

// cut writes tokens [from, to] of a column, highlighting the runs as
// FTS5's highlight callback does, and returns the offset copied up to.
func cut(out *strings.Builder, text string, toks []fts5cjk.Token, r *run, from, to int) int {
	off, open := 0, false
	for pos, t := range toks {
		if pos < from {
			continue
		}
		if pos > to {
			break
		}
		if from > 0 && pos == from {
			off = t.Start
		}
		if open && (pos <= r.start || r.start < 0) && t.Start > off {
			out.WriteString(snippetClose)
			open = false
		}
		if pos == r.start && !open {
			appendText(out, piece(text, off, t.Start))
			out.WriteString(snippetOpen)
			off = t.Start
			open = true
		}
		if pos == r.end {
			if !open {
				out.WriteString(snippetOpen)
				open = true
			}
			appendText(out, piece(text, off, t.End))
			off = t.End
			r.next()
		}
		if pos == to {
			if open {
				if r.start >= 0 && pos >= r.start {
					appendText(out, piece(text, off, t.End))
					off = t.End
				}
				out.WriteString(snippetClose)
				open = false
			}
			appendText(out, piece(text, off, t.End))
			off = t.End
		}
	}
	if open {
		out.WriteString(snippetClose)
	}
	return off
}

// piece is text[a:b]; when b < a (a token's offsets are approximate after
// case folding) it is the rest of the text, as snipAppend reads a negative
// length.
func piece(text string, a, b int) string {
	a = min(a, len(text))
	if b < a {
		return text[a:]
	}
	return text[a:min(b, len(text))]
}

// appendText appends s up to its first NUL byte, as SQLite's printf cuts
// the pieces of a snippet.
func appendText(out *strings.Builder, s string) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	out.WriteString(s)
}
