package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
)

func newShowCommand() *command {
	var asJSON, conversation bool
	return &command{
		name:     "show",
		synopsis: "show a session and its messages",
		usage: `Usage: sessiondb [--db PATH] show SESSION [--json] [--conversation] [--no-pager]

Shows a session's details and its active messages. SESSION is an id or a
unique id prefix. On a terminal roles, tool calls and reasoning are in
colour, and a transcript taller than the screen goes through $PAGER.

Options:
  --json           print {"session": {...all columns...}, "messages": [...]}
  --conversation   print the messages as an OpenAI chat replay (JSON), with
                   the compression ancestors first
  --no-pager       print directly, never through $PAGER

Examples:
  sessiondb show 20260501_120000_abcdef
  sessiondb show 20260501 --json
  sessiondb show 20260501_120000_abcdef --conversation
`,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "")
			fs.BoolVar(&conversation, "conversation", false, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			arg, err := oneArg(args, "SESSION")
			if err != nil {
				return err
			}
			db, id, err := e.openSessionRead(ctx, arg)
			if err != nil {
				return err
			}
			defer db.Close()
			w := bufio.NewWriterSize(e.stdout, 64<<10)
			if conversation {
				conv, err := db.Conversation(ctx, id, sessiondb.ConversationOptions{IncludeAncestors: true})
				if err != nil {
					return err
				}
				if err := writeConversation(w, conv); err != nil {
					return err
				}
				return w.Flush()
			}
			s, err := db.Session(ctx, id)
			if err != nil {
				return err
			}
			msgs, err := db.Messages(ctx, id, sessiondb.MessageFilter{})
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				err = writeShowJSON(w, s, msgs)
			case e.mayPage():
				// The pager is chosen by the output's height, so a
				// terminal's page is assembled first.
				var page strings.Builder
				renderSession(&page, s, msgs, e.styles())
				return e.page(page.String())
			default:
				renderSession(w, s, msgs, e.styles())
			}
			if err != nil {
				return err
			}
			return w.Flush()
		},
	}
}

// writeShowJSON writes what writeJSON writes for {"session": s,
// "messages": msgs}, a message at a time, long texts escaped as they are
// written (export.WriteJSON) rather than held encoded.
func writeShowJSON(w *bufio.Writer, s *sessiondb.Session, msgs []*sessiondb.Message) error {
	w.WriteString("{\n  \"messages\": [")
	for i, m := range msgs {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString("\n    ")
		if err := export.WriteJSON(w, m, "    ", "  "); err != nil {
			return err
		}
	}
	if len(msgs) > 0 {
		w.WriteString("\n  ")
	}
	w.WriteString("],\n  \"session\": ")
	if err := export.WriteJSON(w, s, "  ", "  "); err != nil {
		return err
	}
	_, err := w.WriteString("\n}\n")
	return err
}

// writeConversation writes what writeJSON writes for conv, a message at a
// time (see writeShowJSON).
func writeConversation(w *bufio.Writer, conv []map[string]any) error {
	w.WriteByte('[')
	for i, m := range conv {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString("\n  ")
		if err := export.WriteJSON(w, m, "  ", "  "); err != nil {
			return err
		}
	}
	if len(conv) > 0 {
		w.WriteByte('\n')
	}
	_, err := w.WriteString("]\n")
	return err
}

func fmtTime(sec float64) string {
	return time.Unix(0, int64(sec*1e9)).Local().Format("2006-01-02 15:04:05")
}

// renderSession writes show's human output: the session's details, then
// each message with its role, tool name, reasoning length, text and tool
// calls. Message text is written a line at a time.
func renderSession(b io.Writer, s *sessiondb.Session, msgs []*sessiondb.Message, st styles) {
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return st.text(*p)
	}
	field := func(label, format string, args ...any) {
		fmt.Fprintf(b, "%s%s %s\n", st.faint(label), fill(label, 8), fmt.Sprintf(format, args...))
	}
	field("Session", "%s", s.ID)
	field("Title", "%s", st.bold(str(s.Title)))
	field("Source", "%s", s.Source)
	field("Model", "%s", str(s.Model))
	field("Started", "%s", fmtTime(s.StartedAt))
	if s.EndedAt != nil {
		field("Ended", "%s (%s)", fmtTime(*s.EndedAt), str(s.EndReason))
	}
	if s.ParentSessionID != nil {
		field("Parent", "%s", *s.ParentSessionID)
	}
	field("Messages", "%d (tool calls %d), tokens in %d / out %d\n", s.MessageCount, s.ToolCallCount, s.InputTokens, s.OutputTokens)
	for _, m := range msgs {
		head := st.role(m.Role, m.Role)
		if m.ToolName != nil {
			head += " " + st.toolCall("("+st.text(*m.ToolName)+")")
		}
		fmt.Fprintf(b, "%s %s  %s\n", st.faint(fmt.Sprintf("[%d]", m.ID)), head, st.faint(fmtTime(m.Timestamp)))
		if m.Reasoning != nil && *m.Reasoning != "" {
			fmt.Fprintf(b, "  %s\n", st.reasoning(fmt.Sprintf("(reasoning: %d chars)", utf8.RuneCountInString(*m.Reasoning))))
		}
		if text := st.text(sessiondb.ContentText(m.Content)); text != "" {
			for {
				line, rest, more := strings.Cut(text, "\n")
				io.WriteString(b, "  "+line+"\n")
				if !more {
					break
				}
				text = rest
			}
		}
		if len(m.ToolCalls) > 0 {
			fmt.Fprintf(b, "  %s %s\n", st.toolCall("tool calls:"), st.text(string(m.ToolCalls)))
		}
		io.WriteString(b, "\n")
	}
}
