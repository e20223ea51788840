package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite"
)

// rawDB opens path directly with the driver, for assertions on the file.
func rawDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func count(tb testing.TB, db *sql.DB, q string, args ...any) int {
	tb.Helper()
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
	return n
}

// checkIntegrity runs PRAGMA integrity_check and FTS5's integrity-check on
// every index in the file (rank=1 re-reads external content and compares).
func checkIntegrity(tb testing.TB, db *sql.DB) {
	tb.Helper()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		tb.Fatalf("integrity_check = %q, %v", res, err)
	}
	rows, err := db.Query("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")
	if err != nil {
		tb.Fatal(err)
	}
	var tables [][2]string
	for rows.Next() {
		var n, s string
		rows.Scan(&n, &s)
		tables = append(tables, [2]string{n, s})
	}
	rows.Close()
	if len(tables) == 0 {
		tb.Fatal("no FTS tables")
	}
	for _, t := range tables {
		q := "INSERT INTO " + t[0] + "(" + t[0] + ", rank) VALUES('integrity-check', 1)"
		if !strings.Contains(t[1], "content=") {
			q = "INSERT INTO " + t[0] + "(" + t[0] + ") VALUES('integrity-check')"
		}
		if _, err := db.Exec(q); err != nil {
			tb.Fatalf("fts integrity-check %s: %v", t[0], err)
		}
	}
}

func TestFixturesUpgrade(t *testing.T) {
	fixtures := []string{"hermes-v01.db", "hermes-v02.db", "hermes-v04.db", "hermes-v05.db", "hermes-v06.db",
		"hermes-v07.db", "hermes-v08.db", "hermes-v09.db", "hermes-v10.db", "hermes-v11.db",
		"hermes-v23.db", "hermes-v23-nocjk.db"}
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			path := fixture(t, name)
			before := rawDB(t, path)
			wantSessions := count(t, before, "SELECT COUNT(*) FROM sessions")
			wantMessages := count(t, before, "SELECT COUNT(*) FROM messages")
			wantContent := count(t, before, "SELECT COALESCE(SUM(length(content)), 0) FROM messages")
			before.Close()

			db := MustOpenPath(t, path)
			raw := rawDB(t, path)
			if got := count(t, raw, "SELECT COUNT(*) FROM sessions"); got != wantSessions {
				t.Fatalf("sessions = %d, want %d", got, wantSessions)
			}
			if got := count(t, raw, "SELECT COUNT(*) FROM messages"); got != wantMessages {
				t.Fatalf("messages = %d, want %d", got, wantMessages)
			}
			if got := count(t, raw, "SELECT COALESCE(SUM(length(content)), 0) FROM messages"); got != wantContent {
				t.Fatalf("content length = %d, want %d", got, wantContent)
			}
			if got := count(t, raw, "SELECT version FROM schema_version"); got != sqlite.SchemaVersion {
				t.Fatalf("schema_version = %d, want %d", got, sqlite.SchemaVersion)
			}
			checkIntegrity(t, raw)

			// Every column of the newest schema exists.
			for _, col := range []string{"sessions.auto_archived", "sessions.title", "messages.active", "messages.tool_call_uid", "session_model_usage.task"} {
				tbl, c, _ := strings.Cut(col, ".")
				if n := count(t, raw, "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?", tbl, c); n != 1 {
					t.Errorf("column %s missing", col)
				}
			}

			// A new message lands and is searchable through every live index.
			sid := firstSession(t, raw)
			id, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: "zebraword 斑马测试"})
			if err != nil {
				t.Fatal(err)
			}
			if got := count(t, raw, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'zebraword' AND rowid = ?", id); got != 1 {
				t.Errorf("new message not in messages_fts")
			}
			if got := count(t, raw, "SELECT COUNT(*) FROM messages_fts_trigram WHERE messages_fts_trigram MATCH '斑马测' AND rowid = ?", id); got != 1 {
				t.Errorf("new message not in messages_fts_trigram")
			}
			if n := count(t, raw, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'messages_fts_cjk'"); n == 1 {
				if got := count(t, raw, `SELECT COUNT(*) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH '"斑马"' AND rowid = ?`, id); got != 1 {
					t.Errorf("new message not in messages_fts_cjk")
				}
			}
			checkIntegrity(t, raw)

			// Every column of a fresh file exists, in every table.
			fresh := rawDB(t, MustOpen(t).Path())
			for _, tbl := range []string{"sessions", "messages", "session_model_usage", "system_prompts", "state_meta",
				"gateway_routing", "gateway_hygiene_state", "conversation_generations", "gateway_heartbeats",
				"compression_locks", "session_turn_leases", "async_delegations"} {
				if got, want := columns(t, raw, tbl), columns(t, fresh, tbl); !subset(want, got) {
					t.Errorf("%s columns %v lack some of %v", tbl, got, want)
				}
			}

			// Reopening changes nothing: no index is rebuilt a second time.
			segments := func() string {
				var s string
				raw.QueryRow("SELECT group_concat(id) FROM (SELECT id FROM messages_fts_data UNION ALL SELECT id FROM messages_fts_trigram_data)").Scan(&s)
				return s
			}
			segs := segments()
			db.Close()
			MustOpenPath(t, path)
			if after := segments(); after != segs {
				t.Errorf("second open rebuilt an index")
			}
			checkIntegrity(t, raw)
		})
	}
}

