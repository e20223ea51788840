package sqlite

import (
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The tests of this file pin the exact output of doctor's access checks at
// their boundaries (TESTING.md: access.go's mutation survivors).

// fakeMountinfo makes mountOf read text instead of /proc/self/mountinfo until
// the test ends; "" makes the file missing.
func fakeMountinfo(t *testing.T, text string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mountinfo")
	if text != "" {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := mountinfo
	mountinfo = p
	t.Cleanup(func() { mountinfo = old })
}

func TestMountOf(t *testing.T) {
	// The nested mount comes before its parent, /home is mounted over
	// twice (the later line is the visible one), one line has optional
	// fields before the separator, and some lines are malformed.
	fakeMountinfo(t, `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
31 30 0:6 / /home/alice/my\040disk rw shared:7 master:2 - vfat /dev/sdc rw
30 22 0:5 / /home rw - xfs /dev/sdb rw
40 22 0:9 / /home rw - nfs srv:/home rw
32 22 0:7 / /ho rw - tmpfs tmpfs rw
33 22 0:8 / /x rw -
34 22 0:8 / /y rw no separator here
- a b c /q
- a b /r
garbage
`)
	for _, tc := range []struct{ path, mnt, fstype string }{
		{"/home/alice/my disk/state.db", "/home/alice/my disk", "vfat"},
		{"/home/alice/my disk", "/home/alice/my disk", "vfat"},
		{"/home/alice/my", "/home", "nfs"},
		{"/home/alice", "/home", "nfs"},
		{"/home", "/home", "nfs"},
		{"/homework/state.db", "/", "ext4"},
		{"/hox", "/", "ext4"},
		{"/ho/state.db", "/ho", "tmpfs"},
		{"/x/state.db", "/", "ext4"},
		{"/y/state.db", "/", "ext4"},
		{"/q/state.db", "/q", "a"},
		{"/r/state.db", "/", "ext4"},
		{"/", "/", "ext4"},
	} {
		if mnt, fstype := mountOf(tc.path); mnt != tc.mnt || fstype != tc.fstype {
			t.Errorf("mountOf(%q) = %q, %q, want %q, %q", tc.path, mnt, fstype, tc.mnt, tc.fstype)
		}
	}

	fakeMountinfo(t, "")
	if mnt, fstype := mountOf("/home"); mnt != "" || fstype != "" {
		t.Errorf("mountOf without mountinfo = %q, %q, want nothing", mnt, fstype)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/mnt/plain`:          `/mnt/plain`,
		`/mnt/my\040disk`:     `/mnt/my disk`,
		`/mnt/disk\040`:       `/mnt/disk `,
		`\011tab`:             "\ttab",
		`/a\134b\040c\012`:    "/a\\b c\n",
		`/a\13`:               `/a\13`,
		`/a\999`:              `/a\999`,
		`/a\777`:              `/a\777`, // above a byte
		`/a\\040`:             `/a\ `,
		`/mnt/x\040y\040z`:    `/mnt/x y z`,
		`/mnt/\04`:            `/mnt/\04`,
		`/mnt/\0401`:          `/mnt/ 1`,
		`/mnt/\101\102\103/d`: `/mnt/ABC/d`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBytesText(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{0, "0.0 MiB"},
		{1023, "0.0 MiB"},
		{1024, "0.0 MiB"},
		{100 << 10, "0.1 MiB"},
		{1<<20 - 1, "1.0 MiB"},
		{1 << 20, "1.0 MiB"},
		{3 << 19, "1.5 MiB"},
		{64 << 20, "64.0 MiB"},
		{1<<30 - 1, "1024.0 MiB"},
		{1 << 30, "1.0 GiB"},
		{3 << 29, "1.5 GiB"},
		{10 << 40, "10240.0 GiB"},
	} {
		if got := bytesText(tc.n); got != tc.want {
			t.Errorf("bytesText(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestBlockedAncestor(t *testing.T) {
	const path = "/a/b/c/state.db"
	for _, tc := range []struct {
		name  string
		errs  map[string]error
		want  string
		calls []string
	}{
		{"all searchable", nil, "", []string{"/", "/a", "/a/b", "/a/b/c"}},
		{"root blocked", map[string]error{"/": unix.EACCES}, "/", []string{"/"}},
		{"middle blocked", map[string]error{"/a/b": unix.EACCES, "/a/b/c": unix.EACCES}, "/a/b", []string{"/", "/a", "/a/b"}},
		{"parent blocked", map[string]error{"/a/b/c": unix.EACCES}, "/a/b/c", []string{"/", "/a", "/a/b", "/a/b/c"}},
		{"missing before blocked", map[string]error{"/a/b": unix.ENOENT, "/a/b/c": unix.EACCES}, "", []string{"/", "/a", "/a/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			old := searchable
			searchable = func(p string, mode uint32) error {
				if mode != unix.X_OK {
					t.Errorf("access(%s, %d), want X_OK", p, mode)
				}
				calls = append(calls, p)
				return tc.errs[p]
			}
			defer func() { searchable = old }()
			if got := blockedAncestor(path); got != tc.want {
				t.Errorf("blockedAncestor = %q, want %q", got, tc.want)
			}
			if !slices.Equal(calls, tc.calls) {
				t.Errorf("examined %q, want %q", calls, tc.calls)
			}
		})
	}
}

func TestPrincipal(t *testing.T) {
	u := currentPrincipal()
	if u.uid != uint32(os.Geteuid()) {
		t.Errorf("uid = %d, want %d", u.uid, os.Geteuid())
	}
	want := []uint32{uint32(os.Getegid())}
	gs, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		want = append(want, uint32(g))
	}
	if !slices.Equal(u.gids, want) {
		t.Errorf("gids = %v, want %v", u.gids, want)
	}
	if u.name != userName(u.uid) {
		t.Errorf("name = %q, want %q", u.name, userName(u.uid))
	}
	if !(principal{uid: 0}).root() || (principal{uid: 1}).root() || (principal{uid: 1000}).root() {
		t.Error("root() is not uid 0")
	}
}

func TestUserAndGroupNames(t *testing.T) {
	me := uint32(os.Geteuid())
	lu, err := user.LookupId(strconv.Itoa(int(me)))
	if err != nil {
		t.Skipf("this user has no name: %v", err)
	}
	if got := userName(me); got != lu.Username {
		t.Errorf("userName(%d) = %q, want %q", me, got, lu.Username)
	}
	const nobody = 4000000000
	if got := userName(nobody); got != "4000000000" {
		t.Errorf("userName of an unknown uid = %q, want the number", got)
	}
	gid := uint32(os.Getegid())
	g, err := user.LookupGroupId(strconv.Itoa(int(gid)))
	if err != nil {
		t.Skipf("this group has no name: %v", err)
	}
	if got, want := modeOwner(fakeInfo{0o640, me, gid}), "-rw-r----- "+lu.Username+" "+g.Name; got != want {
		t.Errorf("modeOwner = %q, want %q", got, want)
	}
	if got, want := modeOwner(fakeInfo{fs.ModeDir | 0o700, nobody, nobody + 1}), "drwx------ 4000000000 4000000001"; got != want {
		t.Errorf("modeOwner of unknown ids = %q, want %q", got, want)
	}
}

func TestDescribePrincipal(t *testing.T) {
	root := principal{uid: 0, name: "root"}
	alice := principal{uid: 1000, name: "alice"}
	for _, tc := range []struct {
		name string
		u    principal
		fi   fs.FileInfo
		want string
	}{
		{"root, no file", root, nil, "root (uid 0)"},
		{"root, own file", root, fakeInfo{0o600, 0, 0}, "root (uid 0)"},
		{"root, another's file", root, fakeInfo{0o600, 4000000000, 0},
			"root (uid 0), who may read and write any file; the database belongs to 4000000000: run doctor as that user to check its access"},
		{"alice, no file", alice, nil, "alice (uid 1000)"},
		{"alice, another's file", alice, fakeInfo{0o600, 4000000000, 0}, "alice (uid 1000)"},
	} {
		if got := tc.u.describe(tc.fi); got != tc.want {
			t.Errorf("%s: describe = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// mountChecks runs checkMount on dir/state.db with the file system st (or
// the error err) and returns its findings by name.
func mountChecks(t *testing.T, target string, st fsStats, err error) map[string]Check {
	t.Helper()
	old := fsStat
	fsStat = func(string) (fsStats, error) { return st, err }
	defer func() { fsStat = old }()
	var d Diagnosis
	d.checkMount(target, filepath.Dir(target))
	out := map[string]Check{}
	for _, c := range d.Checks {
		if _, dup := out[c.Name]; dup {
			t.Errorf("two %q findings", c.Name)
		}
		out[c.Name] = c
	}
	return out
}

// chk is a finding.
func chk(name, status, detail, fix string) Check {
	return Check{Name: name, Status: status, Detail: detail, Fix: fix}
}

func touch(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func TestCheckMount(t *testing.T) {
	fakeMountinfo(t, "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n")
	const fix = "free space on / (df -h / shows it), or move the database to a file system with room"
	plenty := uint64(10 << 30)

	t.Run("mount point and type", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "state.db")
		c := mountChecks(t, target, fsStats{avail: plenty}, nil)
		if got := c["mount"]; got != chk("mount", CheckOK, "/ (ext4), read-write", "") {
			t.Errorf("mount = %+v", got)
		}
		if got := c["disk space"]; got != chk("disk space", CheckOK, "10.0 GiB free on /", "") {
			t.Errorf("disk space = %+v", got)
		}
	})
	t.Run("no mountinfo", func(t *testing.T) {
		fakeMountinfo(t, "")
		dir := t.TempDir()
		c := mountChecks(t, filepath.Join(dir, "state.db"), fsStats{avail: plenty}, nil)
		if got := c["mount"]; got != chk("mount", CheckOK, dir+", read-write", "") {
			t.Errorf("mount = %+v", got)
		}
		if got := c["disk space"].Detail; got != "10.0 GiB free on "+dir {
			t.Errorf("disk space = %q", got)
		}
	})
	t.Run("statfs fails", func(t *testing.T) {
		dir := t.TempDir()
		err := &fs.PathError{Op: "statfs", Path: dir, Err: unix.EIO}
		c := mountChecks(t, filepath.Join(dir, "state.db"), fsStats{}, err)
		want := chk("mount", CheckWarn, "cannot examine the file system holding "+dir+": "+unix.EIO.Error(), "")
		if c["mount"] != want || len(c) != 1 {
			t.Errorf("checks = %+v, want only %+v", c, want)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "state.db")
		c := mountChecks(t, target, fsStats{readOnly: true, avail: 0}, nil)
		want := chk("mount", CheckFail, "the file system / (ext4) is mounted read-only: nothing can write the database, its -wal or -shm",
			"copy the file to a writable directory (cp -p "+shellArg(target)+" DIR/) and use the copy, or remount the file system read-write: sudo mount -o remount,rw /")
		if c["mount"] != want {
			t.Errorf("mount = %+v\nwant %+v", c["mount"], want)
		}
		if got := c["disk space"]; got != chk("disk space", CheckOK, "not checked on a read-only file system", "") {
			t.Errorf("disk space = %+v", got)
		}
		touch(t, target+"-wal", 0)
		c = mountChecks(t, target, fsStats{readOnly: true}, nil)
		if !strings.HasPrefix(c["mount"].Fix, "copy the file to a writable directory (cp -p "+shellArg(target)+" "+shellArg(target+"-wal")+" DIR/)") {
			t.Errorf("with a -wal, mount fix = %q, want it to copy the -wal too", c["mount"].Fix)
		}
	})
	for _, tc := range []struct {
		name  string
		wal   int64 // size of a -wal, or -1 for none
		avail uint64
		want  Check
	}{
		{"full", -1, diskFull - 1, chk("disk space", CheckFail, "1.0 MiB free on /: the file system is full, writes fail with \"database or disk is full\"", fix)},
		{"nothing free", -1, 0, chk("disk space", CheckFail, "0.0 MiB free on /: the file system is full, writes fail with \"database or disk is full\"", fix)},
		{"just not full", -1, diskFull, chk("disk space", CheckWarn, "1.0 MiB free on /, less than 64.0 MiB: a burst of writes can fill it", fix)},
		{"just low", -1, diskLow - 1, chk("disk space", CheckWarn, "64.0 MiB free on /, less than 64.0 MiB: a burst of writes can fill it", fix)},
		{"just enough", -1, diskLow, chk("disk space", CheckOK, "64.0 MiB free on /", "")},
		{"small -wal", 1 << 20, diskLow - 1, chk("disk space", CheckWarn, "64.0 MiB free on /, less than 64.0 MiB: a burst of writes can fill it", fix)},
		{"-wal of the limit", diskLow, diskLow, chk("disk space", CheckOK, "64.0 MiB free on /", "")},
		{"big -wal, low", diskLow + 8<<20, diskLow + 4<<20, chk("disk space", CheckWarn, "68.0 MiB free on /, less than 72.0 MiB: a burst of writes can fill it", fix)},
		{"big -wal, just low", diskLow + 8<<20, diskLow + 8<<20 - 1, chk("disk space", CheckWarn, "72.0 MiB free on /, less than 72.0 MiB: a burst of writes can fill it", fix)},
		{"big -wal, enough", diskLow + 8<<20, diskLow + 8<<20, chk("disk space", CheckOK, "72.0 MiB free on /", "")},
	} {
		t.Run("disk "+tc.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "state.db")
			if tc.wal >= 0 {
				touch(t, target+"-wal", tc.wal)
			}
			if got := mountChecks(t, target, fsStats{avail: tc.avail}, nil)["disk space"]; got != tc.want {
				t.Errorf("disk space = %+v\nwant %+v", got, tc.want)
			}
		})
	}
	noInodes := chk("disk space", CheckFail, "no free inodes on /: SQLite cannot create the -wal and -shm", fix)
	for _, tc := range []struct {
		name     string
		sidecars []string
		avail    uint64
		want     Check
	}{
		{"no sidecars", nil, plenty, noInodes},
		{"only a -wal", []string{"-wal"}, plenty, noInodes},
		{"only a -shm", []string{"-shm"}, plenty, noInodes},
		{"both sidecars", []string{"-wal", "-shm"}, plenty, chk("disk space", CheckOK, "10.0 GiB free on /", "")},
		{"full first", nil, diskFull - 1, chk("disk space", CheckFail, "1.0 MiB free on /: the file system is full, writes fail with \"database or disk is full\"", fix)},
	} {
		t.Run("inodes "+tc.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "state.db")
			for _, s := range tc.sidecars {
				touch(t, target+s, 0)
			}
			if got := mountChecks(t, target, fsStats{avail: tc.avail, noInodes: true}, nil)["disk space"]; got != tc.want {
				t.Errorf("disk space = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCheckPathFindings(t *testing.T) {
	old := fsStat
	fsStat = func(string) (fsStats, error) { return fsStats{avail: 10 << 30}, nil }
	defer func() { fsStat = old }()
	dir := t.TempDir()
	target := filepath.Join(dir, "state.db")
	touch(t, target, 0)
	touch(t, target+"-wal", 0)
	if err := os.Mkdir(target+"-shm", 0o700); err != nil {
		t.Fatal(err)
	}
	u := currentPrincipal()
	var d Diagnosis
	d.add("user", CheckOK, "", "")
	d.checkPath(target, u, 0)
	var names []string
	for _, c := range d.Checks {
		names = append(names, c.Name+":"+c.Status)
	}
	want := []string{"user:" + CheckOK, "mount:" + CheckOK, "disk space:" + CheckOK, "directory:" + CheckOK, "file:" + CheckOK, "-wal:" + CheckOK, "-shm:" + CheckFail}
	if !slices.Equal(names, want) {
		t.Errorf("findings = %q, want %q", names, want)
	}
	if got := d.Checks[0].Detail; got != u.describe(nil) {
		t.Errorf("user = %q, want %q", got, u.describe(nil))
	}
	if dc := d.Checks[3]; !strings.HasPrefix(dc.Detail, "drwx") || !strings.HasSuffix(dc.Detail, "can create files in it") {
		t.Errorf("directory = %+v", dc)
	}
}
