package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
)

func newPruneCommand() *command {
	var (
		olderThan           string
		sources             stringList
		dryRun, yes, asJSON bool
		pinned              bool
	)
	return &command{
		name:     "prune",
		synopsis: "delete ended sessions inactive for longer than an age",
		usage: `Usage: sessiondb [--db PATH] prune --older-than AGE [--source S]... [--include-pinned]
                 [--dry-run] [--yes] [--json]

Deletes ended sessions whose last activity is older than AGE, with their
messages. Open sessions are never touched; pinned sessions (and their
compression chains) are kept; a compression ancestor goes only together with
its whole later chain; children of deleted sessions are kept and orphaned.
--dry-run lists exactly what would go. On a terminal prune asks before
deleting; elsewhere it refuses without --yes.

Options:
  --older-than AGE   90d, 12h, 2w, 30m, a number of days, or a date (required)
  --source S         only sessions from source S (repeatable)
  --include-pinned   delete pinned sessions too
  --dry-run          list what would be deleted, delete nothing
  --yes              do not ask
  --json             print the sessions as JSON

Examples:
  sessiondb prune --older-than 90d --dry-run
  sessiondb prune --older-than 2026-01-01 --source cron --yes
`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&olderThan, "older-than", "", "")
			fs.Var(&sources, "source", "")
			fs.BoolVar(&pinned, "include-pinned", false, "")
			fs.BoolVar(&dryRun, "dry-run", false, "")
			fs.BoolVar(&yes, "yes", false, "")
			fs.BoolVar(&asJSON, "json", false, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("prune takes no arguments")
			}
			if olderThan == "" {
				return usagef("--older-than is required (e.g. --older-than 90d)")
			}
			cutoff, err := parseAge(olderThan, time.Now())
			if err != nil {
				return err
			}
			db, err := e.openWrite(ctx, false)
			if err != nil {
				return err
			}
			defer db.Close()
			o := sessiondb.PruneOptions{Before: cutoff, Sources: sources, IncludePinned: pinned, DryRun: true}
			cands, err := db.Prune(ctx, o)
			if err != nil {
				return err
			}
			if !dryRun && len(cands) > 0 {
				if err := confirm(e, yes, fmt.Sprintf("Delete %d sessions inactive since before %s?", len(cands), fmtTime(cutoff))); err != nil {
					return err
				}
				o.DryRun = false
				// Prune deletes in one transaction, with no progress to
				// report: a spinner shows it is working.
				bar := newProgress(e.stderr, "pruning")
				bar.spin()
				cands, err = db.Prune(ctx, o)
				bar.done()
				if err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(e.stdout, map[string]any{"dry_run": dryRun, "sessions": nonNil(cands)})
			}
			verb := "deleted"
			if dryRun {
				verb = "would delete"
			}
			digits := 0
			for _, c := range cands {
				digits = max(digits, len(fmt.Sprint(c.MessageCount)))
			}
			t := &table{}
			for _, c := range cands {
				title := ""
				if c.Title != nil {
					title = *c.Title
				}
				t.addText(c.ID, c.Source, "last active "+fmtTime(c.LastActive)[:16], fmt.Sprintf("%*d messages", digits, c.MessageCount), title)
			}
			if err := t.write(e.stdout); err != nil {
				return err
			}
			_, err = fmt.Fprintf(e.stdout, "%s %d sessions\n", verb, len(cands))
			return err
		},
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// confirm asks a yes/no question on a terminal; without one it refuses
// unless --yes was given, so nothing is deleted by accident in a script.
func confirm(e *env, yes bool, question string) error {
	if yes {
		return nil
	}
	if !isTerminal(e.stdin) {
		return sessiondb.Errorf(sessiondb.EINVALID, "refusing to delete without --yes when not run interactively")
	}
	fmt.Fprintf(e.stderr, "%s [y/N] ", question)
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return err
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return sessiondb.Errorf(sessiondb.EINVALID, "cancelled; nothing was deleted")
	}
	return nil
}

