package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/sessiondb/sessiondb"
)

func newListCommand() *command {
	var (
		o             sessiondb.ListOptions
		sources, excl stringList
		all, asJSON   bool
	)
	return &command{
		name:     "list",
		synopsis: "list sessions, newest first",
		usage: `Usage: sessiondb [--db PATH] list [--source S]... [--exclude-source S]... [--limit N] [--offset N]
                 [--all] [--archived] [--pinned] [--json]

Lists conversations newest first as Title | Preview | Last Active | ID. A
compression chain is shown once, as its live tip; subagent runs, archived
and hidden sessions are left out unless asked for. A pinned session's title
starts with "* ", an archived one's ends with "(archived)".

Options:
  --source S           only sessions from source S (repeatable)
  --exclude-source S   leave out source S (repeatable)
  --limit N            rows per page (default 20)
  --offset N           rows to skip
  --all                every session: archived, hidden, subagent runs and
                       every segment of a compression chain
  --archived           only archived sessions
  --pinned             only pinned sessions
  --json               print {"total": N, "sessions": [...]}

Examples:
  sessiondb list
  sessiondb list --source telegram --limit 50 --json
`,
		flags: func(fs *flag.FlagSet) {
			fs.Var(&sources, "source", "")
			fs.Var(&excl, "exclude-source", "")
			fs.IntVar(&o.Limit, "limit", 20, "")
			fs.IntVar(&o.Offset, "offset", 0, "")
			fs.BoolVar(&all, "all", false, "")
			fs.BoolVar(&o.ArchivedOnly, "archived", false, "")
			fs.BoolVar(&o.PinnedOnly, "pinned", false, "")
			fs.BoolVar(&asJSON, "json", false, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("list takes no arguments")
			}
			if o.Limit < 1 || o.Offset < 0 {
				return usagef("--limit must be at least 1 and --offset at least 0")
			}
			o.Sources, o.ExcludeSources = sources, excl
			if all {
				o.IncludeArchived, o.IncludeHidden, o.IncludeChildren, o.RawChains = true, true, true, true
			}
			db, err := e.openRead(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			rows, total, err := db.ListSessions(ctx, o)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(e.stdout, map[string]any{"total": total, "sessions": rows})
			}
			st := e.styles()
			t := &table{}
			t.add(cell{"Title", st.faint}, cell{"Preview", st.faint}, cell{"Last Active", st.faint}, cell{"ID", st.faint})
			for _, r := range rows {
				t.add(titleCell(r.Session, st), plain(clip(r.Preview, 40)), plain(fmtTime(r.LastActive)[:16]), plain(r.ID))
			}
			if err := t.write(e.stdout); err != nil {
				return err
			}
			shown := len(rows)
			if shown < total {
				_, err = fmt.Fprintf(e.stdout, "%d–%d of %d sessions (--offset %d for more)\n", o.Offset+1, o.Offset+shown, total, o.Offset+shown)
			} else {
				_, err = fmt.Fprintf(e.stdout, "%d sessions\n", total)
			}
			return err
		},
	}
}

// titleCell is a listed session's title, at most 32 cells, with its
// markers: "* " before a pinned one, " (archived)" after an archived one.
func titleCell(s sessiondb.Session, st styles) cell {
	title := "—"
	if s.Title != nil {
		title = clip(*s.Title, 32)
	}
	text, styled := title, title
	if s.Pinned != 0 {
		text, styled = "* "+text, st.pinned("*")+" "+styled
	}
	if s.Archived != 0 {
		text, styled = text+" (archived)", styled+" "+st.faint("(archived)")
	}
	return cell{text, func(string) string { return styled }}
}
