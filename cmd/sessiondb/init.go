package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

func newInitCommand() *command {
	var asJSON bool
	return &command{
		name:     "init",
		synopsis: "create the database, or upgrade it to the newest Hermes schema",
		usage: `Usage: sessiondb [--db PATH] init [--json]

Creates the database when it does not exist, or upgrades an existing Hermes
state.db of any schema version in place without losing a row, then finishes
any pending search-index backfill and restores a CJK index that a Hermes
without the cjk_unicode61 tokenizer marked stale (progress on a terminal).
Run it while no tokenizer-less Hermes process is running. On a PostgreSQL
database (--db postgres://…) it applies the pending schema migrations.

Options:
  --json   print {"path","schema_version","journal_mode"}

Examples:
  sessiondb init
  sessiondb --db ./state.db init --json
`,
		flags: func(fs *flag.FlagSet) { fs.BoolVar(&asJSON, "json", false, "") },
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("init takes no arguments")
			}
			l, err := e.where()
			if err != nil {
				return err
			}
			if l.pg {
				return e.initServer(ctx, l, asJSON)
			}
			db, err := e.openSQLiteWrite(l, true)
			if err != nil {
				return err
			}
			defer db.Close()
			bar := newProgress(e.stderr, "indexing")
			if _, err := db.RestoreCJK(ctx, bar.update); err != nil {
				return err
			}
			if err := db.Backfill(ctx, bar.update); err != nil {
				return err
			}
			bar.done()
			in, err := db.Info(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(e.stdout, struct {
					Path          string `json:"path"`
					SchemaVersion int    `json:"schema_version"`
					JournalMode   string `json:"journal_mode"`
				}{in.Path, in.SchemaVersion, in.JournalMode})
			}
			_, err = fmt.Fprintf(e.stdout, "%s: schema version %d (sessiondb writes %d), journal mode %s\n",
				in.Path, in.SchemaVersion, sqlite.SchemaVersion, in.JournalMode)
			return err
		},
	}
}

// initServer brings a PostgreSQL database's schema up to date: opening it
// applies the pending migrations.
func (e *env) initServer(ctx context.Context, l location, asJSON bool) error {
	db, err := e.openPostgres(ctx, l)
	if err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(e.stdout, struct {
			Path          string `json:"path"`
			SchemaVersion int    `json:"schema_version"`
		}{l.String(), postgres.SchemaVersion()})
	}
	_, err = fmt.Fprintf(e.stdout, "%s: schema version %d\n", l, postgres.SchemaVersion())
	return err
}
