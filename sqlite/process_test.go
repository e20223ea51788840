package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite"
)

// Environment of the re-executed helper process (TestHelperProcessAppend).
const (
	envHelperDB      = "SESSIONDB_HELPER_DB"
	envHelperSession = "SESSIONDB_HELPER_SESSION"
	envHelperN       = "SESSIONDB_HELPER_N"
	envHelperStart   = "SESSIONDB_HELPER_START" // Unix nanoseconds: start appending at this instant
)

// helperContent is the content of the i-th message a helper with pid writes.
func helperContent(pid, i int) string {
	return fmt.Sprintf("proc-%d-msg-%d docker", pid, i)
}

// TestHelperProcessAppend is not a test: TestTwoProcessesAppend runs the
// test binary again with only this function selected and the helper
// environment set, to get a second OS process writing the same file.
func TestHelperProcessAppend(t *testing.T) {
	path := os.Getenv(envHelperDB)
	if path == "" {
		return
	}
	fail := func(format string, args ...any) {
		fmt.Printf("helper pid %d: "+format+"\n", append([]any{os.Getpid()}, args...)...)
		os.Exit(1)
	}
	sid := os.Getenv(envHelperSession)
	n, err := strconv.Atoi(os.Getenv(envHelperN))
	if err != nil || sid == "" {
		fail("bad helper environment: %s=%q %s=%q", envHelperSession, sid, envHelperN, os.Getenv(envHelperN))
	}
	if start, err := strconv.ParseInt(os.Getenv(envHelperStart), 10, 64); err == nil {
		time.Sleep(time.Until(time.Unix(0, start)))
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		fail("open: %v", err)
	}
	pid := os.Getpid()
	for i := 0; i < n; i++ {
		if _, err := db.AppendMessage(context.Background(), sessiondb.NewMessage{
			SessionID: sid, Role: "user", Content: helperContent(pid, i),
		}); err != nil {
			fail("append %d: %v (code %s)", i, err, sessiondb.ErrorCode(err))
		}
	}
	if err := db.Close(); err != nil {
		fail("close: %v", err)
	}
}

