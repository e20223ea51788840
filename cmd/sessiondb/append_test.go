package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sessionContents returns the content of each message of session id.
func sessionContents(t *testing.T, db, id string) []string {
	t.Helper()
	var shown struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, db, "show", id, "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range shown.Messages {
		out = append(out, m.Content)
	}
	return out
}

// Issue 19 finding 5: append --jsonl wrote the lines before the first one
// naming a missing session, so running it again after fixing the file
// appended them twice. Every line is now checked, sessions included,
// before anything is written.
func TestAppendJSONLChecksEveryLineFirst(t *testing.T) {
	for _, tt := range []struct {
		name, line3, says string
		code              int
	}{
		{"missing session", `{"session_id":"ghost","role":"user","content":"three"}`, `session "ghost" not found`, exitNotFound},
		{"session ended by compression", `{"session_id":"done","role":"user","content":"three"}`, `session "done" ended with compression`, exitError},
		{"content the store refuses", `{"session_id":"s2","role":"user","content":"\u0000json:three"}`, "NUL", exitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "state.db")
			for _, id := range []string{"s1", "s2", "done"} {
				mustCLI(t, db, "new", "--source", "cli", "--id", id)
			}
			mustCLI(t, db, "end", "done", "--reason", "compression")
			file := filepath.Join(t.TempDir(), "msgs.jsonl")
			lines := []string{
				`{"session_id":"s1","role":"user","content":"one"}`,
				`{"session_id":"s2","role":"user","content":"two"}`,
				tt.line3,
				`{"session_id":"s1","role":"assistant","content":"four"}`,
			}
			write := func() {
				if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write()
			out, errOut, code := cli(t, db, "", "append", "--jsonl", file)
			if code != tt.code || out != "" {
				t.Errorf("exit %d, stdout %q; want exit %d and nothing printed", code, out, tt.code)
			}
			for _, want := range []string{"line 3", tt.says, "nothing was appended"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q does not say %q", errOut, want)
				}
			}
			for _, id := range []string{"s1", "s2"} {
				if got := sessionContents(t, db, id); len(got) != 0 {
					t.Errorf("session %s holds %q after the failed run, want nothing", id, got)
				}
			}

			lines[2] = `{"session_id":"s2","role":"user","content":"three"}`
			write()
			if out := strings.TrimSpace(mustCLI(t, db, "append", "--jsonl", file)); out != "4" {
				t.Errorf("append --jsonl printed %q, want 4", out)
			}
			for id, want := range map[string][]string{"s1": {"one", "four"}, "s2": {"two", "three"}} {
				if got := sessionContents(t, db, id); strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("session %s holds %q, want %q: each line once, in order", id, got, want)
				}
			}
		})
	}
}
