package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

func newRecoverCommand() *command {
	var source, output, reportPath string
	var allowPartial, asJSON bool
	return &command{
		name:     "recover",
		synopsis: "copy every readable row of a damaged database into a new file",
		usage: `Usage: sessiondb recover --source BROKEN.db --output NEW.db [--allow-partial] [--report PATH] [--json]

Copies a Hermes state.db into a new file with the newest schema and fresh
search indexes, as ` + "`hermes sessions recover`" + ` does. The source is never
opened: its files (state.db and any -wal, -shm, -journal) are copied to a
temporary directory next to the output first, and only the copy is read.
Run it while no Hermes process is writing to the source. The output is never
installed in place of the source: swap it in by hand. It needs about twice
the source's size free next to the output, and refuses to start without.

A row that cannot be read stops the recovery and no output is left. With
--allow-partial every readable row is copied and the unreadable rowid ranges
are reported. Messages keep their ids; messages whose session row is lost
get a placeholder session (source "recovered").

Options:
  --source PATH     the damaged database (required)
  --output PATH     the new database; must not exist (required)
  --allow-partial   skip unreadable rows and report them instead of failing
  --report PATH     also write the report as JSON to PATH
  --json            print the report as JSON

Exit status: 0 when every row was copied and the output verified, 1 when
the recovery is partial or failed, 2 for a usage error.

Examples:
  sessiondb recover --source ~/.hermes/state.db --output ~/state-recovered.db
  sessiondb recover --source broken.db --output new.db --allow-partial --report recover.json
`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&source, "source", "", "")
			fs.StringVar(&output, "output", "", "")
			fs.BoolVar(&allowPartial, "allow-partial", false, "")
			fs.StringVar(&reportPath, "report", "", "")
			fs.BoolVar(&asJSON, "json", false, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("recover takes no arguments: %s", strings.Join(args, " "))
			}
			if e.dbPath != "" {
				// recover reads --source, never --db; a URL there means
				// the user expects it to work on that database.
				if err := (location{e.dbPath, "--db", postgres.IsURL(e.dbPath)}).sqliteOnly(); err != nil {
					return err
				}
			}
			if source == "" || output == "" {
				return usagef("--source and --output are required")
			}
			if reportPath != "" {
				if err := checkReportPath(reportPath, source, output); err != nil {
					return err
				}
			}
			bar := newProgress(e.stderr, "recovering")
			bar.spin() // until the copy of the source's files is made and rows are counted
			rep, err := sqlite.Recover(ctx, source, output, sqlite.RecoverOptions{AllowPartial: allowPartial, Progress: bar.update})
			bar.done()
			if rep != nil && reportPath != "" {
				if werr := writeReportFile(reportPath, rep); werr != nil {
					err = errors.Join(err, werr)
				}
			}
			if rep != nil && (asJSON || err == nil) {
				if perr := printRecoverReport(e.stdout, rep, asJSON); perr != nil {
					return exitOne{perr.Error()}
				}
			}
			switch {
			case err != nil:
				return exitOne{err.Error()}
			case !rep.Complete:
				return exitOne{fmt.Sprintf("the recovery is partial: %s holds every row that could be read; see the lost ranges above", rep.Output)}
			}
			return nil
		},
	}
}

// exitOne is an error that exits with status 1 whatever caused it:
// recover's exit status says complete (0), partial or failed (1), or usage
// error (2).
type exitOne struct{ msg string }

func (e exitOne) Error() string { return e.msg }

// checkReportPath refuses a report path that names the source, one of its
// files, or the output.
func checkReportPath(report, source, output string) error {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		return a
	}
	r := abs(report)
	for _, p := range []string{abs(source), abs(source) + "-wal", abs(source) + "-shm", abs(source) + "-journal", abs(output)} {
		if r == p {
			return usagef("--report %s would overwrite a database file; choose another path", report)
		}
	}
	return nil
}

