package browse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/sessiondb/sessiondb"
)

// Limits that keep a huge message (a tool dumping megabytes) from making
// the transcript slow to render: folded tool output shows its first lines,
// and any one block shows at most maxBlockLines lines.
const (
	foldedToolLines = 3
	maxBlockLines   = 2000
	indent          = "  "
	deepIndent      = "    "
)

// transcript is an open session: its messages, the lines they render to at
// the current width and the scroll position.
type transcript struct {
	session *sessiondb.Session
	msgs    []*sessiondb.Message
	details bool // reasoning, tool-call arguments and tool output unfolded
	lines   []string
	starts  []int // the first line of each message
	width   int   // the width lines were rendered for; 0 means stale
	top     int   // first line shown
}

// render lays the messages out for width w, keeping the message at the top
// of the screen at the top.
func (t *transcript) render(w int, st styles, clock func(float64) string) {
	anchor, into := t.anchor()
	t.lines, t.starts = t.lines[:0], t.starts[:0]
	if len(t.msgs) == 0 {
		t.lines = append(t.lines, st.faint("(no messages)"))
	}
	for _, m := range t.msgs {
		t.starts = append(t.starts, len(t.lines))
		t.lines = append(t.lines, renderMessage(m, w, t.details, st, clock)...)
	}
	t.width = w
	if anchor >= 0 && anchor < len(t.starts) {
		t.top = t.starts[anchor] + into
	}
}

// anchor returns the index of the message at the top of the screen and how
// many of its lines are scrolled past (-1 before the first render).
func (t *transcript) anchor() (int, int) {
	if t.width == 0 || len(t.starts) == 0 {
		return -1, 0
	}
	i := 0
	for i+1 < len(t.starts) && t.starts[i+1] <= t.top {
		i++
	}
	return i, t.top - t.starts[i]
}

// index returns the position of message id, or -1.
func (t *transcript) index(id int64) int {
	for i, m := range t.msgs {
		if m.ID == id {
			return i
		}
	}
	return -1
}

// scroll moves the view by n lines within a body of h lines.
func (t *transcript) scroll(n, h int) {
	t.top = max(min(t.top+n, len(t.lines)-h), 0)
}

func renderMessage(m *sessiondb.Message, w int, details bool, st styles, clock func(float64) string) []string {
	label := oneLine(m.Role)
	if m.ToolName != nil && *m.ToolName != "" {
		label += " · " + oneLine(*m.ToolName)
	}
	head := "── " + st.role(m.Role, label) + " " + st.faint(clock(m.Timestamp)+fmt.Sprintf(" #%d", m.ID)) + " "
	lines := []string{truncate(head+strings.Repeat("─", max(w-ansi.StringWidth(head), 0)), w)}

	if r := reasoning(m); strings.TrimSpace(r) != "" {
		if details {
			lines = append(lines, indent+st.faint("▾ reasoning"))
			lines = append(lines, block(r, w, deepIndent, maxBlockLines, st.faint)...)
		} else {
			lines = append(lines, indent+st.faint(fmt.Sprintf("▸ reasoning (%d chars, t shows)", len([]rune(r)))))
		}
	}

	if text := contentText(m.Content); strings.TrimSpace(text) != "" {
		limit := maxBlockLines
		if m.Role == sessiondb.RoleTool && !details {
			limit = foldedToolLines
		}
		lines = append(lines, block(text, w, indent, limit, nil)...)
	}

	for _, c := range toolCalls(m.ToolCalls) {
		if details {
			lines = append(lines, indent+st.faint("▾ call ")+st.bold(c.name))
			lines = append(lines, block(prettyJSON(c.args), w, deepIndent, maxBlockLines, st.faint)...)
		} else {
			lines = append(lines, truncate(indent+st.faint("▸ call ")+st.bold(c.name)+" "+st.faint(oneLine(c.args)), w))
		}
	}
	return append(lines, "")
}

// block wraps text to fit w cells behind pad, showing at most limit lines
// and then a note of how many source lines are left out.
func block(text string, w int, pad string, limit int, style func(string) string) []string {
	tw := max(w-len(pad), 10)
	src := strings.Split(strings.TrimRight(clean(text), "\n"), "\n")
	var out []string
	for i, line := range src {
		if r := []rune(line); len(r) > tw*(limit+1) {
			line = string(r[:tw*(limit+1)]) // no need to wrap what cannot show
		}
		for _, l := range wrap(line, tw) {
			if len(out) == limit {
				note := fmt.Sprintf("▸ %d more lines (e exports all)", len(src)-i)
				if limit == foldedToolLines {
					note = fmt.Sprintf("▸ %d more lines (t shows)", len(src)-i)
				}
				return append(out, pad+sgr("2", note))
			}
			if style != nil {
				l = style(l)
			}
			out = append(out, pad+l)
		}
	}
	return out
}

// reasoning returns a message's reasoning text: the reasoning column, else
// reasoning_content, else the text inside reasoning_details.
func reasoning(m *sessiondb.Message) string {
	if m.Reasoning != nil && *m.Reasoning != "" {
		return *m.Reasoning
	}
	if m.ReasoningContent != nil && *m.ReasoningContent != "" {
		return *m.ReasoningContent
	}
	if len(m.ReasoningDetails) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(m.ReasoningDetails, &v) != nil {
		return string(m.ReasoningDetails)
	}
	var parts []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			parts = append(parts, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, k := range []string{"text", "thinking", "summary"} {
				if e, ok := x[k]; ok {
					walk(e)
				}
			}
		}
	}
	walk(v)
	return strings.Join(parts, "\n")
}

// contentText renders message content as text: a string as it is, a parts
// list as its text parts with other parts named in brackets, any other
// value as JSON.
func contentText(v any) string {
	switch c := v.(type) {
	case nil:
		return ""
	case string:
		return c
	case []any:
		return strings.Join(sessiondb.ContentParts(c, func(t string) string { return "[" + t + "]" }), "\n")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

type toolCall struct{ name, args string }

// toolCalls decodes a tool_calls value: OpenAI's {"function": {"name",
// "arguments"}}, or a flat {"name", "arguments" | "input"}; anything else
// is shown as raw JSON.
func toolCalls(raw json.RawMessage) []toolCall {
	if sessiondb.ToolCallCount(raw) == 0 {
		return nil
	}
	var list []any
	if json.Unmarshal(raw, &list) != nil {
		var one any
		if json.Unmarshal(raw, &one) != nil {
			return []toolCall{{name: "call", args: string(raw)}}
		}
		list = []any{one}
	}
	var out []toolCall
	for _, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			b, _ := json.Marshal(e)
			out = append(out, toolCall{name: "call", args: string(b)})
			continue
		}
		src := obj
		if fn, ok := obj["function"].(map[string]any); ok {
			src = fn
		}
		c := toolCall{name: "call"}
		if n, ok := src["name"].(string); ok && n != "" {
			c.name = oneLine(n)
		}
		for _, k := range []string{"arguments", "input", "args"} {
			if a, ok := src[k]; ok {
				if s, ok := a.(string); ok {
					c.args = s
				} else {
					b, _ := json.Marshal(a)
					c.args = string(b)
				}
				break
			}
		}
		out = append(out, c)
	}
	return out
}

// prettyJSON indents JSON text, and returns anything else as it is.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") != nil {
		return s
	}
	return buf.String()
}
