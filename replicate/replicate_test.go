package replicate_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // plain "sqlite3" connections: the tests' own view of a source

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/replicate"
	"github.com/sessiondb/sessiondb/sqlite"
)

// MustOpenPG opens a fresh database of the test server.
func MustOpenPG(tb testing.TB) (*postgres.DB, string) {
	tb.Helper()
	url := testenv.Postgres(tb)
	db, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db, url
}

func mustSync(tb testing.TB, from string, to *postgres.DB, o replicate.Options) *replicate.Report {
	tb.Helper()
	rep, err := replicate.Sync(context.Background(), from, to, o)
	if err != nil {
		tb.Fatalf("sync %s: %v", from, err)
	}
	return rep
}

// source is a writable state.db the test changes between syncs.
type source struct {
	path string
	db   *sqlite.DB
	raw  *sql.DB // a plain connection, for what Hermes does that the Store does not (compaction)
}

// newSource creates a state.db with sessions sessions of perSession
// messages each, ids prefixed with tag.
func newSource(tb testing.TB, tag string, sessions, perSession int) *source {
	tb.Helper()
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "state.db")
	db, err := sqlite.Open(path, sqlite.Options{Synchronous: "NORMAL"})
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		tb.Fatal(err)
	}
	s := &source{path: path, db: db, raw: raw}
	tb.Cleanup(func() { raw.Close(); db.Close() })
	for i := range sessions {
		id := fmt.Sprintf("%s-%04d", tag, i)
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli", Model: "gpt-x", SystemPrompt: "You are " + tag}); err != nil {
			tb.Fatal(err)
		}
		s.append(tb, id, perSession)
	}
	return s
}

func (s *source) append(tb testing.TB, id string, n int) {
	tb.Helper()
	ms := make([]sessiondb.NewMessage, n)
	for j := range ms {
		role := sessiondb.RoleUser
		if j%2 == 1 {
			role = sessiondb.RoleAssistant
		}
		ms[j] = sessiondb.NewMessage{SessionID: id, Role: role, Content: fmt.Sprintf("message %d of %s: deploy the 项目 to docker", j, id)}
	}
	if _, err := s.db.AppendMessages(context.Background(), id, ms); err != nil {
		tb.Fatal(err)
	}
}

func (s *source) exec(tb testing.TB, q string, args ...any) {
	tb.Helper()
	if _, err := s.raw.Exec(q, args...); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}

// canon is a value's comparable form: numbers as float64 (SQLite may keep
// an integer in a REAL column), text quoted, bytes in hex.
func canon(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return strconv.FormatFloat(float64(x), 'g', -1, 64)
	case int32:
		return strconv.FormatFloat(float64(x), 'g', -1, 64)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return strconv.Quote(x)
	case []byte:
		return fmt.Sprintf("x'%x'", x)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprintf("%T:%v", v, v)
}

// unescape reverses postgres' NUL escaping (postgres/text.go).
func unescape(v any) any {
	s, ok := v.(string)
	if !ok || !strings.Contains(s, "\ue000") {
		return v
	}
	return strings.NewReplacer("\ue0001", "\ue000", "\ue0000", "\x00").Replace(s)
}

// dumpQueries select every copied row in a fixed order; %s is where the
// origin condition goes.
type dumpQuery struct{ table, sqlite, pg string }

func dumpQueries() []dumpQuery {
	cols := func(cs []string) string {
		q := make([]string, len(cs))
		for i, c := range cs {
			q[i] = `"` + c + `"`
		}
		return strings.Join(q, ", ")
	}
	msgPG := strings.Replace(cols(postgres.MessageColumns), `"id"`, `origin_id`, 1)
	usage := cols(postgres.UsageColumns)
	return []dumpQuery{
		{"sessions", "SELECT " + cols(postgres.SessionColumns) + " FROM sessions ORDER BY id",
			"SELECT " + cols(postgres.SessionColumns) + " FROM sessions WHERE origin = $1 ORDER BY id"},
		{"messages", "SELECT " + cols(postgres.MessageColumns) + " FROM messages ORDER BY id",
			"SELECT " + msgPG + " FROM messages WHERE origin = $1 ORDER BY origin_id"},
		{"usage", "SELECT " + usage + " FROM session_model_usage ORDER BY session_id, model, billing_provider, billing_base_url, billing_mode, task",
			"SELECT u." + strings.ReplaceAll(usage, ", ", ", u.") + " FROM session_model_usage u JOIN sessions s ON s.id = u.session_id AND s.origin = $1 ORDER BY u.session_id, u.model, u.billing_provider, u.billing_base_url, u.billing_mode, u.task"},
		{"prompts", "SELECT hash, prompt FROM system_prompts WHERE hash IN (SELECT system_prompt_hash FROM sessions) ORDER BY hash",
			"SELECT hash, prompt FROM system_prompts WHERE hash IN (SELECT system_prompt_hash FROM sessions WHERE origin = $1) ORDER BY hash"},
	}
}

