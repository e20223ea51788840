package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

// errUnhealthy makes doctor exit with status 1 after printing its report.
var errUnhealthy = errors.New("problems found")

func newDoctorCommand() *command {
	var asJSON, full, fix bool
	return &command{
		name:     "doctor",
		synopsis: "check the database's health and say how to fix what is wrong",
		usage: `Usage: sessiondb [--db PATH] doctor [--full] [--fix] [--json]

Checks the database without changing it. First, before SQLite opens
anything, whether the user doctor runs as can use it: enter the
directories on the way, create files in the file's directory (SQLite puts
the -wal, -shm and -journal there), read and write the file and its -wal,
-shm and -journal (modes and owners); whether the file system is mounted
read-only; and the free space on it. While one of these fails, the database
is not opened: fix it as printed and run doctor again. Then: schema
version, journal mode, file and WAL sizes, free pages, SQLite's quick_check
(integrity_check with --full), the consistency of every search index, stale
flags and pending index backfills, the filesystem (network and VM-shared
filesystems are not safe for WAL), which processes have the file open, and
whether the write lock is free right now. Every problem names the command
that fixes it. Run doctor as the user that runs Hermes: root may read and
write any file. Exit status 0 when healthy, 1 when a check failed.

On PostgreSQL (--db postgres://…) doctor checks instead that the server
answers (else exit status 6), its version (15 or newer), the pg_trgm
extension, the schema migrations and that every index is valid; --fix
applies pending migrations.

Options:
  --full   run the full integrity_check (slow on big files)
  --fix    apply the safe fixes: upgrade the schema, finish index backfills,
           rebuild damaged or stale search indexes, checkpoint the WAL
           (never permissions, mounts or disk space: those are printed)
  --json   print the report as JSON

Examples:
  sessiondb doctor
  sessiondb doctor --fix
`,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "")
			fs.BoolVar(&full, "full", false, "")
			fs.BoolVar(&fix, "fix", false, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("doctor takes no arguments")
			}
			l, err := e.where()
			if err != nil {
				return err
			}
			diagnose, fixes := diagnoseFile(l.name, full), e.fixFile
			if l.pg {
				diagnose, fixes = e.diagnoseServer(l), e.fixServer
			}
			d, err := diagnose(ctx)
			if err != nil {
				return err
			}
			var fixed []string
			if fix && needsFix(d) {
				if fixed, err = fixes(ctx, d); err != nil {
					return err
				}
				if d, err = diagnose(ctx); err != nil {
					return err
				}
			}
			if asJSON {
				if err := writeJSON(e.stdout, map[string]any{"diagnosis": d, "fixed": nonNil(fixed)}); err != nil {
					return err
				}
			} else {
				printDiagnosis(e.stdout, d, fixed, e.styles())
			}
			if !d.Healthy {
				return errUnhealthy
			}
			return nil
		},
	}
}

// diagnoseFile checks a SQLite file (sqlite.Diagnose).
func diagnoseFile(path string, full bool) func(context.Context) (*sessiondb.Diagnosis, error) {
	return func(ctx context.Context) (*sessiondb.Diagnosis, error) {
		d, err := sqlite.Diagnose(ctx, path, full)
		if err != nil {
			return nil, err
		}
		return &d.Diagnosis, nil
	}
}

// diagnoseServer checks a PostgreSQL database (postgres.Diagnose).
func (e *env) diagnoseServer(l location) func(context.Context) (*sessiondb.Diagnosis, error) {
	return func(ctx context.Context) (*sessiondb.Diagnosis, error) {
		return postgres.Diagnose(ctx, l.name, postgres.Options{ConnectTimeout: e.connectTimeout})
	}
}

// needsFix reports a failed or warned check that --fix repairs: the ones
// whose fix is sessiondb init or rebuild-fts.
func needsFix(d *sessiondb.Diagnosis) bool {
	for _, c := range d.Checks {
		if c.Status != sessiondb.CheckOK && (strings.HasPrefix(c.Fix, "sessiondb init") || c.Fix == "sessiondb rebuild-fts") {
			return true
		}
	}
	return false
}

// fixServer runs the fix doctor lists for a PostgreSQL database: opening
// it applies the pending migrations (and creates pg_trgm where the role
// may).
func (e *env) fixServer(ctx context.Context, _ *sessiondb.Diagnosis) ([]string, error) {
	l, err := e.where()
	if err != nil {
		return nil, err
	}
	db, err := e.openPostgres(ctx, l)
	if err != nil {
		return nil, err
	}
	return []string{"applied the schema migrations"}, db.Close()
}

// fixFile runs the safe fixes doctor lists for a SQLite file: opening
// upgrades the schema and restores a stale CJK index, the backfill
// finishes pending indexing, a damaged or detached index is rebuilt, and
// the WAL is checkpointed.
func (e *env) fixFile(ctx context.Context, d *sessiondb.Diagnosis) ([]string, error) {
	db, err := e.openFile(true)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	fixed := []string{"opened and upgraded the schema"}
	rebuild := false
	for _, c := range d.Checks {
		rebuild = rebuild || c.Fix == "sessiondb rebuild-fts"
	}
	bar := newProgress(e.stderr, "repairing")
	defer bar.done()
	if restored, err := db.RestoreCJK(ctx, bar.update); err != nil {
		return fixed, err
	} else if restored {
		fixed = append(fixed, "restored the stale CJK index")
	}
	if rebuild {
		if err := db.RebuildFTS(ctx, bar.update); err != nil {
			return fixed, err
		}
		fixed = append(fixed, "rebuilt the search indexes")
	} else {
		if err := db.Backfill(ctx, bar.update); err != nil {
			return fixed, err
		}
		fixed = append(fixed, "finished the index backfill")
	}
	bar.done()
	if err := db.Checkpoint(ctx); err != nil {
		return fixed, err
	}
	return append(fixed, "checkpointed the WAL"), nil
}

func printDiagnosis(w io.Writer, d *sessiondb.Diagnosis, fixed []string, st styles) {
	for _, f := range fixed {
		fmt.Fprintf(w, "%s %s\n", st.ok("fixed:"), f)
	}
	fmt.Fprintf(w, "%s\n", st.bold(d.Path))
	for _, ch := range d.Checks {
		var mark string
		switch ch.Status {
		case sessiondb.CheckOK:
			mark = st.ok("ok") + "  "
		case sessiondb.CheckWarn:
			mark = st.warn("WARN")
		default:
			mark = st.fail("FAIL")
		}
		fmt.Fprintf(w, "  %s  %s %s\n", mark, padRight(ch.Name, 28), ch.Detail)
		if ch.Fix != "" && ch.Status != sessiondb.CheckOK {
			fmt.Fprintf(w, "        %s fix: %s\n", padRight("", 28), st.bold(ch.Fix))
		}
	}
	if d.Healthy {
		fmt.Fprintln(w, st.ok("healthy"))
	} else {
		fmt.Fprintln(w, st.fail("PROBLEMS FOUND"))
	}
}
