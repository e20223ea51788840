package sqlite

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFSStatsOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   unix.Statfs_t
		euid int
		want fsStats
	}{
		{"fragment size", unix.Statfs_t{Frsize: 4096, Bsize: 8192, Bavail: 10, Bfree: 20, Files: 5, Ffree: 1}, 1000,
			fsStats{avail: 10 * 4096}},
		{"no fragment size", unix.Statfs_t{Bsize: 8192, Bavail: 10, Bfree: 20}, 1000,
			fsStats{avail: 10 * 8192}},
		{"root uses reserved blocks", unix.Statfs_t{Frsize: 4096, Bavail: 10, Bfree: 20}, 0,
			fsStats{avail: 20 * 4096}},
		{"uid 1", unix.Statfs_t{Frsize: 4096, Bavail: 10, Bfree: 20}, 1,
			fsStats{avail: 10 * 4096}},
		{"read-only", unix.Statfs_t{Frsize: 512, Bavail: 3, Flags: unix.ST_RDONLY | unix.ST_NOSUID}, 1000,
			fsStats{readOnly: true, avail: 3 * 512}},
		{"other flags", unix.Statfs_t{Frsize: 512, Bavail: 3, Flags: unix.ST_NOSUID | unix.ST_NODEV}, 1000,
			fsStats{avail: 3 * 512}},
		{"no inodes left", unix.Statfs_t{Frsize: 512, Bavail: 3, Files: 1, Ffree: 0}, 1000,
			fsStats{avail: 3 * 512, noInodes: true}},
		{"one inode left", unix.Statfs_t{Frsize: 512, Bavail: 3, Files: 1, Ffree: 1}, 1000,
			fsStats{avail: 3 * 512}},
		{"no inode count (btrfs)", unix.Statfs_t{Frsize: 512, Bavail: 3, Files: 0, Ffree: 0}, 1000,
			fsStats{avail: 3 * 512}},
	} {
		if got := fsStatsOf(&tc.st, tc.euid); got != tc.want {
			t.Errorf("%s: fsStatsOf = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestStatFS(t *testing.T) {
	if _, err := statFS(t.TempDir()); err != nil {
		t.Errorf("statFS of a directory: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "gone")
	if st, err := statFS(missing); !errors.Is(err, fs.ErrNotExist) || st != (fsStats{}) {
		t.Errorf("statFS of a missing path = %+v, %v, want ENOENT", st, err)
	}
}
