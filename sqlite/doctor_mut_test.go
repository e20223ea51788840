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

// diagnosis runs Diagnose (quick_check) and returns its findings in order.
func diagnosis(t *testing.T, path string) *sqlite.Diagnosis {
	t.Helper()
	d, err := sqlite.Diagnose(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// lastFinding fails the test unless the last finding of d is want.
func lastFinding(t *testing.T, d *sqlite.Diagnosis, want sqlite.Check) {
	t.Helper()
	if len(d.Checks) == 0 {
		t.Fatal("no findings")
	}
	if got := d.Checks[len(d.Checks)-1]; got != want {
		t.Errorf("last finding = %+v\nwant %+v\n(all: %+v)", got, want, d.Checks)
	}
	if d.Healthy {
		t.Error("the file is reported healthy")
	}
}

// sqliteFile creates a SQLite file (rollback journal) at a new path and
// runs stmts on it.
func sqliteFile(t *testing.T, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

// TestDoctorFileKinds: what a file is decides what doctor says of it. A
// file that is no SQLite database, another application's database and an
// empty one each get one failed schema finding, last, and no SQLite check
// after it; a file shaped like a session store but without schema_version
// gets the error reading it.
func TestDoctorFileKinds(t *testing.T) {
	notDB := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	emptyFile := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name   string
		make   func(t *testing.T) string
		detail func(path string) string
		fix    func(path string) string
	}{
		{"not a SQLite file", notDB,
			func(path string) string {
				return "cannot read the schema: " + path + " is not a SQLite database (it does not start with the SQLite header); nothing was written. If it was a sessiondb database, `sessiondb recover --source " + path + " --output NEW.db` copies what can be read"
			},
			func(path string) string { return "sessiondb recover --source " + path + " --output NEW.db" }},
		{"another application's database",
			func(t *testing.T) string {
				return sqliteFile(t, "CREATE TABLE photos (id INTEGER PRIMARY KEY, taken REAL)", "CREATE TABLE albums (id INTEGER PRIMARY KEY)")
			},
			func(string) string {
				return "not a Hermes state.db: a SQLite database of another application (tables: albums, photos; no sessions and messages tables); sessiondb will not change it"
			},
			func(string) string { return "" }},
		{"another application's sessions table",
			func(t *testing.T) string {
				return sqliteFile(t, "CREATE TABLE sessions (id INTEGER PRIMARY KEY, user TEXT)", "CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, timestamp REAL)")
			},
			func(string) string {
				return "not a Hermes state.db: a SQLite database of another application (tables: messages, sessions; a sessions table without source, started_at); sessiondb will not change it"
			},
			func(string) string { return "" }},
		{"zero bytes", emptyFile,
			func(string) string { return "not a Hermes state.db yet: an empty SQLite file" },
			func(string) string { return "sessiondb init" }},
		{"a SQLite file without tables",
			func(t *testing.T) string { return sqliteFile(t, "PRAGMA user_version = 7") },
			func(string) string { return "not a Hermes state.db yet: an empty SQLite file" },
			func(string) string { return "sessiondb init" }},
		{"no schema_version table",
			func(t *testing.T) string {
				return sqliteFile(t, "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, started_at REAL)",
					"CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, timestamp REAL)")
			},
			func(path string) string {
				return "cannot read the schema: read the schema version of " + path + ": no such table: schema_version"
			},
			func(string) string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.make(t)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d := diagnosis(t, path)
			lastFinding(t, d, sqlite.Check{Name: "schema", Status: sqlite.CheckFail, Detail: tc.detail(path), Fix: tc.fix(path)})
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Error("doctor changed the file")
			}
			noSidecars(t, path)
		})
	}
}

// TestDoctorSchemaVersion: a file at an older schema is named with its
// version and the command that upgrades it.
func TestDoctorSchemaVersion(t *testing.T) {
	c := diagnose(t, fixture(t, "hermes-v11.db"))["schema"]
	want := sqlite.Check{Name: "schema", Status: sqlite.CheckWarn,
		Detail: fmt.Sprintf("schema version 11; sessiondb writes %d", sqlite.SchemaVersion), Fix: "sessiondb init"}
	if c != want {
		t.Errorf("schema check = %+v, want %+v", c, want)
	}
}

