// Command sessiondb creates, appends to, inspects and maintains a
// Hermes-compatible session database (state.db).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// Exit statuses.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotFound = 3
	exitBusy     = 4
	exitCorrupt  = 5
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what every command runs with: the streams and the global options.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	dbPath         string
	color          colorMode // --color: auto (the default), always or never
	noPager        bool      // --no-pager
}

// command is one subcommand: its flags are registered by flags, and run
// executes it with the positional arguments.
type command struct {
	name, synopsis, usage string
	flags                 func(fs *flag.FlagSet)
	run                   func(ctx context.Context, e *env, args []string) error
}

var commands = map[string]func() *command{
	"init":   newInitCommand,
	"info":   newInfoCommand,
	"new":    newNewCommand,
	"append": newAppendCommand,
	"end":    newEndCommand,
	"reopen": newReopenCommand,
	"show":   newShowCommand,
	"search": newSearchCommand,

	"rename":    newRenameCommand,
	"lineage":   newLineageCommand,
	"list":      newListCommand,
	"stats":     newStatsCommand,
	"prune":     newPruneCommand,
	"delete":    newDeleteCommand,
	"archive":   func() *command { return newFlagCommand("archive", true) },
	"unarchive": func() *command { return newFlagCommand("unarchive", false) },
	"pin":       func() *command { return newFlagCommand("pin", true) },
	"unpin":     func() *command { return newFlagCommand("unpin", false) },
	"clear":     newClearCommand,
	"doctor":    newDoctorCommand,
	"export":    newExportCommand,
	"import":    newImportCommand,
	"bench":     newBenchCommand,
	"recover":   newRecoverCommand,
	"browse":    newBrowseCommand,
	"serve":     newServeCommand,
	"sync":      newSyncCommand,

	"optimize-storage": newOptimizeStorageCommand,
	"rebuild-fts":      newRebuildFTSCommand,
	"optimize":         newOptimizeCommand,
}

// completion reads the command table, so it joins it at init.
func init() { commands["completion"] = newCompletionCommand }

// hidden commands work but are not listed in help or completion.
var hidden = map[string]func() *command{
	"__complete": newCompleteCommand,
}

// usageError is an error in the command line itself (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Run runs the command line args and returns the exit status.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	global := flag.NewFlagSet("sessiondb", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	globalFlags(global, e)
	showVersion := global.Bool("version", false, "")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "sessiondb: %v\n", err)
		return exitUsage
	}
	if *showVersion {
		fmt.Fprintln(stdout, "sessiondb "+version())
		return exitOK
	}
	rest := global.Args()
	if len(rest) == 0 || rest[0] == "help" {
		if len(rest) > 1 {
			if mk, ok := commands[rest[1]]; ok {
				fmt.Fprint(stdout, mk().usage)
				return exitOK
			}
		}
		printUsage(stdout)
		if len(rest) == 0 {
			return exitUsage
		}
		return exitOK
	}
	mk, ok := commands[rest[0]]
	if !ok {
		mk, ok = hidden[rest[0]]
	}
	if !ok {
		fmt.Fprintf(stderr, "sessiondb: unknown command %q; run `sessiondb help` for the list\n", rest[0])
		return exitUsage
	}
	cmd := mk()
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	globalFlags(fs, e)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	pos, err := parseInterleaved(fs, rest[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, cmd.usage)
		return exitOK
	}
	if err == nil {
		err = cmd.run(ctx, e, pos)
	}
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) || isFlagError(err) {
		fmt.Fprintf(stderr, "sessiondb %s: %v\n\n%s", cmd.name, err, cmd.usage)
		return exitUsage
	}
	if errors.Is(err, errUnhealthy) {
		return exitError
	}
	fmt.Fprintf(stderr, "sessiondb %s: %v\n", cmd.name, err)
	if errors.Is(err, sqlite.ErrNoDatabase) {
		return exitError // no database at all, not a missing session
	}
	switch sessiondb.ErrorCode(err) {
	case sessiondb.ENOTFOUND:
		return exitNotFound
	case sessiondb.EBUSY:
		return exitBusy
	case sessiondb.ECORRUPT:
		return exitCorrupt
	case sessiondb.EINVALID:
		return exitUsage
	}
	return exitError
}

// globalFlags registers the options every command takes, before its name
// (like --db) or after it.
func globalFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.dbPath, "db", e.dbPath, "")
	fs.Var(&e.color, "color", "")
	fs.BoolVar(&e.noPager, "no-pager", e.noPager, "")
}

// flagError marks errors from flag parsing.
type flagError struct{ error }

func isFlagError(err error) bool { return errors.As(err, new(flagError)) }

