package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
	"github.com/sessiondb/sessiondb/internal/browse"
)

func newBrowseCommand() *command {
	var exportDir string
	return &command{
		name:     "browse",
		synopsis: "browse, search and read sessions in a terminal UI",
		usage: `Usage: sessiondb [--db PATH] browse [--export-dir DIR]

Opens a full-screen browser over the database: the sessions newest first
(title, preview, source, last activity), search as you type (English and
CJK), and the transcript of a session with reasoning and tool calls folded.
It needs a terminal (80x24 is enough; no mouse), only reads between your
keystrokes, and never holds the database while you read, so it is safe to
run next to a live Hermes.

Keys:
  ↑ ↓ k j PgUp PgDn Home End   move or scroll
  /                            search (type; esc clears, tab back to keys)
  enter                        read the selected session (a hit: at the hit)
  t                            unfold reasoning, tool calls and tool output
  r                            rename (an empty title clears it)
  p / a                        pin or unpin / archive or unarchive
  e                            export the transcript to DIR/<id>.md
  d then y                     delete the session and its messages
  A                            also list archived sessions
  R or ctrl+r                  read the database again
  ?                            all keys
  q or esc                     back, or quit

Options:
  --export-dir DIR   where e writes <id>.md (default: the current directory)

Colours are left out with --color=never or when NO_COLOR is set.

Examples:
  sessiondb browse
  sessiondb --db ~/.hermes/state.db browse --export-dir ~/transcripts
`,
		flags: func(fs *flag.FlagSet) { fs.StringVar(&exportDir, "export-dir", "", "") },
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("browse takes no arguments")
			}
			if !isTerminal(e.stdin) || !isTerminal(e.stdout) {
				return sessiondb.Errorf(sessiondb.EINVALID, "browse needs a terminal; in scripts use list, search and show")
			}
			if exportDir != "" {
				if fi, err := os.Stat(exportDir); err != nil || !fi.IsDir() {
					return usagef("--export-dir %q is not a directory", exportDir)
				}
			}
			db, where, err := e.openBrowse(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			// Stop the store calls still running before the database closes.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			m := browse.New(ctx, db, browse.Options{
				Path:      where,
				ExportDir: exportDir,
				Export:    exportMarkdown,
				Color:     e.styles().on,
			})
			p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithAltScreen(),
				tea.WithInput(e.stdin), tea.WithOutput(e.stdout))
			if _, err := p.Run(); err != nil && !(errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil) {
				return err
			}
			return nil
		},
	}
}

// exportMarkdown writes one session with the export package's Markdown
// encoder.
func exportMarkdown(w io.Writer, s *sessiondb.Session, msgs []*sessiondb.Message) error {
	enc := export.NewMarkdown(w, export.Options{})
	err := enc.Encode(&export.Item{Session: s, Messages: func(yield func(*sessiondb.Message, error) bool) {
		for _, m := range msgs {
			if !yield(m, nil) {
				return
			}
		}
	}})
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	return err
}
