package sqlite

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	sqlite3 "github.com/mattn/go-sqlite3"
	"golang.org/x/sys/unix"

	"github.com/sessiondb/sessiondb"
)

// Free-space thresholds of Diagnose. Below diskFull a write all but surely
// fails with "database or disk is full"; below diskLow, or below the size of
// the -wal if that is larger, a burst of writes can fill the file system
// (the WAL grows to journalSizeLimit between checkpoints).
const (
	diskFull = 1 << 20
	diskLow  = journalSizeLimit
)

// fsStats is what Diagnose needs to know about a file system.
type fsStats struct {
	readOnly bool   // mounted read-only
	avail    uint64 // bytes this user may still write
	noInodes bool   // no file can be created
}

// fsStat is statFS, a variable for tests.
var fsStat = statFS

// searchable is unix.Access, a variable for tests of blockedAncestor (which
// cannot find a blocked directory when the tests run as root).
var searchable = unix.Access

// mountinfo is the file mountOf reads, a variable for tests.
var mountinfo = "/proc/self/mountinfo"

// principal is the user Diagnose checks access for: the effective ids of
// this process.
type principal struct {
	uid  uint32
	gids []uint32
	name string // login name, or the uid when it has none
}

func currentPrincipal() principal {
	u := principal{uid: uint32(os.Geteuid()), gids: []uint32{uint32(os.Getegid())}}
	if gs, err := os.Getgroups(); err == nil {
		for _, g := range gs {
			u.gids = append(u.gids, uint32(g))
		}
	}
	u.name = userName(u.uid)
	return u
}

func (u principal) root() bool { return u.uid == 0 }

// class is the permission class of fi that applies to u: 'u' (owner), 'g'
// (group) or 'o' (others).
func (u principal) class(fi fs.FileInfo) byte {
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid == u.uid {
		return 'u'
	}
	for _, g := range u.gids {
		if g == st.Gid {
			return 'g'
		}
	}
	return 'o'
}

// lacks returns the letters of need ("rw", "wx", "x") that the mode bits of
// fi do not grant to class c.
func lacks(fi fs.FileInfo, c byte, need string) string {
	shift := map[byte]uint{'u': 6, 'g': 3, 'o': 0}[c]
	var out []byte
	for _, l := range []byte(need) {
		bit := map[byte]fs.FileMode{'r': 4, 'w': 2, 'x': 1}[l] << shift
		if fi.Mode().Perm()&bit == 0 {
			out = append(out, l)
		}
	}
	return string(out)
}

// checkAccess examines, before SQLite touches anything, whether this
// process's user can use the database at abs: the directories on the way,
// the directory that holds the file (SQLite creates the -wal, -shm and
// -journal there), the file, its existing sidecars, the mount and the free
// space. It adds one finding per item and reports whether the SQLite checks
// may run: after a failure they would fail too, or worse, a read-only open
// would create a -wal and -shm with the file's wrong mode, which then block
// the next writer even after the file itself is fixed.
func (d *Diagnosis) checkAccess(abs string) bool {
	before := len(d.Checks)
	u := currentPrincipal()
	d.add("user", CheckOK, u.describe(nil), "")
	d.checkPath(abs, u, before)
	for _, c := range d.Checks[before:] {
		if c.Status == CheckFail {
			return false
		}
	}
	return true
}

