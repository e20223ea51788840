package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
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

			// Reopening is idempotent.
			db.Close()
			db2 := MustOpenPath(t, path)
			_ = db2
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
	b, err := os.ReadFile(filepath.Join("..", "..", "shared", "fixtures", name))
	if err != nil {
		tb.Fatal(err)
	}
	var f fixtureJSON
	if err := json.Unmarshal(b, &f); err != nil {
		tb.Fatal(err)
	}
	return f
}