func firstSession(tb testing.TB, db *sql.DB) string {
	tb.Helper()
	var id string
	if err := db.QueryRow("SELECT id FROM sessions WHERE ended_at IS NULL OR end_reason <> 'compression' ORDER BY id LIMIT 1").Scan(&id); err != nil {
		tb.Fatal(err)
	}
	return id
}

// TestFixtureSearchCounts checks the legacy migration against the counts
// Hermes' v11 reference returned after migrating the same files.
func TestFixtureSearchCounts(t *testing.T) {
	for _, name := range []string{"hermes-v01.db", "hermes-v06.db", "hermes-v10.db", "hermes-v11.db"} {
		t.Run(name, func(t *testing.T) {
			path := fixture(t, name)
			MustOpenPath(t, path)
			raw := rawDB(t, path)
			want := map[string]int{"docker": 164, `"chat-send"`: 33}
			if name == "hermes-v11.db" {
				want["docker"] = 165
			}
			for q, n := range want {
				if got := count(t, raw, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?", q); got != n {
					t.Errorf("%s: %d results, want %d", q, got, n)
				}
			}
			if got := count(t, raw, "SELECT COUNT(*) FROM messages_fts_trigram WHERE messages_fts_trigram MATCH ?", "大别山项目"); got != 21 {
				t.Errorf("大别山项目: %d results, want 21", got)
			}
		})
	}
}

func TestFixtureV23Details(t *testing.T) {
	fx := loadFixtureJSON(t, "hermes-v23.json")
	path := fixture(t, "hermes-v23.db")
	db := MustOpenPath(t, path)
	raw := rawDB(t, path)
	if got := count(t, raw, "SELECT COUNT(*) FROM messages_fts_cjk"); got == 0 {
		t.Fatal("cjk index emptied")
	}
	v, ok, err := db.Meta(ctx, "fts_storage_version")
	if err != nil || !ok || v != "3" {
		t.Fatalf("fts_storage_version = %q %v %v, want 3", v, ok, err)
	}
	// The trigram index now follows v30: no tool_calls column.
	var ddl string
	raw.QueryRow("SELECT sql FROM sqlite_master WHERE name = 'messages_fts_trigram'").Scan(&ddl)
	if strings.Contains(ddl, "tool_calls") {
		t.Errorf("trigram index still declares tool_calls: %s", ddl)
	}
	if fx.TableCounts["sessions"] != count(t, raw, "SELECT COUNT(*) FROM sessions") {
		t.Error("session count differs from the fixture's record")
	}
}

type fixtureJSON struct {
	SchemaVersion int            `json:"schema_version"`
	TableCounts   map[string]int `json:"table_counts"`
}

func loadFixtureJSON(tb testing.TB, name string) fixtureJSON {
	tb.Helper()
	b, err := os.ReadFile(testenv.Shared("fixtures", name))
	if err != nil {
		tb.Fatal(err)
	}
	var f fixtureJSON
	if err := json.Unmarshal(b, &f); err != nil {
		tb.Fatal(err)
	}
	return f
}

func columns(tb testing.TB, db *sql.DB, table string) []string {
	tb.Helper()
	rows, err := db.Query("SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		out = append(out, n)
	}
	return out
}

func subset(small, big []string) bool {
	have := map[string]bool{}
	for _, b := range big {
		have[b] = true
	}
	for _, s := range small {
		if !have[s] {
			return false
		}
	}
	return true
}