func TestTwoProcessesAppend(t *testing.T) {
	const perProcess = 1000
	path := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, path)
	sessions := []string{"proc-session-a", "proc-session-b"}
	for _, id := range sessions {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}

	runCtx, cancel := context.WithTimeout(ctx, 50*time.Second)
	defer cancel()
	start := time.Now().Add(300 * time.Millisecond).UnixNano()
	type child struct {
		cmd *exec.Cmd
		out bytes.Buffer
		sid string
	}
	children := make([]*child, len(sessions))
	for i, sid := range sessions {
		c := &child{sid: sid}
		c.cmd = exec.CommandContext(runCtx, os.Args[0], "-test.run=^TestHelperProcessAppend$", "-test.count=1")
		c.cmd.Env = append(os.Environ(),
			envHelperDB+"="+path,
			envHelperSession+"="+sid,
			envHelperN+"="+strconv.Itoa(perProcess),
			envHelperStart+"="+strconv.FormatInt(start, 10),
		)
		c.cmd.Stdout = &c.out
		c.cmd.Stderr = &c.out
		if err := c.cmd.Start(); err != nil {
			t.Fatalf("start helper: %v", err)
		}
		children[i] = c
	}
	failed := false
	for _, c := range children {
		if err := c.cmd.Wait(); err != nil {
			failed = true
			t.Errorf("helper pid %d (session %s) failed: %v\n%s", c.cmd.Process.Pid, c.sid, err, c.out.String())
		}
	}
	if failed {
		t.FailNow()
	}

	raw := rawDB(t, path)
	if got, want := count(t, raw, "SELECT COUNT(*) FROM messages"), 2*perProcess; got != want {
		t.Errorf("messages = %d, want %d", got, want)
	}
	for _, c := range children {
		pid := c.cmd.Process.Pid
		rows := count(t, raw, "SELECT COUNT(*) FROM messages WHERE session_id = ?", c.sid)
		mc := count(t, raw, "SELECT message_count FROM sessions WHERE id = ?", c.sid)
		if rows != perProcess || mc != perProcess {
			t.Errorf("session %s: %d rows, message_count %d, want %d and %d", c.sid, rows, mc, perProcess, perProcess)
		}
		// Every content of this child exactly once, in the order it wrote them.
		rs, err := raw.Query("SELECT content FROM messages WHERE session_id = ? ORDER BY id", c.sid)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rs.Next() {
			var s string
			if err := rs.Scan(&s); err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		rs.Close()
		seen := map[string]int{}
		for _, s := range got {
			seen[s]++
		}
		for i := 0; i < perProcess; i++ {
			if n := seen[helperContent(pid, i)]; n != 1 {
				t.Errorf("session %s: %q present %d times, want 1", c.sid, helperContent(pid, i), n)
			}
		}
		for i, s := range got {
			if i < perProcess && s != helperContent(pid, i) {
				t.Errorf("session %s: row %d in id order is %q, want %q", c.sid, i, s, helperContent(pid, i))
				break
			}
		}
	}
	// How much the two writers interleaved (informational: timing dependent).
	rs, err := raw.Query("SELECT session_id FROM messages ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	switches, prev := 0, ""
	for rs.Next() {
		var s string
		rs.Scan(&s)
		if prev != "" && s != prev {
			switches++
		}
		prev = s
	}
	rs.Close()
	t.Logf("writers alternated %d times in id order", switches)

	checkIntegrity(t, raw)
	if got, want := count(t, raw, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'docker'"), 2*perProcess; got != want {
		t.Errorf("messages_fts MATCH 'docker' = %d, want %d", got, want)
	}
}

// pythonScript plays a Hermes process whose SQLite (3.40 here) lacks the
// cjk_unicode61 tokenizer: it reads every object of our schema, follows
// Hermes' tokenizer-less protocol (fts_cjk_stale + drop the CJK triggers)
// and appends one message the way Hermes does. It prints one JSON object.
const pythonScript = `
import json, sqlite3, sys, time
path, sid = sys.argv[1], sys.argv[2]
out = {"sqlite_version": sqlite3.sqlite_version}
con = sqlite3.connect(path, isolation_level=None, timeout=10)
q = lambda s, *a: con.execute(s, a).fetchone()[0]
out["integrity"] = q("PRAGMA integrity_check")
out["messages_before"] = q("SELECT count(*) FROM messages")
objs = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
out["objects"] = [[t, n] for t, n, _, _ in objs]
errors = {}
for t, n, _, s in objs:
    if t in ("table", "view") and n != "messages_fts_cjk":
        try:
            con.execute('SELECT * FROM "%s" LIMIT 1' % n.replace('"', '""')).fetchall()
        except Exception as e:
            errors[n] = str(e)
out["read_errors"] = errors

# The premise of the protocol: without the tokenizer, an insert fails.
con.execute("SAVEPOINT probe")
try:
    con.execute("INSERT INTO messages (session_id, role, content, timestamp, active) VALUES (?, 'user', 'x', 1, 1)", (sid,))
    out["insert_with_cjk_triggers"] = "ok"
except Exception as e:
    out["insert_with_cjk_triggers"] = str(e)
con.execute("ROLLBACK TO probe")
con.execute("RELEASE probe")

con.execute("BEGIN IMMEDIATE")
con.execute("INSERT INTO state_meta(key,value) VALUES('fts_cjk_stale','1') ON CONFLICT(key) DO UPDATE SET value=excluded.value")
for s in ("insert", "delete", "update"):
    con.execute("DROP TRIGGER IF EXISTS messages_fts_cjk_" + s)
con.execute("COMMIT")

# Compile and run every remaining messages trigger once, then undo.
con.execute("SAVEPOINT triggers")
try:
    first = q("SELECT min(id) FROM messages WHERE role <> 'tool'")
    con.execute("UPDATE messages SET content = content || ' probe', tool_name = 'probe' WHERE id = ?", (first,))
    con.execute("UPDATE messages SET active = 0 WHERE id = ?", (first,))
    con.execute("UPDATE messages SET active = 1 WHERE id = ?", (first,))
    con.execute("DELETE FROM messages WHERE id = ?", (first,))
    out["trigger_probe"] = "ok"
except Exception as e:
    out["trigger_probe"] = str(e)
con.execute("ROLLBACK TO triggers")
con.execute("RELEASE triggers")

con.execute("BEGIN IMMEDIATE")
cur = con.execute("INSERT INTO messages (session_id, role, content, timestamp, active) VALUES (?, 'user', ?, ?, 1)",
                  (sid, "python wrote 你好世界 pythonword", time.time()))
out["python_id"] = cur.lastrowid
con.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (sid,))
con.execute("COMMIT")

out["match_pythonword"] = q("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'pythonword'")
out["match_trigram"] = q("SELECT count(*) FROM messages_fts_trigram WHERE messages_fts_trigram MATCH '你好世'")
fts = {}
for n in ("messages_fts", "messages_fts_trigram"):
    try:
        con.execute("INSERT INTO %s(%s, rank) VALUES('integrity-check', 1)" % (n, n))
        fts[n] = "ok"
    except Exception as e:
        fts[n] = str(e)
out["fts_integrity"] = fts
out["integrity_after"] = q("PRAGMA integrity_check")
out["messages_after"] = q("SELECT count(*) FROM messages")
con.close()
print(json.dumps(out))
`

type pythonResult struct {
	SQLiteVersion         string            `json:"sqlite_version"`
	Integrity             string            `json:"integrity"`
	MessagesBefore        int               `json:"messages_before"`
	Objects               [][2]string       `json:"objects"`
	ReadErrors            map[string]string `json:"read_errors"`
	InsertWithCJKTriggers string            `json:"insert_with_cjk_triggers"`
	TriggerProbe          string            `json:"trigger_probe"`
	PythonID              int64             `json:"python_id"`
	MatchPythonword       int               `json:"match_pythonword"`
	MatchTrigram          int               `json:"match_trigram"`
	FTSIntegrity          map[string]string `json:"fts_integrity"`
	IntegrityAfter        string            `json:"integrity_after"`
	MessagesAfter         int               `json:"messages_after"`
}

func TestPythonOpensOurFile(t *testing.T) {
	python := testenv.Python(t, "to play a Hermes process")
	path := filepath.Join(t.TempDir(), "state.db")
	const sid = "20260501_000000_abcdef"
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: sid, Source: "cli", Model: "test-model", SystemPrompt: "you are a test"}); err != nil {
		t.Fatal(err)
	}
	calls := json.RawMessage(`[{"id":"call_1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"docker ps\"}"}}]`)
	for _, m := range []sessiondb.NewMessage{
		{Role: "user", Content: "请帮我看看大别山项目的进度"},
		{Role: "assistant", Content: "我来查一下", ToolCalls: calls},
		{Role: "tool", Content: "CONTAINER ID   IMAGE   dockerimage", ToolCallID: "call_1", ToolName: "terminal"},
		{Role: "assistant", Content: "好的，项目进展顺利"},
	} {
		m.SessionID = sid
		if _, err := db.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	var py pythonResult
	runPythonJSON(t, &py, python, pythonScript, path, sid)
	t.Logf("python sqlite %s; insert with CJK triggers and no tokenizer: %s", py.SQLiteVersion, py.InsertWithCJKTriggers)
	if py.Integrity != "ok" || py.IntegrityAfter != "ok" {
		t.Errorf("python integrity_check = %q before, %q after", py.Integrity, py.IntegrityAfter)
	}
	if py.MessagesBefore != 4 || py.MessagesAfter != 5 {
		t.Errorf("python counted %d messages before and %d after its append, want 4 and 5", py.MessagesBefore, py.MessagesAfter)
	}
	if len(py.ReadErrors) > 0 {
		t.Errorf("SQLite %s cannot read part of our schema: %v", py.SQLiteVersion, py.ReadErrors)
	}
	if py.TriggerProbe != "ok" {
		t.Errorf("SQLite %s cannot run our messages triggers: %s", py.SQLiteVersion, py.TriggerProbe)
	}
	if py.MatchPythonword != 1 || py.MatchTrigram != 1 {
		t.Errorf("python: MATCH 'pythonword' = %d, trigram MATCH '你好世' = %d, want 1 and 1", py.MatchPythonword, py.MatchTrigram)
	}
	for n, res := range py.FTSIntegrity {
		if res != "ok" {
			t.Errorf("python: FTS5 integrity-check of %s: %s", n, res)
		}
	}
	var kinds = map[string]int{}
	for _, o := range py.Objects {
		kinds[o[0]]++
	}
	if kinds["table"] == 0 || kinds["view"] != 3 || kinds["trigger"] != 13 || kinds["index"] == 0 {
		t.Errorf("python saw %v objects in sqlite_master, want 3 views and 13 triggers among them", kinds)
	}

	// Reopen in Go and restore the CJK index (what `sessiondb init` does).
	db = MustOpenPath(t, path)
	if _, err := db.RestoreCJK(ctx, nil); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	if n := count(t, raw, "SELECT COUNT(*) FROM state_meta WHERE key = 'fts_cjk_stale'"); n != 0 {
		t.Errorf("fts_cjk_stale still set after open")
	}
	for _, tr := range []string{"messages_fts_cjk_insert", "messages_fts_cjk_delete", "messages_fts_cjk_update"} {
		if n := count(t, raw, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name = ?", tr); n != 1 {
			t.Errorf("trigger %s missing after open", tr)
		}
	}
	if pending, err := db.PendingBackfill(ctx); err != nil || pending != 0 {
		t.Errorf("PendingBackfill = %d, %v; want 0 (small gaps are filled at open)", pending, err)
	}
	if got := count(t, raw, `SELECT COUNT(*) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH '"你好"' AND rowid = ?`, py.PythonID); got != 1 {
		t.Errorf("python row %d not in messages_fts_cjk after open", py.PythonID)
	}
	if got := count(t, raw, `SELECT COUNT(*) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH '"大别"'`); got != 1 {
		t.Errorf("messages_fts_cjk MATCH 大别 = %d after open, want 1 (rows written before the gap)", got)
	}
	checkIntegrity(t, raw)
	// Python kept sessiondb's idx_messages_newest: a one-character search
	// walks it and finds Python's row, the newest, first.
	if hits, err := db.Search(ctx, "界", sessiondb.SearchOptions{Limit: 1}); err != nil || len(hits) != 1 || hits[0].ID != py.PythonID {
		t.Errorf("search 界 after python's append = %+v, %v; want python's row %d", hits, err, py.PythonID)
	}

	id, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: "gonewword 新的消息来了"})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'gonewword' AND rowid = ?",
		"SELECT COUNT(*) FROM messages_fts_trigram WHERE messages_fts_trigram MATCH '新的消' AND rowid = ?",
		`SELECT COUNT(*) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH '"新的"' AND rowid = ?`,
	} {
		if got := count(t, raw, q, id); got != 1 {
			t.Errorf("%s: %d, want 1", q, got)
		}
	}
	if rows, mc := count(t, raw, "SELECT COUNT(*) FROM messages WHERE session_id = ?", sid),
		count(t, raw, "SELECT message_count FROM sessions WHERE id = ?", sid); rows != 6 || mc != 6 {
		t.Errorf("session has %d rows and message_count %d, want 6 and 6", rows, mc)
	}
	checkIntegrity(t, raw)
}

