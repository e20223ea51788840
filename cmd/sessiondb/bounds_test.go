package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

func deepJSON(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// wantExit runs the command line and checks its exit status and that
// stderr says each of words.
func wantExit(t *testing.T, db, stdin string, code int, words []string, args ...string) string {
	t.Helper()
	out, errOut, got := cli(t, db, stdin, args...)
	if got != code {
		t.Fatalf("sessiondb %.80s: exit %d, want %d; stderr: %s", strings.Join(args, " "), got, code, errOut)
	}
	for _, w := range words {
		if !strings.Contains(errOut, w) {
			t.Errorf("sessiondb %.80s: stderr %q does not say %q", strings.Join(args, " "), errOut, w)
		}
	}
	return out
}

func TestAppendRefusesDeepToolCalls(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	mustCLI(t, db, "new", "--id", "s1", "--source", "cli")
	wantExit(t, db, "", exitUsage, []string{"tool_calls", "10000 levels", "at most 256"},
		"append", "s1", "--role", "assistant", "--tool-calls", deepJSON(10000))
	wantExit(t, db, "", exitUsage, []string{"tool_calls", "257 levels"},
		"append", "s1", "--role", "assistant", "--tool-calls", deepJSON(257))
	line, _ := json.Marshal(map[string]any{"session_id": "s1", "role": "assistant", "reasoning_details": json.RawMessage(deepJSON(300))})
	wantExit(t, db, string(line)+"\n", exitUsage, []string{"reasoning_details", "300 levels"}, "append", "--jsonl", "-")
	mustCLI(t, db, "append", "s1", "--role", "assistant", "--tool-calls", deepJSON(256))
	if got := strings.Count(mustCLI(t, db, "show", "s1"), "tool calls: "); got != 1 {
		t.Fatalf("%d messages with tool calls stored, want 1", got)
	}
}

// TestReadsSurviveDeepStoredValues: a tool call of 10,000 nested brackets
// (and other deep values) written by another program with raw SQL: show,
// show --json, show --conversation, search and every export format
// succeed, showing the raw text, and the JSON Lines export imports into a
// new database with the values as they were.
func TestReadsSurviveDeepStoredValues(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	mustCLI(t, db, "new", "--id", "s1", "--source", "cli")
	mustCLI(t, db, "append", "s1", "--role", "user", "--content", "deploy with docker")
	deep := deepJSON(10000)
	raw, err := sql.Open("sqlite3", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO messages (session_id, role, content, tool_calls, reasoning_details, timestamp, active)
		VALUES ('s1', 'assistant', ?, ?, ?, 1777593700, 1)`, sessiondb.ContentJSONPrefix+deep, deep, deep); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + 1`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	mustCLI(t, db, "append", "s1", "--role", "user", "--content", "thanks")

	var shown struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, db, "show", "s1", "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if len(shown.Messages) != 3 || shown.Messages[1]["tool_calls"] != deep || shown.Messages[1]["reasoning_details"] != deep {
		t.Fatalf("show --json: %d messages, want 3 with the raw text of the deep values", len(shown.Messages))
	}
	var conv []map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, db, "show", "s1", "--conversation")), &conv); err != nil {
		t.Fatal(err)
	}
	if len(conv) != 3 || conv[1]["tool_calls"] != deep || conv[1]["content"] != sessiondb.ContentJSONPrefix+deep {
		t.Fatalf("show --conversation: %d messages, want 3 with the raw text of the deep values", len(conv))
	}
	if out := mustCLI(t, db, "show", "s1"); !strings.Contains(out, "thanks") {
		t.Fatalf("show: %.200s", out)
	}
	if out := mustCLI(t, db, "search", "docker", "--json"); !strings.Contains(out, `"content": "deploy with docker"`) {
		t.Fatalf("search: %.300s", out)
	}
	for _, format := range []string{"json", "jsonl", "md"} {
		out := filepath.Join(dir, "export."+format)
		mustCLI(t, db, "export", "--session", "s1", "--format", format, "--output", out)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("thanks")) || !bytes.Contains(b, []byte(strings.Repeat("[", 1000))) {
			t.Errorf("export --format %s lacks the messages or the raw text", format)
		}
	}

	back := filepath.Join(dir, "back.db")
	mustCLI(t, back, "import", filepath.Join(dir, "export.jsonl"))
	mustCLI(t, back, "export", "--session", "s1", "--output", filepath.Join(dir, "again.jsonl"))
	var first, again map[string]any
	for name, v := range map[string]*map[string]any{"export.jsonl": &first, "again.jsonl": &again} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range first {
		if got, _ := json.Marshal(again[k]); string(got) != mustJSON(t, v) {
			t.Errorf("export → import → export: %s = %.80s, was %.80s", k, got, mustJSON(t, v))
		}
	}
}