// sqliteDump is every copied row of the state.db at path (at the newest
// schema), one line a row.
func sqliteDump(tb testing.TB, path string) map[string][]string {
	tb.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	out := map[string][]string{}
	for _, q := range dumpQueries() {
		rows, err := db.Query(q.sqlite)
		if err != nil {
			tb.Fatalf("%s: %v", q.sqlite, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				tb.Fatal(err)
			}
			out[q.table] = append(out[q.table], line(cols, vals))
		}
		rows.Close()
	}
	return out
}

func line(cols []string, vals []any) string {
	var b strings.Builder
	for i, v := range vals {
		fmt.Fprintf(&b, "%s=%s ", cols[i], canon(v))
	}
	return b.String()
}

// pgDump is every row of origin in the database, one line a row.
func pgDump(tb testing.TB, db *postgres.DB, origin string) map[string][]string {
	tb.Helper()
	ctx := context.Background()
	out := map[string][]string{}
	for _, q := range dumpQueries() {
		rows, err := db.Pool().Query(ctx, q.pg, origin)
		if err != nil {
			tb.Fatalf("%s: %v", q.pg, err)
		}
		var cols []string
		for _, f := range rows.FieldDescriptions() {
			cols = append(cols, f.Name)
		}
		if q.table == "messages" {
			cols[0] = "id"
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				tb.Fatal(err)
			}
			for i := range vals {
				vals[i] = unescape(vals[i])
			}
			out[q.table] = append(out[q.table], line(cols, vals))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// syncStateDump is the origin's sync state, without times.
func syncStateDump(tb testing.TB, db *postgres.DB, origin string) string {
	tb.Helper()
	st, err := db.SyncState(context.Background(), origin)
	if err != nil {
		tb.Fatal(err)
	}
	ids := make([]string, 0, len(st.Sessions))
	for id := range st.Sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "hw=%d gen=%q\n", st.MessageHW, st.SourceGeneration)
	for _, id := range ids {
		fmt.Fprintf(&b, "%s %+v\n", id, st.Sessions[id])
	}
	return b.String()
}

func sameRows(tb testing.TB, what string, got, want map[string][]string) {
	tb.Helper()
	for _, table := range []string{"sessions", "messages", "usage", "prompts"} {
		g, w := got[table], want[table]
		if len(g) != len(w) {
			tb.Errorf("%s: %s has %d rows, want %d", what, table, len(g), len(w))
			continue
		}
		for i := range g {
			if g[i] != w[i] {
				tb.Errorf("%s: %s row %d:\n got %s\nwant %s", what, table, i, g[i], w[i])
				break
			}
		}
	}
}

// upgraded returns path itself when it is at the newest schema, else an
// upgraded copy: what a sync reads.
func upgraded(tb testing.TB, path string) string {
	tb.Helper()
	db, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	if err == nil {
		db.Close()
		return path
	}
	if !errors.Is(err, sqlite.ErrOlderSchema) {
		tb.Fatal(err)
	}
	dst := filepath.Join(tb.TempDir(), "upgraded.db")
	if err := sqlite.UpgradedCopy(context.Background(), path, dst); err != nil {
		tb.Fatal(err)
	}
	return dst
}

func fixtures(tb testing.TB) []string {
	tb.Helper()
	paths, err := filepath.Glob(testenv.Shared("fixtures", "hermes-v*.db"))
	if err != nil || len(paths) == 0 {
		testenv.Missing(tb, fmt.Sprintf("no Hermes fixtures under %s (%v)", testenv.Shared("fixtures"), err))
	}
	return paths
}

func TestEveryFixtureCopiesEveryColumn(t *testing.T) {
	for _, path := range fixtures(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			db, _ := MustOpenPG(t)
			rep := mustSync(t, path, db, replicate.Options{Origin: "host-a", Batch: 200})
			want := sqliteDump(t, upgraded(t, path))
			if got := rep.Messages; got != int64(len(want["messages"])) {
				t.Errorf("report: %d messages, want %d", got, len(want["messages"]))
			}
			if got := rep.Sessions; got != int64(len(want["sessions"])) {
				t.Errorf("report: %d sessions, want %d", got, len(want["sessions"]))
			}
			sameRows(t, "first sync", pgDump(t, db, "host-a"), want)

			again := mustSync(t, path, db, replicate.Options{Origin: "host-a"})
			if !again.Empty() || again.Skipped != 0 {
				t.Errorf("second sync copied %+v, want nothing", again)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(before) != string(after) {
				t.Error("the source file changed")
			}
		})
	}
}

