package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/sessiondb/sessiondb"
)

func newImportCommand() *command {
	var asJSON bool
	var o sessiondb.ImportOptions
	return &command{
		name:     "import",
		synopsis: "import sessions from a JSON lines or JSON export",
		usage: `Usage: sessiondb [--db PATH] import PATH|- [--replace] [--dry-run] [--keep-runtime-state] [--json]

Imports sessions written by "sessiondb export" (jsonl or json) or by Hermes'
session export: one session object per line, or a JSON array of them. A
lineage object imports each of its segments. Each session is written whole
or not at all, with its messages' original timestamps and every column.
Messages keep their ids where the database holds no message with the same
id; the others get new ids after every id in the database, in the file's
order, and are counted as renumbered. So "export --all" imported into an
empty database exports again exactly as it was. Sessions that already
exist are skipped, so importing a file twice, or again after an import
stopped part way, writes each session once. A session that cannot be
imported is reported with its line and the others are imported; the exit
status is then 1.

message_count and tool_call_count are recomputed from the imported messages.
A parent session that is neither in the database nor in the file is dropped
and reported. Live runtime state (gateway routing keys, activity, handoff,
compression back-off, tool cache) is not imported, as in Hermes, unless
--keep-runtime-state is given. Hermes refuses imports of more than 500
sessions, 10000 messages per session, 50000 messages or 25 MiB at once;
sessiondb imports them (each session in its own transaction) and warns.

On PostgreSQL (--db postgres://...) the import works the same way; while
it writes a session's messages, appends to the database wait for it
(reads do not).

Options:
  --replace              overwrite sessions that already exist: their messages
                         are replaced and their columns set from the file
  --dry-run              report what would be imported; write nothing
  --keep-runtime-state   also import routing, activity, handoff and back-off
                         state, to move a whole installation to a new machine
  --json                 print the report as JSON

Examples:
  sessiondb import backup.jsonl
  sessiondb import backup.jsonl --dry-run
  sessiondb export --all --db old.db | sessiondb import - --db new.db
  sessiondb --db old.db export --all | sessiondb --db postgres://host/db import -
`,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&o.Replace, "replace", false, "")
			fs.BoolVar(&o.DryRun, "dry-run", false, "")
			fs.BoolVar(&o.KeepRuntimeState, "keep-runtime-state", false, "")
			fs.BoolVar(&asJSON, "json", false, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			path, err := oneArg(args, "PATH (or - for standard input)")
			if err != nil {
				return err
			}
			r, err := openInput(e, path)
			if err != nil {
				return err
			}
			defer r.Close()
			db, err := e.openWrite(ctx, true)
			if err != nil {
				return err
			}
			defer db.Close()
			im, ok := db.(sessiondb.Importer)
			if !ok {
				return e.lacks("session imports")
			}
			// ImportSessions reports no progress; the bytes it has read of
			// the input are (a bar for a file, a spinner for a pipe).
			bar := newProgress(e.stderr, "importing")
			size := int64(-1)
			if f, ok := r.(*os.File); ok {
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					size = fi.Size()
				}
			}
			rep, ierr := im.ImportSessions(ctx, bar.reader(r, size), o)
			bar.done()
			if rep != nil {
				if asJSON {
					err = writeJSON(e.stdout, rep)
				} else {
					_, err = fmt.Fprint(e.stdout, renderImportReport(rep))
				}
				if err != nil {
					return err
				}
			}
			if ierr != nil {
				return ierr
			}
			if rep.Failed > 0 {
				return fmt.Errorf("%d of %d sessions could not be imported (see the errors above)", rep.Failed, rep.Failed+rep.Imported+rep.Replaced+rep.Skipped)
			}
			return nil
		},
	}
}

func renderImportReport(rep *sessiondb.ImportReport) string {
	var b strings.Builder
	verb := "imported"
	if rep.DryRun {
		verb = "would import"
		b.WriteString("Dry run: nothing was written.\n")
	}
	fmt.Fprintf(&b, "%s %d sessions (%d messages), replaced %d, skipped %d already present, failed %d",
		verb, rep.Imported, rep.Messages, rep.Replaced, rep.Skipped, rep.Failed)
	if rep.Detached > 0 {
		fmt.Fprintf(&b, ", %d without their parent", rep.Detached)
	}
	if rep.Renumbered > 0 {
		fmt.Fprintf(&b, ", %d messages with new ids", rep.Renumbered)
	}
	b.WriteString("\n")
	note := func(n sessiondb.ImportNote) {
		b.WriteString("  ")
		if n.Line > 0 {
			fmt.Fprintf(&b, "line %d: ", n.Line)
		}
		if n.SessionID != "" {
			fmt.Fprintf(&b, "session %s: ", n.SessionID)
		}
		b.WriteString(n.Message)
		b.WriteString("\n")
	}
	if len(rep.Errors) > 0 {
		b.WriteString("Errors:\n")
		for _, n := range rep.Errors {
			note(n)
		}
	}
	if len(rep.Warnings) > 0 {
		b.WriteString("Warnings:\n")
		for _, n := range rep.Warnings {
			note(n)
		}
	}
	return b.String()
}
