package main

import (
	"context"
	"flag"
	"fmt"

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
			t := &table{}
			addTree(t, root, "", "", id, e.styles())
			return t.write(e.stdout)
		},
	}
}

// addTree adds n and its descendants to t, one row each: the tree and the
// id, the title, the kind, the start, the end and size, and an arrow at the
// current session.
func addTree(t *table, n *sessiondb.LineageNode, prefix, branch, current string, st styles) {
	title := "(untitled)"
	if n.Title != nil {
		title = clip(*n.Title, 40)
	}
	end := "open"
	if n.EndReason != nil {
		end = *n.EndReason
	}
	last := fmt.Sprintf("%s, %d messages", end, n.MessageCount)
	id, name := plain(prefix+branch+n.ID), plain(title)
	if n.ID == current {
		last += "  ←"
		id.style, name.style = func(s string) string { return prefix + branch + st.bold(n.ID) }, st.bold
	}
	t.add(id, name, cell{"[" + n.Kind + "]", st.faint}, plain(fmtTime(n.StartedAt)), plain(last))
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
		addTree(t, c, next, b, current, st)
	}
}
