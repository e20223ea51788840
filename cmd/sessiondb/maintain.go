package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/sessiondb/sessiondb/sqlite"
)

func newOptimizeStorageCommand() *command {
	var vacuum, asJSON bool
	return &command{
		name:     "optimize-storage",
		synopsis: "move a pre-v23 file to the compact search layout, finish pending indexing",
		usage: `Usage: sessiondb [--db PATH] optimize-storage [--no-vacuum] [--json]

Converts the search indexes of an older Hermes file (schema 11–22, where
every index keeps its own copy of each message) to the external-content
layout of Hermes 23+, and finishes any pending index backfill. Old rows are
indexed in chunks of 500, each a short transaction, so Hermes can keep
writing; an interrupted run resumes where it stopped. Afterwards the file is
compacted (VACUUM) unless another process has it open.

Options:
  --no-vacuum   skip the VACUUM at the end
  --json        print the report as JSON

Examples:
  sessiondb optimize-storage
`,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&vacuum, "no-vacuum", false, "")
			fs.BoolVar(&asJSON, "json", false, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("optimize-storage takes no arguments")
			}
			return maintenance(ctx, e, asJSON, "optimizing storage", func(db *sqlite.DB, p *progress) (*sqlite.MaintenanceReport, error) {
				return db.OptimizeStorage(ctx, p.update, !vacuum)
			})
		},
	}
}

func newRebuildFTSCommand() *command {
	var asJSON bool
	return &command{
		name:     "rebuild-fts",
		synopsis: "rebuild every search index from the messages",
		usage: `Usage: sessiondb [--db PATH] rebuild-fts [--json]

Recreates the word, trigram and CJK search indexes and refills them from the
messages in short chunks, showing progress, then merges each index into one
or two segments (also in short steps, shown by a spinner with the elapsed
time). Search keeps working meanwhile (rows not yet indexed are found
by a scan), and so do other processes' writes.

Examples:
  sessiondb rebuild-fts
`,
		flags: func(fs *flag.FlagSet) { fs.BoolVar(&asJSON, "json", false, "") },
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("rebuild-fts takes no arguments")
			}
			return maintenance(ctx, e, asJSON, "rebuilding indexes", func(db *sqlite.DB, p *progress) (*sqlite.MaintenanceReport, error) {
				pending, err := db.MessageCount(ctx)
				if err != nil {
					return nil, err
				}
				return &sqlite.MaintenanceReport{Backfilled: pending}, db.RebuildFTS(ctx, p.update)
			})
		},
	}
}

func newOptimizeCommand() *command {
	var vacuum, asJSON bool
	return &command{
		name:     "optimize",
		synopsis: "merge the search indexes; with --vacuum also compact the file",
		usage: `Usage: sessiondb [--db PATH] optimize [--vacuum] [--json]

Merges each search index into one segment, which makes searches faster
after many writes, in short steps that let other processes (Hermes) keep
writing, and puts back Hermes' merge settings if an interrupted rebuild left
its own. Then it summarizes each word (and CJK bigram) found in 10,000
messages or more, so that a search for one of them, or for a phrase
holding a frequent one, reads only the rows that can rank (about 25 s on
a million messages). Searches stay exact
whoever writes; sessiondb's own writes keep the summaries up to date, and
after many writes by Hermes alone another optimize makes them fast again.
With --vacuum the file is compacted too, unless another process (such as
Hermes) has it open.

Examples:
  sessiondb optimize --vacuum
`,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&vacuum, "vacuum", false, "")
			fs.BoolVar(&asJSON, "json", false, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("optimize takes no arguments")
			}
			return maintenance(ctx, e, asJSON, "optimizing", func(db *sqlite.DB, _ *progress) (*sqlite.MaintenanceReport, error) {
				return db.Optimize(ctx, vacuum)
			})
		},
	}
}

// maintenance opens the database, runs fn with a progress display labelled
// label and prints its report.
func maintenance(ctx context.Context, e *env, asJSON bool, label string, fn func(*sqlite.DB, *progress) (*sqlite.MaintenanceReport, error)) error {
	db, err := e.openFile(true)
	if err != nil {
		return err
	}
	defer db.Close()
	// A spinner until the work counts its first chunk (rebuild-fts drops
	// and recreates the indexes first), and for work that never counts:
	// optimize's merges and VACUUM are single statements without a
	// progress callback.
	bar := newProgress(e.stderr, label)
	bar.spin()
	rep, err := fn(db, bar)
	bar.done()
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(e.stdout, rep)
	}
	if rep.Converted {
		fmt.Fprintln(e.stdout, "converted the legacy search layout to external content")
	}
	if rep.Backfilled > 0 {
		fmt.Fprintf(e.stdout, "indexed %d rows (all indexes)\n", rep.Backfilled)
	}
	if rep.Optimized > 0 {
		fmt.Fprintf(e.stdout, "merged %d search indexes\n", rep.Optimized)
	}
	if rep.Summarized > 0 {
		fmt.Fprintf(e.stdout, "summarized %d frequent terms (their searches read only the rows that can rank)\n", rep.Summarized)
	}
	switch {
	case rep.Vacuumed:
		fmt.Fprintf(e.stdout, "vacuumed: %d → %d bytes\n", rep.SizeBefore, rep.SizeAfter)
	case rep.VacuumSkipped != "":
		fmt.Fprintf(e.stdout, "vacuum skipped: %s\n", rep.VacuumSkipped)
	}
	_, err = fmt.Fprintln(e.stdout, "done")
	return err
}
