package sqlite

import (
	"io/fs"
	"syscall"
	"testing"
	"time"
)

// fakeInfo is a FileInfo with the mode and owner a test needs.
type fakeInfo struct {
	mode     fs.FileMode
	uid, gid uint32
}

func (f fakeInfo) Name() string       { return "x" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return &syscall.Stat_t{Uid: f.uid, Gid: f.gid} }

func TestPermissionAdvice(t *testing.T) {
	alice := principal{uid: 1000, gids: []uint32{1000, 27}, name: "alice"}
	const p = "/home/alice/.hermes/state.db"
	for _, tc := range []struct {
		name string
		fi   fakeInfo
		need string
		want string
	}{
		{"own file, read-only", fakeInfo{0o400, 1000, 1000}, "rw", "chmod u+w " + p},
		{"own file, no access", fakeInfo{0o000, 1000, 1000}, "rw", "chmod u+rw " + p},
		{"own directory, read-only", fakeInfo{fs.ModeDir | 0o500, 1000, 1000}, "wx", "chmod u+w " + p},
		{"root's file", fakeInfo{0o600, 0, 0}, "rw", "sudo chown alice " + p},
		{"root's read-only file", fakeInfo{0o444, 0, 0}, "rw", "sudo chown alice " + p + " && chmod u+w " + p},
		{"file of a group alice is in", fakeInfo{0o640, 0, 27}, "rw", "sudo chown alice " + p},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := permFix(p, tc.fi, alice, tc.need); got != tc.want {
				t.Errorf("permFix = %q, want %q", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		fi   fakeInfo
		want string
	}{
		{fakeInfo{fs.ModeDir | 0o600, 1000, 1000}, "chmod u+x /srv/x"},
		{fakeInfo{fs.ModeDir | 0o700, 0, 27}, "sudo chmod g+x /srv/x"},
		{fakeInfo{fs.ModeDir | 0o700, 0, 0}, "sudo chmod o+x /srv/x"},
	} {
		if got := searchFix("/srv/x", tc.fi, alice); got != tc.want {
			t.Errorf("searchFix(%v) = %q, want %q", tc.fi.mode, got, tc.want)
		}
	}
}

func TestShellArg(t *testing.T) {
	for in, want := range map[string]string{
		"/home/a/.hermes/state.db": "/home/a/.hermes/state.db",
		"/mnt/my disk/state.db":    "'/mnt/my disk/state.db'",
		"/x/it's":                  `'/x/it'\''s'`,
		"":                         "''",
	} {
		if got := shellArg(in); got != want {
			t.Errorf("shellArg(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestMountinfoParsing(t *testing.T) {
	if got, want := unescapeMount(`/mnt/my\040disk`), "/mnt/my disk"; got != want {
		t.Errorf("unescapeMount = %q, want %q", got, want)
	}
	if got, want := unescapeMount(`/a\13`), `/a\13`; got != want {
		t.Errorf("unescapeMount of a short escape = %q, want %q", got, want)
	}
	if got, want := lsMode(fs.ModeDir|fs.ModeSticky|0o777), "drwxrwxrwt"; got != want {
		t.Errorf("lsMode = %q, want %q", got, want)
	}
	if got, want := lsMode(0o400), "-r--------"; got != want {
		t.Errorf("lsMode = %q, want %q", got, want)
	}
}
