package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// cli runs the command line against db and returns stdout, stderr and the
// exit status.
func cli(t *testing.T, db, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), append([]string{"--db", db}, args...), strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

func mustCLI(t *testing.T, db string, args ...string) string {
	t.Helper()
	out, errOut, code := cli(t, db, "", args...)
	if code != 0 {
		t.Fatalf("sessiondb %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

func TestInitJSON(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sub", "state.db")
	var got struct {
		Path          string `json:"path"`
		SchemaVersion int    `json:"schema_version"`
		JournalMode   string `json:"journal_mode"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, db, "init", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Path != db || got.SchemaVersion != 30 || got.JournalMode != "wal" {
		t.Fatalf("init --json = %+v", got)
	}
}

func TestSessionWorkflow(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	id := strings.TrimSpace(mustCLI(t, db, "new", "--source", "cli", "--model", "m1", "--id", "20260501_120000_abcdef"))
	if id != "20260501_120000_abcdef" {
		t.Fatalf("new printed %q", id)
	}
	if got := strings.TrimSpace(mustCLI(t, db, "append", "20260501_12", "--role", "user", "--content", "deploy with docker")); got != "1" {
		t.Fatalf("append printed %q, want message id 1", got)
	}
	mustCLI(t, db, "append", id, "--role", "assistant", "--content", "ok", "--tool-calls", `[{"id":"c1"},{"id":"c2"}]`, "--reasoning", "think")
	out, _, code := cli(t, db, "tool output", "append", id, "--role", "tool", "--content-file", "-", "--tool-name", "shell")
	if code != 0 || strings.TrimSpace(out) != "3" {
		t.Fatalf("append --content-file -: %q exit %d", out, code)
	}

	var shown struct {
		Session  map[string]any   `json:"session"`
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, db, "show", id, "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if got, want := shown.Session["message_count"], 3.0; got != want {
		t.Errorf("message_count = %v, want %v", got, want)
	}
	if got, want := shown.Session["tool_call_count"], 2.0; got != want {
		t.Errorf("tool_call_count = %v, want %v", got, want)
	}
	if _, ok := shown.Session["git_metadata_generation"]; !ok {
		t.Error("show --json lacks columns")
	}
	if got, want := len(shown.Messages), 3; got != want {
		t.Fatalf("%d messages, want %d", got, want)
	}
	if got, want := shown.Messages[2]["content"], "tool output"; got != want {
		t.Errorf("content = %v, want %v", got, want)
	}

	human := mustCLI(t, db, "show", id)
	for _, want := range []string{"Session  20260501_120000_abcdef", "deploy with docker", "assistant", "tool (shell)"} {
		if !strings.Contains(human, want) {
			t.Errorf("show output lacks %q:\n%s", want, human)
		}
	}

	var conv []map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, db, "show", id, "--conversation")), &conv); err != nil {
		t.Fatal(err)
	}
	if got, want := conv[1]["reasoning"], "think"; got != want {
		t.Errorf("conversation reasoning = %v, want %v", got, want)
	}
	if _, ok := conv[0]["reasoning"]; ok {
		t.Error("reasoning on a user message")
	}

	mustCLI(t, db, "end", id, "--reason", "user_exit")
	mustCLI(t, db, "end", id, "--reason", "later")
	if err := json.Unmarshal([]byte(mustCLI(t, db, "show", id, "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if got, want := shown.Session["end_reason"], "user_exit"; got != want {
		t.Errorf("end_reason = %v, want %v (first reason wins)", got, want)
	}
	mustCLI(t, db, "reopen", id)
	json.Unmarshal([]byte(mustCLI(t, db, "show", id, "--json")), &shown)
	if shown.Session["ended_at"] != nil {
		t.Errorf("reopen left ended_at = %v", shown.Session["ended_at"])
	}

	var info map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, db, "info", "--json")), &info); err != nil {
		t.Fatal(err)
	}
	if got := info["rows"].(map[string]any)["messages"]; got != 3.0 {
		t.Errorf("info rows.messages = %v", got)
	}
	if got := info["indexes"].(map[string]any)["messages_fts_cjk"]; got != true {
		t.Errorf("cjk index not live: %v", info["indexes"])
	}
}

func TestAppendJSONL(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	mustCLI(t, db, "new", "--source", "cli", "--id", "s1")
	mustCLI(t, db, "new", "--source", "cli", "--id", "s2")
	in := `{"session_id":"s1","role":"user","content":"one"}
{"session_id":"s1","role":"assistant","content":"two","tool_calls":[{"id":"x"}]}

{"session_id":"s2","role":"user","content":[{"type":"text","text":"parts"}]}
`
	out, errOut, code := cli(t, db, in, "append", "--jsonl", "-")
	if code != 0 || strings.TrimSpace(out) != "3" {
		t.Fatalf("append --jsonl: %q %q exit %d", out, errOut, code)
	}

	t.Run("a bad line writes nothing", func(t *testing.T) {
		bad := `{"session_id":"s1","role":"user","content":"fine"}
{"session_id":"s1","role":"user","content":"x","tool_calls":`
		_, errOut, code := cli(t, db, bad, "append", "--jsonl", "-")
		if code != exitUsage || !strings.Contains(errOut, "line 2") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		var shown struct{ Messages []any }
		json.Unmarshal([]byte(mustCLI(t, db, "show", "s1", "--json")), &shown)
		if got, want := len(shown.Messages), 2; got != want {
			t.Fatalf("s1 has %d messages, want %d", got, want)
		}
	})
}

func TestExitCodes(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	mustCLI(t, db, "new", "--source", "cli", "--id", "abc1")
	mustCLI(t, db, "new", "--source", "cli", "--id", "abc2")
	for _, tt := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"unknown command", []string{"frobnicate"}, exitUsage, "unknown command"},
		{"missing argument", []string{"show"}, exitUsage, "missing SESSION"},
		{"unknown flag", []string{"show", "abc1", "--nope"}, exitUsage, "nope"},
		{"unknown session", []string{"show", "zzz"}, exitNotFound, `no session with id, id prefix or title "zzz"`},
		{"ambiguous prefix", []string{"show", "abc"}, exitUsage, "ambiguous"},
		{"missing role", []string{"append", "abc1"}, exitUsage, "--role"},
		{"invalid tool calls", []string{"append", "abc1", "--role", "assistant", "--tool-calls", "[oops"}, exitUsage, "tool_calls"},
		{"new without source", []string{"new"}, exitUsage, "--source"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := cli(t, db, "", tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.err) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tt.code, errOut, tt.err)
			}
			if strings.Count(strings.SplitN(errOut, "\n\n", 2)[0], "\n") > 1 {
				t.Errorf("error is not one line: %q", errOut)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	out := mustCLI(t, db, "help")
	for _, c := range []string{"init", "info", "new", "append", "end", "reopen", "show", "search", "optimize-storage", "rebuild-fts", "optimize"} {
		if !strings.Contains(out, "  "+c) {
			t.Errorf("help lacks %s", c)
		}
		if h := mustCLI(t, db, "help", c); !strings.Contains(h, "Usage: sessiondb") || !strings.Contains(h, "Examples:") {
			t.Errorf("help %s lacks usage or examples", c)
		}
	}
}

func TestSearchCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	mustCLI(t, db, "new", "--source", "cli", "--id", "s1")
	mustCLI(t, db, "new", "--source", "telegram", "--id", "s2")
	mustCLI(t, db, "append", "s1", "--role", "user", "--content", "fix the docker deployment")
	mustCLI(t, db, "append", "s2", "--role", "user", "--content", "项目进度 docker")
	var hits []map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, db, "search", "docker", "--json")), &hits); err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 {
		t.Fatalf("%d hits, want 2", len(hits))
	}
	for _, k := range []string{"id", "session_id", "role", "snippet", "timestamp", "tool_name", "source", "model", "session_started", "context"} {
		if _, ok := hits[0][k]; !ok {
			t.Errorf("hit lacks %q", k)
		}
	}
	json.Unmarshal([]byte(mustCLI(t, db, "search", "docker", "--source", "telegram", "--json")), &hits)
	if len(hits) != 1 || hits[0]["session_id"] != "s2" {
		t.Errorf("--source telegram: %v", hits)
	}
	out := mustCLI(t, db, "search", "项目")
	if !strings.Contains(out, "s2") || !strings.Contains(out, ">>>项目<<<") {
		t.Errorf("human output:\n%s", out)
	}
	if out := mustCLI(t, db, "search", "xylophonezzz"); !strings.Contains(out, "no matches") {
		t.Errorf("no-match output: %q", out)
	}
	if _, errOut, code := cli(t, db, "", "search", "x", "--sort", "sideways"); code != exitUsage || !strings.Contains(errOut, "--sort") {
		t.Errorf("bad --sort: exit %d %q", code, errOut)
	}
}

func TestMaintenanceCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	mustCLI(t, db, "new", "--source", "cli", "--id", "s1")
	mustCLI(t, db, "append", "s1", "--role", "user", "--content", "docker")
	for _, args := range [][]string{{"optimize-storage", "--no-vacuum"}, {"rebuild-fts"}, {"optimize", "--vacuum"}} {
		if out := mustCLI(t, db, args...); !strings.Contains(out, "done") {
			t.Errorf("%v: %q", args, out)
		}
	}
	var hits []any
	json.Unmarshal([]byte(mustCLI(t, db, "search", "docker", "--json")), &hits)
	if len(hits) != 1 {
		t.Errorf("after maintenance: %d hits", len(hits))
	}
}

func TestDoctorFix(t *testing.T) {
	for name, stmt := range map[string]string{
		"stale index":      "INSERT INTO state_meta (key, value) VALUES ('fts_stale', '1')",
		"pending backfill": "INSERT INTO state_meta (key, value) VALUES ('fts_rebuild_high_water', '1000'), ('fts_rebuild_progress', '0')",
	} {
		t.Run(name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "state.db")
			mustCLI(t, db, "new", "--source", "cli", "--id", "s1")
			raw, err := sql.Open("sqlite3", db)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			// A row written by another process while the index has a gap
			// (an open through sessiondb would fill it at once).
			for _, q := range []string{stmt, "INSERT INTO messages (session_id, role, content, timestamp, active) VALUES ('s1', 'user', 'docker gap row', 1777593600, 1)"} {
				if _, err := raw.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			out, _, code := cli(t, db, "", "doctor")
			if name == "stale index" && code != exitError {
				t.Fatalf("doctor on a stale index: exit %d\n%s", code, out)
			}
			if !strings.Contains(out, "fix: sessiondb") {
				t.Fatalf("no fix named:\n%s", out)
			}
			out, errOut, code := cli(t, db, "", "doctor", "--fix")
			if code != 0 || !strings.Contains(out, "healthy") || !strings.Contains(out, "fixed:") {
				t.Fatalf("doctor --fix: exit %d\n%s%s", code, out, errOut)
			}
			var hits []any
			json.Unmarshal([]byte(mustCLI(t, db, "search", "gap", "--json")), &hits)
			if len(hits) != 1 {
				t.Errorf("gap row not searchable after the fix: %d hits", len(hits))
			}
		})
	}
}
