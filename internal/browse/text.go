package browse

import (
	"strings"
	"unicode"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// clean makes stored text safe to print: escape sequences and control
// characters (which could move the cursor or change the terminal's state)
// are removed, tabs become four spaces, and bidirectional overrides are
// dropped. Newlines are kept.
func clean(s string) string {
	if strings.ContainsRune(s, '\x1b') {
		s = ansi.Strip(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// oneLine cleans s and collapses its whitespace to single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(clean(s)), " ")
}

// truncate cuts s (which may hold escape sequences) to w cells, marking a
// cut with "…".
func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// fit truncates s to w cells and pads it with spaces to exactly w.
func fit(s string, w int) string {
	s = truncate(s, w)
	if pad := w - ansi.StringWidth(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

// truncateLeft keeps the last w cells of plain text s, marking a cut with
// "…" at the start (for paths, whose end matters most).
func truncateLeft(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n <= w {
		return s
	}
	return "…" + ansi.TruncateLeft(s, n-w+1, "")
}

// wrap breaks plain text into lines of at most w cells, at spaces where it
// can and inside long words where it must; wide (CJK) characters count two.
func wrap(s string, w int) []string {
	if w < 1 {
		w = 1
	}
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, " ")
		if line == "" {
			out = append(out, "")
			continue
		}
		out = append(out, strings.Split(ansi.Wrap(line, w, ""), "\n")...)
	}
	return out
}

// styles renders emphasis with SGR escapes. Colours are used only when
// colour is allowed; the attributes (bold, faint, underline, reverse) are
// not colours and stay under NO_COLOR.
type styles struct{ color bool }

func sgr(codes, s string) string {
	if s == "" {
		return ""
	}
	return "\x1b[" + codes + "m" + s + "\x1b[0m"
}

func (st styles) colored(color, attrs, s string) string {
	if st.color && color != "" {
		if attrs != "" {
			return sgr(attrs+";"+color, s)
		}
		return sgr(color, s)
	}
	if attrs == "" {
		return s
	}
	return sgr(attrs, s)
}

func (st styles) bold(s string) string    { return sgr("1", s) }
func (st styles) faint(s string) string   { return sgr("2", s) }
func (st styles) reverse(s string) string { return sgr("7", s) }
func (st styles) err(s string) string     { return st.colored("31", "1", s) }

// role styles a message role: a colour per role, bold without colour.
func (st styles) role(role, s string) string {
	color := map[string]string{"user": "36", "assistant": "32", "tool": "33", "system": "35"}[role]
	return st.colored(color, "1", s)
}

// match turns a snippet's >>> <<< markers into emphasis.
func (st styles) match(s string) string {
	on := "\x1b[1;4m"
	if st.color {
		on = "\x1b[1;33m"
	}
	return strings.NewReplacer(">>>", on, "<<<", "\x1b[0m").Replace(s)
}

// stripMarks removes a snippet's >>> <<< markers.
func stripMarks(s string) string {
	return strings.NewReplacer(">>>", "", "<<<", "").Replace(s)
}

// editor is a one-line text input: the query line and the rename prompt.
type editor struct {
	runes []rune
	pos   int
}

func (e *editor) value() string { return string(e.runes) }

func (e *editor) set(s string) {
	e.runes = []rune(s)
	e.pos = len(e.runes)
}

// handle applies an editing key and reports whether the key was an
// editing key and whether the text changed.
func (e *editor) handle(k tea.KeyMsg) (handled, changed bool) {
	switch k.Type {
	case tea.KeyRunes, tea.KeySpace:
		if k.Alt {
			return false, false
		}
		var ins []rune
		for _, r := range k.Runes {
			switch {
			case r == '\n' || r == '\r' || r == '\t':
				ins = append(ins, ' ')
			case unicode.IsControl(r):
			default:
				ins = append(ins, r)
			}
		}
		if k.Type == tea.KeySpace && len(ins) == 0 {
			ins = []rune{' '}
		}
		if len(ins) == 0 {
			return true, false
		}
		e.runes = append(e.runes[:e.pos], append(ins, e.runes[e.pos:]...)...)
		e.pos += len(ins)
		return true, true
	case tea.KeyBackspace, tea.KeyCtrlH:
		if e.pos == 0 {
			return true, false
		}
		e.runes = append(e.runes[:e.pos-1], e.runes[e.pos:]...)
		e.pos--
		return true, true
	case tea.KeyDelete, tea.KeyCtrlD:
		if e.pos == len(e.runes) {
			return true, false
		}
		e.runes = append(e.runes[:e.pos], e.runes[e.pos+1:]...)
		return true, true
	case tea.KeyLeft, tea.KeyCtrlB:
		e.pos = max(e.pos-1, 0)
		return true, false
	case tea.KeyRight, tea.KeyCtrlF:
		e.pos = min(e.pos+1, len(e.runes))
		return true, false
	case tea.KeyHome, tea.KeyCtrlA:
		e.pos = 0
		return true, false
	case tea.KeyEnd, tea.KeyCtrlE:
		e.pos = len(e.runes)
		return true, false
	case tea.KeyCtrlU:
		changed := e.pos > 0
		e.runes = e.runes[e.pos:]
		e.pos = 0
		return true, changed
	case tea.KeyCtrlK:
		changed := e.pos < len(e.runes)
		e.runes = e.runes[:e.pos]
		return true, changed
	case tea.KeyCtrlW:
		start := e.pos
		for start > 0 && unicode.IsSpace(e.runes[start-1]) {
			start--
		}
		for start > 0 && !unicode.IsSpace(e.runes[start-1]) {
			start--
		}
		changed := start < e.pos
		e.runes = append(e.runes[:start], e.runes[e.pos:]...)
		e.pos = start
		return true, changed
	}
	return false, false
}

// view renders the text in w cells, scrolled so the cursor shows; with
// focus the cursor is a reverse-video cell.
func (e *editor) view(w int, focus bool) string {
	if w < 2 {
		return ""
	}
	width := func(rs []rune) int { return ansi.StringWidth(string(rs)) }
	start := 0
	for start < e.pos && width(e.runes[start:e.pos])+1 > w {
		start++
	}
	before := string(e.runes[start:e.pos])
	if !focus {
		return truncate(string(e.runes[start:]), w)
	}
	at, after := " ", ""
	if e.pos < len(e.runes) {
		at, after = string(e.runes[e.pos]), string(e.runes[e.pos+1:])
	}
	rest := w - ansi.StringWidth(before) - ansi.StringWidth(at)
	return before + sgr("7", at) + truncate(after, rest)
}