// sessionsColumnsV30 is the sessions column list of STORAGE.md §1.2, in order.
var sessionsColumnsV30 = []string{
	"id", "source", "created_source", "user_id", "session_key", "chat_id", "chat_type", "thread_id",
	"display_name", "origin_json", "expiry_finalized", "model", "model_config", "system_prompt",
	"system_prompt_hash", "parent_session_id", "started_at", "ended_at", "end_reason", "message_count",
	"tool_call_count", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
	"reasoning_tokens", "cwd", "git_branch", "git_repo_root", "git_metadata_generation",
	"billing_provider", "billing_base_url", "billing_mode", "estimated_cost_usd", "actual_cost_usd",
	"cost_status", "cost_source", "pricing_version", "title", "title_source", "last_activity_at",
	"last_activity_description", "last_activity_provenance", "api_call_count", "handoff_state",
	"handoff_platform", "handoff_error", "compression_failure_cooldown_until",
	"compression_failure_error", "compression_fallback_streak", "compression_ineffective_count",
	"compression_recovery_deadline", "compression_overload_streak", "profile_name",
	"transport_profile", "rewind_count", "archived", "auto_archived", "pinned", "hidden",
	"last_read_at", "tool_names",
}

// hermesV30Objects is the fresh Hermes v30 layout: type → names.
func hermesV30Objects() map[string][]string {
	tables := []string{"schema_version", "system_prompts", "sessions", "messages", "session_model_usage",
		"state_meta", "gateway_routing", "gateway_hygiene_state", "conversation_generations",
		"gateway_heartbeats", "compression_locks", "session_turn_leases", "async_delegations",
		"sqlite_sequence"}
	for _, fts := range []string{"messages_fts", "messages_fts_trigram", "messages_fts_cjk"} {
		// External-content FTS5 tables have no _content shadow table.
		tables = append(tables, fts, fts+"_data", fts+"_idx", fts+"_docsize", fts+"_config")
	}
	return map[string][]string{
		"table": tables,
		"view":  {"messages_fts_src", "messages_fts_trigram_src", "messages_fts_cjk_src"},
		"trigger": {"messages_fts_insert", "messages_fts_delete", "messages_fts_update",
			"messages_fts_trigram_insert", "messages_fts_trigram_delete", "messages_fts_trigram_update",
			"messages_fts_cjk_insert", "messages_fts_cjk_delete", "messages_fts_cjk_update",
			"messages_display_order_insert", "messages_display_visibility_update",
			"messages_display_identity_update", "messages_display_identity_delete"},
		"index": {
			// §1.2 SCHEMA_SQL
			"idx_sessions_source", "idx_sessions_source_id", "idx_sessions_parent", "idx_sessions_started",
			"idx_messages_session", "idx_messages_session_id", "idx_messages_assistant_calls_by_session",
			"idx_compression_locks_expires", "idx_session_turn_leases_expires",
			"idx_session_model_usage_session", "idx_session_model_usage_model", "idx_async_delegations_delivery",
			// §1.3 DEFERRED_INDEX_SQL
			"idx_messages_session_active", "idx_messages_display_page", "idx_messages_display_backfill",
			"idx_messages_display_identity", "idx_messages_active_null", "idx_sessions_session_key",
			"idx_sessions_gateway_peer", "idx_sessions_handoff_state", "idx_sessions_system_prompt_hash",
			"idx_sessions_tool_names", "idx_sessions_effective_activity",
			// created separately after reconciliation
			"idx_messages_platform_msg_id", "idx_sessions_title_unique",
			// sessiondb's own, which Hermes ignores (TestHermesWritesKeepUnlistedIndex,
			// TestPythonOpensOurFile)
			"idx_sessions_unlisted", "idx_messages_newest",
		},
	}
}

