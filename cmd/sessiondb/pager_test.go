package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb/internal/testenv"
)

func TestPagerCommand(t *testing.T) {
	for _, tt := range []struct {
		name         string
		noPager, tty bool
		height, rows int
		pagerEnv     string
		set          bool
		want         string
	}{
		{name: "tall output on a terminal, PAGER unset", tty: true, height: 24, rows: 100, want: defaultPager},
		{name: "PAGER set", tty: true, height: 24, rows: 100, pagerEnv: "most -s", set: true, want: "most -s"},
		{name: "PAGER with spaces around", tty: true, height: 24, rows: 100, pagerEnv: "  less  ", set: true, want: "less"},
		{name: "output one row short of the screen fits", tty: true, height: 24, rows: 23},
		{name: "output as tall as the screen leaves no row for the prompt", tty: true, height: 24, rows: 24, want: defaultPager},
		{name: "--no-pager", noPager: true, tty: true, height: 24, rows: 100},
		{name: "not a terminal", height: 24, rows: 100},
		{name: "height unknown", tty: true, rows: 100},
		{name: "PAGER empty", tty: true, height: 24, rows: 100, set: true},
		{name: "PAGER=cat", tty: true, height: 24, rows: 100, pagerEnv: "cat", set: true},
	} {
		if got := pagerCommand(tt.noPager, tt.tty, tt.height, tt.rows, tt.pagerEnv, tt.set); got != tt.want {
			t.Errorf("%s: pagerCommand = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestScreenRows(t *testing.T) {
	for _, tt := range []struct {
		text string
		cols int
		want int
	}{
		{"", 80, 0},
		{"one\ntwo\n", 80, 2},
		{"no newline at the end", 80, 1},
		{"\n\n\n", 80, 3},
		{strings.Repeat("x", 80) + "\n", 80, 1},
		{strings.Repeat("x", 81) + "\n", 80, 2},
		{strings.Repeat("项", 40) + "\n", 80, 1}, // 80 cells
		{strings.Repeat("项", 41) + "\n", 80, 2},
		{"\x1b[1;31m" + strings.Repeat("x", 80) + "\x1b[m\n", 80, 1}, // escapes take no room
		{strings.Repeat("x", 500) + "\n", 0, 1},                      // width unknown: a line is a row
	} {
		if got := screenRows(tt.text, tt.cols); got != tt.want {
			t.Errorf("screenRows(%.30q…, %d) = %d, want %d", tt.text, tt.cols, got, tt.want)
		}
	}
}

// TestRunPager runs real pagers: the text reaches a pager run directly and
// one run by the shell; a pager that cannot start is an error, so that page
// prints directly.
func TestRunPager(t *testing.T) {
	dir := t.TempDir()
	text := "line one\n\x1b[1;31mcoloured\x1b[m\n项目\n"
	out, err := os.Create(filepath.Join(dir, "screen"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	direct := filepath.Join(dir, "direct")
	shell := filepath.Join(dir, "shell")
	for _, tt := range []struct{ cmdline, file string }{
		{"tee " + direct, direct},                          // no shell syntax: run directly
		{"cat > " + shellQuote(shell) + " && true", shell}, // shell syntax: sh -c
	} {
		if err := runPager(tt.cmdline, text, out, &bytes.Buffer{}); err != nil {
			t.Fatalf("runPager(%q): %v", tt.cmdline, err)
		}
		if got, _ := os.ReadFile(tt.file); string(got) != text {
			t.Errorf("runPager(%q): the pager read %q, want %q", tt.cmdline, got, text)
		}
	}
	if err := runPager(filepath.Join(dir, "no-such-pager"), text, out, &bytes.Buffer{}); err == nil {
		t.Error("a pager that does not exist ran")
	}
	if err := runPager("no-such-pager-sessiondb --opt=\"$HOME\"", text, out, &bytes.Buffer{}); !errors.Is(err, errPagerMissing) {
		t.Errorf("a pager the shell cannot find: %v, want errPagerMissing", err)
	}
	// A pager that quits without reading everything is no error.
	if err := runPager("true", strings.Repeat("x\n", 1<<20), out, &bytes.Buffer{}); err != nil {
		t.Errorf("a pager that quit early: %v", err)
	}
}

// TestNoPagerWhenPiped checks that show and search print directly to a
// stdout that is not a terminal, whatever PAGER says.
func TestNoPagerWhenPiped(t *testing.T) {
	db := widthGoldenDB(t)
	marker := filepath.Join(t.TempDir(), "paged")
	t.Setenv("PAGER", "touch "+marker)
	for _, args := range [][]string{{"search", "docker"}, {"show", wideKorean}} {
		if out := mustCLI(t, db, args...); !strings.Contains(out, "20260201_090000_kor001") {
			t.Errorf("%v printed:\n%s", args, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%v ran the pager with a stdout that is not a terminal", args)
		}
	}
}

// TestTerminalInTmux runs the program on a real terminal (a tmux pane of
// 80x20): tall search output goes through PAGER in colour; NO_COLOR keeps
// the markers and drops the colour; short output, --no-pager and a pipe
// print directly, and the pipe gets no escapes; a maintenance command
// draws its progress on the terminal and nothing into a file. The program
// is Run itself, by way of TestBrowseHelperProcess.
func TestTerminalInTmux(t *testing.T) {
	tmux := testenv.Program(t, "tmux", "to run sessiondb on a terminal")
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	for i := range 12 {
		id := fmt.Sprintf("20260301_0900%02d_aaaaaa", i)
		mustCLI(t, db, "new", "--id", id, "--source", "cli")
		mustCLI(t, db, "append", id, "--role", "user", "--content", "deploy with docker compose")
	}
	short := "20260301_090000_aaaaaa"
	f := func(name string) string { return filepath.Join(dir, name) }
	sessiondb := strings.Join([]string{"env", "SESSIONDB_BROWSE_HELPER=1", shellQuote(bin),
		"-test.run=^TestBrowseHelperProcess$", "--", "--db", shellQuote(db)}, " ")
	pager := func(file string) string { return "PAGER=" + shellQuote("cat > "+shellQuote(f(file))) }
	script := strings.Join([]string{
		"read go",
		"unset NO_COLOR",
		pager("tall") + " " + sessiondb + " search docker",
		pager("nocolor") + " NO_COLOR=1 " + sessiondb + " search docker",
		pager("short") + " " + sessiondb + " show " + short,
		pager("nopager") + " " + sessiondb + " --no-pager search docker",
		pager("piped") + " " + sessiondb + " search docker | cat > " + shellQuote(f("pipe")),
		sessiondb + " rebuild-fts",
		sessiondb + " rebuild-fts 2> " + shellQuote(f("stderr")),
		"echo $? > " + shellQuote(f("exited")),
		"sleep 60",
	}, "; ")
	sock := f("tmux.sock")
	conf := f("tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g status off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-S", sock, "-f", conf}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := tm("new-session", "-d", "-x", "80", "-y", "20", "-s", "pager", "sh -c "+shellQuote(script)); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { tm("kill-server") })
	if out, err := tm("pipe-pane", "-t", "pager", "-o", "cat > "+shellQuote(f("terminal"))); err != nil {
		t.Fatalf("tmux pipe-pane: %v: %s", err, out)
	}
	if out, err := tm("send-keys", "-t", "pager", "Enter"); err != nil {
		t.Fatalf("tmux send-keys: %v: %s", err, out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(f("exited"))
		if strings.TrimSpace(string(b)) != "" {
			break
		}
		if time.Now().After(deadline) {
			pane, _ := tm("capture-pane", "-p", "-t", "pager")
			t.Fatalf("the commands did not finish:\n%s", pane)
		}
		time.Sleep(50 * time.Millisecond)
	}
	read := func(name string) (string, bool) {
		b, err := os.ReadFile(f(name))
		return string(b), err == nil
	}
	if tall, ok := read("tall"); !ok || !strings.Contains(tall, "\x1b[1;31mdocker\x1b[m") || strings.Contains(tall, markOpen) {
		t.Errorf("tall search output on a terminal: paged %v, %q", ok, tall)
	}
	if nocolor, ok := read("nocolor"); !ok || !strings.Contains(nocolor, ">>>docker<<<") || strings.Contains(nocolor, "\x1b") {
		t.Errorf("with NO_COLOR: paged %v, %q", ok, nocolor)
	}
	for _, name := range []string{"short", "nopager", "piped"} {
		if _, ok := read(name); ok {
			t.Errorf("%s: the pager ran", name)
		}
	}
	if pipe, _ := read("pipe"); !strings.Contains(pipe, ">>>docker<<<") || strings.Contains(pipe, "\x1b") {
		t.Errorf("search | cat: %q", pipe)
	}
	if os.Getenv("SESSIONDB_SHOW_TERMINAL") != "" {
		term, _ := read("terminal")
		t.Logf("%q", term)
	}
	if term, _ := read("terminal"); !strings.Contains(term, "rebuilding indexes") {
		t.Errorf("rebuild-fts drew no progress on the terminal:\n%q", term)
	}
	if stderr, ok := read("stderr"); !ok || stderr != "" {
		t.Errorf("rebuild-fts 2> file: progress went to a file: %q", stderr)
	}
	if status, _ := read("exited"); strings.TrimSpace(status) != "0" {
		t.Errorf("the last command exited with %s", status)
	}
}
