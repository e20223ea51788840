package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testenv"
)

// asUser runs the sessiondb command line as a user without root's powers:
// a copy of this test binary (TestMain runs Run when benchWorkerEnv is set)
// under setpriv or runuser to nobody when the tests run as root, or as is
// when they do not.
type asUser struct {
	bin      string   // the copy, where the user can execute it
	base     string   // a directory the user can enter
	wrap     []string // the command that switches to the user, or nil
	uid, gid int
	name     string // as doctor names it in a chown
	env      []string
}

const nobody = 65534

func newAsUser(t *testing.T) *asUser {
	t.Helper()
	u := &asUser{uid: os.Geteuid(), gid: os.Getegid()}
	if u.uid == 0 {
		u.uid, u.gid = nobody, nobody
		if p, err := exec.LookPath("setpriv"); err == nil {
			u.wrap = []string{p, "--reuid=" + strconv.Itoa(nobody), "--regid=" + strconv.Itoa(nobody), "--clear-groups"}
		} else if p, err := exec.LookPath("runuser"); err == nil {
			u.wrap = []string{p, "-u", "nobody", "--"}
		} else {
			testenv.Missing(t, "the tests run as root and neither setpriv nor runuser (util-linux) is installed to run sessiondb as an unprivileged user")
		}
	}
	u.name = strconv.Itoa(u.uid)
	if pw, err := user.LookupId(u.name); err == nil {
		u.name = pw.Username
	}
	// t.TempDir is 0700 inside a 0700 directory: open both to the user.
	u.base = t.TempDir()
	for _, d := range []string{filepath.Dir(u.base), u.base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	u.env = append(os.Environ(), benchWorkerEnv+"=1")
	if os.Getenv("GOCOVERDIR") != "" && u.wrap != nil {
		// A coverage-instrumented binary writes its counters to GOCOVERDIR
		// on exit, and prints an error when the user cannot: give it a
		// directory it can write (its counts are not merged into the run's).
		cover := filepath.Join(u.base, "gocoverdir")
		if err := os.Mkdir(cover, 0o777); err != nil || os.Chmod(cover, 0o777) != nil {
			t.Fatalf("coverage directory for uid %d: %v", u.uid, err)
		}
		u.env = append(u.env, "GOCOVERDIR="+cover)
	}
	u.bin = filepath.Join(u.base, "sessiondb")
	copyFile(t, self, u.bin, 0o755)
	if out, _, code := u.run(t, "--version"); code != 0 {
		testenv.Missing(t, "uid "+strconv.Itoa(u.uid)+" cannot run a program in "+u.base+" (is TMPDIR inside a directory only root may enter?): "+out)
	}
	return u
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// command returns the command that runs args as the user.
func (u *asUser) command(args ...string) *exec.Cmd {
	argv := append(slices.Clone(u.wrap), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = u.env
	cmd.Dir = u.base // the user may not enter the test's working directory
	return cmd
}

// run runs the sessiondb command line args as the user.
func (u *asUser) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := u.command(append([]string{u.bin}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), errOut.String(), 0
}

// dir returns a new directory owned by the user, holding a database with
// one session, closed (so no -wal or -shm is left).
func (u *asUser) dir(t *testing.T) (dir, db string) {
	t.Helper()
	dir, err := os.MkdirTemp(u.base, "hermes")
	if err != nil {
		t.Fatal(err)
	}
	u.chown(t, dir)
	db = filepath.Join(dir, "state.db")
	if out, errOut, code := u.run(t, "--db", db, "new", "--source", "cli", "--id", doctorSession); code != 0 {
		t.Fatalf("new: exit %d: %s%s", code, out, errOut)
	}
	return dir, db
}

func (u *asUser) chown(t *testing.T, path string) {
	t.Helper()
	if err := os.Chown(path, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
}

const doctorSession = "20260501_120000_abcdef"

// appendMessage is the command the permission problems break.
func (u *asUser) appendMessage(t *testing.T, db string) (string, int) {
	t.Helper()
	out, errOut, code := u.run(t, "--db", db, "append", doctorSession, "--role", "user", "--content", "hello")
	return out + errOut, code
}

// finding is one check of doctor --json.
type finding struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

var fixLine = regexp.MustCompile(`(?m)^\s+fix: (.+)$`)

// doctor runs doctor as the user, human and --json, checks that both list
// the same fixes and that neither advises recover, and returns the failed
// findings by name and the fixes in the order printed.
func (u *asUser) doctor(t *testing.T, db string) (map[string]finding, []string) {
	t.Helper()
	out, errOut, code := u.run(t, "--db", db, "doctor")
	if code != exitError || !strings.Contains(out, "PROBLEMS FOUND") {
		t.Fatalf("doctor: exit %d, want %d:\n%s%s", code, exitError, out, errOut)
	}
	if strings.Contains(out, "recover") {
		t.Errorf("doctor advises recover for a problem that is not damage:\n%s", out)
	}
	var fixes []string
	for _, m := range fixLine.FindAllStringSubmatch(out, -1) {
		fixes = append(fixes, m[1])
	}
	jout, _, _ := u.run(t, "--db", db, "doctor", "--json")
	var rep struct {
		Diagnosis struct {
			Healthy bool      `json:"healthy"`
			Checks  []finding `json:"checks"`
		} `json:"diagnosis"`
	}
	if err := json.Unmarshal([]byte(jout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, jout)
	}
	failed := map[string]finding{}
	var jfixes []string
	for _, c := range rep.Diagnosis.Checks {
		if c.Status == "fail" {
			failed[c.Name] = c
		}
		if c.Fix != "" && c.Status != "ok" {
			jfixes = append(jfixes, c.Fix)
		}
	}
	if rep.Diagnosis.Healthy || !slices.Equal(fixes, jfixes) {
		t.Errorf("doctor --json: healthy %v, fixes %q; the human report: %q", rep.Diagnosis.Healthy, jfixes, fixes)
	}
	t.Logf("doctor:\n%s", out)
	return failed, fixes
}

// apply runs each fix doctor printed, as a shell command: the parts after
// sudo as root, the others as the user.
func (u *asUser) apply(t *testing.T, fixes []string) {
	t.Helper()
	for _, fix := range fixes {
		for _, part := range strings.Split(fix, " && ") {
			var cmd *exec.Cmd
			if rest, ok := strings.CutPrefix(part, "sudo "); ok {
				if os.Geteuid() != 0 {
					testenv.Missing(t, "applying "+fix+" needs root")
				}
				cmd = exec.Command("sh", "-c", rest)
			} else {
				cmd = u.command("sh", "-c", part)
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("applying the advice %q: %v\n%s", part, err, out)
			}
		}
	}
}

// wantFixed re-runs the command that failed and doctor: both succeed now.
func (u *asUser) wantFixed(t *testing.T, db string) {
	t.Helper()
	if out, code := u.appendMessage(t, db); code != 0 {
		t.Fatalf("append after applying the advice: exit %d: %s", code, out)
	}
	if out, errOut, code := u.run(t, "--db", db, "list"); code != 0 {
		t.Fatalf("list after applying the advice: exit %d: %s%s", code, out, errOut)
	}
	if out, errOut, code := u.run(t, "--db", db, "doctor"); code != 0 || !strings.Contains(out, "healthy") {
		t.Fatalf("doctor after applying the advice: exit %d:\n%s%s", code, out, errOut)
	}
}

func wantFinding(t *testing.T, failed map[string]finding, name, fix string) {
	t.Helper()
	c, ok := failed[name]
	if !ok {
		t.Fatalf("no failed %q finding; failed: %+v", name, failed)
	}
	if c.Fix != fix {
		t.Errorf("%s: fix %q, want %q (%s)", name, c.Fix, fix, c.Detail)
	}
}

func mustChmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorPermissionAdvice creates each permission problem, runs doctor
// as the unprivileged user it affects, applies the advice it printed, and
// runs the command that failed again.
func TestDoctorPermissionAdvice(t *testing.T) {
	u := newAsUser(t)

	t.Run("read-only file before any write", func(t *testing.T) {
		_, db := u.dir(t)
		mustChmod(t, db, 0o400)
		failed, fixes := u.doctor(t, db)
		wantFinding(t, failed, "file", "chmod u+w "+db)
		if out, _, code := u.run(t, "--db", db, "doctor", "--fix"); code != exitError || strings.Contains(out, "fixed:") {
			t.Errorf("doctor --fix on a permission problem: exit %d\n%s", code, out)
		}
		if fi, _ := os.Stat(db); fi.Mode().Perm() != 0o400 {
			t.Errorf("doctor --fix changed the mode to %v", fi.Mode())
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			if _, err := os.Lstat(db + suffix); err == nil {
				t.Errorf("doctor created %s, which inherits the file's mode 0400 and blocks the next writer", suffix)
			}
		}
		u.apply(t, fixes)
		u.wantFixed(t, db)
	})

	t.Run("read-only file after a failed write", func(t *testing.T) {
		_, db := u.dir(t)
		mustChmod(t, db, 0o400)
		if out, code := u.appendMessage(t, db); code == 0 {
			t.Fatalf("append to a read-only file succeeded: %s", out)
		}
		// The writer checks that it may write before SQLite opens the
		// file, so the failed write leaves no -shm with the file's mode.
		if _, err := os.Lstat(db + "-shm"); err == nil {
			t.Error("the failed write left a -shm")
		}
		failed, fixes := u.doctor(t, db)
		wantFinding(t, failed, "file", "chmod u+w "+db)
		u.apply(t, fixes)
		u.wantFixed(t, db)
	})

	t.Run("-shm left read-only after the file was fixed", func(t *testing.T) {
		_, db := u.dir(t)
		mustChmod(t, db, 0o400)
		if out, code := u.appendMessage(t, db); code == 0 {
			t.Fatalf("append to a read-only file succeeded: %s", out)
		}
		// What a reader of an older sessiondb (or another SQLite program)
		// left behind: a -shm with the file's mode 0400.
		if err := os.WriteFile(db+"-shm", nil, 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(db+"-shm", u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
		mustChmod(t, db, 0o600) // all the old doctor advised
		failed, fixes := u.doctor(t, db)
		if c, ok := failed["file"]; ok {
			t.Errorf("the file is fixed, yet doctor blames it: %+v", c)
		}
		wantFinding(t, failed, "-shm", "chmod u+w "+db+"-shm")
		u.apply(t, fixes)
		u.wantFixed(t, db)
	})

	t.Run("read-only directory", func(t *testing.T) {
		dir, db := u.dir(t)
		mustChmod(t, dir, 0o555)
		if out, code := u.appendMessage(t, db); code == 0 {
			t.Fatalf("append in a read-only directory succeeded: %s", out)
		}
		failed, fixes := u.doctor(t, db)
		wantFinding(t, failed, "directory", "chmod u+w "+dir)
		u.apply(t, fixes)
		u.wantFixed(t, db)
	})

	t.Run("directory the user cannot enter", func(t *testing.T) {
		dir, db := u.dir(t)
		mustChmod(t, dir, 0o600)
		failed, fixes := u.doctor(t, db)
		wantFinding(t, failed, "directory", "chmod u+x "+dir)
		u.apply(t, fixes)
		u.wantFixed(t, db)
	})

	t.Run("file owned by root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			testenv.Missing(t, "a file owned by another user needs root to create")
		}
		_, db := u.dir(t)
		if err := os.Chown(db, 0, 0); err != nil {
			t.Fatal(err)
		}
		if out, code := u.appendMessage(t, db); code == 0 {
			t.Fatalf("append to root's 0600 file succeeded: %s", out)
		}
		failed, fixes := u.doctor(t, db)
		wantFinding(t, failed, "file", "sudo chown "+u.name+" "+db)
		u.apply(t, fixes)
		u.wantFixed(t, db)
	})

	t.Run("-shm owned by root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			testenv.Missing(t, "a file owned by another user needs root to create")
		}
		_, db := u.dir(t)
		if err := os.WriteFile(db+"-shm", nil, 0o444); err != nil {
			t.Fatal(err)
		}
		if out, code := u.appendMessage(t, db); code == 0 {
			t.Fatalf("append with root's -shm succeeded: %s", out)
		}
		failed, fixes := u.doctor(t, db)
		wantFinding(t, failed, "-shm", "sudo chown "+u.name+" "+db+"-shm && chmod u+w "+db+"-shm")
		u.apply(t, fixes)
		u.wantFixed(t, db)
	})

	t.Run("root's directory on the way", func(t *testing.T) {
		if os.Geteuid() != 0 {
			testenv.Missing(t, "a directory owned by another user needs root to create")
		}
		outer, err := os.MkdirTemp(u.base, "private")
		if err != nil {
			t.Fatal(err)
		}
		mustChmod(t, outer, 0o755)
		inner := filepath.Join(outer, "hermes")
		if err := os.Mkdir(inner, 0o700); err != nil {
			t.Fatal(err)
		}
		u.chown(t, inner)
		db := filepath.Join(inner, "state.db")
		if out, errOut, code := u.run(t, "--db", db, "new", "--source", "cli", "--id", doctorSession); code != 0 {
			t.Fatalf("new: exit %d: %s%s", code, out, errOut)
		}
		mustChmod(t, outer, 0o700) // root's, and closed to others
		failed, fixes := u.doctor(t, db)
		wantFinding(t, failed, "directory", "sudo chmod o+x "+outer)
		u.apply(t, fixes)
		u.wantFixed(t, db)
	})
}

// mountTmpfs mounts a tmpfs with the given options on a new directory and
// unmounts it when the test ends; it needs root.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		testenv.Missing(t, "cannot mount a tmpfs (a container without CAP_SYS_ADMIN?): "+strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

func TestDoctorReadOnlyMount(t *testing.T) {
	dir := mountTmpfs(t, "size=16m")
	db := filepath.Join(dir, "state.db")
	mustCLI(t, db, "new", "--source", "cli", "--id", doctorSession)
	if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v %s", err, out)
	}
	if _, _, code := cli(t, db, "", "append", doctorSession, "--role", "user", "--content", "hi"); code == 0 {
		t.Fatal("append on a read-only mount succeeded")
	}
	out, _, code := cli(t, db, "", "doctor")
	if code != exitError || strings.Contains(out, "recover") || strings.Contains(out, "schema") {
		t.Fatalf("doctor on a read-only mount: exit %d\n%s", code, out)
	}
	wantDetail := "the file system " + dir + " (tmpfs) is mounted read-only"
	if !strings.Contains(out, wantDetail) {
		t.Fatalf("doctor does not say %q:\n%s", wantDetail, out)
	}
	m := fixLine.FindStringSubmatch(out)
	remount, ok := "", false
	if m != nil {
		_, remount, ok = strings.Cut(m[1], "remount the file system read-write: sudo ")
	}
	if !ok || remount != "mount -o remount,rw "+dir {
		t.Fatalf("no remount advice:\n%s", out)
	}
	if out, err := exec.Command("sh", "-c", remount).CombinedOutput(); err != nil {
		t.Fatalf("applying the advice %q: %v %s", remount, err, out)
	}
	mustCLI(t, db, "append", doctorSession, "--role", "user", "--content", "hi")
	if out := mustCLI(t, db, "doctor"); !strings.Contains(out, "healthy") {
		t.Fatalf("doctor after the remount:\n%s", out)
	}
}

func TestDoctorDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "size=16m")
	db := filepath.Join(dir, "state.db")
	mustCLI(t, db, "new", "--source", "cli", "--id", doctorSession)
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	if _, _, code := cli(t, db, "", "append", doctorSession, "--role", "user", "--content", "hi"); code == 0 {
		t.Fatal("append on a full file system succeeded")
	}
	out, _, code := cli(t, db, "", "doctor")
	if code != exitError || strings.Contains(out, "recover") {
		t.Fatalf("doctor on a full disk: exit %d\n%s", code, out)
	}
	if want := "fix: free space on " + dir + " (df -h " + dir + " shows it)"; !strings.Contains(out, want) {
		t.Fatalf("doctor does not advise %q:\n%s", want, out)
	}
	if err := os.Remove(filler); err != nil { // the advice: free space
		t.Fatal(err)
	}
	mustCLI(t, db, "append", doctorSession, "--role", "user", "--content", "hi")
	if out, _, code := cli(t, db, "", "doctor"); code != 0 || !strings.Contains(out, "WARN  disk space") {
		t.Fatalf("doctor with 16 MiB free: exit %d\n%s", code, out)
	}
}
