package main

// Colour: one decision per run, from --color, NO_COLOR, TERM and whether
// standard output is a terminal, and the styles every command draws with.
// Without colour every style returns its text unchanged, so the plain
// output is exactly what it was before styles existed: snippets keep
// Hermes' >>> <<< markers, and --json never goes through a style.

import (
	"errors"
	"os"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// colorMode is the value of --color.
type colorMode string

const (
	colorAuto   colorMode = "auto"
	colorAlways colorMode = "always"
	colorNever  colorMode = "never"
)

func (m *colorMode) String() string { return string(*m) }

func (m *colorMode) Set(s string) error {
	switch v := colorMode(s); v {
	case colorAuto, colorAlways, colorNever:
		*m = v
		return nil
	}
	return errors.New("want auto, always or never")
}

// useColor decides whether output is styled. always and never mean what
// they say; auto (or unset) styles a terminal only, and not when NO_COLOR
// is set to anything but "" (https://no-color.org) or TERM is "dumb".
func useColor(mode colorMode, tty bool, noColor, term string) bool {
	switch mode {
	case colorAlways:
		return true
	case colorNever:
		return false
	}
	return tty && noColor == "" && term != "dumb"
}

// styles returns the styles for this run's standard output.
func (e *env) styles() styles {
	return styles{on: useColor(e.color, isTerminal(e.stdout), os.Getenv("NO_COLOR"), os.Getenv("TERM"))}
}

// Hermes' snippet markers around a match (snippet(..., '>>>', '<<<', ...)).
const (
	markOpen  = ">>>"
	markClose = "<<<"
)

// The SGR styles. Each is built on its own: ansi.Style is a slice, and two
// styles appended to one shared base could overwrite each other.
var (
	sgrBold      = ansi.Style{}.Bold()
	sgrFaint     = ansi.Style{}.Faint()
	sgrMatch     = ansi.Style{}.Bold().ForegroundColor(ansi.Red) // as rg shows matches
	sgrReasoning = ansi.Style{}.Faint().Italic()
	sgrToolCall  = ansi.Style{}.ForegroundColor(ansi.Yellow)
	sgrOK        = ansi.Style{}.ForegroundColor(ansi.Green)
	sgrWarn      = ansi.Style{}.Bold().ForegroundColor(ansi.Yellow)
	sgrFail      = ansi.Style{}.Bold().ForegroundColor(ansi.Red)
	sgrPinned    = ansi.Style{}.Bold().ForegroundColor(ansi.Yellow)
	// The same colour per role as browse.
	sgrRoles = map[string]ansi.Style{
		"user":      ansi.Style{}.Bold().ForegroundColor(ansi.Cyan),
		"assistant": ansi.Style{}.Bold().ForegroundColor(ansi.Green),
		"tool":      ansi.Style{}.Bold().ForegroundColor(ansi.Yellow),
		"system":    ansi.Style{}.Bold().ForegroundColor(ansi.Magenta),
	}
)

// styles renders emphasis with ANSI SGR sequences when on, and returns text
// unchanged when off.
type styles struct{ on bool }

func (st styles) apply(sgr ansi.Style, s string) string {
	if !st.on || s == "" {
		return s
	}
	return sgr.Styled(s)
}

func (st styles) bold(s string) string      { return st.apply(sgrBold, s) }
func (st styles) faint(s string) string     { return st.apply(sgrFaint, s) }
func (st styles) reasoning(s string) string { return st.apply(sgrReasoning, s) }
func (st styles) toolCall(s string) string  { return st.apply(sgrToolCall, s) }
func (st styles) ok(s string) string        { return st.apply(sgrOK, s) }
func (st styles) warn(s string) string      { return st.apply(sgrWarn, s) }
func (st styles) fail(s string) string      { return st.apply(sgrFail, s) }
func (st styles) pinned(s string) string    { return st.apply(sgrPinned, s) }

// role colours a message role (bold without a colour for other roles); s
// is what to print, the role padded or with its tool name.
func (st styles) role(role, s string) string {
	sgr, ok := sgrRoles[role]
	if !ok {
		sgr = sgrBold
	}
	return st.apply(sgr, s)
}

// match renders a snippet: each >>>match<<< highlighted, markers removed.
// Off, the snippet is returned as is, markers and all. A marker without its
// partner is left as text.
func (st styles) match(s string) string {
	if !st.on {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, markOpen)
		if i < 0 {
			break
		}
		j := strings.Index(s[i+len(markOpen):], markClose)
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		b.WriteString(st.apply(sgrMatch, s[i+len(markOpen):i+len(markOpen)+j]))
		s = s[i+len(markOpen)+j+len(markClose):]
	}
	b.WriteString(s)
	return b.String()
}

// text makes stored text safe to show between styles: escape sequences
// (tool output often holds colours, which would end or change ours) are
// removed. Off, text is returned as is.
func (st styles) text(s string) string {
	if !st.on || !strings.ContainsRune(s, '\x1b') {
		return s
	}
	return ansi.Strip(s)
}