// parseInterleaved parses flags that may come before, between or after the
// positional arguments, and returns the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, flagError{err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// version is the module version the binary was built from, with the VCS
// revision when the build recorded one.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " (" + s.Value[:12] + ")"
		}
	}
	return v + ", schema " + fmt.Sprint(sqlite.SchemaVersion)
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `sessiondb manages a Hermes-compatible session database (state.db).

Usage:
  sessiondb [--db PATH] [--color WHEN] [--no-pager] COMMAND [options] [arguments]
  sessiondb --version

The database is --db PATH, else $HERMES_HOME/state.db, else ~/.hermes/state.db.

Options for every command (before or after its name):
  --db PATH      the database file
  --color WHEN   auto (default): colour when stdout is a terminal and NO_COLOR
                 is unset or empty; always; or never. --json never has colour
  --no-pager     print show and search directly instead of through $PAGER

On a terminal, show and search page long output with $PAGER (default
"less -FRX"; an empty PAGER or PAGER=cat prints directly), and long work
draws its progress on stderr. Piped output is plain text, without colour.

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-17s %s\n", n, commands[n]().synopsis)
	}
	fmt.Fprint(w, "\nRun `sessiondb help COMMAND` for a command's options and examples.\n")
}

// path returns the database path the command line names.
func (e *env) path() (string, error) {
	if e.dbPath != "" {
		return e.dbPath, nil
	}
	return sqlite.DefaultPath()
}

// openRead opens the database the command line names for reading only:
// nothing is migrated, chmodded or written, and a missing file is an error
// naming the path and the fixes. Read commands use it.
func (e *env) openRead() (*sqlite.DB, error) {
	path, err := e.path()
	if err != nil {
		return nil, err
	}
	db, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	if err == nil && db.Immutable() {
		fmt.Fprintf(e.stderr, "sessiondb: note: %s was read as an immutable snapshot: it is in WAL mode and this user cannot create or write its -shm; no other process had it open\n", db.Path())
	}
	return db, err
}

// openWrite opens the database the command line names for writing,
// upgrading an older schema. Only with create (init, new, append, import,
// bench) is a missing file created; other write commands get the same
// error as read commands.
func (e *env) openWrite(create bool) (*sqlite.DB, error) {
	path, err := e.path()
	if err != nil {
		return nil, err
	}
	limit, err := maxMessageBytes()
	if err != nil {
		return nil, err
	}
	db, err := sqlite.Open(path, sqlite.Options{NoCreate: !create, MaxMessageBytes: limit})
	if err == nil && db.Quarantined() != "" {
		fmt.Fprintf(e.stderr, "sessiondb: %s was not a SQLite database; it was moved to %s and a fresh database created. Inspect it with `sessiondb recover --source %s --output NEW.db`\n",
			path, db.Quarantined(), db.Quarantined())
	}
	return db, err
}

// resolve turns a session argument into an id: an exact id, else a unique
// id prefix, else a title (the latest "title #N" of a numbered lineage).
func resolve(ctx context.Context, db *sqlite.DB, arg string) (string, error) {
	id, err := db.ResolveSessionID(ctx, arg)
	if err == nil {
		return id, nil
	}
	if code := sessiondb.ErrorCode(err); code != sessiondb.ENOTFOUND && code != sessiondb.EINVALID {
		return "", err
	}
	if tid, terr := db.ResolveTitle(ctx, arg); terr == nil {
		return tid, nil
	}
	if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND {
		return "", sessiondb.Errorf(sessiondb.ENOTFOUND, "no session with id, id prefix or title %q; `sessiondb list` shows them", arg)
	}
	return "", err
}

// openSessionRead opens the database read-only (openRead) and resolves the
// session argument; the caller closes the database.
func (e *env) openSessionRead(ctx context.Context, arg string) (*sqlite.DB, string, error) {
	return withSession(ctx, arg)(e.openRead())
}

// openSessionWrite opens the database for writing (openWrite) and
// resolves the session argument; the caller closes the database.
func (e *env) openSessionWrite(ctx context.Context, arg string, create bool) (*sqlite.DB, string, error) {
	return withSession(ctx, arg)(e.openWrite(create))
}

func withSession(ctx context.Context, arg string) func(*sqlite.DB, error) (*sqlite.DB, string, error) {
	return func(db *sqlite.DB, err error) (*sqlite.DB, string, error) {
		if err != nil {
			return nil, "", err
		}
		id, err := resolve(ctx, db, arg)
		if err != nil {
			db.Close()
			return nil, "", err
		}
		return db, id, nil
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// oneArg checks that exactly one positional argument, named what, was given.
func oneArg(args []string, what string) (string, error) {
	switch len(args) {
	case 0:
		return "", usagef("missing %s", what)
	case 1:
		return args[0], nil
	}
	return "", usagef("unexpected arguments: %s", strings.Join(args[1:], " "))
}
