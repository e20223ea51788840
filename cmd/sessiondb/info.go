package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
)

func newInfoCommand() *command {
	var asJSON bool
	return &command{
		name:     "info",
		synopsis: "show schema version, journal mode, search indexes, row counts and file sizes",
		usage: `Usage: sessiondb [--db PATH] info [--json]

Shows the database path, its schema version, journal mode, the FTS layout and
which search indexes are live, pending index backfill, row counts and the
sizes of the database and its WAL files. Opening upgrades an older file.

Options:
  --json   print the same as one JSON object

Examples:
  sessiondb info
  sessiondb --db ~/.hermes/state.db info --json
`,
		flags: func(fs *flag.FlagSet) { fs.BoolVar(&asJSON, "json", false, "") },
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("info takes no arguments")
			}
			db, err := e.openFile(false)
			if err != nil {
				return err
			}
			defer db.Close()
			in, err := db.Info(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(e.stdout, in)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "path:            %s\n", in.Path)
			fmt.Fprintf(&b, "schema version:  %d\n", in.SchemaVersion)
			fmt.Fprintf(&b, "journal mode:    %s\n", in.JournalMode)
			fmt.Fprintf(&b, "fts layout:      %s", in.FTSLayout)
			if in.FTSStorage != "" {
				fmt.Fprintf(&b, " (fts_storage_version %s)", in.FTSStorage)
			}
			b.WriteString("\n")
			for _, name := range sortedKeys(in.Indexes) {
				state := "live"
				if !in.Indexes[name] {
					state = "not live (run `sessiondb init` to finish indexing)"
				}
				fmt.Fprintf(&b, "  %s %s\n", padRight(name, 21), state)
			}
			if in.Pending > 0 {
				fmt.Fprintf(&b, "pending backfill: %d message ids\n", in.Pending)
			}
			for _, t := range sortedKeys(in.Rows) {
				fmt.Fprintf(&b, "rows %s %d\n", padRight(t+":", 20), in.Rows[t])
			}
			for _, f := range sortedKeys(in.Files) {
				fmt.Fprintf(&b, "file %s %d bytes\n", padRight(f+":", 20), in.Files[f])
			}
			_, err = fmt.Fprint(e.stdout, b.String())
			return err
		},
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
