package sqlite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// closedDB creates a database with a few sessions and closes it: the last
// close removes the -wal and -shm, so any that exist later were created.
func closedDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	seed(t, db, 3)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// noSidecars fails the test if a -wal, -shm or -journal exists next to path.
func noSidecars(t *testing.T, path string) {
	t.Helper()
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Lstat(path + suffix); err == nil {
			t.Errorf("doctor created %s", path+suffix)
		}
	}
}

func noRecoverAdvice(t *testing.T, d *sqlite.Diagnosis) {
	t.Helper()
	for _, c := range d.Checks {
		if strings.Contains(c.Fix, "recover") {
			t.Errorf("%s advises recover for a problem that is not damage: %+v", c.Name, c)
		}
	}
}

func TestDoctorFileSystem(t *testing.T) {
	t.Run("read-only mount", func(t *testing.T) {
		path := closedDB(t)
		sqlite.SetFileSystem(t, true, 1<<40)
		d, err := sqlite.Diagnose(ctx, path, false)
		if err != nil {
			t.Fatal(err)
		}
		checks := map[string]sqlite.Check{}
		for _, c := range d.Checks {
			checks[c.Name] = c
		}
		c := checks["mount"]
		if c.Status != sqlite.CheckFail || !strings.Contains(c.Detail, "is mounted read-only") ||
			!strings.HasPrefix(c.Fix, "copy the file to a writable directory (cp -p "+path+" DIR/)") ||
			!strings.Contains(c.Fix, "or remount the file system read-write: sudo mount -o remount,rw /") {
			t.Errorf("mount check = %+v", c)
		}
		if d.Healthy {
			t.Error("a database on a read-only mount is healthy")
		}
		if _, ok := checks["schema"]; ok {
			t.Error("the SQLite checks ran on a read-only mount")
		}
		noRecoverAdvice(t, d)
		noSidecars(t, path)
	})
	for _, tc := range []struct {
		name   string
		avail  uint64
		status string
		opened bool
	}{
		{"full", 100 << 10, sqlite.CheckFail, false},
		{"low", 10 << 20, sqlite.CheckWarn, true},
		{"plenty", 10 << 30, sqlite.CheckOK, true},
	} {
		t.Run("disk "+tc.name, func(t *testing.T) {
			path := closedDB(t)
			sqlite.SetFileSystem(t, false, tc.avail)
			checks := diagnose(t, path)
			c := checks["disk space"]
			if c.Status != tc.status {
				t.Fatalf("disk space check = %+v, want status %s", c, tc.status)
			}
			if want := "free space on "; tc.status != sqlite.CheckOK && !strings.HasPrefix(c.Fix, want) {
				t.Errorf("fix = %q, want it to start with %q", c.Fix, want)
			}
			if _, opened := checks["schema"]; opened != tc.opened {
				t.Errorf("SQLite checks ran: %v, want %v", opened, tc.opened)
			}
			if !tc.opened {
				noSidecars(t, path)
			}
		})
	}
}

func TestDoctorReportsUnusablePaths(t *testing.T) {
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sub", "state.db")
		// The one-line error of every read command, not a finding.
		if _, err := sqlite.Diagnose(ctx, path, false); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND || !strings.Contains(err.Error(), "sessiondb init") {
			t.Errorf("Diagnose of a missing file: %v, want the missing-database error", err)
		}
		if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
			t.Error("doctor created the directory")
		}
	})
	t.Run("directory", func(t *testing.T) {
		path := t.TempDir()
		c := diagnose(t, path)["file"]
		if c.Status != sqlite.CheckFail || !strings.Contains(c.Detail, "is a directory") {
			t.Errorf("file check = %+v", c)
		}
	})
	t.Run("dangling symlink", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.Symlink("gone.db", path); err != nil {
			t.Fatal(err)
		}
		c := diagnose(t, path)["file"]
		if c.Status != sqlite.CheckFail || !strings.Contains(c.Detail, "symlink to gone.db") {
			t.Errorf("file check = %+v", c)
		}
		if _, err := os.Lstat(filepath.Join(filepath.Dir(path), "gone.db")); err == nil {
			t.Error("doctor created the symlink's target")
		}
	})
	t.Run("symlink", func(t *testing.T) {
		target := closedDB(t)
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target+"-shm", nil, 0o600); err != nil {
			t.Fatal(err)
		}
		checks := diagnose(t, path)
		if c := checks["file"]; c.Status != sqlite.CheckOK || !strings.Contains(c.Detail, "symlink to "+target) {
			t.Errorf("file check = %+v", c)
		}
		if c := checks["-shm"]; c.Status != sqlite.CheckOK {
			t.Errorf("the -shm next to the symlink's target was not checked: %+v", c)
		}
	})
}
