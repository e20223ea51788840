package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
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
			if conversation {
				conv, err := db.Conversation(ctx, id, sessiondb.ConversationOptions{IncludeAncestors: true})
				if err != nil {
					return err
				}
				return writeJSON(e.stdout, conv)
			}
			s, err := db.Session(ctx, id)
			if err != nil {
				return err
			}
			msgs, err := db.Messages(ctx, id, sessiondb.MessageFilter{})
			if err != nil {
				return err
			}
			if asJSON {
				if msgs == nil {
					msgs = []*sessiondb.Message{}
				}
				return writeJSON(e.stdout, map[string]any{"session": s, "messages": msgs})
			}
			return e.page(renderSession(s, msgs, e.styles()))
		},
	}
}

func fmtTime(sec float64) string {
	return time.Unix(0, int64(sec*1e9)).Local().Format("2006-01-02 15:04:05")
}

// renderSession is show's human output: the session's details, then each
// message with its role, tool name, reasoning length, text and tool calls.
func renderSession(s *sessiondb.Session, msgs []*sessiondb.Message, st styles) string {
	var b strings.Builder
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return st.text(*p)
	}
	field := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "%s%s %s\n", st.faint(label), fill(label, 8), fmt.Sprintf(format, args...))
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
		fmt.Fprintf(&b, "%s %s  %s\n", st.faint(fmt.Sprintf("[%d]", m.ID)), head, st.faint(fmtTime(m.Timestamp)))
		if m.Reasoning != nil && *m.Reasoning != "" {
			fmt.Fprintf(&b, "  %s\n", st.reasoning(fmt.Sprintf("(reasoning: %d chars)", len([]rune(*m.Reasoning)))))
		}
		if text := st.text(sessiondb.ContentText(m.Content)); text != "" {
			for _, line := range strings.Split(text, "\n") {
				fmt.Fprintf(&b, "  %s\n", line)
			}
		}
		if len(m.ToolCalls) > 0 {
			fmt.Fprintf(&b, "  %s %s\n", st.toolCall("tool calls:"), st.text(string(m.ToolCalls)))
		}
		b.WriteString("\n")
	}
	return b.String()
}
