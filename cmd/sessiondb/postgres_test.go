package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb/internal/testenv"
)

// The command line on PostgreSQL: the same commands through --db
// postgres://… or SESSIONDB_DB, one line and exit status 7 for the
// file-level ones, and exit status 6 when the server cannot be used.

// runEnv runs a command line with SESSIONDB_DB as the test has set it (no
// --db unless args give one).
func runEnv(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}

// oneLine fails unless s is exactly one line holding want.
func oneLine(t *testing.T, s, want string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") || !strings.Contains(s, want) {
		t.Errorf("stderr = %q, want one line with %q", s, want)
	}
}

func TestPostgresRoundTrip(t *testing.T) {
	for _, how := range []string{"--db", dbEnv} {
		t.Run(how, func(t *testing.T) {
			db := testenv.Postgres(t)
			t.Setenv(dbEnv, "")
			must := func(args ...string) string {
				t.Helper()
				if how == "--db" {
					args = append([]string{"--db", db}, args...)
				} else {
					t.Setenv(dbEnv, db)
				}
				out, errOut, code := runEnv(t, "", args...)
				if code != 0 {
					t.Fatalf("sessiondb %s: exit %d: %s", strings.Join(args, " "), code, errOut)
				}
				return out
			}
			const id = "20260501_120000_abcdef"
			if got := strings.TrimSpace(must("new", "--source", "cli", "--model", "m1", "--id", id)); got != id {
				t.Fatalf("new printed %q", got)
			}
			must("append", "20260501_12", "--role", "user", "--content", "deploy with docker compose")
			must("append", id, "--role", "assistant", "--content", "ok", "--tool-calls", `[{"id":"c1"}]`)

			var listed struct {
				Total    int `json:"total"`
				Sessions []struct {
					ID string `json:"id"`
				} `json:"sessions"`
			}
			if err := json.Unmarshal([]byte(must("list", "--json")), &listed); err != nil {
				t.Fatal(err)
			}
			if listed.Total != 1 || len(listed.Sessions) != 1 || listed.Sessions[0].ID != id {
				t.Fatalf("list --json = %+v, want the one session", listed)
			}

			var shown struct {
				Session  map[string]any   `json:"session"`
				Messages []map[string]any `json:"messages"`
			}
			if err := json.Unmarshal([]byte(must("show", id, "--json")), &shown); err != nil {
				t.Fatal(err)
			}
			if got, want := shown.Session["message_count"], 2.0; got != want {
				t.Errorf("message_count = %v, want %v", got, want)
			}
			if got, want := len(shown.Messages), 2; got != want {
				t.Fatalf("%d messages, want %d", got, want)
			}
			if human := must("show", id); !strings.Contains(human, "deploy with docker compose") {
				t.Errorf("show lacks the message:\n%s", human)
			}

			var hits []struct {
				SessionID string  `json:"session_id"`
				Snippet   *string `json:"snippet"`
			}
			if err := json.Unmarshal([]byte(must("search", "docker", "--json")), &hits); err != nil {
				t.Fatal(err)
			}
			if len(hits) != 1 || hits[0].SessionID != id || hits[0].Snippet == nil || !strings.Contains(*hits[0].Snippet, ">>>docker<<<") {
				t.Fatalf("search docker --json = %+v", hits)
			}

			if got, want := must("rename", id, "Docker", "deploy"), id+": Docker deploy\n"; got != want {
				t.Errorf("rename printed %q, want %q", got, want)
			}
			if got, want := must("pin", "Docker deploy"), "pinned "+id+"\n"; got != want {
				t.Errorf("pin printed %q, want %q", got, want)
			}
			if err := json.Unmarshal([]byte(must("list", "--pinned", "--json")), &listed); err != nil {
				t.Fatal(err)
			}
			if listed.Total != 1 {
				t.Errorf("list --pinned: %d sessions, want 1", listed.Total)
			}
			if got, want := must("delete", id, "--yes"), "deleted 1 sessions: "+id+"\n"; got != want {
				t.Errorf("delete printed %q, want %q", got, want)
			}
			args := []string{"show", id}
			if how == "--db" {
				args = append([]string{"--db", db}, args...)
			}
			if _, errOut, code := runEnv(t, "", args...); code != exitNotFound {
				t.Errorf("show after delete: exit %d (%s), want %d", code, errOut, exitNotFound)
			}
		})
	}
}