func writeReportFile(path string, rep *sqlite.RecoverReport) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// printRecoverReport prints the report as JSON or as a table.
func printRecoverReport(w io.Writer, rep *sqlite.RecoverReport, asJSON bool) error {
	if asJSON {
		return writeJSON(w, rep)
	}
	state := "complete"
	if !rep.Complete {
		state = "partial"
	}
	fmt.Fprintf(w, "recovered %s\n       into %s: %s\n", rep.Source, rep.Output, state)
	if v := rep.SourceSchemaVersion; v > 0 && v < sqlite.SchemaVersion {
		fmt.Fprintf(w, "the source is at schema %d: its data was upgraded to schema %d\n", v, sqlite.SchemaVersion)
	}
	if rep.SchemaIncomplete {
		fmt.Fprintln(w, "the source's schema is damaged: tables past the damage could not be found")
	}
	fmt.Fprintln(w)
	// Every column aligns right (the empty last one pads the numbers'),
	// the names padded first so that they read left-aligned.
	t := &table{align: []align{alignRight, alignRight, alignRight, alignRight, alignRight}}
	t.addText("TABLE", "SOURCE", "COPIED", "LOST", "OUTPUT", "")
	var notes []string
	for _, tb := range rep.Tables {
		if tb.Status == sqlite.RecoverAbsent {
			continue
		}
		src, lost := "?", "?"
		if tb.SourceRows != nil {
			src = fmt.Sprint(*tb.SourceRows)
			lost = fmt.Sprint(max(*tb.SourceRows-tb.Copied, 0))
		}
		t.addText(tb.Name, src, fmt.Sprint(tb.Copied), lost, fmt.Sprint(tb.OutputRows), "")
		if note := tableNote(tb); note != "" {
			notes = append(notes, fmt.Sprintf("  %s: %s", tb.Name, note))
		}
	}
	names := 0
	for _, r := range t.rows {
		names = max(names, width(r[0].text))
	}
	for _, r := range t.rows {
		r[0].text = padRight(r[0].text, names)
	}
	if err := t.write(w); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	}

	c := rep.Cleanup
	var fixes []string
	for _, f := range []struct {
		n    int64
		what string
	}{
		{int64(c.PlaceholderSessions), "placeholder sessions created"},
		{c.ParentsCleared, "dangling parent links cleared"},
		{c.PromptHashesCleared, "unknown prompt hashes cleared"},
		{c.PromptsDeleted, "unused prompts deleted"},
		{c.UsageDeleted, "orphan usage rows deleted"},
		{c.LocksDeleted, "orphan compression locks deleted"},
		{c.OtherDeleted, "other orphan rows deleted"},
		{c.TitlesCleared, "duplicate titles cleared"},
	} {
		if f.n > 0 {
			fixes = append(fixes, fmt.Sprintf("%d %s", f.n, f.what))
		}
	}
	if len(fixes) == 0 {
		fixes = []string{"no orphans"}
	}
	fmt.Fprintf(w, "\ncleanup: %s\n", strings.Join(fixes, ", "))
	if n := rep.Counters; n.MessageCount+n.ToolCallCount > 0 {
		fmt.Fprintf(w, "session counters differing from the copied messages (kept as in the source): message_count %d, tool_call_count %d\n",
			n.MessageCount, n.ToolCallCount)
	}
	v := rep.Verify
	if v.OK {
		fmt.Fprintf(w, "verification: ok (integrity_check ok, no foreign key violations, schema %d, %d search indexes ok, row counts match)\n",
			v.SchemaVersion, len(v.FTS))
	} else {
		fmt.Fprintf(w, "verification FAILED:\n  %s\n", strings.Join(v.Problems, "\n  "))
	}
	_, err := fmt.Fprintf(w, "took %.1fs\n", rep.DurationSeconds)
	return err
}

// tableNote says what is incomplete about a table.
func tableNote(t *sqlite.RecoverTable) string {
	var parts []string
	if t.Status != sqlite.RecoverComplete {
		parts = append(parts, t.Status)
	}
	if len(t.Lost) > 0 {
		ranges := make([]string, 0, len(t.Lost))
		for i, r := range t.Lost {
			if i == 10 {
				ranges = append(ranges, fmt.Sprintf("… %d more", len(t.Lost)-i))
				break
			}
			if r.From == r.To {
				ranges = append(ranges, fmt.Sprint(r.From))
			} else {
				ranges = append(ranges, fmt.Sprintf("%d..%d", r.From, r.To))
			}
		}
		parts = append(parts, "unreadable rowids "+strings.Join(ranges, ", "))
	}
	if len(t.Rejected) > 0 {
		parts = append(parts, fmt.Sprintf("%d rows refused by the output", len(t.Rejected)))
	}
	if t.Added > 0 {
		parts = append(parts, fmt.Sprintf("%d placeholders added", t.Added))
	}
	if t.Removed > 0 {
		parts = append(parts, fmt.Sprintf("%d orphans removed", t.Removed))
	}
	if t.Created {
		parts = append(parts, "table created from the source's definition")
	}
	if t.Note != "" {
		parts = append(parts, t.Note)
	}
	return strings.Join(parts, "; ")
}
