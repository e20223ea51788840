package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
)

// NewMarkdown returns an encoder that writes each item as a readable
// transcript: a "# Title" heading and the session's metadata, then one
// "### User" / "### Assistant" / "### Tool (name)" section per message with
// its text, tool calls as fenced JSON and reasoning folded into a
// <details> block. Items are separated by a horizontal rule; a lineage is
// one transcript with a note where each compressed segment ends. Times are
// shown in UTC.
func NewMarkdown(w io.Writer, o Options) Encoder {
	return &markdownEncoder{w: bufio.NewWriterSize(w, 64<<10), o: o}
}

type markdownEncoder struct {
	w *bufio.Writer
	o Options
	n int
}

func (e *markdownEncoder) Close() error { return e.w.Flush() }

func (e *markdownEncoder) Encode(it *Item) error {
	if it.Session == nil {
		return sessiondb.Errorf(sessiondb.EINVALID, "export: an item without a session")
	}
	if e.n > 0 {
		e.w.WriteString("---\n\n") // every item ends with a blank line
	}
	e.n++
	s := it.Session
	if e.o.Redact {
		s = RedactSession(s)
	}
	e.header(s, it.Segments)
	if it.Segments == nil {
		if err := e.messages(it.Messages); err != nil {
			return fmt.Errorf("export session %q: %w", s.ID, err)
		}
		return e.w.Flush()
	}
	for i, seg := range it.Segments {
		if i > 0 {
			fmt.Fprintf(e.w, "*Context compressed: the conversation continues in session `%s`.*\n\n", seg.Session.ID)
		}
		if err := e.messages(seg.Messages); err != nil {
			return fmt.Errorf("export session %q: %w", seg.Session.ID, err)
		}
	}
	return e.w.Flush()
}

func (e *markdownEncoder) header(s *sessiondb.Session, segments []Item) {
	title := "Session " + s.ID
	if s.Title != nil && strings.TrimSpace(*s.Title) != "" {
		title = oneLine(*s.Title)
	}
	fmt.Fprintf(e.w, "# %s\n\n", title)
	item := func(name, format string, args ...any) {
		fmt.Fprintf(e.w, "- **%s:** %s\n", name, fmt.Sprintf(format, args...))
	}
	item("Session", "`%s`", s.ID)
	item("Source", "%s", s.Source)
	if s.Model != nil && *s.Model != "" {
		item("Model", "%s", oneLine(*s.Model))
	}
	item("Started", "%s", utc(s.StartedAt))
	if s.EndedAt != nil {
		reason := ""
		if s.EndReason != nil && *s.EndReason != "" {
			reason = " (" + oneLine(*s.EndReason) + ")"
		}
		item("Ended", "%s%s", utc(*s.EndedAt), reason)
	}
	if s.ParentSessionID != nil && segments == nil {
		item("Parent", "`%s`", *s.ParentSessionID)
	}
	if segments != nil {
		ids := make([]string, len(segments))
		for i, seg := range segments {
			ids[i] = "`" + seg.Session.ID + "`"
		}
		item("Segments", "%s", strings.Join(ids, " → "))
	}
	if s.Cwd != nil && *s.Cwd != "" {
		item("Directory", "`%s`", oneLine(*s.Cwd))
	}
	calls := "tool calls"
	if s.ToolCallCount == 1 {
		calls = "tool call"
	}
	item("Messages", "%d (%d %s)", s.MessageCount, s.ToolCallCount, calls)
	if s.InputTokens != 0 || s.OutputTokens != 0 {
		item("Tokens", "%d in / %d out", s.InputTokens, s.OutputTokens)
	}
	if s.ActualCostUSD != nil {
		item("Cost", "$%.4f", *s.ActualCostUSD)
	} else if s.EstimatedCostUSD != nil {
		item("Cost", "$%.4f (estimated)", *s.EstimatedCostUSD)
	}
	e.w.WriteString("\n")
	if s.SystemPrompt != nil && *s.SystemPrompt != "" {
		e.w.WriteString("<details><summary>System prompt</summary>\n\n")
		e.fenced("", *s.SystemPrompt)
		e.w.WriteString("</details>\n\n")
	}
}

func (e *markdownEncoder) messages(msgs Messages) error {
	if msgs == nil {
		return nil
	}
	for m, err := range msgs {
		if err != nil {
			return err
		}
		if e.o.Redact {
			m = RedactMessage(m)
		}
		e.message(m)
		if _, err := e.w.Write(nil); err != nil {
			return err // the writer's sticky error
		}
	}
	return nil
}

func (e *markdownEncoder) message(m *sessiondb.Message) {
	var heading string
	switch m.Role {
	case sessiondb.RoleUser:
		heading = "User"
	case sessiondb.RoleAssistant:
		heading = "Assistant"
	case sessiondb.RoleSystem:
		heading = "System"
	case sessiondb.RoleTool:
		heading = "Tool"
	default:
		heading = oneLine(m.Role)
		if heading != "" {
			heading = strings.ToUpper(heading[:1]) + heading[1:]
		}
	}
	if m.ToolName != nil && *m.ToolName != "" {
		heading += " (" + oneLine(*m.ToolName) + ")"
	}
	fmt.Fprintf(e.w, "### %s\n\n*%s*\n\n", heading, utc(m.Timestamp))

	reasoning := m.Reasoning
	if reasoning == nil || *reasoning == "" {
		reasoning = m.ReasoningContent
	}
	if reasoning != nil && strings.TrimSpace(*reasoning) != "" {
		e.w.WriteString("<details><summary>Reasoning</summary>\n\n")
		e.w.WriteString(strings.TrimSpace(*reasoning))
		e.w.WriteString("\n\n</details>\n\n")
	}

	text, isJSON := contentMarkdown(m.Content)
	switch {
	case strings.TrimSpace(text) == "":
	case isJSON:
		e.fenced("json", text)
	case m.Role == sessiondb.RoleTool:
		e.fenced("", text)
	default:
		e.w.WriteString(strings.TrimRight(text, "\n"))
		e.w.WriteString("\n\n")
	}

	if sessiondb.ToolCallCount(m.ToolCalls) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, m.ToolCalls, "", "  ") != nil {
			buf.Reset()
			buf.Write(m.ToolCalls)
		}
		e.fenced("json", buf.String())
	}
}

// fenced writes text in a fenced code block whose fence is longer than any
// run of backticks inside it.
func (e *markdownEncoder) fenced(lang, text string) {
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	for _, s := range []string{fence, lang, "\n", strings.TrimRight(text, "\n"), "\n", fence, "\n\n"} {
		e.w.WriteString(s) // not Fprintf, which would copy a long text once more
	}
}

// contentMarkdown renders message content: text as it is; a parts list as
// its text parts, with every other part (image, audio, file) named in
// brackets; any other structured value as indented JSON (isJSON).
func contentMarkdown(v any) (text string, isJSON bool) {
	switch c := v.(type) {
	case nil:
		return "", false
	case string:
		return c, false
	case []any:
		return strings.Join(sessiondb.ContentParts(c, func(t string) string { return "*[" + t + "]*" }), "\n\n"), false
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", false
	}
	return string(b), true
}

func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// oneLine collapses whitespace so a value fits in a heading or list item.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func utc(sec float64) string {
	return time.Unix(0, int64(sec*1e9)).UTC().Format("2006-01-02 15:04:05 UTC")
}
