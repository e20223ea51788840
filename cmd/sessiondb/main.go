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
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/postgres"
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
	// exitUnavailable: the database server cannot be reached or refuses
	// the connection (sessiondb.EUNAVAILABLE).
	exitUnavailable = 6
	// exitUnsupported: the command does not work on the backend the
	// database names (a SQLite-only command on PostgreSQL).
	exitUnsupported = 7
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
	dbPath         string        // --db: a SQLite file or a postgres:// URL
	connectTimeout time.Duration // --connect-timeout (PostgreSQL)
	color          colorMode     // --color: auto (the default), always or never
	noPager        bool          // --no-pager
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
	var unsup *unsupportedError
	if errors.As(err, &unsup) {
		fmt.Fprintf(stderr, "sessiondb %s %v\n", cmd.name, err)
		return exitUnsupported
	}
	fmt.Fprintf(stderr, "sessiondb %s: %v\n", cmd.name, err)
	if errors.Is(err, sqlite.ErrNoDatabase) || errors.Is(err, postgres.ErrNoSchema) {
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
	case sessiondb.EUNAVAILABLE:
		return exitUnavailable
	}
	return exitError
}

// globalFlags registers the options every command takes, before its name
// (like --db) or after it.
func globalFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.dbPath, "db", e.dbPath, "")
	fs.DurationVar(&e.connectTimeout, "connect-timeout", e.connectTimeout, "")
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
  sessiondb [--db PATH|URL] [--color WHEN] [--no-pager] COMMAND [options] [arguments]
  sessiondb --version

The database is --db, else $SESSIONDB_DB, else $HERMES_HOME/state.db, else
~/.hermes/state.db. A postgres:// (or postgresql://) URL names a PostgreSQL
database, which every command but the file-level ones (info, optimize,
optimize-storage, rebuild-fts, recover) works on.

Options for every command (before or after its name):
  --db PATH|URL        the database file, or a PostgreSQL URL
  --connect-timeout D  give up connecting to PostgreSQL after D (default 10s)
  --color WHEN         auto (default): colour when stdout is a terminal and
                       NO_COLOR is unset or empty; always; or never. --json
                       never has colour
  --no-pager           print show and search directly instead of through $PAGER

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
