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
		usage: `Usage: sessiondb [--db PATH] show SESSION [--json] [--conversation]

Shows a session's details and its active messages. SESSION is an id or a
unique id prefix.

Options:
  --json           print {"session": {...all columns...}, "messages": [...]}
  --conversation   print the messages as an OpenAI chat replay (JSON), with
                   the compression ancestors first

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
			_, err = fmt.Fprint(e.stdout, renderSession(s, msgs))
			return err
		},
	}
}

func fmtTime(sec float64) string {
	return time.Unix(0, int64(sec*1e9)).Local().Format("2006-01-02 15:04:05")
}

func renderSession(s *sessiondb.Session, msgs []*sessiondb.Message) string {
	var b strings.Builder
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	fmt.Fprintf(&b, "Session  %s\n", s.ID)
	fmt.Fprintf(&b, "Title    %s\n", str(s.Title))
	fmt.Fprintf(&b, "Source   %s\n", s.Source)
	fmt.Fprintf(&b, "Model    %s\n", str(s.Model))
	fmt.Fprintf(&b, "Started  %s\n", fmtTime(s.StartedAt))
	if s.EndedAt != nil {
		fmt.Fprintf(&b, "Ended    %s (%s)\n", fmtTime(*s.EndedAt), str(s.EndReason))
	}
	if s.ParentSessionID != nil {
		fmt.Fprintf(&b, "Parent   %s\n", *s.ParentSessionID)
	}
	fmt.Fprintf(&b, "Messages %d (tool calls %d), tokens in %d / out %d\n\n", s.MessageCount, s.ToolCallCount, s.InputTokens, s.OutputTokens)
	for _, m := range msgs {
		head := m.Role
		if m.ToolName != nil {
			head += " (" + *m.ToolName + ")"
		}
		fmt.Fprintf(&b, "[%d] %s  %s\n", m.ID, head, fmtTime(m.Timestamp))
		if m.Reasoning != nil && *m.Reasoning != "" {
			fmt.Fprintf(&b, "  (reasoning: %d chars)\n", len([]rune(*m.Reasoning)))
		}
		if text := sessiondb.ContentText(m.Content); text != "" {
			for _, line := range strings.Split(text, "\n") {
				fmt.Fprintf(&b, "  %s\n", line)
			}
		}
		if len(m.ToolCalls) > 0 {
			fmt.Fprintf(&b, "  tool calls: %s\n", m.ToolCalls)
		}
		b.WriteString("\n")
	}
	return b.String()
}