func TestAppendContentFileLimit(t *testing.T) {
	t.Setenv(sqlite.MaxMessageSizeEnv, "1KiB")
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	mustCLI(t, db, "new", "--id", "s1", "--source", "cli")
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 1025), 0o600); err != nil {
		t.Fatal(err)
	}
	words := []string{"more than 1 KiB", sqlite.MaxMessageSizeEnv, "nothing was appended"}
	wantExit(t, db, "", exitUsage, append(words, big), "append", "s1", "--role", "tool", "--content-file", big)
	wantExit(t, db, strings.Repeat("y", 5000), exitUsage, append(words, "standard input"), "append", "s1", "--role", "tool", "--content-file", "-")
	if _, err := os.Stat("/dev/zero"); err == nil {
		wantExit(t, db, "", exitUsage, words, "append", "s1", "--role", "tool", "--content-file", "/dev/zero")
	}
	// Content within the limit, with the other fields over it.
	wantExit(t, db, strings.Repeat("z", 1000), exitUsage, []string{"over the limit of 1 KiB"},
		"append", "s1", "--role", "tool", "--content-file", "-", "--tool-name", strings.Repeat("n", 100))
	wantExit(t, db, "", exitUsage, []string{"over the limit of 1 KiB"}, "append", "s1", "--role", "user", "--content", strings.Repeat("c", 2000))
	mustCLI(t, db, "append", "s1", "--role", "tool", "--content-file", "-")
	if got := strings.TrimSpace(mustCLI(t, db, "info", "--json")); !strings.Contains(got, `"messages": 1`) {
		t.Fatalf("info: %s", got)
	}

	t.Setenv(sqlite.MaxMessageSizeEnv, "unlimited")
	mustCLI(t, db, "append", "s1", "--role", "tool", "--content-file", big)
	t.Setenv(sqlite.MaxMessageSizeEnv, "lots")
	wantExit(t, db, "", exitUsage, []string{sqlite.MaxMessageSizeEnv, "128MiB"}, "append", "s1", "--role", "user", "--content", "hi")
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "64MiB": 64 << 20, "64 mb": 64 << 20, "500K": 500 << 10, "2G": 2 << 30, "7b": 7} {
		if got, ok := parseSize(in); !ok || got != want {
			t.Errorf("parseSize(%q) = %d, %v, want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "M", "1.5M", "-3", "12TB", "x1"} {
		if _, ok := parseSize(in); ok {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func TestSearchBounds(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	mustCLI(t, db, "new", "--id", "s1", "--source", "cli")
	mustCLI(t, db, "append", "s1", "--role", "user", "--content", "deploy with docker")
	wantExit(t, db, "", exitError, []string{"took longer than", "narrow the query", "--timeout"}, "search", "docker", "--timeout", "1ns")
	if out := mustCLI(t, db, "search", "docker", "--timeout", "0"); !strings.Contains(out, "docker") {
		t.Fatalf("search --timeout 0: %s", out)
	}
	if out := mustCLI(t, db, "search", strings.Repeat("dock* OR ", 300)+"dock*"); !strings.Contains(out, "docker") {
		t.Fatalf("search with repeats: %s", out)
	}
	many := make([]string, 40)
	for i := range many {
		many[i] = "w" + strings.Repeat("x", i)
	}
	wantExit(t, db, "", exitUsage, []string{"too complex", "40 terms", "Narrow it"}, "search", strings.Join(many, " OR "))
	wantExit(t, db, "", exitUsage, []string{"--timeout"}, "search", "docker", "--timeout", "-1s")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestShowJSONStreamsAsEncoded: show --json and --conversation write a
// message at a time, long texts escaped as they go, exactly what encoding
// the whole value at once writes.
func TestShowJSONStreamsAsEncoded(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	mustCLI(t, db, "new", "--id", "empty", "--source", "cli")
	mustCLI(t, db, "new", "--id", "s1", "--source", "cli")
	long := strings.Repeat("<tool> \"output\" é 项 🚀\u2028\n", 10000)
	mustCLI(t, db, "append", "s1", "--role", "user", "--content", "hi <b>")
	mustCLI(t, db, "append", "s1", "--role", "tool", "--content", long, "--tool-name", "shell")
	mustCLI(t, db, "append", "s1", "--role", "assistant", "--content", long, "--reasoning", long)
	ctx := context.Background()
	store, err := sqlite.Open(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, id := range []string{"empty", "s1"} {
		s, err := store.Session(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := store.Messages(ctx, id, sessiondb.MessageFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if msgs == nil {
			msgs = []*sessiondb.Message{}
		}
		conv, err := store.Conversation(ctx, id, sessiondb.ConversationOptions{IncludeAncestors: true})
		if err != nil {
			t.Fatal(err)
		}
		for args, v := range map[string]any{"--json": map[string]any{"session": s, "messages": msgs}, "--conversation": conv} {
			var want bytes.Buffer
			if err := writeJSON(&want, v); err != nil {
				t.Fatal(err)
			}
			if got := mustCLI(t, db, "show", id, args); got != want.String() {
				t.Errorf("show %s %s differs from the value encoded whole (%d bytes, want %d)", id, args, len(got), want.Len())
			}
		}
	}
}
