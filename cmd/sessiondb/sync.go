package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/replicate"
	"github.com/sessiondb/sessiondb/sqlite"
)

// syncOptions are the options of sessiondb sync.
type syncOptions struct {
	from, to, origin string
	follow, mirror   bool
	batch            int
	asJSON           bool
}

func newSyncCommand() *command {
	o := &syncOptions{}
	return &command{
		name:     "sync",
		synopsis: "copy a state.db into PostgreSQL, incrementally (--follow: keep copying)",
		usage: `Usage: sessiondb sync --from PATH --to postgres://… [--origin NAME] [--follow]
                      [--mirror-deletes] [--batch N] [--json]

Copies the Hermes state.db at PATH into the PostgreSQL database at --to:
sessions with every column, messages, usage rows and system prompts. The
file is only read, never written, and Hermes may be using it. Rows are
stored under an origin (--origin, default this host's name), so several
hosts sync into one database without collisions; a session id another
origin already holds is reported as a conflict and not copied.

The copy is incremental: a second run copies only what changed since the
last (new messages, ended, retitled, pinned or archived sessions, token
totals, messages compaction deactivated). A sync stopped at any point,
even killed, resumes where it stopped when run again, and never stores a
row twice. One sync per origin runs at a time.

Sessions deleted or pruned on the source are kept in PostgreSQL (it is an
archive) unless --mirror-deletes is given. A file at an older schema is
read through an upgraded temporary copy, as Hermes would read it after an
upgrade.

Options:
  --from PATH        the state.db to copy (default: --db when it is a file,
                     else $HERMES_HOME/state.db)
  --to URL           the PostgreSQL database (postgres://user:pass@host/db;
                     default: --db when it is a postgres:// URL)
  --origin NAME      the origin rows are stored under (default: the host name)
  --follow           keep running: copy new writes within about a second of
                     their commit, until interrupted (Ctrl-C, SIGTERM)
  --mirror-deletes   delete the origin's sessions and messages the source
                     no longer has
  --batch N          messages per COPY transaction (default 10000)
  --json             print the summary as JSON (with --follow, one object a
                     line per pass)

Examples:
  sessiondb sync --from ~/.hermes/state.db --to postgres://sessiondb@db.internal/sessions
  sessiondb sync --from /srv/hermes/state.db --to "$PGURL" --origin gateway-1 --follow
`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.from, "from", "", "")
			fs.StringVar(&o.to, "to", "", "")
			fs.StringVar(&o.origin, "origin", "", "")
			fs.BoolVar(&o.follow, "follow", false, "")
			fs.BoolVar(&o.mirror, "mirror-deletes", false, "")
			fs.IntVar(&o.batch, "batch", replicate.DefaultBatch, "")
			fs.BoolVar(&o.asJSON, "json", false, "")
		},
		run: o.run,
	}
}

func (o *syncOptions) run(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	// --db (or SESSIONDB_DB) names the target when it is a URL, else the
	// source.
	to, from := o.to, o.from
	if l, err := e.where(); err == nil && l.from != "" {
		if to == "" && l.pg {
			to = l.name
		}
		if from == "" && !l.pg {
			from = l.name
		}
	}
	if to == "" {
		return usagef("missing --to URL (postgres://user:password@host/database)")
	}
	if !postgres.IsURL(to) {
		return usagef("--to %q is not a postgres:// URL", to)
	}
	if o.batch <= 0 {
		return usagef("--batch must be at least 1")
	}
	if from == "" {
		p, err := sqlite.DefaultPath()
		if err != nil {
			return err
		}
		from = p
	}
	// The source first: its errors need no server to show.
	src, err := sqlite.Open(from, sqlite.Options{ReadOnly: true})
	if err != nil && !errors.Is(err, sqlite.ErrOlderSchema) {
		return err
	}
	if err == nil {
		src.Close()
	}
	origin := o.origin
	if origin == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return usagef("cannot read the host name (%v); pass --origin NAME", err)
		}
		origin = h
	}
	db, err := postgres.Open(ctx, to, postgres.Options{Origin: origin, ConnectTimeout: e.connectTimeout})
	if err != nil {
		return err
	}
	defer db.Close()
	bar := newProgress(e.stderr, "copying messages")
	ro := replicate.Options{Origin: origin, MirrorDeletes: o.mirror, Batch: o.batch, Progress: bar.update,
		Warn: func(err error) { fmt.Fprintf(e.stderr, "sessiondb sync: %v\n", err) }}
	if o.follow {
		var werr error
		err := replicate.Follow(ctx, from, db, ro, 0, func(rep *replicate.Report) {
			bar.done()
			if werr == nil {
				werr = o.print(e.stdout, rep, true)
			}
		})
		bar.done()
		if err != nil {
			return err
		}
		return werr
	}
	rep, err := replicate.Sync(ctx, from, db, ro)
	bar.done()
	if err != nil {
		return err
	}
	return o.print(e.stdout, rep, false)
}

// syncSummary is the --json form of a report.
type syncSummary struct {
	*replicate.Report
	Time              string  `json:"time,omitempty"`
	MessagesPerSecond float64 `json:"messages_per_second"`
}

func (o *syncOptions) print(w io.Writer, rep *replicate.Report, follow bool) error {
	if rep.Conflicts == nil {
		rep.Conflicts = []postgres.Conflict{}
	}
	if o.asJSON {
		s := syncSummary{Report: rep, MessagesPerSecond: round3(rep.MessagesPerSecond())}
		if follow {
			s.Time = time.Now().UTC().Format(time.RFC3339)
			b, err := json.Marshal(s)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(w, "%s\n", b)
			return err
		}
		return writeJSON(w, s)
	}
	var b strings.Builder
	for _, c := range rep.Conflicts {
		fmt.Fprintf(&b, "conflict: session %s belongs to origin %q; not copied\n", c.SessionID, c.Origin)
	}
	if follow {
		b.WriteString(time.Now().Format("15:04:05") + " ")
	}
	fmt.Fprintf(&b, "origin %s: %d sessions, %d messages, %d usage rows, %d prompts copied; %d conflicts",
		rep.Origin, rep.Sessions, rep.Messages, rep.Usage, rep.Prompts, len(rep.Conflicts))
	if rep.Gone > 0 {
		if o.mirror {
			fmt.Fprintf(&b, "; %d sessions gone from the source, %d rows deleted", rep.Gone, rep.Deleted)
		} else {
			fmt.Fprintf(&b, "; %d sessions gone from the source, kept", rep.Gone)
		}
	} else if rep.Deleted > 0 {
		fmt.Fprintf(&b, "; %d rows deleted", rep.Deleted)
	}
	fmt.Fprintf(&b, "; %.1f s, %.0f messages/s\n", rep.Seconds, rep.MessagesPerSecond())
	_, err := io.WriteString(w, b.String())
	return err
}
