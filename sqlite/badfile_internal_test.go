package sqlite

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestQuarantineNames: an invalid file moves to
// <path>.invalid-YYYYmmdd_HHMMSS, or, when that name (or one of its sidecar
// names) is taken, to the first free -2, -3, … after it; its sidecars move
// with it.
func TestQuarantineNames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	now := time.Date(2026, 5, 1, 12, 30, 45, 0, time.Local)
	base := path + ".invalid-20260501_123045"
	write := func(p string) {
		t.Helper()
		if err := os.WriteFile(p, []byte("not a database"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{base, base + "-2", base + "-3", base + "-4"} {
		write(path)
		write(path + "-wal")
		got, err := quarantine(path, now)
		if err != nil || got != want {
			t.Fatalf("quarantine = %q, %v; want %q", got, err, want)
		}
		if _, err := os.Stat(got + "-wal"); err != nil {
			t.Errorf("the -wal did not move with it: %v", err)
		}
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("%s still there after the move: %v", path, err)
		}
	}
	// A sidecar name alone takes its base: -5's -wal is in the way.
	write(base + "-5-wal")
	write(path)
	if got, err := quarantine(path, now); err != nil || got != base+"-6" {
		t.Fatalf("quarantine = %q, %v; want %q", got, err, base+"-6")
	}
}