func newDeleteCommand() *command {
	var yes, asJSON bool
	return &command{
		name:     "delete",
		synopsis: "delete sessions with their messages and subagent runs",
		usage: `Usage: sessiondb [--db PATH] delete SESSION... [--yes] [--json]

Deletes each SESSION (an id, a unique id prefix or a title) with its
messages and its subagent (delegate) runs; other child sessions are kept and
orphaned. On a terminal delete asks first; elsewhere it refuses without --yes.

Examples:
  sessiondb delete 20260501_120000_abcdef --yes
`,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&yes, "yes", false, "")
			fs.BoolVar(&asJSON, "json", false, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) == 0 {
				return usagef("missing SESSION")
			}
			db, err := e.openWrite(ctx, false)
			if err != nil {
				return err
			}
			defer db.Close()
			var ids, all []string
			for _, a := range args {
				id, err := resolve(ctx, db, a)
				if err != nil {
					return err
				}
				targets := []string{id}
				if p, ok := db.(sessiondb.DeletePlanner); ok {
					if targets, err = p.DeleteTargets(ctx, id); err != nil {
						return err
					}
				}
				ids = append(ids, id)
				all = append(all, targets...)
			}
			if err := confirm(e, yes, fmt.Sprintf("Delete %d sessions (%s)?", len(all), strings.Join(all, ", "))); err != nil {
				return err
			}
			var deleted []string
			bar := newProgress(e.stderr, "deleting")
			defer bar.done()
			bar.spin() // a bar once the first of many is deleted
			for i, id := range ids {
				if i > 0 {
					bar.update(int64(i), int64(len(ids)))
				}
				d, err := db.DeleteSession(ctx, id)
				if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND {
					continue // already deleted as another argument's subagent run
				}
				if err != nil {
					return err
				}
				deleted = append(deleted, d...)
			}
			bar.done()
			if asJSON {
				return writeJSON(e.stdout, map[string]any{"deleted": nonNil(deleted)})
			}
			_, err = fmt.Fprintf(e.stdout, "deleted %d sessions: %s\n", len(deleted), strings.Join(deleted, ", "))
			return err
		},
	}
}

// newFlagCommand builds archive, unarchive, pin and unpin.
func newFlagCommand(name string, on bool) *command {
	what := map[string]string{
		"archive": "archive sessions (hidden from list, kept)", "unarchive": "bring archived sessions back",
		"pin": "pin sessions (kept by prune, shown with *)", "unpin": "unpin sessions",
	}[name]
	return &command{
		name:     name,
		synopsis: what,
		usage: fmt.Sprintf(`Usage: sessiondb [--db PATH] %[1]s SESSION...

%[2]s. Each SESSION is an id, a unique id prefix or a title; the flag
applies to its whole compression chain.

Examples:
  sessiondb %[1]s 20260501_120000_abcdef
`, name, strings.ToUpper(what[:1])+what[1:]),
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) == 0 {
				return usagef("missing SESSION")
			}
			db, err := e.openWrite(ctx, false)
			if err != nil {
				return err
			}
			defer db.Close()
			for _, a := range args {
				id, err := resolve(ctx, db, a)
				if err != nil {
					return err
				}
				if strings.HasSuffix(name, "archive") {
					err = db.SetArchived(ctx, id, on)
				} else {
					err = db.SetPinned(ctx, id, on)
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "%s %s\n", map[string]string{"archive": "archived", "unarchive": "unarchived", "pin": "pinned", "unpin": "unpinned"}[name], id)
			}
			return nil
		},
	}
}

func newClearCommand() *command {
	var yes bool
	return &command{
		name:     "clear",
		synopsis: "delete a session's messages, keep the session",
		usage: `Usage: sessiondb [--db PATH] clear SESSION [--yes]

Deletes every message of SESSION and their search-index entries; the
session itself, its title and token totals stay. Asks first on a terminal;
elsewhere refuses without --yes.

Examples:
  sessiondb clear 20260501_120000_abcdef --yes
`,
		flags: func(fs *flag.FlagSet) { fs.BoolVar(&yes, "yes", false, "") },
		run: func(ctx context.Context, e *env, args []string) error {
			arg, err := oneArg(args, "SESSION")
			if err != nil {
				return err
			}
			db, id, err := e.openSessionWrite(ctx, arg, false)
			if err != nil {
				return err
			}
			defer db.Close()
			if err := confirm(e, yes, fmt.Sprintf("Delete every message of %s?", id)); err != nil {
				return err
			}
			n, err := db.ClearMessages(ctx, id)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(e.stdout, "cleared %s: %d messages deleted\n", id, n)
			return err
		},
	}
}
