package main

// Tables padded and truncated by display width: a CJK character takes two
// terminal cells, a combining mark none, an emoji (one grapheme cluster,
// however many code points) usually two. text/tabwriter counts runes, so a
// Korean or Chinese title pushes the next columns right; every table of
// the CLI goes through this file instead.

import (
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
)

// cells measures display width. Characters of ambiguous width (…, —, box
// drawing) count one cell, or two when go-runewidth finds an East Asian
// locale or RUNEWIDTH_EASTASIAN=1, as such terminals draw them.
var cells = runewidth.NewCondition()

// width is the number of terminal cells s takes (s holds no escapes).
func width(s string) int { return cells.StringWidth(s) }

// clip shortens s to at most n cells on one line (whitespace runs become
// one space), marking a cut with "…".
func clip(s string, n int) string {
	return cells.Truncate(strings.Join(strings.Fields(s), " "), n, "…")
}

// padRight pads s with spaces to n cells.
func padRight(s string, n int) string { return s + fill(s, n) }

// fill is the spaces that pad s to n cells, for text styled after it was
// measured.
func fill(s string, n int) string { return strings.Repeat(" ", max(n-width(s), 0)) }

// cell is one table cell: its text, which sets the width, and the style
// it is drawn with (nil: none), applied inside the padding.
type cell struct {
	text  string
	style func(string) string
}

func plain(s string) cell { return cell{text: s} }

// align is how a column places its text.
type align int

const (
	alignLeft align = iota
	alignRight
)

// table lays cells out in columns as text/tabwriter with padding 2 does,
// but by display width: every column but the last is as wide as its widest
// cell plus two spaces, its text at the left (or right) of that; the last
// column is written as is. Trailing spaces are trimmed.
type table struct {
	align []align // per column; missing entries are alignLeft
	rows  [][]cell
}

func (t *table) add(cs ...cell) { t.rows = append(t.rows, cs) }

// addText adds a row of unstyled cells.
func (t *table) addText(texts ...string) {
	cs := make([]cell, len(texts))
	for i, s := range texts {
		cs[i] = plain(s)
	}
	t.add(cs...)
}

func (t *table) write(w io.Writer) error {
	_, err := io.WriteString(w, t.String())
	return err
}

func (t *table) String() string {
	ncol := 0
	for _, r := range t.rows {
		ncol = max(ncol, len(r))
	}
	widths := make([]int, ncol)
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], width(c.text))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		var line strings.Builder
		for i := range ncol {
			c := plain("")
			if i < len(r) {
				c = r[i]
			}
			text := c.text
			if c.style != nil {
				text = c.style(text)
			}
			if i == ncol-1 {
				line.WriteString(text)
				break
			}
			pad := strings.Repeat(" ", widths[i]-width(c.text)+2)
			if i < len(t.align) && t.align[i] == alignRight {
				line.WriteString(pad + text)
			} else {
				line.WriteString(text + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteString("\n")
	}
	return b.String()
}