func TestFreshSchemaMatchesHermes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hermes-home")
	path := filepath.Join(dir, "state.db")
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw := rawDB(t, path)

	t.Run("objects", func(t *testing.T) {
		rows, err := raw.Query("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_autoindex_%'")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for rows.Next() {
			var typ, name string
			if err := rows.Scan(&typ, &name); err != nil {
				t.Fatal(err)
			}
			got[typ] = append(got[typ], name)
		}
		rows.Close()
		want := hermesV30Objects()
		for _, typ := range []string{"table", "view", "index", "trigger"} {
			g, w := slices.Sorted(slices.Values(got[typ])), slices.Sorted(slices.Values(want[typ]))
			if extra, missing := stringsNotIn(g, w), stringsNotIn(w, g); len(extra)+len(missing) > 0 {
				t.Errorf("%ss: extra %v, missing %v", typ, extra, missing)
			}
			delete(got, typ)
		}
		if len(got) > 0 {
			t.Errorf("unexpected object types: %v", got)
		}
	})

	t.Run("pragmas", func(t *testing.T) {
		if got := db.JournalMode(); got != "wal" {
			t.Errorf("JournalMode() = %q, want wal", got)
		}
		var mode string
		raw.QueryRow("PRAGMA journal_mode").Scan(&mode)
		if mode != "wal" {
			t.Errorf("file journal_mode = %q, want wal", mode)
		}
		if got := storeForeignKeys(t, db, raw); got != 1 {
			t.Errorf("foreign_keys on the store's writer connection = %d, want 1", got)
		}
	})

	token, appID := fileIdentity(t, raw)
	t.Run("identity", func(t *testing.T) {
		if got := count(t, raw, "SELECT version FROM schema_version"); got != 30 {
			t.Errorf("schema_version = %d, want 30", got)
		}
		if n := count(t, raw, "SELECT COUNT(*) FROM schema_version"); n != 1 {
			t.Errorf("schema_version has %d rows, want 1", n)
		}
		if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(token) {
			t.Errorf("db_file_generation = %q, want 32 hex digits", token)
		}
		var fsv string
		raw.QueryRow("SELECT value FROM state_meta WHERE key = 'fts_storage_version'").Scan(&fsv)
		if fsv != "3" {
			t.Errorf("fts_storage_version = %q, want 3", fsv)
		}
		if len(token) >= 8 {
			n, _ := strconv.ParseUint(token[:8], 16, 32)
			want := int64(n & 0x7FFFFFFF)
			if want == 0 {
				want = 1
			}
			if appID != want {
				t.Errorf("application_id = %d, want %d (from token %s)", appID, want, token)
			}
		}
	})

	t.Run("sessions columns", func(t *testing.T) {
		rows, err := raw.Query("SELECT name FROM pragma_table_info('sessions') ORDER BY cid")
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for rows.Next() {
			var c string
			rows.Scan(&c)
			cols = append(cols, c)
		}
		rows.Close()
		if !slices.Equal(cols, sessionsColumnsV30) {
			t.Errorf("sessions columns:\n got %v\nwant %v", cols, sessionsColumnsV30)
		}
	})

	t.Run("permissions", func(t *testing.T) {
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				if p == path {
					t.Fatal(err)
				}
				continue
			}
			if got := fi.Mode().Perm(); got != 0o600 {
				t.Errorf("%s mode = %o, want 600", filepath.Base(p), got)
			}
		}
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o700 {
			t.Errorf("created directory mode = %o, want 700", got)
		}
	})

	t.Run("reopen keeps identity", func(t *testing.T) {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		MustOpenPath(t, path)
		token2, appID2 := fileIdentity(t, raw)
		if token2 != token || appID2 != appID {
			t.Errorf("reopen changed identity: generation %s → %s, application_id %d → %d", token, token2, appID, appID2)
		}
		if got := count(t, raw, "SELECT version FROM schema_version"); got != 30 {
			t.Errorf("schema_version = %d after reopen", got)
		}
		checkIntegrity(t, raw)
	})
}

