package sqlite_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite"
)

// fileState is what a read must leave as it was.
type fileState struct {
	hash  string
	mtime time.Time
	mode  os.FileMode
}

func stateOf(tb testing.TB, path string) fileState {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fileState{fileHash(tb, path), fi.ModTime(), fi.Mode()}
}

// dirEntries lists the names in dir.
func dirEntries(tb testing.TB, dir string) []string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// roDB opens path through a read-only connection that the test closes.
func roDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func openRO(path string) (*sqlite.DB, error) {
	return sqlite.Open(path, sqlite.Options{ReadOnly: true, Now: func() time.Time { return fixedNow }})
}

// currentDB writes a database at the current schema with one session
// ("s") holding one message, and closes it.
func currentDB(tb testing.TB, path string) {
	tb.Helper()
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "deploy with docker"}); err != nil {
		tb.Fatal(err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
}

func TestReadOnlyOpen(t *testing.T) {
	t.Run("a missing file is ErrNoDatabase naming the path and the fixes, and nothing is created", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "hermes", "state.db")
		_, err := openRO(path)
		checkOpenError(t, err, path, sessiondb.ENOTFOUND, "sessiondb init", "--db PATH", "HERMES_HOME")
		if !errors.Is(err, sqlite.ErrNoDatabase) {
			t.Errorf("error %v is not ErrNoDatabase", err)
		}
		if got := dirEntries(t, dir); len(got) != 0 {
			t.Errorf("a read-only open created %v", got)
		}
	})

	t.Run("a current file is read as it is and never written", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		currentDB(t, path)
		if err := os.Chmod(path, 0o640); err != nil { // a writer would tighten it to 0600
			t.Fatal(err)
		}
		before := stateOf(t, path)
		cookie := count(t, roDB(t, path), "PRAGMA schema_version")

		db, err := openRO(path)
		if err != nil {
			t.Fatal(err)
		}
		if !db.ReadOnly() || db.Immutable() {
			t.Errorf("ReadOnly() = %v, Immutable() = %v; want true, false", db.ReadOnly(), db.Immutable())
		}
		if got := db.JournalMode(); got != "wal" {
			t.Errorf("journal mode %q, want wal", got)
		}
		if rows, total, err := db.ListSessions(ctx, sessiondb.ListOptions{}); err != nil || total != 1 || len(rows) != 1 {
			t.Errorf("list: %d of %d sessions, %v; want 1", len(rows), total, err)
		}
		if hits, err := db.Search(ctx, "docker", sessiondb.SearchOptions{}); err != nil || len(hits) != 1 {
			t.Errorf("search: %d hits, %v; want 1", len(hits), err)
		}
		if msgs, err := db.Messages(ctx, "s", sessiondb.MessageFilter{}); err != nil || len(msgs) != 1 {
			t.Errorf("messages: %d, %v; want 1", len(msgs), err)
		}
		writes := map[string]func() error{
			"create session": func() error {
				_, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "t", Source: "cli"})
				return err
			},
			"append": func() error {
				_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "more"})
				return err
			},
			"rename":     func() error { return db.SetTitle(ctx, "s", "title") },
			"checkpoint": func() error { return db.Checkpoint(ctx) },
			"backfill":   func() error { return db.RebuildFTS(ctx, nil) },
		}
		for name, write := range writes {
			err := write()
			if got := sessiondb.ErrorCode(err); got != sessiondb.EPERM || !strings.Contains(fmt.Sprint(err), "read-only") {
				t.Errorf("%s on a read-only handle: %v (code %q), want EPERM saying it is read-only", name, err, got)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if after := stateOf(t, path); after != before {
			t.Errorf("the file changed: %+v, was %+v", after, before)
		}
		if got := count(t, roDB(t, path), "PRAGMA schema_version"); got != cookie {
			t.Errorf("schema cookie %d, was %d", got, cookie)
		}
	})

	t.Run("an older schema is refused with one line saying how to upgrade", func(t *testing.T) {
		for _, name := range []string{"hermes-v01.db", "hermes-v11.db", "hermes-v23.db"} {
			t.Run(name, func(t *testing.T) {
				path := fixture(t, name)
				before := stateOf(t, path)
				_, err := openRO(path)
				checkOpenError(t, err, path, sessiondb.ECONFLICT, "is at schema", "run `sessiondb init` to upgrade it", "Hermes does the same at its next start")
				if strings.Contains(fmt.Sprint(err), "\n") {
					t.Errorf("error spans lines: %q", err)
				}
				if after := stateOf(t, path); after != before {
					t.Errorf("the file changed")
				}
				if slices.Contains(dirEntries(t, filepath.Dir(path)), "state.db-journal") {
					t.Errorf("a rollback journal was left behind")
				}
			})
		}
	})

	t.Run("a legacy search layout at schema 30 is read", func(t *testing.T) {
		path := fixture(t, "hermes-v11.db")
		w := MustOpenPath(t, path)
		want, err := w.Search(ctx, "docker", sessiondb.SearchOptions{Limit: 1000})
		if err != nil || len(want) == 0 {
			t.Fatalf("writer search: %d hits, %v", len(want), err)
		}
		w.Close()
		db, err := openRO(path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		got, err := db.Search(ctx, "docker", sessiondb.SearchOptions{Limit: 1000})
		if err != nil || len(got) != len(want) {
			t.Errorf("read-only search: %d hits, %v; want %d", len(got), err, len(want))
		}
	})

	t.Run("an empty file is not a database yet", func(t *testing.T) {
		dir := t.TempDir()
		zero := filepath.Join(dir, "zero.db")
		if err := os.WriteFile(zero, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		noTables := filepath.Join(dir, "empty.db")
		raw := rawDB(t, noTables)
		if _, err := raw.Exec("PRAGMA user_version = 7"); err != nil { // a header, no table
			t.Fatal(err)
		}
		raw.Close()
		for _, path := range []string{zero, noTables} {
			before := stateOf(t, path)
			_, err := openRO(path)
			checkOpenError(t, err, path, sessiondb.ENOTFOUND, "sessiondb init")
			if !errors.Is(err, sqlite.ErrNoDatabase) {
				t.Errorf("error %v is not ErrNoDatabase", err)
			}
			if after := stateOf(t, path); after != before {
				t.Errorf("%s changed", filepath.Base(path))
			}
		}
	})
}

// TestWriterOpenOfCurrentFileWritesNothing: once a file is at the current
// layout, opening it for writing again takes no write transaction: the
// schema cookie, the file's bytes and mtime, its WAL and the data_version
// another connection sees all stay as they were.
func TestWriterOpenOfCurrentFileWritesNothing(t *testing.T) {
	cases := []string{"", "hermes-v01.db", "hermes-v07.db", "hermes-v10.db", "hermes-v11.db", "hermes-v23.db", "hermes-v23-nocjk.db"}
	for _, name := range cases {
		label := name
		if label == "" {
			label = "created by sessiondb"
		}
		t.Run(label, func(t *testing.T) {
			var path string
			if name == "" {
				path = filepath.Join(t.TempDir(), "state.db")
				currentDB(t, path)
			} else {
				path = fixture(t, name)
				db, err := sqlite.Open(path, sqlite.Options{})
				if err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
			obs := roDB(t, path)
			conn, err := obs.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			read := func(pragma string) int64 {
				var n int64
				if err := conn.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			cookie, dataVersion := read("schema_version"), read("data_version")
			before, walBefore := stateOf(t, path), fileHash(t, path+"-wal")

			db, err := sqlite.Open(path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if got := read("schema_version"); got != cookie {
				t.Errorf("schema cookie %d after the second open, was %d", got, cookie)
			}
			if got := read("data_version"); got != dataVersion {
				t.Errorf("another connection saw a commit: data_version %d, was %d", got, dataVersion)
			}
			if after := stateOf(t, path); after != before {
				t.Errorf("the file changed: %+v, was %+v", after, before)
			}
			if got := fileHash(t, path+"-wal"); got != walBefore {
				t.Errorf("the WAL changed")
			}
		})
	}
}

// foreignFile writes a SQLite database of another application at path,
// made by the statements, with mode 0644, and closes it.
func foreignFile(tb testing.TB, path string, stmts ...string) {
	tb.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
	}
	if err := raw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func TestForeignFileRefused(t *testing.T) {
	notes := []string{
		"CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
		"CREATE TABLE tags (note INTEGER, tag TEXT)",
		"INSERT INTO notes (body) VALUES ('remember the milk')",
		"PRAGMA application_id = 305419896",
	}
	for _, tc := range []struct {
		name, file string
		setup      func(t *testing.T, path string)
		phrases    []string
	}{
		{"another application's notes", "notes.db", func(t *testing.T, path string) { foreignFile(t, path, notes...) },
			[]string{"tables: notes, tags", "application_id 0x12345678"}},
		{"the same in WAL mode, named state.db", "state.db", func(t *testing.T, path string) {
			foreignFile(t, path, append([]string{"PRAGMA journal_mode = WAL"}, notes...)...)
		}, []string{"tables: notes, tags", "application_id 0x12345678"}},
		{"a chat application's sessions and messages", "chat.db", func(t *testing.T, path string) {
			foreignFile(t, path,
				"CREATE TABLE sessions (id TEXT PRIMARY KEY, user TEXT)",
				"CREATE TABLE messages (id INTEGER PRIMARY KEY, session TEXT, body TEXT)")
		}, []string{"a sessions table without source, started_at", "a messages table without session_id, role, content, timestamp"}},
		{"Hermes tables under another application_id", "state.db", func(t *testing.T, path string) {
			src := fixture(t, "hermes-v23.db")
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			foreignFile(t, path, "PRAGMA application_id = 1196444487") // GeoPackage's "GPKG"
		}, []string{"application_id 0x47504b47"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			tc.setup(t, path)
			before, entries := stateOf(t, path), dirEntries(t, dir)
			for _, opts := range []sqlite.Options{{}, {NoCreate: true}, {ReadOnly: true}} {
				db, err := sqlite.Open(path, opts)
				if err == nil {
					db.Close()
				}
				checkOpenError(t, err, path, sessiondb.ECONFLICT, append([]string{"a SQLite database of another application", "sessiondb will not change it"}, tc.phrases...)...)
				if !errors.Is(err, sqlite.ErrForeign) {
					t.Errorf("error %v is not ErrForeign", err)
				}
			}
			d, err := sqlite.Diagnose(ctx, path, false)
			if err != nil {
				t.Fatal(err)
			}
			if d.Healthy {
				t.Errorf("doctor calls another application's file healthy")
			}
			found := false
			for _, c := range d.Checks {
				if c.Name == "schema" && c.Status == sqlite.CheckFail && strings.Contains(c.Detail, "not a Hermes state.db") {
					found = true
				}
				if strings.Contains(c.Fix, "recover") || strings.Contains(c.Fix, "init") {
					t.Errorf("doctor advises %q for another application's file", c.Fix)
				}
			}
			if !found {
				t.Errorf("doctor does not say the file is not a Hermes state.db: %+v", d.Checks)
			}
			if after := stateOf(t, path); after != before {
				t.Errorf("the file changed: %+v, was %+v", after, before)
			}
			if got := dirEntries(t, dir); !slices.Equal(got, entries) {
				t.Errorf("files next to it: %v, were %v", got, entries)
			}
		})
	}
}

// TestNotForeign: an empty SQLite file and a partly created Hermes file
// (Hermes creates its tables one statement at a time) are initialised.
func TestNotForeign(t *testing.T) {
	for name, stmts := range map[string][]string{
		"no tables":     {"PRAGMA user_version = 1"},
		"partly made":   {"CREATE TABLE schema_version (version INTEGER NOT NULL)", "CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT)"},
		"sessions only": {"CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL)"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "empty.db")
			foreignFile(t, path, stmts...)
			db := MustOpenPath(t, path)
			if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Environment of the re-executed read-only reader (TestReadOnlyHelper).
const envReadOnlyReader = "SESSIONDB_TEST_READONLY_READER"

// TestReadOnlyHelper is not a test: runUnprivileged runs the test binary
// again as an unprivileged user with this function selected. It opens the
// database read-only, lists its sessions and prints the outcome as JSON.
func TestReadOnlyHelper(t *testing.T) {
	path := os.Getenv(envReadOnlyReader)
	if path == "" {
		return
	}
	json.NewEncoder(os.Stdout).Encode(readOnlyRead(path))
}

type readOnlyReadResult struct {
	UID       int    `json:"uid"`
	Immutable bool   `json:"immutable"`
	Sessions  int    `json:"sessions"`
	Code      string `json:"code"`
	Message   string `json:"message"`
}

func readOnlyRead(path string) readOnlyReadResult {
	r := readOnlyReadResult{UID: os.Geteuid()}
	db, err := openRO(path)
	if err == nil {
		r.Immutable = db.Immutable()
		_, r.Sessions, err = db.ListSessions(ctx, sessiondb.ListOptions{})
		db.Close()
	}
	if err != nil {
		r.Code, r.Message = sessiondb.ErrorCode(err), err.Error()
	}
	return r
}

// unprivilegedDir makes a directory an unprivileged reader can search but
// not write; run reads path there as that reader (nobody when the tests
// run as root, else this user, with the directory made 0555).
func unprivilegedDir(t *testing.T) (dir string, run func(path string) readOnlyReadResult) {
	dir, err := os.MkdirTemp("", "sessiondb-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Chmod(dir, 0o755)
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		return dir, func(path string) readOnlyReadResult {
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(dir, 0o755)
			return readOnlyRead(path)
		}
	}
	const nobody = 65534
	bin := filepath.Join(dir, "sqlite.test")
	copyFileMode(t, os.Args[0], bin, 0o755)
	return dir, func(path string) readOnlyReadResult {
		cmd := exec.Command(bin, "-test.run=^TestReadOnlyHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), envReadOnlyReader+"="+path, "HOME="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if errors.Is(err, syscall.EPERM) {
			testenv.Missing(t, "cannot run the reader as an unprivileged user (nobody): "+err.Error())
		}
		if err != nil {
			t.Fatalf("reader: %v\n%s\n%s", err, out, stderr.String())
		}
		line, _, _ := bytes.Cut(out, []byte("\n"))
		var r readOnlyReadResult
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("reader output %q: %v", out, err)
		}
		if r.UID != nobody {
			t.Fatalf("reader ran as uid %d", r.UID)
		}
		return r
	}
}

// TestReadOnlyWithoutShm: a WAL file in a directory the reader cannot
// write has no -shm SQLite can use. It is read as an immutable snapshot
// when nothing is in its WAL and no process has it open, and refused with
// the reason otherwise; the file is never changed.
func TestReadOnlyWithoutShm(t *testing.T) {
	dir, run := unprivilegedDir(t)
	path := filepath.Join(dir, "state.db")
	currentDB(t, path)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, path)

	t.Run("no process has it open: an immutable read", func(t *testing.T) {
		r := run(path)
		if r.Code != "" || !r.Immutable || r.Sessions != 1 {
			t.Errorf("read %+v, want an immutable read of 1 session", r)
		}
		if after := stateOf(t, path); after != before {
			t.Errorf("the file changed: %+v, was %+v", after, before)
		}
		if got := dirEntries(t, dir); slices.Contains(got, "state.db-wal") || slices.Contains(got, "state.db-shm") {
			t.Errorf("files left next to it: %v", got)
		}
	})
	if os.Geteuid() != 0 {
		// This process would hold the file itself, and share its -shm
		// with the reader.
		testenv.Missing(t, "the cases with another process holding the file need root, to read as another user (nobody)")
	}

	// A process that holds the file, with a -shm the reader cannot open.
	holder := rawDB(t, path)
	hconn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hconn.Close()
	if _, err := hconn.ExecContext(ctx, "SELECT COUNT(*) FROM sessions"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path+"-shm", 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("another process has it open: refused", func(t *testing.T) {
		r := run(path)
		if r.Code != sessiondb.EPERM || !strings.Contains(r.Message, "-shm") || !strings.Contains(r.Message, "immutable read is not safe") {
			t.Errorf("read %+v, want EPERM naming the -shm and why an immutable read is not safe", r)
		}
	})

	t.Run("changes in the WAL: refused", func(t *testing.T) {
		if _, err := hconn.ExecContext(ctx, "INSERT INTO state_meta (key, value) VALUES ('test_key', 'x')"); err != nil {
			t.Fatal(err)
		}
		r := run(path)
		if r.Code != sessiondb.EPERM || !strings.Contains(r.Message, "-wal holds") {
			t.Errorf("read %+v, want EPERM saying the WAL holds changes", r)
		}
	})
	hconn.Close()
	holder.Close()
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatalf("the holder left its WAL behind")
	}
	if got := stateOf(t, path); got.mode != before.mode {
		t.Errorf("mode %v, was %v", got.mode, before.mode)
	}
}

// TestReadOnlyWithoutShmRefusesForeign: where the first look at a WAL file
// fails for want of a -shm (an empty -wal is left next to it, so it cannot
// be read as immutable at once), the file is looked at again through the
// immutable read, and another application's file is still refused as
// foreign, not read nor called an older session database.
func TestReadOnlyWithoutShmRefusesForeign(t *testing.T) {
	dir, run := unprivilegedDir(t)
	path := filepath.Join(dir, "state.db")
	foreignFile(t, path, "PRAGMA journal_mode = WAL", "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
		"INSERT INTO notes (body) VALUES ('remember the milk')")
	if err := os.WriteFile(path+"-wal", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, path)
	r := run(path)
	if r.Code != sessiondb.ECONFLICT || !strings.Contains(r.Message, "another application") {
		t.Errorf("read %+v, want ECONFLICT: a database of another application", r)
	}
	if after := stateOf(t, path); after != before {
		t.Errorf("the file changed: %+v, was %+v", after, before)
	}
}

func ExampleOpen_readOnly() {
	dir, _ := os.MkdirTemp("", "sessiondb-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.db")

	_, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	fmt.Println(errors.Is(err, sqlite.ErrNoDatabase))

	w, _ := sqlite.Open(path, sqlite.Options{})
	w.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"})
	w.Close()

	db, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	_, total, _ := db.ListSessions(ctx, sessiondb.ListOptions{})
	_, err = db.CreateSession(ctx, sessiondb.NewSession{ID: "s2", Source: "cli"})
	fmt.Println(total, sessiondb.ErrorCode(err))
	// Output:
	// true
	// 1 permission
}
