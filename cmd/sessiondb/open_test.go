package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// readCommands are the commands that only read, with arguments that make
// them run (session "s").
var readCommands = [][]string{
	{"list"}, {"search", "docker"}, {"show", "s"}, {"stats"}, {"export", "--all"},
	{"info"}, {"lineage", "s"}, {"doctor"}, {"__complete", "sessions"},
}

// writeCommands change an existing database and never create one.
var writeCommands = [][]string{
	{"rename", "s", "a title"}, {"end", "s", "--reason", "user_exit"}, {"reopen", "s"},
	{"prune", "--older-than", "1d", "--yes"}, {"delete", "s", "--yes"}, {"clear", "s", "--yes"},
	{"archive", "s"}, {"unarchive", "s"}, {"pin", "s"}, {"unpin", "s"},
	{"optimize"}, {"rebuild-fts"}, {"optimize-storage"}, {"doctor", "--fix"},
}

// TestMissingDatabase: a command that does not create the database, run
// where there is none, exits 1 with one line naming the path it looked at
// and the fixes, and creates nothing. The default path comes from
// HERMES_HOME.
func TestMissingDatabase(t *testing.T) {
	home := filepath.Join(t.TempDir(), "hermes")
	t.Setenv("HERMES_HOME", home)
	path := filepath.Join(home, "state.db")
	for _, args := range append(append([][]string{}, readCommands...), writeCommands...) {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(context.Background(), args, strings.NewReader(""), &out, &errOut)
			want := "sessiondb " + args[0] + ": no database at " + path +
				"; create it with `sessiondb init`, or use another with --db PATH or HERMES_HOME\n"
			if code != exitError || errOut.String() != want || out.Len() != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and stderr %q", code, out.String(), errOut.String(), want)
			}
			if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s created %s", args[0], home)
			}
		})
	}
	t.Run("browse", func(t *testing.T) {
		Run(context.Background(), []string{"browse"}, strings.NewReader(""), io.Discard, io.Discard)
		if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("browse created %s", home)
		}
	})
	t.Run("new creates it", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if code := Run(context.Background(), []string{"new", "--source", "cli"}, strings.NewReader(""), &out, &errOut); code != exitOK {
			t.Fatalf("new: exit %d: %s", code, errOut.String())
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("new did not create the database: %v", err)
		}
	})
}

// snapshot is what a read command must not change: the file, its schema
// cookie and the size of its WAL (0 when there is none).
type snapshot struct {
	sum     [32]byte
	mtime   time.Time
	mode    os.FileMode
	cookie  int
	walSize int64
}

func snapshotOf(t *testing.T, path string) snapshot {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// immutable: no -wal or -shm is created next to the file
	raw, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var cookie int
	if err := raw.QueryRow("PRAGMA schema_version").Scan(&cookie); err != nil {
		t.Fatal(err)
	}
	var walSize int64
	if wfi, err := os.Stat(path + "-wal"); err == nil {
		walSize = wfi.Size()
	}
	return snapshot{sha256.Sum256(b), fi.ModTime(), fi.Mode(), cookie, walSize}
}

// sampleDB creates a database with session "s" holding one message.
func sampleDB(t *testing.T, path string) {
	t.Helper()
	mustCLI(t, path, "new", "--source", "cli", "--id", "s")
	mustCLI(t, path, "append", "s", "--role", "user", "--content", "deploy with docker")
}

// TestReadCommandsWriteNothing: read commands leave a current file's
// bytes, mtime, mode, schema cookie and WAL as they were; so does a second
// init, but for the mode, which a writer tightens to 0600 as Hermes does.
func TestReadCommandsWriteNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	sampleDB(t, path)
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	before := snapshotOf(t, path)
	for _, args := range append(readCommands, []string{"init"}) {
		if _, errOut, code := cli(t, path, "", args...); code != exitOK {
			t.Errorf("%s: exit %d: %s", args[0], code, errOut)
		}
		after := snapshotOf(t, path)
		if args[0] == "init" {
			after.mode = before.mode
		}
		if after != before {
			t.Fatalf("%s changed the file: %+v, was %+v", strings.Join(args, " "), after, before)
		}
	}
}

