package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testenv"
)

// TestCompletionScripts checks each script's syntax with its own shell
// (bash -n, zsh -n, fish -n; CI installs all three).
func TestCompletionScripts(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			script := mustCLI(t, db, "completion", shell)
			for _, want := range []string{"search", "prune", "older-than", "__complete sessions"} {
				if !strings.Contains(script, want) {
					t.Errorf("%s script lacks %q", shell, want)
				}
			}
			bin := testenv.Program(t, shell, "to check the syntax of its completion script")
			path := filepath.Join(t.TempDir(), "completion."+shell)
			os.WriteFile(path, []byte(script), 0o600)
			if out, err := exec.Command(bin, "-n", path).CombinedOutput(); err != nil {
				t.Fatalf("%s -n: %v\n%s", shell, err, out)
			}
		})
	}
	if _, _, code := cli(t, db, "", "completion", "tcsh"); code != exitUsage {
		t.Errorf("unknown shell: exit %d", code)
	}
}

// TestBashCompletionCompletes runs the bash function the way bash would on
// Tab and checks what it offers.
func TestBashCompletionCompletes(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	script := mustCLI(t, db, "completion", "bash")
	path := filepath.Join(t.TempDir(), "c.bash")
	os.WriteFile(path, []byte(script), 0o600)
	for _, tt := range []struct{ line, want string }{
		{"sessiondb sea", "search"},
		{"sessiondb prune --old", "--older-than"},
		{"sessiondb --db x.db lis", "list"},
	} {
		words := strings.Fields(tt.line)
		cmd := `source ` + path + `; COMP_WORDS=(` + strings.Join(words, " ") + `); COMP_CWORD=` +
			strconv.Itoa(len(words)-1) + `; _sessiondb; printf '%s\n' "${COMPREPLY[@]}"`
		out, err := exec.Command("bash", "-c", cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", tt.line, err, out)
		}
		if !strings.Contains(string(out), tt.want) {
			t.Errorf("%q completes to %q, want %q", tt.line, out, tt.want)
		}
	}
}

func TestVersion(t *testing.T) {
	out := mustCLI(t, filepath.Join(t.TempDir(), "x.db"), "--version")
	if !strings.HasPrefix(out, "sessiondb ") || !strings.Contains(out, "schema 30") {
		t.Errorf("--version = %q", out)
	}
}
