package browse

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// View draws the screen: a header line, the body, the status line and a
// line of keys (or the prompt). Every line fits the width, so nothing
// wraps, and there are exactly as many lines as the terminal is high.
func (m *Model) View() string {
	w, h := m.w, m.h
	if w < 20 || h < 4 {
		return truncate("sessiondb: terminal too small", w)
	}
	bh := m.bodyHeight()
	lines := make([]string, 0, h)
	lines = append(lines, m.header(w))
	body := m.body(w, bh)
	lines = append(lines, body[:min(len(body), bh)]...)
	for range bh - len(body) {
		lines = append(lines, "")
	}
	lines = append(lines, m.statusLine(w), m.footer(w))
	for i, l := range lines {
		l = truncate(l, w)
		if strings.Contains(l, "\x1b[") {
			l += "\x1b[0m" // a cut may have dropped a style's end
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

func (m *Model) header(w int) string {
	if m.screen == screenTranscript && m.tr != nil {
		s := m.tr.session
		title := titleOf(s)
		if title == "" {
			title = "(untitled)"
		}
		info := []string{s.Source}
		if s.Model != nil && *s.Model != "" {
			info = append(info, oneLine(*s.Model))
		}
		info = append(info, fmt.Sprintf("%d messages", len(m.tr.msgs)))
		if s.Pinned != 0 {
			info = append(info, "pinned")
		}
		if s.Archived != 0 {
			info = append(info, "archived")
		}
		info = append(info, s.ID)
		return m.st.bold(oneLine(title)) + m.st.faint("  "+strings.Join(info, " · "))
	}
	if !m.typing && !m.showingHits() {
		head := m.st.bold("Sessions")
		if m.archived {
			head += m.st.faint(" (with archived)")
		}
		return head + m.st.faint("   / search   ? help")
	}
	right := ""
	switch {
	case m.searching:
		right = "searching…"
	case len(m.hits) >= SearchLimit:
		right = fmt.Sprintf("first %d hits", len(m.hits))
	case m.hitsFor != "":
		right = fmt.Sprintf("%d hits", len(m.hits))
	}
	right = m.st.faint(right)
	left := "/ " + m.query.view(max(w-2-ansi.StringWidth(right)-2, 4), m.typing)
	if gap := w - ansi.StringWidth(left) - ansi.StringWidth(right); gap > 0 {
		return left + strings.Repeat(" ", gap) + right
	}
	return left
}

func (m *Model) body(w, h int) []string {
	switch {
	case m.help:
		return helpLines(m.st)
	case m.screen == screenTranscript && m.tr != nil:
		end := min(m.tr.top+h, len(m.tr.lines))
		return m.tr.lines[min(m.tr.top, end):end]
	case m.showingHits():
		return m.hitLines(w, h)
	}
	return m.rowLines(w, h)
}

// rowLines draws the session list: title, preview, source and last
// activity, one session a line.
func (m *Model) rowLines(w, h int) []string {
	if !m.loaded {
		return []string{m.st.faint("loading…")}
	}
	if len(m.rows) == 0 {
		if m.archived {
			return []string{m.st.faint("no sessions")}
		}
		return []string{m.st.faint("no sessions (A also lists archived ones)")}
	}
	dateW, srcW := 11, 9
	titleW := max(w*3/10, 16)
	if w >= 120 {
		titleW = 36
	}
	previewW := w - 4 - titleW - 1 - srcW - 1 - dateW - 1
	if previewW < 10 {
		previewW = 0
		titleW = max(w-4-srcW-1-dateW-1, 8)
	}
	var out []string
	for i := m.top; i < len(m.rows) && len(out) < h; i++ {
		r := m.rows[i]
		mark := "  "
		switch {
		case r.Pinned != 0:
			mark = "* "
		case r.Archived != 0:
			mark = "a "
		}
		title := titleOf(&r.Session)
		if title == "" {
			title = "(untitled)"
		}
		titleCell := fit(title, titleW)
		rest := " "
		if previewW > 0 {
			rest += fit(oneLine(r.Preview), previewW) + " "
		}
		rest += fit(oneLine(r.Source), srcW) + " " + fit(m.day(r.LastActive), dateW)
		switch {
		case i == m.cursor:
			out = append(out, m.st.reverse(fit("> "+mark+titleCell+rest, w)))
		case r.Title == nil:
			out = append(out, "  "+mark+m.st.faint(titleCell)+rest)
		default:
			out = append(out, "  "+mark+titleCell+rest)
		}
	}
	return out
}

// around cuts the start of a snippet wider than w cells so that its first
// match shows, keeping a little of what comes before it.
func around(snippet string, w int) string {
	at := strings.Index(snippet, ">>>")
	if at < 0 || ansi.StringWidth(stripMarks(snippet)) <= w {
		return snippet
	}
	before := stripMarks(snippet[:at])
	keep := max(w-ansi.StringWidth(stripMarks(snippet[at:]))-1, w/4)
	if n := ansi.StringWidth(before); n > keep {
		return "…" + ansi.TruncateLeft(before, n-keep+1, "") + snippet[at:]
	}
	return snippet
}

// hitLines draws search hits grouped by session: a heading per session,
// then a line per hit with its role and snippet.
func (m *Model) hitLines(w, h int) []string {
	if len(m.hits) == 0 {
		switch {
		case m.searching || m.hitsFor == "":
			return []string{m.st.faint("searching…")}
		default:
			return []string{m.st.faint("no matches for " + oneLine(m.hitsFor))}
		}
	}
	var all []string
	for i, ht := range m.hits {
		if i == 0 || m.hits[i-1].SessionID != ht.SessionID {
			title := ht.title
			if title == "" {
				title = "(untitled)"
			}
			info := fmt.Sprintf("  %s · %s · %s", oneLine(ht.Source), m.day(ht.SessionStarted), ht.SessionID)
			all = append(all, m.st.bold(truncate(title, w*2/3))+m.st.faint(info))
		}
		role := ht.Role
		if ht.ToolName != nil && *ht.ToolName != "" {
			role += ":" + *ht.ToolName
		}
		snippet := ""
		if ht.Snippet != nil {
			snippet = around(oneLine(*ht.Snippet), w-13)
		}
		if i == m.hitCursor {
			all = append(all, m.st.reverse(fit("> "+fit(oneLine(role), 10)+" "+stripMarks(snippet), w)))
			continue
		}
		all = append(all, "  "+m.st.role(ht.Role, fit(oneLine(role), 10))+" "+m.st.match(snippet))
	}
	end := min(m.hitTop+h, len(all))
	return all[min(m.hitTop, end):end]
}

func (m *Model) statusLine(w int) string {
	var counts string
	switch {
	case m.screen == screenTranscript && m.tr != nil:
		n := len(m.tr.lines)
		counts = fmt.Sprintf("lines %d–%d of %d", min(m.tr.top+1, n), min(m.tr.top+m.bodyHeight(), n), n)
	case m.showingHits():
		sessions := map[string]bool{}
		for _, h := range m.hits {
			sessions[h.SessionID] = true
		}
		counts = fmt.Sprintf("%d hits in %d sessions", len(m.hits), len(sessions))
	default:
		counts = fmt.Sprintf("%d sessions", m.total)
		if len(m.rows) < m.total {
			counts = fmt.Sprintf("%d of %d sessions", len(m.rows), m.total)
		}
	}
	left := oneLine(m.status)
	if m.statusErr {
		left = "error: " + left
	}
	if m.statusPath != "" {
		// Keep the end of a path, where its file name is.
		room := max(w-ansi.StringWidth(counts)-3-ansi.StringWidth(left), 12)
		left += " " + truncateLeft(m.statusPath, room)
	}
	// The path gets what the message leaves, at most half the line.
	right := counts
	room := min(w-ansi.StringWidth(left)-ansi.StringWidth(counts)-5, w/2)
	if m.opt.Path != "" && room >= 12 {
		right = truncateLeft(m.opt.Path, room) + " · " + counts
	}
	left = truncate(left, max(w-ansi.StringWidth(right)-2, 0))
	if m.statusErr {
		left = m.st.err(left)
	}
	gap := max(w-ansi.StringWidth(left)-ansi.StringWidth(right), 1)
	return left + strings.Repeat(" ", gap) + m.st.faint(right)
}

func (m *Model) footer(w int) string {
	switch m.prompt {
	case promptRename:
		label := "Rename: "
		hint := "  enter save · esc cancel"
		room := w - ansi.StringWidth(label) - ansi.StringWidth(hint)
		if room < 10 {
			label, hint = "Title: ", ""
			room = w - len(label)
		}
		return m.st.bold(label) + m.input.view(room, true) + m.st.faint(hint)
	case promptDelete:
		return m.st.err("Delete "+m.target.name()+" and its messages?") + " y/N"
	}
	switch {
	case m.help:
		return m.st.faint("any key closes the help")
	case m.screen == screenTranscript:
		return m.st.faint("↑↓ scroll  t details  r rename  p pin  a archive  e export  d delete  q back")
	case m.typing:
		return m.st.faint("type to search  ↑↓ select  enter open  tab keys  esc clear")
	}
	return m.st.faint("/ search  r rename  p pin  a archive  e export  d delete  ? help  q quit")
}

func helpLines(st styles) []string {
	keys := [][2]string{
		{"Session list", ""},
		{"↑ ↓  k j", "move"},
		{"PgUp PgDn  Home End", "page, first, last"},
		{"enter", "read the session (from a hit: at the hit)"},
		{"/  tab", "type a search (esc clears it; tab back to keys)"},
		{"R  ctrl+r", "read the database again"},
		{"A", "list archived too (a: archived, *: pinned)"},
		{"q  esc", "quit (esc first clears a search)"},
		{"Transcript", ""},
		{"↑ ↓  k j  PgUp PgDn  space b", "scroll"},
		{"Home End  g G  ctrl+u ctrl+d", "top, bottom, half pages"},
		{"t", "unfold reasoning, tool calls and tool output"},
		{"q  esc", "back to the list"},
		{"Either", ""},
		{"r", "rename (empty clears the title)"},
		{"p  a", "pin or unpin, archive or unarchive"},
		{"e", "export the transcript as Markdown (<id>.md)"},
		{"d  then y", "delete the session with its messages"},
	}
	var out []string
	for _, k := range keys {
		if k[1] == "" {
			out = append(out, st.bold(k[0]))
			continue
		}
		out = append(out, "  "+fit(k[0], 30)+" "+k[1])
	}
	return out
}
