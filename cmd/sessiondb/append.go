package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sessiondb/sessiondb"
)

func newAppendCommand() *command {
	var (
		m                                   sessiondb.NewMessage
		content, contentFile, toolCalls     string
		reasoning, jsonl                    string
		tokenCount                          int64
		setContent, setReasoning, setTokens bool
	)
	return &command{
		name:     "append",
		synopsis: "append a message to a session, or many from JSON lines",
		usage: `Usage: sessiondb [--db PATH] append SESSION --role ROLE [--content TEXT | --content-file PATH|-]
                 [--tool-calls JSON] [--tool-call-id ID] [--tool-name NAME] [--reasoning TEXT]
                 [--finish-reason R] [--token-count N]
       sessiondb [--db PATH] append --jsonl PATH|-

Appends one message and prints its id. SESSION is an id or a unique id prefix.
With --jsonl, reads one JSON object per line (session_id, role, content and any
other message field, e.g. tool_calls, reasoning) and prints how many messages
were appended. Every line is checked, its session included (it must exist
and not be ended by compression), before anything is written, and the whole
file is appended in one transaction: all of it or nothing. After an error,
fix the line it names and run the command again; no line is appended twice.
(A file that was appended, run again, is appended again.)

A message holds at most 32 MiB of text (content, tool calls, reasoning and
its other fields together); set SESSIONDB_MAX_MESSAGE_SIZE (e.g. 256MiB, or
unlimited) to change that. JSON fields (tool calls, reasoning details,
structured content) may nest at most 256 levels, which Hermes' Python reads.

Options:
  --role ROLE           user, assistant, tool or system (required)
  --content TEXT        the message text
  --content-file PATH   read the text from a file, or - for standard input
  --tool-calls JSON     the assistant's tool calls, a JSON list
  --tool-call-id ID     the call a tool result answers
  --tool-name NAME      the tool that produced a tool result
  --reasoning TEXT      the assistant's reasoning
  --finish-reason R     why generation stopped, e.g. stop, tool_calls
  --token-count N       tokens in the message
  --jsonl PATH|-        append JSON lines from a file or standard input

Examples:
  sessiondb append 20260501_120000_abcdef --role user --content "deploy the app"
  echo '{"session_id":"s1","role":"user","content":"hi"}' | sessiondb append --jsonl -
`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&m.Role, "role", "", "")
			fs.Func("content", "", func(s string) error { content, setContent = s, true; return nil })
			fs.StringVar(&contentFile, "content-file", "", "")
			fs.StringVar(&toolCalls, "tool-calls", "", "")
			fs.StringVar(&m.ToolCallID, "tool-call-id", "", "")
			fs.StringVar(&m.ToolName, "tool-name", "", "")
			fs.Func("reasoning", "", func(s string) error { reasoning, setReasoning = s, true; return nil })
			fs.StringVar(&m.FinishReason, "finish-reason", "", "")
			fs.Func("token-count", "", func(s string) error {
				setTokens = true
				_, err := fmt.Sscan(s, &tokenCount)
				return err
			})
			fs.StringVar(&jsonl, "jsonl", "", "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if jsonl != "" {
				if len(args) > 0 || m.Role != "" {
					return usagef("--jsonl takes no SESSION and no message options")
				}
				return appendJSONL(ctx, e, jsonl)
			}
			arg, err := oneArg(args, "SESSION")
			if err != nil {
				return err
			}
			if m.Role == "" {
				return usagef("--role is required")
			}
			if setContent && contentFile != "" {
				return usagef("give --content or --content-file, not both")
			}
			if contentFile != "" {
				limit, err := maxMessageBytes()
				if err != nil {
					return err
				}
				if content, err = readInput(e, contentFile, limit); err != nil {
					return err
				}
				setContent = true
			}
			if setContent {
				m.Content = content
			}
			if toolCalls != "" {
				m.ToolCalls = json.RawMessage(toolCalls)
			}
			if setReasoning {
				m.Reasoning = &reasoning
			}
			if setTokens {
				m.TokenCount = &tokenCount
			}
			db, sid, err := e.openSessionWrite(ctx, arg, true)
			if err != nil {
				return err
			}
			defer db.Close()
			m.SessionID = sid
			id, err := db.AppendMessage(ctx, m)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(e.stdout, id)
			return err
		},
	}
}

