package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
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
			db, id, err := e.openSession(ctx, arg)
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
			if asJSON {
				err = writeShowJSON(w, s, msgs)
			} else {
				renderSession(w, s, msgs)
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

// renderSession writes the human view of a session. Message text is
// written a line at a time, never assembled in memory.
func renderSession(b *bufio.Writer, s *sessiondb.Session, msgs []*sessiondb.Message) {
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	fmt.Fprintf(b, "Session  %s\n", s.ID)
	fmt.Fprintf(b, "Title    %s\n", str(s.Title))
	fmt.Fprintf(b, "Source   %s\n", s.Source)
	fmt.Fprintf(b, "Model    %s\n", str(s.Model))
	fmt.Fprintf(b, "Started  %s\n", fmtTime(s.StartedAt))
	if s.EndedAt != nil {
		fmt.Fprintf(b, "Ended    %s (%s)\n", fmtTime(*s.EndedAt), str(s.EndReason))
	}
	if s.ParentSessionID != nil {
		fmt.Fprintf(b, "Parent   %s\n", *s.ParentSessionID)
	}
	fmt.Fprintf(b, "Messages %d (tool calls %d), tokens in %d / out %d\n\n", s.MessageCount, s.ToolCallCount, s.InputTokens, s.OutputTokens)
	for _, m := range msgs {
		head := m.Role
		if m.ToolName != nil {
			head += " (" + *m.ToolName + ")"
		}
		fmt.Fprintf(b, "[%d] %s  %s\n", m.ID, head, fmtTime(m.Timestamp))
		if m.Reasoning != nil && *m.Reasoning != "" {
			fmt.Fprintf(b, "  (reasoning: %d chars)\n", utf8.RuneCountInString(*m.Reasoning))
		}
		if text := sessiondb.ContentText(m.Content); text != "" {
			for {
				line, rest, more := strings.Cut(text, "\n")
				b.WriteString("  ")
				b.WriteString(line)
				b.WriteString("\n")
				if !more {
					break
				}
				text = rest
			}
		}
		if len(m.ToolCalls) > 0 {
			b.WriteString("  tool calls: ")
			b.Write(m.ToolCalls)
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
}