func TestIncrementalCopiesWhatChanged(t *testing.T) {
	ctx := context.Background()
	src := newSource(t, "inc", 6, 20)
	db, _ := MustOpenPG(t)
	o := replicate.Options{Origin: "laptop", Batch: 7}
	mustSync(t, src.path, db, o)

	// Hermes goes on: new messages, an ended and a retitled session,
	// pins, archives, token totals, and a compaction that deactivates
	// messages of a session; text with NUL and the escape character.
	src.append(t, "inc-0001", 5)
	if err := src.db.EndSession(ctx, "inc-0002", "user_exit"); err != nil {
		t.Fatal(err)
	}
	if err := src.db.SetTitle(ctx, "inc-0003", "Kubernetes migration"); err != nil {
		t.Fatal(err)
	}
	if err := src.db.SetPinned(ctx, "inc-0004", true); err != nil {
		t.Fatal(err)
	}
	if err := src.db.SetArchived(ctx, "inc-0005", true); err != nil {
		t.Fatal(err)
	}
	if err := src.db.UpdateTokenCounts(ctx, "inc-0000", sessiondb.TokenUpdate{InputTokens: 120, OutputTokens: 40, Model: "gpt-x", BillingProvider: "openai"}); err != nil {
		t.Fatal(err)
	}
	src.exec(t, "UPDATE messages SET active = 0, compacted = 1 WHERE session_id = 'inc-0004' AND id IN (SELECT id FROM messages WHERE session_id = 'inc-0004' ORDER BY id LIMIT 10)")
	src.exec(t, "UPDATE messages SET content = ? WHERE id = (SELECT MAX(id) FROM messages WHERE session_id = 'inc-0001')", "nul \x00 and \ue000 escape")

	rep := mustSync(t, src.path, db, o)
	if rep.Sessions != 6 || rep.Messages < 5+10 {
		t.Errorf("report %+v: want 6 sessions, at least 15 messages", rep)
	}
	sameRows(t, "after changes", pgDump(t, db, "laptop"), sqliteDump(t, src.path))
	if again := mustSync(t, src.path, db, o); !again.Empty() {
		t.Errorf("third sync copied %+v, want nothing", again)
	}
}