// checkPath adds the findings of checkAccess after the user's (the check
// at index userAt), which it completes once it knows the file's owner.
func (d *Diagnosis) checkPath(abs string, u principal, userAt int) {
	if err := checkPathLength(abs); err != nil {
		d.add("path", CheckFail, fmt.Sprintf("%d bytes long: SQLite opens no database path longer than %d bytes; move the database to a shorter path", len(abs), maxPathBytes), "")
		return
	}
	if a := blockedAncestor(abs); a != "" {
		d.add(unreachable(abs, a, u))
		return
	}
	lfi, err := os.Lstat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		d.add("file", CheckFail, abs+" does not exist (check --db and HERMES_HOME)", "sessiondb --db "+shellArg(abs)+" init")
		return
	}
	if err != nil {
		d.add("file", CheckFail, fmt.Sprintf("cannot examine %s: %v", abs, err), "")
		return
	}
	// SQLite resolves a symlink and keeps the -wal and -shm next to the
	// file it points to.
	target, via := abs, ""
	if lfi.Mode()&fs.ModeSymlink != 0 {
		dest, _ := os.Readlink(abs)
		t, err := filepath.EvalSymlinks(abs)
		if err != nil {
			d.add("file", CheckFail, fmt.Sprintf("%s is a symlink to %s, which cannot be followed (%v)", abs, dest, unwrapPathError(err)),
				"point the link at the database, or pass --db with its real path")
			return
		}
		target, via = t, " (symlink to "+t+")"
		if a := blockedAncestor(target); a != "" {
			d.add(unreachable(target, a, u))
			return
		}
	}
	fi, err := os.Stat(target)
	if err != nil {
		d.add("file", CheckFail, fmt.Sprintf("cannot examine %s: %v", target, err), "")
		return
	}
	d.Checks[userAt].Detail = u.describe(fi)
	if !fi.Mode().IsRegular() {
		what := "not a regular file (" + fi.Mode().Type().String() + ")"
		if fi.IsDir() {
			what = "a directory"
		}
		d.add("file", CheckFail, fmt.Sprintf("%s%s is %s, not a database file", abs, via, what), "pass --db with the path of the state.db file")
		return
	}

	dir := filepath.Dir(target)
	d.checkMount(target, dir)
	if dfi, err := os.Stat(dir); err == nil {
		d.add(permCheck("directory", dir, dfi, u, "wx"))
	}
	name, status, detail, fix := permCheck("file", target, fi, u, "rw")
	d.add(name, status, detail+via, fix)
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		p := target + suffix
		sfi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			d.add(suffix, CheckFail, fmt.Sprintf("cannot examine %s: %v", p, err), "")
		case !sfi.Mode().IsRegular():
			// SQLite opens sidecars with O_NOFOLLOW and needs plain files.
			d.add(suffix, CheckFail, fmt.Sprintf("%s is not a regular file (%s): SQLite cannot use it", p, sfi.Mode().Type()),
				"stop every process using the database, then move "+shellArg(p)+" aside (never delete a -wal: it can hold committed changes)")
		default:
			d.add(permCheck(suffix, p, sfi, u, "rw"))
		}
	}
}

// checkMount adds the read-only-mount and free-space findings for the file
// system holding dir.
func (d *Diagnosis) checkMount(target, dir string) {
	mnt, fstype := mountOf(dir)
	if mnt == "" {
		mnt = dir
	}
	st, err := fsStat(dir)
	if err != nil {
		d.add("mount", CheckWarn, fmt.Sprintf("cannot examine the file system holding %s: %v", dir, unwrapPathError(err)), "")
		return
	}
	where := mnt
	if fstype != "" {
		where += " (" + fstype + ")"
	}
	if st.readOnly {
		cp := "cp -p " + shellArg(target)
		if _, err := os.Lstat(target + "-wal"); err == nil {
			cp += " " + shellArg(target+"-wal") // it can hold committed changes
		}
		d.add("mount", CheckFail, fmt.Sprintf("the file system %s is mounted read-only: nothing can write the database, its -wal or -shm", where),
			fmt.Sprintf("copy the file to a writable directory (%s DIR/) and use the copy, or remount the file system read-write: sudo mount -o remount,rw %s", cp, shellArg(mnt)))
		d.add("disk space", CheckOK, "not checked on a read-only file system", "")
		return
	}
	d.add("mount", CheckOK, where+", read-write", "")

	low := uint64(diskLow)
	if wfi, err := os.Lstat(target + "-wal"); err == nil && uint64(wfi.Size()) > low {
		low = uint64(wfi.Size())
	}
	fix := fmt.Sprintf("free space on %s (df -h %s shows it), or move the database to a file system with room", mnt, shellArg(mnt))
	_, walErr := os.Lstat(target + "-wal")
	_, shmErr := os.Lstat(target + "-shm")
	switch {
	case st.avail < diskFull:
		d.add("disk space", CheckFail, fmt.Sprintf("%s free on %s: the file system is full, writes fail with \"database or disk is full\"", bytesText(st.avail), mnt), fix)
	case st.noInodes && (walErr != nil || shmErr != nil):
		d.add("disk space", CheckFail, fmt.Sprintf("no free inodes on %s: SQLite cannot create the -wal and -shm", mnt), fix)
	case st.avail < low:
		d.add("disk space", CheckWarn, fmt.Sprintf("%s free on %s, less than %s: a burst of writes can fill it", bytesText(st.avail), mnt, bytesText(low)), fix)
	default:
		d.add("disk space", CheckOK, fmt.Sprintf("%s free on %s", bytesText(st.avail), mnt), "")
	}
}

