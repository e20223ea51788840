package main

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/testenv"
)

func init() { commands["browse"] = newBrowseCommand }

// TestBrowseHelperProcess is the sessiondb command when the tmux test runs
// this test binary inside tmux (so the program tested is Run itself, with
// the race detector when the tests have it); otherwise it does nothing.
func TestBrowseHelperProcess(t *testing.T) {
	if os.Getenv("SESSIONDB_BROWSE_HELPER") != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestBrowseInTmux drives the real program in an 80x24 tmux pane: search,
// open a hit, unfold its details, export it, search in Chinese, quit.
func TestBrowseInTmux(t *testing.T) {
	dir := t.TempDir()
	browseInTmux(t, dir, filepath.Join(dir, "state.db"))
}

// TestBrowseInTmuxPostgres is TestBrowseInTmux on a PostgreSQL database.
func TestBrowseInTmuxPostgres(t *testing.T) {
	browseInTmux(t, t.TempDir(), testenv.Postgres(t))
}

func browseInTmux(t *testing.T, dir, db string) {
	tmux := testenv.Program(t, "tmux", "to drive `sessiondb browse` in a terminal")
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const id = "20260501_100000_aaaaaa"
	mustCLI(t, db, "new", "--id", id, "--source", "cli")
	mustCLI(t, db, "rename", id, "Docker deployment")
	mustCLI(t, db, "append", id, "--role", "user", "--content", "how do I deploy with docker compose?")
	mustCLI(t, db, "append", id, "--role", "assistant", "--content", "Run docker compose up -d in the project directory.",
		"--reasoning", "The user wants compose, not swarm.")
	mustCLI(t, db, "new", "--id", "20260502_100000_bbbbbb", "--source", "telegram")
	mustCLI(t, db, "append", "20260502_100000_bbbbbb", "--role", "user", "--content", "这个项目的计划是什么？")

	sock := filepath.Join(dir, "tmux.sock")
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g status off\nset -g remain-on-exit on\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-S", sock, "-f", conf}, args...)...).CombinedOutput()
		return string(out), err
	}
	race := filepath.Join(dir, "race")
	exited := filepath.Join(dir, "exited")
	line := strings.Join([]string{
		"env", "SESSIONDB_BROWSE_HELPER=1", "NO_COLOR=1", shellQuote("GORACE=log_path=" + race),
		shellQuote(bin), shellQuote("-test.run=^TestBrowseHelperProcess$"), "--",
		"--db", shellQuote(db), "browse", "--export-dir", shellQuote(dir),
		"; echo $? >", shellQuote(exited),
	}, " ")
	if out, err := tm("new-session", "-d", "-x", "80", "-y", "24", "-s", "browse", line); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { tm("kill-server") })

	screen := ""
	waitFor := func(step string, patience time.Duration, subs ...string) {
		t.Helper()
		deadline := time.Now().Add(patience)
		for {
			out, err := tm("capture-pane", "-p", "-t", "browse")
			if err != nil {
				t.Fatalf("%s: tmux capture-pane: %v: %s", step, err, out)
			}
			screen = out
			missing := ""
			for _, s := range subs {
				if !strings.Contains(screen, s) {
					missing = s
					break
				}
			}
			if missing == "" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: after %v the screen lacks %q:\n%s", step, patience, missing, screen)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	send := func(keys ...string) {
		t.Helper()
		if out, err := tm(append([]string{"send-keys", "-t", "browse"}, keys...)...); err != nil {
			t.Fatalf("tmux send-keys %q: %v: %s", keys, err, out)
		}
	}

	waitFor("start", 10*time.Second, "Docker deployment", "2 sessions")
	if lines := strings.Split(strings.TrimRight(screen, "\n"), "\n"); len(lines) < 23 || !strings.Contains(lines[22], "2 sessions") {
		t.Fatalf("the status line is not on line 23 of 24:\n%s", screen)
	}

	send("-l", "/docker")
	waitFor("search", 5*time.Second, "/ docker", "hits in 1 sessions", "deploy with docker compose")

	send("Enter")
	waitFor("open", 5*time.Second, "Docker deployment", "Run docker compose up -d in the project directory.", "▸ reasoning")

	send("t")
	waitFor("details", 5*time.Second, "The user wants compose, not swarm.")

	send("e")
	waitFor("export", 5*time.Second, "exported to", id+".md")
	if b, err := os.ReadFile(filepath.Join(dir, id+".md")); err != nil || !strings.Contains(string(b), "# Docker deployment") {
		t.Fatalf("export: %v\n%s", err, b)
	}

	send("q")
	waitFor("back", 5*time.Second, "/ docker", "hits in 1 sessions")

	send("/", "C-u")
	send("-l", "项目")
	waitFor("CJK search", 5*time.Second, "/ 项目", "这个项目的计划是什么")

	send("Escape")
	waitFor("clear", 5*time.Second, "Sessions", "2 sessions")
	send("q")
	// The exit status comes from the shell that ran the program: tmux can
	// be slow to reap a pane's process.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(exited)
		if status := strings.TrimSpace(string(b)); status != "" {
			if status != "0" {
				t.Fatalf("the program exited with status %s", status)
			}
			break
		}
		if time.Now().After(deadline) {
			pane, _ := tm("capture-pane", "-p", "-t", "browse")
			t.Fatalf("q did not end the program:\n%s", pane)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if reports, _ := filepath.Glob(race + ".*"); len(reports) > 0 {
		b, _ := os.ReadFile(reports[0])
		t.Fatalf("the race detector reported:\n%s", b)
	}
}

func TestBrowseNeedsATerminal(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	_, errOut, code := cli(t, db, "", "browse")
	if code != exitUsage || !strings.Contains(errOut, "browse needs a terminal") {
		t.Fatalf("browse without a terminal: exit %d, %q", code, errOut)
	}
}
