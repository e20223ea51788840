package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
)

func newExportCommand() *command {
	var (
		session, source, format, output string
		all, lineage, redact, force     bool
	)
	return &command{
		name:     "export",
		synopsis: "export sessions with their messages as JSON lines, JSON or Markdown",
		usage: `Usage: sessiondb [--db PATH] export (--session SESSION [--lineage] | --all | --source SOURCE)
                 [--format jsonl|json|md] [--redact] [--output PATH|-] [--force]

Exports sessions with their active messages. The JSON formats hold every
column of the session and of each message, as Hermes' export_session does,
and can be read back with "sessiondb import". SESSION is an id, a unique id
prefix or a title. Sessions and messages are read a page at a time, so a
session or database of any size exports in bounded memory.

Options:
  --session SESSION   export one session
  --lineage           with --session: export its whole conversation (the
                      compression lineage, root to tip) as one object with
                      "segments" and "lineage_session_ids", as Hermes'
                      export_session_lineage does
  --all               export every session, archived and hidden ones included
  --source SOURCE     export every session of one source (cli, telegram, …)
  --format F          jsonl (default: one object per line), json (an
                      indented array) or md (a readable Markdown transcript)
  --redact            mask secrets (API keys, tokens, passwords, private
                      keys) in messages, system prompts and model config
  --output PATH|-     write to a file (default -: standard output). The
                      file is written beside PATH and renamed into place
                      when complete, so it is never left half-written; it is
                      created readable by you only
  --force             overwrite an existing --output file

Examples:
  sessiondb export --all --output backup.jsonl
  sessiondb export --session 20260501_120000 --lineage --format md > talk.md
  sessiondb export --source telegram --redact --format json --output tg.json
`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&session, "session", "", "")
			fs.BoolVar(&lineage, "lineage", false, "")
			fs.BoolVar(&all, "all", false, "")
			fs.StringVar(&source, "source", "", "")
			fs.StringVar(&format, "format", "jsonl", "")
			fs.BoolVar(&redact, "redact", false, "")
			fs.StringVar(&output, "output", "-", "")
			fs.BoolVar(&force, "force", false, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments: %v (the session is given with --session)", args)
			}
			switch {
			case session == "" && !all && source == "":
				return usagef("say what to export: --session SESSION, --source SOURCE or --all")
			case session != "" && (all || source != ""):
				return usagef("--session exports one session; it cannot be combined with --all or --source")
			case lineage && session == "":
				return usagef("--lineage needs --session")
			}
			switch format {
			case "jsonl", "json", "md", "markdown":
			default:
				return usagef("--format %q: want jsonl, json or md", format)
			}

			var out *atomicFile
			var err error
			if output != "-" {
				// Refuse an existing file before doing any work.
				if out, err = createAtomic(output, force); err != nil {
					return err
				}
				defer out.abort()
			}

			var db sessiondb.Store
			sel := sessiondb.ExportSelection{Lineage: lineage, Source: source}
			if session != "" {
				db, sel.SessionID, err = e.openSessionRead(ctx, session)
			} else {
				db, err = e.openRead(ctx)
			}
			if err != nil {
				return err
			}
			defer db.Close()
			xp, ok := db.(sessiondb.Exporter)
			if !ok {
				return e.lacks("streamed exports")
			}

			var w io.Writer = e.stdout
			if out != nil {
				w = out.f
			}
			enc, err := export.NewEncoder(format, w, export.Options{Redact: redact})
			if err != nil {
				return err
			}
			bar := newProgress(e.stderr, "exporting")
			defer bar.done()
			if out == nil && isTerminal(e.stdout) {
				bar.on = false // the export itself scrolls past on the terminal
			}
			var done, total int64
			if session == "" && bar.on {
				// Sessions are what ExportSessions reports; the count is
				// the rows it pages through (every session, or a source's).
				o := sessiondb.ListOptions{Limit: 1, IncludeArchived: true, IncludeHidden: true, IncludeChildren: true, RawChains: true}
				if source != "" {
					o.Sources = []string{source}
				}
				_, n, err := db.ListSessions(ctx, o)
				if err != nil {
					return err
				}
				total = int64(n)
			}
			err = xp.ExportSessions(ctx, sel, func(x *sessiondb.ExportedSession) error {
				it := export.ItemOf(x)
				if err := enc.Encode(&it); err != nil {
					return err
				}
				if done++; total > 0 {
					bar.update(done, max(total, done))
				}
				return nil
			})
			bar.done()
			if err != nil {
				return err
			}
			if err := enc.Close(); err != nil {
				return fmt.Errorf("write export: %w", err)
			}
			if out != nil {
				return out.commit()
			}
			return nil
		},
	}
}

// atomicFile is an output file written under a temporary name in the
// destination's directory and moved into place by commit, so PATH is
// either absent, its old self, or the complete new file.
type atomicFile struct {
	f     *os.File
	path  string
	force bool
	done  bool
}

// createAtomic starts writing path. Without force an existing path is an
// ECONFLICT error.
func createAtomic(path string, force bool) (*atomicFile, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.IsDir() {
			return nil, usagef("--output %s is a directory", path)
		}
		if !force {
			return nil, sessiondb.Errorf(sessiondb.ECONFLICT, "%s already exists; pass --force to overwrite it", path)
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "cannot write to %s: %v", dir, err)
	}
	return &atomicFile{f: f, path: path, force: force}, nil
}

// commit syncs the file and moves it into place. Without force it never
// replaces a file that appeared meanwhile: the temporary file is linked
// to path, which fails if path exists.
func (a *atomicFile) commit() error {
	tmp := a.f.Name()
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	a.done = true
	if a.force {
		if err := os.Rename(tmp, a.path); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("write %s: %w", a.path, err)
		}
		return nil
	}
	err := os.Link(tmp, a.path)
	if err == nil {
		os.Remove(tmp)
		return nil
	}
	if errors.Is(err, os.ErrExist) {
		os.Remove(tmp)
		return sessiondb.Errorf(sessiondb.ECONFLICT, "%s appeared while exporting; pass --force to overwrite it", a.path)
	}
	// The filesystem has no hard links: fall back to a rename after checking
	// once more.
	if _, serr := os.Lstat(a.path); serr == nil {
		os.Remove(tmp)
		return sessiondb.Errorf(sessiondb.ECONFLICT, "%s appeared while exporting; pass --force to overwrite it", a.path)
	}
	if err := os.Rename(tmp, a.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// abort removes the temporary file unless commit ran.
func (a *atomicFile) abort() {
	if a.done {
		return
	}
	a.f.Close()
	os.Remove(a.f.Name())
}
