package postgres

import (
	"strings"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// A sanitised FTS5 query (sessiondb.SanitizeQuery or QuoteTokens output)
// is parsed into a tree, each phrase tokenized with the index's tokenizer,
// and the tree is written as tsquery text (see DESIGN.md, "Search"). The
// same tree checks rows whose tsvector is lossy (Go evaluates it on the
// row's tokens) and tells the snippet which phrase instances to mark.

// qnode is a node of a parsed FTS5 query.
type qnode struct {
	op     string   // "phrase", "AND", "OR", "NOT" (binary: kids[0] NOT kids[1]), "EOF"
	text   string   // phrase: as the query spells it
	tokens []string // phrase: its tokens as FTS5 has them
	prefix bool     // phrase: the last token is a prefix
	index  int      // phrase: its number in the query (FTS5's iPhrase)
	adj    bool     // AND: of adjacent phrases (implicit), not of the AND operator
	kids   []*qnode
}

// eof is a node matching nothing: FTS5 makes a phrase without tokens one.
var eof = &qnode{op: "EOF"}

// parseFTS parses q as FTS5 does after sanitising: phrases ("..." with
// "" for a quote, or barewords; a trailing * makes a prefix), adjacent
// phrases ANDed tightest, then NOT, then AND, then OR, all left to right.
// Only upper-case AND, OR and NOT are operators. ok is false for a query
// FTS5 would reject (an operator without an operand), which finds nothing.
func parseFTS(q string, tok *fts5cjk.Tokenizer) (root *qnode, phrases []*qnode, ok bool, err error) {
	var toks []fts5cjk.Token
	type item struct {
		op   string
		text string
		star bool
	}
	var items []item
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(q); j++ {
				if q[j] == '"' {
					if j+1 < len(q) && q[j+1] == '"' {
						b.WriteByte('"')
						j++
						continue
					}
					break
				}
				b.WriteByte(q[j])
			}
			if j >= len(q) {
				return nil, nil, false, nil // unterminated string
			}
			j++
			it := item{text: b.String()}
			if j < len(q) && q[j] == '*' {
				it.star = true
				j++
			}
			items = append(items, it)
			i = j
		default:
			j := i
			for j < len(q) {
				r, n := utf8.DecodeRuneInString(q[j:])
				if !(r >= 0x80 || r == '_' || r == 0x1a || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
					break
				}
				j += n
			}
			if j == i {
				return nil, nil, false, nil // a character FTS5 rejects
			}
			word := q[i:j]
			it := item{text: word}
			if j < len(q) && q[j] == '*' {
				it.star = true
				j++
			}
			if !it.star && (word == "AND" || word == "OR" || word == "NOT") {
				it = item{op: word}
			}
			items = append(items, it)
			i = j
		}
	}
	if len(items) == 0 {
		return nil, nil, false, nil
	}
	// Phrases, then sequences (implicit AND), split by operators.
	var operands []*qnode
	var ops []string
	var seq []*qnode
	for _, it := range items {
		if it.op != "" {
			if len(seq) == 0 {
				return nil, nil, false, nil
			}
			operands = append(operands, and(seq))
			ops = append(ops, it.op)
			seq = nil
			continue
		}
		toks, err = tok.AppendTokens(toks[:0], it.text)
		if err != nil {
			return nil, nil, false, err
		}
		p := &qnode{op: "phrase", text: it.text, prefix: it.star, index: len(phrases)}
		for _, t := range toks {
			if !t.Colocated {
				p.tokens = append(p.tokens, t.Text)
			}
		}
		phrases = append(phrases, p)
		seq = append(seq, p)
	}
	if len(seq) == 0 {
		return nil, nil, false, nil
	}
	operands = append(operands, and(seq))
	// NOT binds tighter than AND, AND tighter than OR; all left-associative.
	for _, level := range []string{"NOT", "AND", "OR"} {
		outs := []*qnode{operands[0]}
		var outOps []string
		for i, op := range ops {
			if op == level {
				outs[len(outs)-1] = &qnode{op: op, kids: []*qnode{outs[len(outs)-1], operands[i+1]}}
				continue
			}
			outs = append(outs, operands[i+1])
			outOps = append(outOps, op)
		}
		operands, ops = outs, outOps
	}
	return operands[0], phrases, true, nil
}

func and(seq []*qnode) *qnode {
	if len(seq) == 1 {
		return seq[0]
	}
	return &qnode{op: "AND", adj: true, kids: seq}
}