// fileIdentity returns the file's db_file_generation and application_id.
func fileIdentity(tb testing.TB, raw *sql.DB) (string, int64) {
	tb.Helper()
	var token string
	if err := raw.QueryRow("SELECT value FROM state_meta WHERE key = 'db_file_generation'").Scan(&token); err != nil {
		tb.Fatalf("db_file_generation: %v", err)
	}
	var appID int64
	if err := raw.QueryRow("PRAGMA application_id").Scan(&appID); err != nil {
		tb.Fatal(err)
	}
	return token, appID
}

// storeForeignKeys reads PRAGMA foreign_keys as seen by the store's own
// writer connection: a temporary trigger on state_meta (in the file, removed
// afterwards) records the pragma when the store writes a probe key.
func storeForeignKeys(tb testing.TB, db *sqlite.DB, raw *sql.DB) int {
	tb.Helper()
	if _, err := raw.Exec(`CREATE TRIGGER fk_probe AFTER INSERT ON state_meta WHEN new.key = 'fk_probe'
BEGIN
	INSERT OR REPLACE INTO state_meta(key, value) VALUES('fk_probe_result', (SELECT foreign_keys FROM pragma_foreign_keys));
END`); err != nil {
		tb.Fatal(err)
	}
	defer raw.Exec("DROP TRIGGER IF EXISTS fk_probe; DELETE FROM state_meta WHERE key IN ('fk_probe', 'fk_probe_result')")
	if err := db.SetMeta(ctx, "fk_probe", "1"); err != nil {
		tb.Fatal(err)
	}
	v, ok, err := db.Meta(ctx, "fk_probe_result")
	if err != nil || !ok {
		tb.Fatalf("fk probe: %q %v %v", v, ok, err)
	}
	n, _ := strconv.Atoi(v)
	return n
}