// permCheck judges whether u may use path (fi is its Stat) as need says:
// "rw" for the database and its sidecars, "wx" for its directory (create
// and remove files in it). The mode bits and owner say what to change; the
// kernel's access(2) has the last word, as it also knows ACLs, immutable
// files and security modules. A read-only mount is reported by checkMount.
func permCheck(name, path string, fi fs.FileInfo, u principal, need string) (string, string, string, string) {
	var mode uint32
	for _, l := range need {
		mode |= map[rune]uint32{'r': unix.R_OK, 'w': unix.W_OK, 'x': unix.X_OK}[l]
	}
	sysErr := unix.Access(path, mode)
	readOnlyFS := errors.Is(sysErr, unix.EROFS)
	if readOnlyFS {
		sysErr = unix.Access(path, mode&^unix.W_OK)
	}
	missing := ""
	if !u.root() {
		missing = lacks(fi, u.class(fi), need)
	}
	mo := modeOwner(fi)
	can := map[string]string{"rw": "read and write it", "wx": "create files in it"}[need]
	switch {
	case sysErr == nil && readOnlyFS && missing == "":
		return name, CheckOK, fmt.Sprintf("%s: the mode lets %s %s, but the file system is read-only", mo, u.name, can), ""
	case sysErr == nil && !readOnlyFS:
		return name, CheckOK, fmt.Sprintf("%s: %s can %s", mo, u.name, can), ""
	case missing != "":
		what := map[string]string{"r": "cannot read it", "w": "cannot write it", "rw": "cannot read or write it",
			"x": "cannot enter it", "wx": "cannot create files in it"}[missing]
		if fi.IsDir() {
			what = "cannot create files in it (SQLite creates the -wal, -shm and -journal there)"
			if strings.Contains(missing, "x") {
				what = "cannot enter it or create files in it (SQLite creates the -wal, -shm and -journal there)"
			}
		}
		return name, CheckFail, fmt.Sprintf("%s: %s %s", mo, u.name, what), permFix(path, fi, u, need)
	}
	return name, CheckFail, fmt.Sprintf("%s: the mode lets %s %s, but the system refuses (%v): an ACL, the immutable attribute or a security module", mo, u.name, can, sysErr),
		fmt.Sprintf("look at lsattr -d %s and getfacl %s", shellArg(path), shellArg(path))
}

// unreachable is the finding for a database u cannot reach because u may
// not enter the directory a on the way. When a holds the database, u also
// needs to create files in it, and one command gives both.
func unreachable(path, a string, u principal) (string, string, string, string) {
	fi, err := os.Stat(a)
	switch {
	case err != nil:
		return "directory", CheckFail, fmt.Sprintf("%s cannot reach %s: %v", u.name, path, unwrapPathError(err)), ""
	case a == filepath.Dir(path):
		return permCheck("directory", a, fi, u, "wx")
	}
	return "directory", CheckFail, fmt.Sprintf("%s cannot reach %s: %s (%s) does not let %s enter it", u.name, path, a, modeOwner(fi), u.name), searchFix(a, fi, u)
}

// permFix is the command that gives u what need says on path: chmod when u
// owns it, else chown to u (and chmod if the owner's bits lack some).
func permFix(path string, fi fs.FileInfo, u principal, need string) string {
	q := shellArg(path)
	owner := lacks(fi, 'u', need)
	if u.class(fi) == 'u' {
		return "chmod u+" + owner + " " + q
	}
	fix := "sudo chown " + shellArg(u.name) + " " + q
	if owner != "" {
		fix += " && chmod u+" + owner + " " + q
	}
	return fix
}