// TestInterruptedSyncConverges stops a first copy after each of several
// batches and runs it again: the database ends as an uninterrupted copy
// leaves it.
func TestInterruptedSyncConverges(t *testing.T) {
	src := newSource(t, "kill", 8, 40)
	want, _ := MustOpenPG(t)
	mustSync(t, src.path, want, replicate.Options{Origin: "h", Batch: 25})
	for _, n := range []int{1, 5, 12} {
		t.Run(fmt.Sprintf("after batch %d", n), func(t *testing.T) {
			db, _ := MustOpenPG(t)
			o := replicate.Options{Origin: "h", Batch: 25}
			stop := errors.New("stopped by the test")
			replicate.FailAfterBatch(&o, n, stop)
			if _, err := replicate.Sync(context.Background(), src.path, db, o); !errors.Is(err, stop) {
				t.Fatalf("sync: %v, want the test's stop", err)
			}
			mustSync(t, src.path, db, replicate.Options{Origin: "h", Batch: 25})
			sameRows(t, "resumed", pgDump(t, db, "h"), pgDump(t, want, "h"))
			if got, want := syncStateDump(t, db, "h"), syncStateDump(t, want, "h"); got != want {
				t.Errorf("sync state:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestMain makes the test binary the child process of
// TestKilledSyncConverges when SYNC_HELPER_FROM is set: it syncs that file
// into SYNC_HELPER_URL and exits.
func TestMain(m *testing.M) {
	if from := os.Getenv("SYNC_HELPER_FROM"); from != "" {
		os.Exit(helperSync(from, os.Getenv("SYNC_HELPER_URL")))
	}
	os.Exit(m.Run())
}

func helperSync(from, url string) int {
	db, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	if _, err := replicate.Sync(context.Background(), from, db, replicate.Options{Origin: "h", Batch: 200}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestKilledSyncConverges(t *testing.T) {
	src := newSource(t, "k9", 40, 500)
	want, _ := MustOpenPG(t)
	mustSync(t, src.path, want, replicate.Options{Origin: "h"})
	db, url := MustOpenPG(t)
	ctx := context.Background()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SYNC_HELPER_FROM="+src.path, "SYNC_HELPER_URL="+url)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once it committed some batches, before it is done.
	deadline := time.Now().Add(30 * time.Second)
	var hw int64
	for time.Now().Before(deadline) {
		err := db.Pool().QueryRow(ctx, "SELECT COALESCE((SELECT message_hw FROM sync_origins WHERE origin = 'h'), 0)").Scan(&hw)
		if err == nil && hw > 0 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	t.Logf("killed at message %d of 20000", hw)
	mustSync(t, src.path, db, replicate.Options{Origin: "h"})
	sameRows(t, "after kill -9", pgDump(t, db, "h"), pgDump(t, want, "h"))
	var n, distinct int64
	if err := db.Pool().QueryRow(ctx, "SELECT count(*), count(DISTINCT origin_id) FROM messages").Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != 20000 || distinct != 20000 {
		t.Errorf("%d messages (%d distinct), want 20000", n, distinct)
	}
}

func TestFollowCopiesNewWritesPromptly(t *testing.T) {
	src := newSource(t, "fol", 2, 3)
	db, _ := MustOpenPG(t)
	ctx, cancel := context.WithCancel(context.Background())
	passes := make(chan *replicate.Report, 16)
	done := make(chan error, 1)
	go func() {
		done <- replicate.Follow(ctx, src.path, db, replicate.Options{Origin: "f"}, 50*time.Millisecond, func(r *replicate.Report) { passes <- r })
	}()
	select {
	case <-passes:
	case err := <-done:
		t.Fatalf("follow ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no first pass")
	}
	count := func() (n int) {
		db.Pool().QueryRow(context.Background(), "SELECT count(*) FROM messages WHERE origin = 'f'").Scan(&n)
		return n
	}
	for round := range 3 {
		wrote := time.Now()
		src.append(t, "fol-0001", 1)
		want := 6 + round + 1
		for count() < want {
			if time.Since(wrote) > 10*time.Second {
				t.Fatalf("round %d: %d messages after 10 s, want %d", round, count(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("round %d: copied %v after the commit", round, time.Since(wrote).Round(time.Millisecond))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow: %v", err)
	}
	sameRows(t, "followed", pgDump(t, db, "f"), sqliteDump(t, src.path))
}

func TestTwoOriginsShareOneDatabase(t *testing.T) {
	a := newSource(t, "alpha", 3, 10)
	b := newSource(t, "beta", 4, 5)
	db, _ := MustOpenPG(t)
	mustSync(t, a.path, db, replicate.Options{Origin: "host-a"})
	mustSync(t, b.path, db, replicate.Options{Origin: "host-b"})
	sameRows(t, "host-a", pgDump(t, db, "host-a"), sqliteDump(t, a.path))
	sameRows(t, "host-b", pgDump(t, db, "host-b"), sqliteDump(t, b.path))

	// The same file under a third origin: every session id is taken.
	rep := mustSync(t, a.path, db, replicate.Options{Origin: "host-c"})
	if len(rep.Conflicts) != 3 || rep.Sessions != 0 || rep.Messages != 0 {
		t.Errorf("host-c: %+v, want 3 conflicts and nothing copied", rep)
	}
	for _, c := range rep.Conflicts {
		if c.Origin != "host-a" {
			t.Errorf("conflict %+v, want origin host-a", c)
		}
	}
	sameRows(t, "host-a untouched", pgDump(t, db, "host-a"), sqliteDump(t, a.path))
	if again := mustSync(t, a.path, db, replicate.Options{Origin: "host-c"}); len(again.Conflicts) != 3 {
		t.Errorf("host-c again: %d conflicts, want 3 reported again", len(again.Conflicts))
	}
	// Once host-a's sessions are gone, host-c gets them, messages and all.
	if _, err := db.Pool().Exec(context.Background(), "DELETE FROM sessions WHERE origin = 'host-a'"); err != nil {
		t.Fatal(err)
	}
	a.append(t, "alpha-0000", 2)
	for range 2 {
		mustSync(t, a.path, db, replicate.Options{Origin: "host-c"})
	}
	sameRows(t, "host-c after the conflict", pgDump(t, db, "host-c"), sqliteDump(t, a.path))
	if again := mustSync(t, a.path, db, replicate.Options{Origin: "host-c"}); !again.Empty() {
		t.Errorf("host-c settled: %+v, want nothing", again)
	}
}

func TestDeletedSessionsKeptUnlessMirrored(t *testing.T) {
	ctx := context.Background()
	src := newSource(t, "del", 3, 4)
	db, _ := MustOpenPG(t)
	mustSync(t, src.path, db, replicate.Options{Origin: "d"})
	if _, err := src.db.DeleteSession(ctx, "del-0001"); err != nil {
		t.Fatal(err)
	}
	sessions := func() (n int) {
		db.Pool().QueryRow(ctx, "SELECT count(*) FROM sessions WHERE origin = 'd'").Scan(&n)
		return n
	}
	rep := mustSync(t, src.path, db, replicate.Options{Origin: "d"})
	if rep.Gone != 1 || sessions() != 3 {
		t.Errorf("kept: %+v, %d sessions; want 1 gone and 3 sessions kept", rep, sessions())
	}
	if again := mustSync(t, src.path, db, replicate.Options{Origin: "d"}); !again.Empty() {
		t.Errorf("again: %+v, want nothing", again)
	}
	// Mirroring deletes what is already gone, and a message deleted from a
	// session that remains.
	src.exec(t, "DELETE FROM messages WHERE id = (SELECT MAX(id) FROM messages WHERE session_id = 'del-0002')")
	src.exec(t, "UPDATE sessions SET message_count = message_count - 1 WHERE id = 'del-0002'")
	rep = mustSync(t, src.path, db, replicate.Options{Origin: "d", MirrorDeletes: true})
	if sessions() != 2 || rep.Deleted != 2 {
		t.Errorf("mirrored: %+v, %d sessions; want 2 sessions, 2 deleted", rep, sessions())
	}
	sameRows(t, "mirrored", pgDump(t, db, "d"), sqliteDump(t, src.path))
}

func TestSourceWrittenDuringSync(t *testing.T) {
	src := newSource(t, "live", 5, 50)
	db, _ := MustOpenPG(t)
	ctx, cancel := context.WithCancel(context.Background())
	wrote := make(chan error, 1)
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			id := fmt.Sprintf("live-%04d", i%5)
			if _, err := src.db.AppendMessage(context.Background(), sessiondb.NewMessage{SessionID: id, Role: sessiondb.RoleUser, Content: fmt.Sprint("live ", i)}); err != nil {
				wrote <- err
				return
			}
			if i%20 == 0 {
				if err := src.db.SetPinned(context.Background(), id, i%40 == 0); err != nil {
					wrote <- err
					return
				}
			}
		}
		wrote <- nil
	}()
	for range 5 {
		mustSync(t, src.path, db, replicate.Options{Origin: "live", Batch: 30})
	}
	cancel()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	mustSync(t, src.path, db, replicate.Options{Origin: "live", Batch: 30})
	sameRows(t, "after concurrent writes", pgDump(t, db, "live"), sqliteDump(t, src.path))
}

func TestAnotherFileUnderTheSameOriginIsRefused(t *testing.T) {
	a := newSource(t, "one", 1, 3)
	b := newSource(t, "two", 1, 3)
	db, _ := MustOpenPG(t)
	mustSync(t, a.path, db, replicate.Options{Origin: "same"})
	_, err := replicate.Sync(context.Background(), b.path, db, replicate.Options{Origin: "same"})
	if sessiondb.ErrorCode(err) != sessiondb.ECONFLICT {
		t.Fatalf("sync of another file under the same origin: %v, want ECONFLICT", err)
	}
}

func TestOneSyncPerOrigin(t *testing.T) {
	src := newSource(t, "one", 1, 3)
	db, _ := MustOpenPG(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan *replicate.Report, 8)
	done := make(chan error, 1)
	go func() {
		done <- replicate.Follow(ctx, src.path, db, replicate.Options{Origin: "o"}, 0, func(r *replicate.Report) { first <- r })
	}()
	select {
	case <-first:
	case err := <-done:
		t.Fatalf("follow: %v", err)
	}
	replicate.SetLockWait(300 * time.Millisecond)
	defer replicate.SetLockWait(15 * time.Second)
	_, err := replicate.Sync(context.Background(), src.path, db, replicate.Options{Origin: "o"})
	if sessiondb.ErrorCode(err) != sessiondb.EBUSY || !strings.Contains(err.Error(), "server process") {
		t.Fatalf("second sync of the origin: %v, want EBUSY naming the holder", err)
	}
	if _, err := replicate.Sync(context.Background(), src.path, db, replicate.Options{Origin: "other"}); sessiondb.ErrorCode(err) == sessiondb.EBUSY {
		t.Fatalf("a sync of another origin: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
