package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func newSearchCommand() *command {
	var (
		o                       sessiondb.SearchOptions
		sources, excl, roles    stringList
		asJSON, reasoning, inac bool
		timeout                 time.Duration
	)
	return &command{
		name:     "search",
		synopsis: "full-text search over every message (English, CJK, tool calls)",
		usage: `Usage: sessiondb [--db PATH] search QUERY... [--source S]... [--exclude-source S]...
                 [--role R]... [--limit N] [--offset N] [--sort rank|newest|oldest]
                 [--timeout DURATION] [--json]

Searches every message the way Hermes does: words, "exact phrases", prefix*,
AND/OR/NOT, hyphenated or dotted terms (chat-send, P2.2), and Chinese,
Japanese or Korean text of any length. Hits are grouped by session. On a
terminal the matches are highlighted and output taller than the screen goes
through $PAGER; piped, or with --color=never or NO_COLOR, each match is
marked >>>like this<<<, as in --json. Repeated terms count once; a query
of more than 32 terms (a quoted phrase counts one per word) is refused, and
a search that runs past --timeout is stopped (exit status 1), with advice
on narrowing it either way.

Options:
  --source S           only sessions from source S (repeatable)
  --exclude-source S   leave out sessions from source S (repeatable)
  --role R             only messages with role R (repeatable; "tool" scans full tool output)
  --limit N            hits per page (default 20)
  --offset N           hits to skip
  --sort ORDER         rank (default), newest or oldest
  --reasoning          also search assistant reasoning (slower: a full scan)
  --include-inactive   also search messages rewound out of the transcript
  --timeout DURATION   stop a search running longer (default 10s; 0: no limit)
  --json               print the hits as a JSON array
  --no-pager           print directly, never through $PAGER

Examples:
  sessiondb search docker compose
  sessiondb search '"exact phrase"' --source telegram --sort newest
  sessiondb search 项目 --json
`,
		flags: func(fs *flag.FlagSet) {
			fs.Var(&sources, "source", "")
			fs.Var(&excl, "exclude-source", "")
			fs.Var(&roles, "role", "")
			fs.IntVar(&o.Limit, "limit", sessiondb.DefaultSearchLimit, "")
			fs.IntVar(&o.Offset, "offset", 0, "")
			fs.StringVar(&o.Sort, "sort", "rank", "")
			fs.BoolVar(&reasoning, "reasoning", false, "")
			fs.BoolVar(&inac, "include-inactive", false, "")
			fs.BoolVar(&asJSON, "json", false, "")
			fs.DurationVar(&timeout, "timeout", sessiondb.DefaultSearchTimeout, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) == 0 {
				return usagef("missing QUERY")
			}
			switch o.Sort {
			case "rank", "newest", "oldest":
			default:
				return usagef("--sort %q: want rank, newest or oldest", o.Sort)
			}
			if o.Limit < 1 || o.Offset < 0 {
				return usagef("--limit must be at least 1 and --offset at least 0")
			}
			if timeout < 0 {
				return usagef("--timeout %s: want a duration such as 10s, or 0 for no limit", timeout)
			}
			if len(sources) > 0 {
				o.Sources = sources
			}
			if len(excl) > 0 {
				o.ExcludeSources = excl
			}
			o.Roles, o.IncludeReasoning, o.IncludeInactive = roles, reasoning, inac
			db, err := e.openRead(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			hits, err := search(ctx, db, strings.Join(args, " "), o, timeout)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(e.stdout, hits)
			}
			var b strings.Builder
			if len(hits) == 0 {
				fmt.Fprintln(&b, "no matches")
			}
			st := e.styles()
			last := ""
			for _, h := range hits {
				if h.SessionID != last {
					last = h.SessionID
					title := "(untitled)"
					if s, err := db.Session(ctx, h.SessionID); err == nil && s.Title != nil {
						title = *s.Title
					}
					if b.Len() > 0 {
						b.WriteString("\n")
					}
					fmt.Fprintf(&b, "%s%s\n", st.bold(st.text(title)),
						st.faint(fmt.Sprintf("  %s  %s  %s", h.Source, fmtTime(h.SessionStarted)[:10], h.SessionID)))
				}
				snippet := ""
				if h.Snippet != nil {
					snippet = strings.Join(strings.Fields(st.text(*h.Snippet)), " ")
				}
				fmt.Fprintf(&b, "  %s %s %s\n", st.faint(fmt.Sprintf("[%d]", h.ID)), st.role(h.Role, h.Role)+fill(h.Role, 9), st.match(snippet))
			}
			return e.page(b.String())
		},
	}
}

// search runs one search under timeout (0: none).
func search(ctx context.Context, db sessiondb.Store, q string, o sessiondb.SearchOptions, timeout time.Duration) ([]sessiondb.SearchHit, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	hits, err := db.Search(ctx, q, o)
	if sessiondb.ErrorCode(err) == sessiondb.ETIMEOUT {
		return nil, &sessiondb.Error{Code: sessiondb.ETIMEOUT, Err: err, Message: err.Error() + "; or give it more time with --timeout (0: no limit)"}
	}
	return hits, err
}