// searchFix is the command that lets u enter the directory a on the way to
// the database: the least change, the search bit of u's class; a directory
// u does not own is not given away.
func searchFix(a string, fi fs.FileInfo, u principal) string {
	c := u.class(fi)
	if c == 'u' {
		return "chmod u+x " + shellArg(a)
	}
	return "sudo chmod " + string(c) + "+x " + shellArg(a)
}

// blockedAncestor returns the first directory on the way to path that this
// process may not enter, or "".
func blockedAncestor(path string) string {
	var dirs []string
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		err := searchable(dirs[i], unix.X_OK)
		if errors.Is(err, unix.EACCES) {
			return dirs[i]
		}
		if err != nil {
			return "" // missing: Lstat reports it
		}
	}
	return ""
}

func (u principal) describe(fi fs.FileInfo) string {
	s := fmt.Sprintf("%s (uid %d)", u.name, u.uid)
	if u.root() && fi != nil {
		if owner := fi.Sys().(*syscall.Stat_t).Uid; owner != 0 {
			s += fmt.Sprintf(", who may read and write any file; the database belongs to %s: run doctor as that user to check its access", userName(owner))
		}
	}
	return s
}

// modeOwner formats fi's mode, owner and group as ls -l does.
func modeOwner(fi fs.FileInfo) string {
	st := fi.Sys().(*syscall.Stat_t)
	group := strconv.FormatUint(uint64(st.Gid), 10)
	if g, err := user.LookupGroupId(group); err == nil {
		group = g.Name
	}
	return fmt.Sprintf("%s %s %s", lsMode(fi.Mode()), userName(st.Uid), group)
}

// lsMode formats m as ls -l does: drwxrwxrwt, not Go's dtrwxrwxrwx.
func lsMode(m fs.FileMode) string {
	b := []byte("-rwxrwxrwx")
	switch {
	case m.IsDir():
		b[0] = 'd'
	case m&fs.ModeSymlink != 0:
		b[0] = 'l'
	case !m.IsRegular():
		b[0] = '?'
	}
	for i := 0; i < 9; i++ {
		if m&(1<<uint(8-i)) == 0 {
			b[i+1] = '-'
		}
	}
	for _, s := range []struct {
		bit fs.FileMode
		at  int
		c   byte
	}{{fs.ModeSetuid, 3, 's'}, {fs.ModeSetgid, 6, 's'}, {fs.ModeSticky, 9, 't'}} {
		if m&s.bit != 0 {
			if b[s.at] == '-' {
				b[s.at] = s.c - 'a' + 'A'
			} else {
				b[s.at] = s.c
			}
		}
	}
	return string(b)
}

func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return u.Username
	}
	return id
}

// bytesText formats n bytes in MiB, or GiB from 1 GiB on.
func bytesText(n uint64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// shellArg quotes s for a POSIX shell when it needs quoting.
func shellArg(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// mountOf returns the mount point and type of the file system holding
// path, from /proc/self/mountinfo (Linux), or "", "".
func mountOf(path string) (mnt, fstype string) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		m := unescapeMount(fields[4])
		if (path == m || strings.HasPrefix(path, strings.TrimSuffix(m, "/")+"/")) && len(m) >= len(mnt) {
			mnt, fstype = m, fields[sep+1]
		}
	}
	return mnt, fstype
}

// unescapeMount decodes the octal escapes (\040 for a space) of a
// mountinfo path.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// recoverFix is the advice for a database SQLite could not read: recover
// only when SQLite found it damaged. Other errors (permissions, a
// read-only mount, a full disk, I/O) are not damage, and a recovery would
// not help.
func recoverFix(err error, abs string) string {
	var se sqlite3.Error
	if sessiondb.ErrorCode(err) == sessiondb.ECORRUPT || errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB) {
		return "sessiondb recover --source " + shellArg(abs) + " --output NEW.db"
	}
	return ""
}