// openInput opens a file, or standard input for "-".
func openInput(e *env, path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(e.stdin), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("read %s: %v", path, err)
	}
	return f, nil
}

// readInput reads a whole file, or standard input for "-", of at most
// limit bytes (a negative limit: any size). It reads one byte past the
// limit, never more, so an endless input (/dev/zero) ends in an error.
func readInput(e *env, path string, limit int64) (string, error) {
	r, err := openInput(e, path)
	if err != nil {
		return "", err
	}
	defer r.Close()
	var b strings.Builder
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && (limit < 0 || fi.Size() <= limit) {
			b.Grow(int(fi.Size())) // one allocation, no copy
		}
	}
	in := io.Reader(r)
	if limit >= 0 {
		in = io.LimitReader(r, limit+1)
	}
	n, err := io.Copy(&b, in)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if limit >= 0 && n > limit {
		name := path
		if path == "-" {
			name = "standard input"
		}
		return "", sessiondb.Errorf(sessiondb.EINVALID, "%s holds more than %s, the most a message may hold; nothing was appended. Raise the limit with %s=SIZE (e.g. 256MiB) if the message is meant to be that large",
			name, sessiondb.FormatBytes(limit), maxMessageSizeEnv)
	}
	return b.String(), nil
}

// jsonlLineMax is the longest JSON line append --jsonl reads: twice the
// message limit (JSON escapes newlines, quotes and control characters) and
// 1 MiB for the other fields, at most 1 GiB.
func jsonlLineMax(limit int64) int {
	if limit < 0 || limit > (1<<30-1<<20)/2 {
		return 1 << 30
	}
	return int(2*limit + 1<<20)
}

func appendJSONL(ctx context.Context, e *env, path string) error {
	r, err := openInput(e, path)
	if err != nil {
		return err
	}
	defer r.Close()
	var msgs []sessiondb.NewMessage
	var lines []int // the line of each message
	limit, err := maxMessageBytes()
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), jsonlLineMax(limit))
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var m sessiondb.NewMessage
		if err := json.Unmarshal(text, &m); err != nil {
			return sessiondb.Errorf(sessiondb.EINVALID, "line %d: %v; nothing was appended", line, err)
		}
		if m.SessionID == "" || m.Role == "" {
			return sessiondb.Errorf(sessiondb.EINVALID, "line %d: session_id and role are required; nothing was appended", line)
		}
		msgs = append(msgs, m)
		lines = append(lines, line)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return sessiondb.Errorf(sessiondb.EINVALID, "a line of %s is longer than %s, more than a message within the limit takes (%s); nothing was appended",
			path, sessiondb.FormatBytes(int64(jsonlLineMax(limit))), maxMessageSizeEnv)
	} else if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	db, err := e.openWrite(ctx, true)
	if err != nil {
		return err
	}
	defer db.Close()
	b, ok := db.(sessiondb.BatchAppender)
	if !ok {
		return e.lacks("one-transaction batches (append --jsonl)")
	}
	// One transaction: every message and every session it names is
	// checked before the first row is written, and a failure writes
	// nothing, so the fixed file can simply be run again.
	n, err := b.AppendBatch(ctx, msgs)
	var be *sessiondb.BatchError
	if errors.As(err, &be) {
		return &sessiondb.Error{Code: sessiondb.ErrorCode(be.Err), Err: be.Err, Message: fmt.Sprintf(
			"line %d (session %q): %v; nothing was appended: fix the line and run the command again", lines[be.Index], be.SessionID, be.Err)}
	}
	if err != nil {
		return fmt.Errorf("%w; nothing was appended", err)
	}
	_, err = fmt.Fprintf(e.stdout, "%d\n", n)
	return err
}
