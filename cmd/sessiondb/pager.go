package main

// The pager: show and search send their human output through $PAGER, as
// git does, when standard output is a terminal and the output would not fit
// on it. The decision is pagerCommand, a pure function; page gathers its
// inputs and runs the pager.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"
)

// defaultPager is used when PAGER is not set: -F quits at once when the
// output fits after all, -R shows colours, -X leaves the text on the screen.
const defaultPager = "less -FRX"

// pagerCommand returns the pager command line for output of rows screen
// rows, or "" to print directly: never with --no-pager or when standard
// output is not a terminal, nor when the output fits on a terminal of
// height rows with a row to spare for the prompt (or the height is
// unknown). pagerEnv is $PAGER and set whether it is set at all: unset
// means defaultPager; empty or "cat" means no pager.
func pagerCommand(noPager, tty bool, height, rows int, pagerEnv string, set bool) string {
	if noPager || !tty || height <= 0 || rows < height {
		return ""
	}
	if !set {
		return defaultPager
	}
	if p := strings.TrimSpace(pagerEnv); p != "" && p != "cat" {
		return p
	}
	return ""
}

// screenRows counts the rows text takes on a terminal cols wide: each line
// one row, or more where it wraps. Escape sequences take no room.
func screenRows(text string, cols int) int {
	rows := 0
	for line := range strings.Lines(text) {
		w := width(ansi.Strip(strings.TrimSuffix(line, "\n")))
		if cols <= 0 || w <= cols {
			rows++
		} else {
			rows += (w + cols - 1) / cols
		}
	}
	return rows
}

// page writes text to standard output, through the pager when
// pagerCommand says so. A pager that cannot start (not installed, or a
// shell that cannot find it) leaves the text printed directly.
// mayPage reports whether output could go through the pager: stdout is a
// terminal and --no-pager was not given.
func (e *env) mayPage() bool { return !e.noPager && isTerminal(e.stdout) }

func (e *env) page(text string) error {
	f, tty := e.stdout.(*os.File)
	tty = tty && term.IsTerminal(int(f.Fd()))
	cols, height := 0, 0
	if tty {
		cols, height, _ = term.GetSize(int(f.Fd()))
	}
	pagerEnv, set := os.LookupEnv("PAGER")
	if cmdline := pagerCommand(e.noPager, tty, height, screenRows(text, cols), pagerEnv, set); cmdline != "" {
		err := runPager(cmdline, text, f, e.stderr)
		if err == nil {
			return nil
		}
		if set {
			fmt.Fprintf(e.stderr, "sessiondb: cannot run the pager %q (%v); printing directly. Fix PAGER, or pass --no-pager\n", cmdline, err)
		}
	}
	_, err := io.WriteString(e.stdout, text)
	return err
}

// errPagerMissing is a pager that a shell could not find (exit status 127).
var errPagerMissing = errors.New("command not found")

// runPager runs cmdline with text on its standard input and out as its
// output, and waits for it. A command line with shell syntax (quotes,
// pipes, variables) runs under sh -c; a plain one is run directly, so a
// missing program fails to start. It returns an error only when the pager
// could not run: how a pager that ran exits (the user quit it) is no error.
func runPager(cmdline, text string, out, errOut io.Writer) error {
	var cmd *exec.Cmd
	if strings.ContainsAny(cmdline, "|&;<>()$`\\\"'*?[#~=%{}\n") {
		cmd = exec.Command("sh", "-c", cmdline)
	} else {
		args := strings.Fields(cmdline)
		cmd = exec.Command(args[0], args[1:]...)
	}
	cmd.Stdin = strings.NewReader(text)
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.Env = os.Environ()
	if _, ok := os.LookupEnv("LESS"); !ok {
		cmd.Env = append(cmd.Env, "LESS=FRX") // as git does, for a PAGER=less without options
	}
	if _, ok := os.LookupEnv("LV"); !ok {
		cmd.Env = append(cmd.Env, "LV=-c")
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); errors.As(err, &exit) && exit.ExitCode() == 127 {
		return errPagerMissing
	}
	return nil
}