func TestNewerSchemaIsKept(t *testing.T) {
	db := MustOpen(t)
	path := db.Path()
	raw := rawDB(t, path)
	for _, stmt := range []string{
		"UPDATE schema_version SET version = 31",
		"ALTER TABLE sessions ADD COLUMN future_column TEXT DEFAULT 'x'",
		"CREATE TABLE future_table (k TEXT)",
		"INSERT INTO future_table VALUES ('kept')",
	} {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db = MustOpenPath(t, path)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	if got := count(t, raw, "SELECT version FROM schema_version"); got != 31 {
		t.Errorf("schema_version = %d, want 31 (never lowered)", got)
	}
	var v string
	raw.QueryRow("SELECT future_column FROM sessions WHERE id = 's1'").Scan(&v)
	if v != "x" {
		t.Errorf("future column = %q, want its default", v)
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM future_table"); got != 1 {
		t.Errorf("future table rows = %d", got)
	}
}

func TestPrimaryKeyHeals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	raw := rawDB(t, path)
	for _, stmt := range []string{
		"CREATE TABLE schema_version (version INTEGER NOT NULL)",
		"INSERT INTO schema_version VALUES (21)",
		"CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL, title TEXT, input_tokens INTEGER DEFAULT 0)",
		"INSERT INTO sessions (id, source, started_at, title, input_tokens) VALUES ('a', 'cli', 1, 'dup', 5), ('b', 'cli', 2, 'dup', 0)",
		"CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT, timestamp REAL NOT NULL)",
		`CREATE TABLE session_model_usage (session_id TEXT NOT NULL, model TEXT NOT NULL, billing_provider TEXT NOT NULL DEFAULT '',
			billing_base_url TEXT NOT NULL DEFAULT '', billing_mode TEXT NOT NULL DEFAULT '', input_tokens INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (session_id, model, billing_provider, billing_base_url, billing_mode))`,
		"INSERT INTO session_model_usage (session_id, model, input_tokens) VALUES ('a', 'm', 5), ('gone', 'm', 7)",
		"CREATE TABLE gateway_routing (session_key TEXT PRIMARY KEY, scope TEXT, entry_json TEXT NOT NULL, updated_at REAL NOT NULL)",
		"INSERT INTO gateway_routing VALUES ('k1', NULL, '{}', 1), ('k2', 'x', '{}', 2)",
	} {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	MustOpenPath(t, path)
	if got := count(t, raw, "SELECT COUNT(*) FROM pragma_table_info('session_model_usage') WHERE name = 'task' AND pk > 0"); got != 1 {
		t.Error("task is not part of the session_model_usage primary key")
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM session_model_usage"); got != 2 {
		t.Errorf("session_model_usage rows = %d, want 2 (a usage row of a deleted session is kept too)", got)
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM pragma_table_info('gateway_routing') WHERE pk > 0"); got != 2 {
		t.Error("gateway_routing primary key not healed")
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM gateway_routing WHERE scope = ''"); got != 1 {
		t.Errorf("NULL scope not healed to ''")
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM sessions WHERE title = 'dup'"); got != 1 {
		t.Errorf("duplicate titles not healed")
	}
	var keeper string
	raw.QueryRow("SELECT id FROM sessions WHERE title = 'dup'").Scan(&keeper)
	if keeper != "b" {
		t.Errorf("title kept by %q, want the newest row b", keeper)
	}
	if got := count(t, raw, "SELECT version FROM schema_version"); got != sqlite.SchemaVersion {
		t.Errorf("schema_version = %d", got)
	}
	checkIntegrity(t, raw)
}

func TestStaleCJKIndexIsRestored(t *testing.T) {
	db := MustOpen(t)
	path := db.Path()
	db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"})
	db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "before 东京"})
	db.Close()

	// A Hermes without the tokenizer: marks the index stale, drops its
	// triggers, and writes rows the CJK index never sees.
	raw := rawDB(t, path)
	for _, stmt := range []string{
		"INSERT INTO state_meta (key, value) VALUES ('fts_cjk_stale', '1')",
		"DROP TRIGGER messages_fts_cjk_insert", "DROP TRIGGER messages_fts_cjk_delete", "DROP TRIGGER messages_fts_cjk_update",
		"INSERT INTO messages (session_id, role, content, timestamp, active) VALUES ('s', 'user', 'gap 大阪', 1777593600, 1)",
	} {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	// Opening leaves a stale index alone, as Hermes does (a tokenizer-less
	// process may still be running); RestoreCJK (sessiondb init) restarts it.
	db = MustOpenPath(t, path)
	if _, ok, _ := db.Meta(ctx, "fts_cjk_stale"); !ok {
		t.Fatal("open restored a stale CJK index")
	}
	if restored, err := db.RestoreCJK(ctx, nil); err != nil || !restored {
		t.Fatalf("RestoreCJK = %v, %v", restored, err)
	}
	if _, ok, _ := db.Meta(ctx, "fts_cjk_stale"); ok {
		t.Error("fts_cjk_stale still set")
	}
	if got := count(t, raw, `SELECT COUNT(*) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH '"大阪"'`); got != 1 {
		t.Errorf("row written during the gap not indexed")
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'messages_fts_cjk_%'"); got != 3 {
		t.Errorf("%d cjk triggers, want 3", got)
	}
	checkIntegrity(t, raw)
}