// TestForeignFile: every command refuses another application's SQLite
// file with one line saying what it found, and leaves it byte-identical,
// with its mode and without sidecar files.
func TestForeignFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "notes.db")
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
		"CREATE TABLE tags (note INTEGER, tag TEXT)",
		"PRAGMA application_id = 305419896",
	} {
		if _, err := raw.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshotOf(t, path)
	found := path + " is a SQLite database of another application (tables: notes, tags; application_id 0x12345678; no sessions and messages tables); sessiondb will not change it"
	for _, args := range [][]string{{"list"}, {"init"}, {"append", "s", "--role", "user", "--content", "hi"}, {"new", "--source", "cli"}, {"search", "x"}} {
		out, errOut, code := cli(t, path, "", args...)
		if want := "sessiondb " + args[0] + ": " + found + "\n"; code != exitError || errOut != want || out != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and %q", args[0], code, out, errOut, want)
		}
	}
	out, _, code := cli(t, path, "", "doctor")
	if code != exitError || !strings.Contains(out, "FAIL  schema") || !strings.Contains(out, "not a Hermes state.db") {
		t.Errorf("doctor: exit %d:\n%s\nwant a failed schema check saying it is not a Hermes state.db", code, out)
	}
	if strings.Contains(out, "fix:") {
		t.Errorf("doctor advises a fix for another application's file:\n%s", out)
	}
	if after := snapshotOf(t, path); after != before {
		t.Errorf("the file changed: %+v, was %+v", after, before)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("files next to it: %v", ents)
	}
}

// runAsNobody returns a function running the CLI as an unprivileged user
// (asUser): root reads and writes any file.
func runAsNobody(t *testing.T) func(args ...string) (string, string, int) {
	u := newAsUser(t)
	return func(args ...string) (string, string, int) { return u.run(t, args...) }
}

// TestReadOnlyFile: a database the user may read but not write (mode
// 0444, in a directory the user cannot write, or one where SQLite can
// keep its -wal and -shm) is readable by every read command; the file is
// unchanged, and a write command fails with a permission error (exit 1,
// not a usage error) naming what it tried.
func TestReadOnlyFile(t *testing.T) {
	for _, writableDir := range []bool{false, true} {
		name := "read-only directory"
		if writableDir {
			name = "writable directory"
		}
		t.Run(name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "sessiondb-readonly-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				os.Chmod(dir, 0o755)
				os.RemoveAll(dir)
			})
			path := filepath.Join(dir, "state.db")
			sampleDB(t, path)
			if err := os.Chmod(path, 0o444); err != nil {
				t.Fatal(err)
			}
			run := runAsNobody(t)
			dirMode := os.FileMode(0o755) // root's directory: nobody cannot write it
			if writableDir {
				dirMode = 0o777
			} else if os.Geteuid() != 0 {
				dirMode = 0o555
			}
			if err := os.Chmod(dir, dirMode); err != nil {
				t.Fatal(err)
			}
			before := snapshotOf(t, path)
			for _, args := range readCommands {
				out, errOut, code := run(append([]string{"--db", path}, args...)...)
				if args[0] == "doctor" && code == exitError && strings.Contains(out, "cannot write it") {
					// Doctor reports that no write can succeed (and, where
					// SQLite would fail, does not open the file).
					continue
				}
				if code != exitOK {
					t.Errorf("%s: exit %d: %s", args[0], code, errOut)
					continue
				}
				if args[0] == "list" && !strings.Contains(out, "deploy with docker") {
					t.Errorf("list printed:\n%s", out)
				}
				immutable := strings.Contains(errOut+out, "immutable snapshot") // doctor reports it as a check
				if immutable == writableDir {
					t.Errorf("%s: stderr %q; want the immutable-read note only in a read-only directory", args[0], errOut+out)
				}
			}
			_, errOut, code := run("--db", path, "rename", "s", "a title")
			if code != exitError || !strings.Contains(errOut, "cannot write "+path) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("rename: exit %d, stderr %q; want exit 1 and one line saying it cannot write %s", code, errOut, path)
			}
			os.Chmod(dir, 0o755)
			if after := snapshotOf(t, path); after != before {
				t.Errorf("the file changed: %+v, was %+v", after, before)
			}
			ents, _ := os.ReadDir(dir)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if !writableDir && (slices.Contains(names, "state.db-wal") || slices.Contains(names, "state.db-shm")) {
				t.Errorf("sidecars in a read-only directory: %v", names)
			}
		})
	}
}