// stringsNotIn returns the elements of a not in b (both sorted).
func stringsNotIn(a, b []string) []string {
	var out []string
	for _, s := range a {
		if _, found := slices.BinarySearch(b, s); !found {
			out = append(out, s)
		}
	}
	return out
}

func TestOpenBadPaths(t *testing.T) {
	open := func(path string) (*sqlite.DB, error) {
		return sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
	}

	t.Run("directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		db, err := open(path)
		if err == nil {
			db.Close()
			t.Fatal("opening a directory succeeded")
		}
		if !strings.Contains(err.Error(), "directory") {
			t.Errorf("error %q does not mention the directory", err)
		}
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			t.Errorf("the directory was touched: %v", err)
		}
	})

	t.Run("too long for SQLite", func(t *testing.T) {
		// 504 bytes open; 505 would fail inside SQLite as "unable to
		// open database file", blamed on permissions, after the file
		// was created empty.
		dir := t.TempDir()
		long := filepath.Join(dir, strings.Repeat("d", 200), strings.Repeat("e", 200))
		if err := os.MkdirAll(long, 0o700); err != nil {
			t.Fatal(err)
		}
		fits := filepath.Join(long, strings.Repeat("f", 504-len(long)-1))
		db, err := open(fits)
		if err != nil {
			t.Fatalf("open a %d-byte path: %v", len(fits), err)
		}
		db.Close()
		tooLong := fits + "g"
		for _, ro := range []bool{false, true} {
			db, err := sqlite.Open(tooLong, sqlite.Options{ReadOnly: ro})
			if err == nil {
				db.Close()
				t.Fatalf("read-only %v: opening a %d-byte path succeeded", ro, len(tooLong))
			}
			if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "is 505 bytes long; SQLite opens no database path longer than 504 bytes") {
				t.Errorf("read-only %v: %v; want EINVALID naming the length and the limit", ro, err)
			}
		}
		if _, err := os.Lstat(tooLong); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the refused path was created: %v", err)
		}
	})

	t.Run("random bytes", func(t *testing.T) {
		junk := make([]byte, 4096)
		rand.New(rand.NewSource(42)).Read(junk)

		// Any other file name: an error, and the file is left as it was.
		path := filepath.Join(t.TempDir(), "notes.db")
		if err := os.WriteFile(path, junk, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := open(path)
		if err == nil {
			db.Close()
			t.Fatal("opening a file of random bytes succeeded")
		}
		if got := sessiondb.ErrorCode(err); got != sessiondb.ECORRUPT {
			t.Errorf("error code = %q, want %q (%v)", got, sessiondb.ECORRUPT, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, junk) {
			t.Errorf("the damaged file was modified (%d bytes, was %d)", len(after), len(junk))
		}

		// state.db: moved aside untouched and replaced, as Hermes does.
		path = filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, junk, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err = open(path)
		if err != nil {
			t.Fatalf("open a headerless state.db: %v", err)
		}
		defer db.Close()
		moved := db.Quarantined()
		if after, err := os.ReadFile(moved); err != nil || !bytes.Equal(after, junk) {
			t.Errorf("the invalid file was not kept intact at %q: %v", moved, err)
		}
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"}); err != nil {
			t.Errorf("the fresh database does not work: %v", err)
		}
	})

	t.Run("zero bytes", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := open(path)
		if err != nil {
			t.Fatalf("opening a zero-byte file: %v", err)
		}
		sid, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: "hello"}); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		raw := rawDB(t, path)
		if got := count(t, raw, "SELECT version FROM schema_version"); got != 30 {
			t.Errorf("schema_version = %d, want 30", got)
		}
		if got := count(t, raw, "SELECT COUNT(*) FROM messages"); got != 1 {
			t.Errorf("messages = %d, want 1", got)
		}
		checkIntegrity(t, raw)
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("file still empty after open and close: %v", err)
		}
	})
}