// TestPostgresFileCommands checks that the file-level commands refuse a
// PostgreSQL database in one line, with their own exit status, before
// connecting to anything.
func TestPostgresFileCommands(t *testing.T) {
	const db = "postgres://nobody@127.0.0.1:1/none"
	for _, args := range [][]string{
		{"info"}, {"optimize"}, {"optimize-storage"}, {"rebuild-fts"},
		{"recover", "--source", "a.db", "--output", "b.db"},
	} {
		_, errOut, code := cli(t, db, "", args...)
		if code != exitUnsupported {
			t.Errorf("%s: exit %d, want %d", args[0], code, exitUnsupported)
		}
		oneLine(t, errOut, "sessiondb "+args[0]+" works on SQLite files only; --db names a PostgreSQL database")
	}
	t.Setenv(dbEnv, db)
	_, errOut, code := runEnv(t, "", "info")
	if code != exitUnsupported {
		t.Errorf("info with %s: exit %d, want %d", dbEnv, code, exitUnsupported)
	}
	oneLine(t, errOut, "SESSIONDB_DB names a PostgreSQL database")
}

// TestDBEnvPrecedence checks that --db wins over SESSIONDB_DB, which wins
// over HERMES_HOME, and that a file named by SESSIONDB_DB is a SQLite file
// as with --db.
func TestDBEnvPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "env.db")
	t.Setenv("HERMES_HOME", filepath.Join(dir, "home"))
	t.Setenv(dbEnv, file)
	if _, errOut, code := runEnv(t, "", "new", "--source", "cli", "--id", "s1"); code != 0 {
		t.Fatalf("new with %s: exit %d: %s", dbEnv, code, errOut)
	}
	if out := mustCLI(t, file, "list", "--json"); !strings.Contains(out, `"s1"`) {
		t.Errorf("%s did not name the file: %s", dbEnv, out)
	}
	other := filepath.Join(dir, "flag.db")
	mustCLI(t, other, "new", "--source", "cli", "--id", "s2")
	if out := mustCLI(t, other, "list", "--json"); strings.Contains(out, `"s1"`) || !strings.Contains(out, `"s2"`) {
		t.Errorf("--db did not win over %s: %s", dbEnv, out)
	}
	t.Setenv(dbEnv, "")
	_, errOut, code := runEnv(t, "", "list")
	if code != exitError || !strings.Contains(errOut, filepath.Join(dir, "home", "state.db")) {
		t.Errorf("without --db and %s: exit %d, %q; want the HERMES_HOME file's one-line error", dbEnv, code, errOut)
	}
}

// TestPostgresUnavailable checks that a server that cannot be used ends
// the command with one line and exit status 6: one that accepts the
// connection and never answers (within --connect-timeout, not a hang), a
// port where nothing listens, and a database the server does not have.
func TestPostgresUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	silent := "postgres://u:secret@" + ln.Addr().String() + "/db?sslmode=disable"
	done := make(chan struct{})
	var errOut string
	var code int
	go func() {
		defer close(done)
		_, errOut, code = cli(t, silent, "", "--connect-timeout", "500ms", "list")
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("list on a server that never answers did not give up")
	}
	if code != exitUnavailable {
		t.Errorf("silent server: exit %d, want %d (%s)", code, exitUnavailable, errOut)
	}
	oneLine(t, errOut, "cannot connect")
	if strings.Contains(errOut, "secret") {
		t.Errorf("the error shows the password: %q", errOut)
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	_, errOut, code = cli(t, "postgres://u@"+addr+"/db?sslmode=disable", "", "show", "x")
	if code != exitUnavailable {
		t.Errorf("closed port: exit %d, want %d (%s)", code, exitUnavailable, errOut)
	}
	oneLine(t, errOut, "cannot connect")

	admin := testenv.Postgres(t) // skips without a server
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/sessiondb_no_such_database"
	_, errOut, code = cli(t, u.String(), "", "list")
	if code != exitUnavailable {
		t.Errorf("unknown database: exit %d, want %d (%s)", code, exitUnavailable, errOut)
	}
	oneLine(t, errOut, `database "sessiondb_no_such_database" does not exist`)
	_, errOut, code = cli(t, u.String(), "", "doctor")
	if code != exitUnavailable {
		t.Errorf("doctor on an unknown database: exit %d, want %d (%s)", code, exitUnavailable, errOut)
	}
	oneLine(t, errOut, "does not exist")
}