// TestDoctorPathTooLong: SQLite refuses a path longer than it accepts
// (504 bytes: 512 with room for "-journal") although the file system
// reaches it; doctor says so, with the length and the way out, before
// SQLite would blame permissions, and stops there.
func TestDoctorPathTooLong(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 600 {
		dir = filepath.Join(dir, strings.Repeat("d", 100))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state.db")
	src := closedDB(t)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	d := diagnosis(t, path)
	var found *sqlite.Check
	for i, c := range d.Checks {
		if c.Name == "path" {
			found = &d.Checks[i]
		}
	}
	want := fmt.Sprintf("%d bytes long: SQLite opens no database path longer than 504 bytes; move the database to a shorter path", len(path))
	if found == nil || found.Status != sqlite.CheckFail || found.Detail != want {
		t.Errorf("path finding = %+v, want a failure saying %q", found, want)
	}
	if d.Healthy {
		t.Error("a file SQLite cannot open is healthy")
	}
	for _, c := range d.Checks {
		if c.Name == "schema" || c.Name == "journal" {
			t.Errorf("checks ran on a file SQLite could not open: %+v", c)
		}
	}
}

// freeSpaceDB returns a closed store whose file has exactly free of pages
// pages on its freelist: after a VACUUM, a kept table pads the file, then
// a table of free pages is created and dropped.
func freeSpaceDB(t *testing.T, free, pages int64) string {
	t.Helper()
	path := closedDB(t)
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	pragma := func(name string) int64 {
		t.Helper()
		var n int64
		if err := raw.QueryRow("PRAGMA " + name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	grow := func(table string, target int64) {
		t.Helper()
		if _, err := raw.Exec("CREATE TABLE " + table + " (b BLOB)"); err != nil {
			t.Fatal(err)
		}
		// Rows of 3,000 bytes take a leaf page each.
		for i := 0; pragma("page_count") < target && i < 1000; i++ {
			if _, err := raw.Exec("INSERT INTO " + table + " VALUES (zeroblob(3000))"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := raw.Exec("VACUUM"); err != nil {
		t.Fatal(err)
	}
	if n := pragma("freelist_count"); n != 0 {
		t.Fatalf("%d free pages after VACUUM", n)
	}
	grow("kept", pages-free)
	grow("dropped", pages)
	if _, err := raw.Exec("DROP TABLE dropped"); err != nil {
		t.Fatal(err)
	}
	if p, f := pragma("page_count"), pragma("freelist_count"); p != pages || f != free {
		t.Fatalf("built %d of %d pages free, want %d of %d", f, p, free, pages)
	}
	return path
}

// TestDoctorFreeSpace: more than a quarter of the pages free is worth a
// VACUUM; a quarter exactly, or less, is not.
func TestDoctorFreeSpace(t *testing.T) {
	for _, tc := range []struct {
		name        string
		free, pages int64
		want        sqlite.Check
	}{
		{"a quarter free", 30, 120, sqlite.Check{Name: "free space", Status: sqlite.CheckOK, Detail: "30 of 120 pages free"}},
		{"just over a quarter free", 31, 121, sqlite.Check{Name: "free space", Status: sqlite.CheckWarn,
			Detail: "31 of 121 pages free (26%)", Fix: "sessiondb optimize --vacuum"}},
		{"most pages free", 300, 400, sqlite.Check{Name: "free space", Status: sqlite.CheckWarn,
			Detail: "300 of 400 pages free (75%)", Fix: "sessiondb optimize --vacuum"}},
		{"a few pages free", 10, 120, sqlite.Check{Name: "free space", Status: sqlite.CheckOK, Detail: "10 of 120 pages free"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := freeSpaceDB(t, tc.free, tc.pages)
			if c := diagnose(t, path)["free space"]; c != tc.want {
				t.Errorf("free space check = %+v, want %+v", c, tc.want)
			}
		})
	}
}

// TestDoctorDamagedIndex: a search index whose structure is damaged is a
// failure to fix with rebuild-fts, unless the backfill of that index is
// still pending (then init finishes it); the other index's backfill does
// not count.
func TestDoctorDamagedIndex(t *testing.T) {
	const (
		word = "fts_rebuild_high_water"
		cjk  = "fts_cjk_rebuild_high_water"
	)
	for _, tc := range []struct {
		index, pending string
		status, fix    string
	}{
		{"messages_fts", "", sqlite.CheckFail, "sessiondb rebuild-fts"},
		{"messages_fts", word, sqlite.CheckWarn, "sessiondb init"},
		{"messages_fts", cjk, sqlite.CheckFail, "sessiondb rebuild-fts"},
		{"messages_fts_trigram", word, sqlite.CheckWarn, "sessiondb init"},
		{"messages_fts_trigram", cjk, sqlite.CheckFail, "sessiondb rebuild-fts"},
		{"messages_fts_cjk", "", sqlite.CheckFail, "sessiondb rebuild-fts"},
		{"messages_fts_cjk", cjk, sqlite.CheckWarn, "sessiondb init"},
		{"messages_fts_cjk", word, sqlite.CheckFail, "sessiondb rebuild-fts"},
	} {
		name := tc.index + " damaged, backfill pending: " + tc.pending
		if tc.pending == "" {
			name = tc.index + " damaged, no backfill pending"
		}
		t.Run(name, func(t *testing.T) {
			path := closedDB(t)
			raw := rawDB(t, path)
			rawExec(t, raw, "DELETE FROM "+tc.index+"_data WHERE id = (SELECT MAX(id) FROM "+tc.index+"_data)")
			if tc.pending != "" {
				rawExec(t, raw, "INSERT INTO state_meta (key, value) VALUES ('"+tc.pending+"', '1000')")
			}
			checks := diagnose(t, path)
			c := checks["index "+tc.index]
			if c.Status != tc.status || c.Fix != tc.fix {
				t.Errorf("index check = %+v, want status %s, fix %q", c, tc.status, tc.fix)
			}
			switch want := "fts5: corruption found"; {
			case tc.status == sqlite.CheckWarn && c.Detail != "backfill pending (rows written before the index are not in it yet; search scans them)":
				t.Errorf("detail = %q, want the pending backfill", c.Detail)
			case tc.status == sqlite.CheckFail && !strings.Contains(c.Detail, want):
				t.Errorf("detail = %q, want FTS5's finding (%s)", c.Detail, want)
			}
			for _, other := range []string{"messages_fts", "messages_fts_trigram", "messages_fts_cjk"} {
				if other == tc.index {
					continue
				}
				if c := checks["index "+other]; c != (sqlite.Check{Name: "index " + other, Status: sqlite.CheckOK, Detail: "consistent"}) {
					t.Errorf("undamaged index: %+v", c)
				}
			}
		})
	}
}

// TestDoctorStaleMarkers: the markers a failed index write leaves are
// reported with their fixes.
func TestDoctorStaleMarkers(t *testing.T) {
	path := closedDB(t)
	raw := rawDB(t, path)
	rawExec(t, raw, "INSERT INTO state_meta (key, value) VALUES ('fts_cjk_stale', '1'), ('fts_rebuild_high_water', '90'), ('fts_rebuild_progress', '40')")
	checks := diagnose(t, path)
	for _, want := range []sqlite.Check{
		{Name: "fts_cjk_stale", Status: sqlite.CheckWarn, Detail: "a process without the cjk_unicode61 tokenizer left a gap in the CJK index", Fix: "sessiondb init"},
		{Name: "backfill word/trigram", Status: sqlite.CheckWarn, Detail: "indexed up to id 40 of 90", Fix: "sessiondb init"},
	} {
		if c := checks[want.Name]; c != want {
			t.Errorf("%s check = %+v, want %+v", want.Name, c, want)
		}
	}
	for _, absent := range []string{"fts_stale", "backfill CJK"} {
		if c, ok := checks[absent]; ok {
			t.Errorf("finding without its marker: %+v", c)
		}
	}
}

// TestDoctorFileSystemType: a network or VM-shared file system is warned
// about, a local one named, and none is reported where the type is not
// known.
func TestDoctorFileSystemType(t *testing.T) {
	for _, tc := range []struct {
		fs   string
		want sqlite.Check
	}{
		{"nfs4", sqlite.Check{Name: "filesystem", Status: sqlite.CheckWarn,
			Detail: "nfs4: WAL needs shared memory and reliable locks, which network and VM-shared filesystems do not give; keep state.db on a local disk"}},
		{"virtiofs", sqlite.Check{Name: "filesystem", Status: sqlite.CheckWarn,
			Detail: "virtiofs: WAL needs shared memory and reliable locks, which network and VM-shared filesystems do not give; keep state.db on a local disk"}},
		{"xfs", sqlite.Check{Name: "filesystem", Status: sqlite.CheckOK, Detail: "xfs"}},
		{"", sqlite.Check{}},
	} {
		t.Run("type "+tc.fs, func(t *testing.T) {
			path := closedDB(t)
			sqlite.SetFSType(t, func(string) string { return tc.fs })
			if c := diagnose(t, path)["filesystem"]; c != tc.want {
				t.Errorf("filesystem check = %+v, want %+v", c, tc.want)
			}
		})
	}
}

// TestDoctorOtherProcesses: the processes other than this one that hold
// the file open are listed by pid.
func TestDoctorOtherProcesses(t *testing.T) {
	path := closedDB(t)
	db := MustOpenPath(t, path) // this process holds it: not listed
	seed(t, db, 1)
	want := sqlite.Check{Name: "processes", Status: sqlite.CheckOK, Detail: "no other process has the file open"}
	if c := diagnose(t, path)["processes"]; c != want {
		t.Errorf("processes check = %+v, want %+v", c, want)
	}

	want.Detail = fmt.Sprintf("open in pid [%d]", holdOpenInChild(t, path))
	if c := diagnose(t, path)["processes"]; c != want {
		t.Errorf("processes check = %+v, want %+v", c, want)
	}
}

// TestDoctorCheckpoint: Checkpoint copies the WAL into the database file
// of a WAL store, and does nothing on a store in another journal mode or
// opened read-only.
func TestDoctorCheckpoint(t *testing.T) {
	size := func(t *testing.T, path string) int64 {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	t.Run("wal", func(t *testing.T) {
		db := MustOpen(t)
		seed(t, db, 20)
		before := size(t, db.Path())
		if err := db.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		var pages, pageSize int64
		raw := rawDB(t, db.Path())
		raw.QueryRow("PRAGMA page_count").Scan(&pages)
		raw.QueryRow("PRAGMA page_size").Scan(&pageSize)
		if got := size(t, db.Path()); got != pages*pageSize || got <= before {
			t.Errorf("database file after the checkpoint: %d bytes (before: %d), want its %d pages of %d bytes", got, before, pages, pageSize)
		}
	})
	t.Run("delete", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		db, err := sqlite.Open(path, sqlite.Options{JournalMode: "delete", Now: func() time.Time { return fixedNow }})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		seed(t, db, 3)
		if err := db.Checkpoint(ctx); err != nil {
			t.Fatalf("checkpoint of a rollback-journal store: %v", err)
		}
		if _, err := os.Lstat(path + "-wal"); err == nil {
			t.Error("the checkpoint created a -wal")
		}
	})
	t.Run("read-only", func(t *testing.T) {
		path := closedDB(t)
		db, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Checkpoint(ctx); sessiondb.ErrorCode(err) != sessiondb.EPERM {
			t.Errorf("checkpoint of a read-only store: %v, want EPERM", err)
		}
	})
}

// Environment of the re-executed doctor (TestDoctorReadOnlyMountHelper):
// the directory it mounts read-only.
const envDoctorReadOnlyDir = "SESSIONDB_TEST_DOCTOR_READONLY_DIR"

// TestDoctorReadOnlyMountHelper is not a test: TestDoctorWithoutShm runs
// the test binary again, in a mount namespace of its own, with this
// function selected. It bind-mounts the directory read-only, makes
// Diagnose's checks of the path see a writable file system, diagnoses each
// database in it and prints the findings as JSON.
func TestDoctorReadOnlyMountHelper(t *testing.T) {
	dir := os.Getenv(envDoctorReadOnlyDir)
	if dir == "" {
		return
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount %s: %v", dir, err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
	sqlite.SetFileSystem(t, false, 1<<40)
	paths, err := filepath.Glob(filepath.Join(dir, "*.db"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]sqlite.Check{}
	for _, p := range paths {
		d, err := sqlite.Diagnose(ctx, p, false)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = d.Checks
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

// TestDoctorWithoutShm: where SQLite cannot create the -shm of a WAL file
// although doctor's checks of the path found nothing wrong (here a
// read-only mount that the checks are made to see as writable), the
// schema is read through an immutable snapshot and the file judged by it:
// a session store is checked (its journal is WAL, though the snapshot
// reports "delete"), another application's file or an empty one is
// refused as anywhere else.
func TestDoctorWithoutShm(t *testing.T) {
	dir := t.TempDir()
	walFile := func(name string, stmts ...string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		db, err := sql.Open("sqlite3", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range append([]string{"PRAGMA journal_mode = WAL"}, stmts...) {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		// An empty -wal: no process has the file open and its WAL holds
		// nothing, so an immutable read is safe; no -shm.
		if err := os.WriteFile(path+"-wal", nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(path + "-shm"); err == nil {
			t.Fatalf("%s-shm left", path)
		}
		return path
	}
	walFile("foreign.db", "CREATE TABLE photos (id INTEGER PRIMARY KEY)")
	walFile("empty.db", "PRAGMA user_version = 7")
	store := filepath.Join(dir, "state.db")
	currentDB(t, store)
	if err := os.WriteFile(store+"-wal", nil, 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestDoctorReadOnlyMountHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), envDoctorReadOnlyDir+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if errors.Is(err, syscall.EPERM) {
		testenv.Missing(t, "cannot make a mount namespace to mount a directory read-only (needs root): "+err.Error())
	}
	if err != nil {
		t.Fatalf("doctor in a mount namespace: %v\n%s\n%s", err, out, stderr.String())
	}
	line, _, _ := bytes.Cut(out, []byte("\n"))
	var got map[string][]sqlite.Check
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	immutable := sqlite.Check{Name: "access", Status: sqlite.CheckWarn,
		Detail: "read as an immutable snapshot: this user cannot create or write the -shm of the WAL file (no process had it open)"}
	after := func(checks []sqlite.Check, name string) []sqlite.Check {
		for i, c := range checks {
			if c.Name == name {
				return checks[i:]
			}
		}
		return nil
	}
	for _, tc := range []struct {
		file string
		want []sqlite.Check
	}{
		{"foreign.db", []sqlite.Check{immutable, {Name: "schema", Status: sqlite.CheckFail,
			Detail: "not a Hermes state.db: a SQLite database of another application (tables: photos; no sessions and messages tables); sessiondb will not change it"}}},
		{"empty.db", []sqlite.Check{immutable, {Name: "schema", Status: sqlite.CheckFail,
			Detail: "not a Hermes state.db yet: an empty SQLite file", Fix: "sessiondb init"}}},
		{"state.db", []sqlite.Check{immutable, {Name: "schema", Status: sqlite.CheckOK,
			Detail: fmt.Sprintf("schema version %d (sessiondb writes %d)", sqlite.SchemaVersion, sqlite.SchemaVersion)},
			{Name: "journal", Status: sqlite.CheckOK, Detail: "WAL"}}},
	} {
		checks := after(got[tc.file], "access")
		if len(checks) > len(tc.want) {
			checks = checks[:len(tc.want)]
		}
		if !slices.Equal(checks, tc.want) {
			t.Errorf("%s: findings from access on = %+v\nwant %+v\n(all: %+v)", tc.file, checks, tc.want, got[tc.file])
		}
	}
	if n := len(after(got["foreign.db"], "access")); n != 2 {
		t.Errorf("foreign.db: %d findings from access on, want 2 (nothing after the schema)", n)
	}
}
