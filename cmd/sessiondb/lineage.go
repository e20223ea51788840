package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/sessiondb/sessiondb"
)

func newLineageCommand() *command {
	var asJSON bool
	return &command{
		name:     "lineage",
		synopsis: "show the tree of sessions a session belongs to",
		usage: `Usage: sessiondb [--db PATH] lineage SESSION [--json]

Shows the whole tree SESSION belongs to, from its root: compression
continuations, branches, resets and subagent (delegate) runs, with each
session's title, start time, end reason and message count.

Options:
  --json   print the tree as JSON

Examples:
  sessiondb lineage 20260501_120000_abcdef
`,
		flags: func(fs *flag.FlagSet) { fs.BoolVar(&asJSON, "json", false, "") },
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
			root, err := db.Lineage(ctx, id)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(e.stdout, root)
			}
			var b strings.Builder
			printTree(&b, root, "", "", id)
			_, err = io.WriteString(e.stdout, b.String())
			return err
		},
	}
}

func printTree(w io.Writer, n *sessiondb.LineageNode, prefix, branch, current string) {
	title := "(untitled)"
	if n.Title != nil {
		title = *n.Title
	}
	end := "open"
	if n.EndReason != nil {
		end = *n.EndReason
	}
	mark := ""
	if n.ID == current {
		mark = "  ←"
	}
	fmt.Fprintf(w, "%s%s%s  %s  [%s] %s  %s, %d messages%s\n", prefix, branch, n.ID, title, n.Kind, fmtTime(n.StartedAt), end, n.MessageCount, mark)
	next := prefix
	switch branch {
	case "├─ ":
		next += "│  "
	case "└─ ":
		next += "   "
	}
	for i, c := range n.Children {
		b := "├─ "
		if i == len(n.Children)-1 {
			b = "└─ "
		}
		printTree(w, c, next, b, current)
	}
}
