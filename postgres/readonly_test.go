package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/postgres"
)

func openReadOnly(url string) (*postgres.DB, error) {
	return postgres.Open(context.Background(), url, postgres.Options{ReadOnly: true})
}

// tableCount is how many tables the public schema holds.
func tableCount(t *testing.T, db *postgres.DB) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(context.Background(),
		"SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReadOnlyOpen(t *testing.T) {
	ctx := context.Background()

	t.Run("a database without the schema is refused, naming init and doctor --fix, and nothing is created", func(t *testing.T) {
		url := testenv.Postgres(t)
		_, err := openReadOnly(url)
		if got := sessiondb.ErrorCode(err); got != sessiondb.ENOTFOUND || !errors.Is(err, postgres.ErrNoSchema) {
			t.Fatalf("error %v (code %q), want ENOTFOUND and ErrNoSchema", err, got)
		}
		for _, want := range []string{"sessiondb --db URL init", "sessiondb doctor --fix"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		}
		db := MustOpenURL(t, url) // migrates: the tables appear only now
		if n := tableCount(t, db); n == 0 {
			t.Fatal("no tables after a read-write open")
		}
	})

	t.Run("an older schema is refused with the migration it lacks", func(t *testing.T) {
		url := testenv.Postgres(t)
		w := MustOpenURL(t, url)
		if _, err := w.Pool().Exec(ctx, "DELETE FROM schema_migrations WHERE version = $1", postgres.SchemaVersion()); err != nil {
			t.Fatal(err)
		}
		_, err := openReadOnly(url)
		if got := sessiondb.ErrorCode(err); got != sessiondb.ECONFLICT || !errors.Is(err, postgres.ErrOlderSchema) {
			t.Fatalf("error %v (code %q), want ECONFLICT and ErrOlderSchema", err, got)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("lacks schema migration %04d_", postgres.SchemaVersion())) ||
			!strings.Contains(err.Error(), "sessiondb doctor --fix") || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q: want one line naming the missing migration and the fix", err)
		}
		var n int
		if err := w.Pool().QueryRow(ctx, "SELECT count(*) FROM schema_migrations WHERE version = $1", postgres.SchemaVersion()).Scan(&n); err != nil || n != 0 {
			t.Errorf("the read-only open migrated: %d rows, %v", n, err)
		}
	})

	t.Run("a current database is read as it is and every write is EPERM", func(t *testing.T) {
		url := testenv.Postgres(t)
		w := MustOpenURL(t, url)
		for _, s := range []sessiondb.NewSession{{ID: "s", Source: "cli"}, {ID: "cron", Source: "cron"}} {
			if _, err := w.CreateSession(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []string{"docker compose up on host-1.example.org", "项目 部署 完成"} {
			if _, err := w.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: c}); err != nil {
				t.Fatal(err)
			}
		}
		snapshot := func() string {
			var s string
			if err := w.Pool().QueryRow(ctx, `SELECT (SELECT string_agg(t::text, '|' ORDER BY id) FROM sessions t) ||
				(SELECT string_agg(m.id::text || m.content, '|' ORDER BY id) FROM messages m)`).Scan(&s); err != nil {
				t.Fatal(err)
			}
			return s
		}
		before := snapshot()

		db, err := openReadOnly(url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if !db.ReadOnly() {
			t.Error("ReadOnly() = false")
		}
		if rows, total, err := db.ListSessions(ctx, sessiondb.ListOptions{}); err != nil || total != 2 || len(rows) != 2 {
			t.Errorf("list: %d of %d sessions, %v; want 2", len(rows), total, err)
		}
		for _, q := range []string{"docker", `"docker compose"`, "dock*", "项目", "项", "example.org", "ost-1"} {
			if hits, err := db.Search(ctx, q, sessiondb.SearchOptions{}); err != nil || len(hits) != 1 {
				t.Errorf("search %s: %d hits, %v; want 1", q, len(hits), err)
			}
		}
		if msgs, err := db.Messages(ctx, "s", sessiondb.MessageFilter{}); err != nil || len(msgs) != 2 {
			t.Errorf("messages: %d, %v; want 2", len(msgs), err)
		}
		if conv, err := db.Conversation(ctx, "s", sessiondb.ConversationOptions{IncludeAncestors: true}); err != nil || len(conv) != 2 {
			t.Errorf("conversation: %d, %v; want 2", len(conv), err)
		}
		if _, err := db.Lineage(ctx, "s"); err != nil {
			t.Errorf("lineage: %v", err)
		}
		exported := 0
		if err := db.ExportSessions(ctx, sessiondb.ExportSelection{}, func(*sessiondb.ExportedSession) error { exported++; return nil }); err != nil || exported != 2 {
			t.Errorf("export: %d sessions, %v; want 2", exported, err)
		}
		if _, err := db.UsageStats(ctx, "model", 0); err != nil {
			t.Errorf("usage stats: %v", err)
		}

		writes := map[string]func() error{
			"create session": func() error {
				_, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "t", Source: "cli"})
				return err
			},
			"ensure session": func() error { _, err := db.EnsureSession(ctx, "t", "cli", "m"); return err },
			"end":            func() error { return db.EndSession(ctx, "s", "user_exit") },
			"reopen":         func() error { return db.ReopenSession(ctx, "s") },
			"system prompt":  func() error { return db.UpdateSystemPrompt(ctx, "s", "p") },
			"token counts":   func() error { return db.UpdateTokenCounts(ctx, "s", sessiondb.TokenUpdate{InputTokens: 1}) },
			"set meta":       func() error { return db.SetMeta(ctx, "k", "v") },
			"append": func() error {
				_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "more"})
				return err
			},
			"append messages": func() error {
				_, err := db.AppendMessages(ctx, "s", []sessiondb.NewMessage{{Role: "user", Content: "more"}})
				return err
			},
			"append batch": func() error {
				_, err := db.AppendBatch(ctx, []sessiondb.NewMessage{{SessionID: "s", Role: "user", Content: "more"}})
				return err
			},
			"rename":  func() error { return db.SetTitle(ctx, "s", "title") },
			"delete":  func() error { _, err := db.DeleteSession(ctx, "s"); return err },
			"prune":   func() error { _, err := db.Prune(ctx, sessiondb.PruneOptions{Before: 4e9}); return err },
			"archive": func() error { return db.SetArchived(ctx, "s", true) },
			"pin":     func() error { return db.SetPinned(ctx, "s", true) },
			"clear":   func() error { _, err := db.ClearMessages(ctx, "s"); return err },
		}
		for name, write := range writes {
			err := write()
			if got := sessiondb.ErrorCode(err); got != sessiondb.EPERM || !strings.Contains(fmt.Sprint(err), "read-only") {
				t.Errorf("%s on a read-only store: %v (code %q), want EPERM saying it is read-only", name, err, got)
			}
		}
		// Below the store, the server refuses writes on its connections too.
		_, err = db.Pool().Exec(ctx, "CREATE TABLE intruder (x int)")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "25006" {
			t.Errorf("a raw write on the read-only pool: %v, want read_only_sql_transaction (25006)", err)
		}
		if after := snapshot(); after != before {
			t.Errorf("the database changed:\n%s\nwas\n%s", after, before)
		}
	})
}

// MustOpenURL opens url read-write and closes it when the test ends.
func MustOpenURL(tb testing.TB, url string) *postgres.DB {
	tb.Helper()
	db, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