// TestPostgresBadURL checks that a URL that does not parse is one line and
// a usage error, without a connection attempt.
func TestPostgresBadURL(t *testing.T) {
	_, errOut, code := cli(t, "postgres://u:secret@%zz/db", "", "list")
	if code != exitUsage {
		t.Errorf("bad URL: exit %d, want %d", code, exitUsage)
	}
	oneLine(t, errOut, "cannot read the connection URL")
	if strings.Contains(errOut, "secret") {
		t.Errorf("the error shows the password: %q", errOut)
	}
}

// TestPostgresDoctor checks doctor's PostgreSQL checks on a fresh database
// (no schema yet: a failed check whose fix is init), after --fix, and as
// JSON.
func TestPostgresDoctor(t *testing.T) {
	db := testenv.Postgres(t)
	out, _, code := cli(t, db, "", "doctor")
	if code != exitError || !strings.Contains(out, "FAIL  schema") || !strings.Contains(out, "fix: sessiondb init") {
		t.Errorf("doctor on an empty database: exit %d\n%s", code, out)
	}
	out, errOut, code := cli(t, db, "", "doctor", "--fix")
	if code != 0 {
		t.Fatalf("doctor --fix: exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"fixed: applied the schema migrations", "ok    server", "PostgreSQL 1", "ok    pg_trgm", "ok    schema", "ok    indexes", "healthy"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor --fix lacks %q:\n%s", want, out)
		}
	}
	var rep struct {
		Diagnosis struct {
			Path    string `json:"path"`
			Healthy bool   `json:"healthy"`
			Checks  []struct {
				Name, Status string
			} `json:"checks"`
		} `json:"diagnosis"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, db, "doctor", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range rep.Diagnosis.Checks {
		names = append(names, c.Name+"="+c.Status)
	}
	if got, want := strings.Join(names, " "), "server=ok pg_trgm=ok schema=ok indexes=ok"; !rep.Diagnosis.Healthy || got != want {
		t.Errorf("doctor --json: healthy %v, checks %s; want %s", rep.Diagnosis.Healthy, got, want)
	}
	if !strings.HasPrefix(rep.Diagnosis.Path, "postgres://") {
		t.Errorf("doctor --json path = %q", rep.Diagnosis.Path)
	}
}

// TestPostgresCommands runs the other commands that work on either backend
// on PostgreSQL: end and reopen, lineage, archive, clear, stats, export and
// import, prune, bench and init.
func TestPostgresCommands(t *testing.T) {
	db := testenv.Postgres(t)
	must := func(args ...string) string {
		t.Helper()
		out, errOut, code := cli(t, db, "", args...)
		if code != 0 {
			t.Fatalf("sessiondb %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	if out := must("init"); !strings.Contains(out, "schema version") {
		t.Errorf("init printed %q", out)
	}
	const root, child = "20260101_090000_aaaaaa", "20260101_100000_bbbbbb"
	must("new", "--source", "cron", "--id", root)
	must("append", root, "--role", "user", "--content", "rotate the logs")
	must("end", root, "--reason", "compression")
	must("new", "--source", "cron", "--id", child, "--parent", root)
	must("append", child, "--role", "assistant", "--content", "logs rotated")
	if out := must("lineage", child); !strings.Contains(out, root) || !strings.Contains(out, child) {
		t.Errorf("lineage lacks the chain:\n%s", out)
	}
	must("end", child, "--reason", "user_exit")
	must("reopen", child)
	must("archive", child)
	must("unarchive", child)
	if out := must("stats", "--by", "source", "--json"); !strings.Contains(out, `"cron"`) {
		t.Errorf("stats --by source --json = %s", out)
	}

	file := filepath.Join(t.TempDir(), "all.jsonl")
	must("export", "--all", "--output", file)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for line := range strings.Lines(string(b)) {
		var x struct {
			ID       string           `json:"id"`
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal([]byte(line), &x); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		ids = append(ids, fmt.Sprintf("%s:%d", x.ID, len(x.Messages)))
	}
	if got, want := strings.Join(ids, " "), root+":1 "+child+":1"; got != want {
		t.Errorf("export --all: sessions %s, want %s (id order, with their messages)", got, want)
	}
	var lineage struct {
		MessageCount int               `json:"message_count"`
		Segments     []json.RawMessage `json:"segments"`
		Messages     []map[string]any  `json:"messages"`
	}
	if err := json.Unmarshal([]byte(must("export", "--session", child, "--lineage", "--format", "json")), &[]any{&lineage}); err != nil {
		t.Fatal(err)
	}
	if lineage.MessageCount != 2 || len(lineage.Segments) != 2 || len(lineage.Messages) != 2 {
		t.Errorf("export --lineage: message_count %d, %d segments, %d messages; want 2, 2, 2", lineage.MessageCount, len(lineage.Segments), len(lineage.Messages))
	}
	other := testenv.Postgres(t)
	if out, errOut, code := cli(t, other, "", "import", file, "--json"); code != 0 || !strings.Contains(out, `"imported": 2`) {
		t.Fatalf("import into a second database: exit %d: %s\n%s", code, errOut, out)
	}
	if again := mustCLI(t, other, "export", "--all"); again != string(b) {
		t.Errorf("export → import → export differs:\n%s\n---\n%s", b, again)
	}

	if out := must("clear", root, "--yes"); out != "cleared "+root+": 1 messages deleted\n" {
		t.Errorf("clear printed %q", out)
	}
	if out := must("prune", "--older-than", "1d", "--dry-run", "--json"); !strings.Contains(out, `"dry_run": true`) {
		t.Errorf("prune --dry-run --json = %s", out)
	}

	var rep map[string]any
	if err := json.Unmarshal([]byte(must("bench", "--sessions", "2", "--messages", "6", "--searches", "1", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep["messages"] != 6.0 || rep["errors"] != 0.0 || rep["store"] != "database server" {
		t.Errorf("bench --json = %v", rep)
	}
}

// TestPostgresReadCommandsOpenReadOnly checks that the read commands open
// PostgreSQL read-only: on a database without the schema they create
// nothing and name init and doctor --fix; on one that lacks a migration
// they refuse rather than migrate it; on a current one they read.
func TestPostgresReadCommandsOpenReadOnly(t *testing.T) {
	db := testenv.Postgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	reads := [][]string{{"list"}, {"search", "docker"}, {"stats"}, {"export", "--all"}}
	for _, args := range reads {
		_, errOut, code := cli(t, db, "", args...)
		if code != exitError {
			t.Errorf("%s on an empty database: exit %d, want %d", args[0], code, exitError)
		}
		oneLine(t, errOut, "holds no sessiondb schema; create it with `sessiondb --db URL init` (or `sessiondb doctor --fix`)")
	}
	if n := count("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"); n != 0 {
		t.Fatalf("read commands created %d tables", n)
	}

	mustCLI(t, db, "new", "--source", "cli", "--id", "s1")
	mustCLI(t, db, "append", "s1", "--role", "user", "--content", "docker compose up")
	for _, args := range append(reads, []string{"show", "s1"}, []string{"lineage", "s1"}) {
		out, errOut, code := cli(t, db, "", args...)
		if code != 0 || out == "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", args[0], code, out, errOut)
		}
	}
	if out := mustCLI(t, db, "search", "docker", "--json"); !strings.Contains(out, "s1") {
		t.Errorf("search found nothing: %s", out)
	}

	latest := count("SELECT max(version) FROM schema_migrations")
	if _, err := conn.Exec(ctx, "DELETE FROM schema_migrations WHERE version = $1", latest); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := cli(t, db, "", "list")
	if code == 0 {
		t.Error("list on a database lacking a migration succeeded")
	}
	oneLine(t, errOut, "run `sessiondb --db URL init` or `sessiondb doctor --fix` to upgrade it")
	if n := count("SELECT count(*) FROM schema_migrations WHERE version = $1", latest); n != 0 {
		t.Error("list migrated the database")
	}
}