// TestPythonWritesUnderBulkMergePolicy: Python's SQLite (Hermes' 3.40 or
// newer) keeps writing a file whose word and trigram indexes carry the
// merge settings of a running rebuild (automerge 64, crisismerge 128): 200
// messages in 200 transactions, each a new segment that FTS5 merges under
// those settings. The indexes stay consistent and find every message.
func TestPythonWritesUnderBulkMergePolicy(t *testing.T) {
	python := testenv.Python(t, "to play a Hermes process during a rebuild")
	path := filepath.Join(t.TempDir(), "state.db")
	const sid = "20260501_000000_abcdef"
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: sid, Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	for _, tbl := range []string{"messages_fts", "messages_fts_trigram"} {
		rawExec(t, raw, "INSERT INTO "+tbl+"("+tbl+", rank) VALUES('automerge', 64)")
		rawExec(t, raw, "INSERT INTO "+tbl+"("+tbl+", rank) VALUES('crisismerge', 128)")
	}
	raw.Close()
	const script = pythonWithoutCJK + `q = lambda s: con.execute(s).fetchone()[0]
for i in range(200):
    con.execute("BEGIN IMMEDIATE")
    con.execute("INSERT INTO messages (session_id, role, content, timestamp, active) VALUES (?, 'user', ?, ?, 1)",
                (sys.argv[2], "bulkword message %d" % i, 1000 + i))
    con.execute("COMMIT")
out = {"version": sqlite3.sqlite_version, "found": {}, "segments": {}, "integrity": {}}
for n in ("messages_fts", "messages_fts_trigram"):
    out["found"][n] = q("SELECT count(*) FROM %s WHERE %s MATCH 'bulkword'" % (n, n))
    out["segments"][n] = q("SELECT count(DISTINCT id >> 37) FROM %s_data WHERE id >= 1 << 37" % n)
    try:
        con.execute("INSERT INTO %s(%s, rank) VALUES('integrity-check', 1)" % (n, n))
        out["integrity"][n] = "ok"
    except Exception as e:
        out["integrity"][n] = str(e)
print(json.dumps(out))
`
	var py struct {
		Version   string
		Found     map[string]int
		Segments  map[string]int
		Integrity map[string]string
	}
	runPythonJSON(t, &py, python, script, path, sid)
	t.Logf("python sqlite %s: segments %v", py.Version, py.Segments)
	for _, n := range []string{"messages_fts", "messages_fts_trigram"} {
		if py.Found[n] != 200 || py.Integrity[n] != "ok" {
			t.Errorf("SQLite %s under the bulk merge settings: %s finds %d of 200, integrity-check %q", py.Version, n, py.Found[n], py.Integrity[n])
		}
	}
}

// runPythonJSON runs script with python and args, and decodes what it
// prints, one JSON value, into v.
func runPythonJSON(t *testing.T, v any, python, script string, args ...string) {
	t.Helper()
	cmd := exec.Command(python, append([]string{"-c", script}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python3 failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
		t.Fatalf("python output: %v\n%s", err, stdout.String())
	}
}

// pythonWithoutCJK opens the file named by the first argument as a Hermes
// process without the cjk_unicode61 tokenizer does before its writes: it
// marks the CJK index stale and drops its triggers.
const pythonWithoutCJK = `
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
con.execute("BEGIN IMMEDIATE")
con.execute("INSERT INTO state_meta(key,value) VALUES('fts_cjk_stale','1') ON CONFLICT(key) DO UPDATE SET value=excluded.value")
for s in ("insert", "delete", "update"):
    con.execute("DROP TRIGGER IF EXISTS messages_fts_cjk_" + s)
con.execute("COMMIT")
`