// simplify folds the phrases without tokens as FTS5 does: such a phrase
// matches nothing, so an AND operator holding one matches nothing, an OR
// drops it, "x NOT nothing" is x and "nothing NOT x" nothing; among
// adjacent phrases (an implicit AND) it is dropped, unless all are empty.
func simplify(n *qnode) *qnode {
	switch n.op {
	case "phrase":
		if len(n.tokens) == 0 {
			return eof
		}
		return n
	case "AND":
		kids := make([]*qnode, 0, len(n.kids))
		for _, k := range n.kids {
			k = simplify(k)
			switch {
			case k == eof && n.adj:
				continue
			case k == eof:
				return eof
			}
			kids = append(kids, k)
		}
		switch len(kids) {
		case 0:
			return eof
		case 1:
			return kids[0]
		}
		return &qnode{op: "AND", adj: n.adj, kids: kids}
	case "OR":
		var kids []*qnode
		for _, k := range n.kids {
			if k = simplify(k); k != eof {
				kids = append(kids, k)
			}
		}
		switch len(kids) {
		case 0:
			return eof
		case 1:
			return kids[0]
		}
		return &qnode{op: "OR", kids: kids}
	case "NOT":
		l, r := simplify(n.kids[0]), simplify(n.kids[1])
		if l == eof || r == eof {
			return l
		}
		return &qnode{op: "NOT", kids: []*qnode{l, r}}
	}
	return n
}

// tsquery writes n as tsquery text input. With relaxed, every phrase
// becomes the AND of its lexemes and a NOT whose right side is not exact
// on lossy rows keeps its left side only: what a row whose positions were
// dropped must match to be a candidate.
func tsquery(n *qnode, relaxed bool) string {
	var b strings.Builder
	writeTSQuery(&b, n, relaxed)
	return b.String()
}

func writeTSQuery(b *strings.Builder, n *qnode, relaxed bool) {
	switch n.op {
	case "phrase":
		sep := " <-> "
		if relaxed {
			sep = " & "
		}
		b.WriteByte('(')
		for i, t := range n.tokens {
			if i > 0 {
				b.WriteString(sep)
			}
			lex, _ := lexeme(t)
			writeQuoted(b, lex)
			if n.prefix && i == len(n.tokens)-1 {
				b.WriteString(":*")
			}
		}
		b.WriteByte(')')
	case "AND", "OR":
		sep := " & "
		if n.op == "OR" {
			sep = " | "
		}
		b.WriteByte('(')
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(sep)
			}
			writeTSQuery(b, k, relaxed)
		}
		b.WriteByte(')')
	case "NOT":
		if relaxed && !exactOnLossy(n.kids[1]) {
			writeTSQuery(b, n.kids[0], relaxed)
			return
		}
		b.WriteByte('(')
		writeTSQuery(b, n.kids[0], relaxed)
		b.WriteString(" & !")
		writeTSQuery(b, n.kids[1], relaxed)
		b.WriteByte(')')
	}
}

// exactOnLossy reports whether n needs no positions and no lexeme longer
// than PostgreSQL keeps: such a tree answers rows with lossy positions
// exactly.
func exactOnLossy(n *qnode) bool {
	if n.op == "phrase" {
		_, cut := lexeme(n.tokens[0])
		return len(n.tokens) == 1 && !cut
	}
	for _, k := range n.kids {
		if !exactOnLossy(k) {
			return false
		}
	}
	return true
}

// doc is a row's token stream in one index: per column, the tokens at
// their FTS5 positions.
type doc [][]string

// matches evaluates n on d as FTS5 does.
func (n *qnode) matches(d doc) bool {
	switch n.op {
	case "phrase":
		for _, col := range d {
			if len(n.at(col)) > 0 {
				return true
			}
		}
		return false
	case "AND":
		for _, k := range n.kids {
			if !k.matches(d) {
				return false
			}
		}
		return true
	case "OR":
		for _, k := range n.kids {
			if k.matches(d) {
				return true
			}
		}
		return false
	case "NOT":
		return n.kids[0].matches(d) && !n.kids[1].matches(d)
	}
	return false
}

// at returns the positions in col where phrase n starts.
func (n *qnode) at(col []string) []int {
	var out []int
	for p := 0; p+len(n.tokens) <= len(col); p++ {
		ok := true
		for i, t := range n.tokens {
			if n.prefix && i == len(n.tokens)-1 {
				ok = strings.HasPrefix(col[p+i], t)
			} else {
				ok = col[p+i] == t
			}
			if !ok {
				break
			}
		}
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// live appends the phrases whose instances FTS5 reports for a matching
// row: those of the subtrees that match it (for NOT, its left side).
func (n *qnode) live(d doc, out []*qnode) []*qnode {
	switch n.op {
	case "phrase":
		return append(out, n)
	case "AND", "OR":
		for _, k := range n.kids {
			if k.matches(d) {
				out = k.live(d, out)
			}
		}
	case "NOT":
		out = n.kids[0].live(d, out)
	}
	return out
}
