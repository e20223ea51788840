package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite"
)

func TestSyncCopiesOnceThenNothing(t *testing.T) {
	url := testenv.Postgres(t)
	fixture := testenv.Shared("fixtures", "hermes-v23.db")
	out := mustCLI(t, fixture, "sync", "--to", url, "--origin", "host-a")
	if !strings.Contains(out, "origin host-a: 50 sessions, 653 messages") || !strings.Contains(out, "0 conflicts") {
		t.Errorf("first sync: %q", out)
	}
	out = mustCLI(t, fixture, "sync", "--from", fixture, "--to", url, "--origin", "host-a", "--json")
	var rep struct {
		Sessions, Messages, Usage, Prompts int64
		Conflicts                          []any
		HighWaterMark                      int64 `json:"high_water_mark"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if rep.Sessions != 0 || rep.Messages != 0 || rep.Usage != 0 || rep.Prompts != 0 || len(rep.Conflicts) != 0 || rep.HighWaterMark != 653 {
		t.Errorf("second sync: %+v, want nothing copied up to mark 653", rep)
	}
	out = mustCLI(t, url, "sync", "--from", fixture, "--origin", "host-b")
	if got := strings.Count(out, "conflict: session "); got != 50 || !strings.Contains(out, "50 conflicts") {
		t.Errorf("another origin: %d conflict lines in %q, want 50", got, out)
	}
}

func TestSyncErrorsAreOneLine(t *testing.T) {
	fixture := testenv.Shared("fixtures", "hermes-v23.db")
	for _, tt := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no target", []string{"sync"}, exitUsage, "missing --to"},
		{"not a URL", []string{"sync", "--to", "/tmp/x.db"}, exitUsage, "not a postgres:// URL"},
		{"bad URL", []string{"sync", "--to", "postgres://u:secret@host:notaport/db"}, exitUsage, "cannot read the connection URL"},
		// EUNAVAILABLE: its own exit status where main maps one (branch cli).
		{"unreachable server", []string{"sync", "--to", "postgres://u:secret@127.0.0.1:1/db?connect_timeout=2"}, -1, "cannot connect"},
		{"missing source", []string{"sync", "--from", "/nonexistent/state.db", "--to", "postgres://u@127.0.0.1:1/db"}, exitError, "no database at /nonexistent/state.db"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := cli(t, fixture, "", tt.args...)
			if tt.code == -1 && code != exitOK && code != exitUsage {
				tt.code = code
			}
			if code != tt.code || !strings.Contains(errOut, tt.err) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tt.code, errOut, tt.err)
			}
			if strings.Count(strings.SplitN(errOut, "\n\n", 2)[0], "\n") > 1 {
				t.Errorf("error is not one line: %q", errOut)
			}
			if strings.Contains(errOut, "secret") {
				t.Errorf("the password shows: %q", errOut)
			}
		})
	}
}

// pgContents is a digest of every table sync writes, in a fixed order,
// without PostgreSQL's own ids and the sync times.
func pgContents(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var out []string
	for _, q := range []string{
		"SELECT count(*)::text || ' ' || md5(COALESCE(string_agg(to_jsonb(s)::text, E'\\n' ORDER BY origin, id), '')) FROM sessions s",
		"SELECT count(*)::text || ' ' || md5(COALESCE(string_agg((to_jsonb(m) - 'id')::text, E'\\n' ORDER BY origin, origin_id), '')) FROM messages m",
		"SELECT count(*)::text || ' ' || md5(COALESCE(string_agg(to_jsonb(u)::text, E'\\n' ORDER BY session_id, model, task), '')) FROM session_model_usage u",
		"SELECT count(*)::text || ' ' || md5(COALESCE(string_agg(to_jsonb(p)::text, E'\\n' ORDER BY hash), '')) FROM system_prompts p",
		"SELECT count(*)::text || ' ' || md5(COALESCE(string_agg(to_jsonb(x)::text, E'\\n' ORDER BY origin, session_id), '')) FROM sync_sessions x",
		"SELECT string_agg(origin || ' ' || message_hw, ',' ORDER BY origin) FROM sync_origins",
	} {
		var s string
		if err := conn.QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n")
}

func TestSyncKilledAndRunAgain(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.Open(src, sqlite.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	const sessions, per = 40, 500
	for i := range sessions {
		id := fmt.Sprintf("k-%03d", i)
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli", SystemPrompt: "be brief"}); err != nil {
			t.Fatal(err)
		}
		ms := make([]sessiondb.NewMessage, per)
		for j := range ms {
			ms[j] = sessiondb.NewMessage{SessionID: id, Role: sessiondb.RoleUser, Content: fmt.Sprintf("message %d: deploy 项目", j)}
		}
		if _, err := db.AppendMessages(ctx, id, ms); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	want := testenv.Postgres(t)
	mustCLI(t, src, "sync", "--to", want, "--origin", "h", "--batch", "500")

	url := testenv.Postgres(t)
	// The test binary stands in for sessiondb (TestMain, benchWorkerEnv).
	cmd := exec.Command(os.Args[0], "sync", "--from", src, "--to", url, "--origin", "h", "--batch", "500")
	cmd.Env = append(os.Environ(), benchWorkerEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var hw int64
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		err := conn.QueryRow(ctx, "SELECT COALESCE((SELECT message_hw FROM sync_origins WHERE origin = 'h'), 0)").Scan(&hw)
		if err == nil && hw > 0 {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	t.Logf("killed with messages up to %d of %d copied", hw, sessions*per)
	mustCLI(t, src, "sync", "--to", url, "--origin", "h", "--batch", "500")
	if got, want := pgContents(t, url), pgContents(t, want); got != want {
		t.Errorf("after kill -9 and a second run:\n%s\nwant (uninterrupted)\n%s", got, want)
	}
	out := mustCLI(t, src, "sync", "--to", url, "--origin", "h")
	if !strings.Contains(out, ": 0 sessions, 0 messages, 0 usage rows, 0 prompts copied") {
		t.Errorf("third run: %q, want nothing copied", out)
	}
}
