package sqlite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sessiondb/sessiondb"
)

// sqliteHeader is the magic string every SQLite 3 database file starts with.
const sqliteHeader = "SQLite format 3\x00"

// zeroByteGrace is how old a zero-byte file must be before QuarantineInvalid
// treats it as invalid. Every new database is a zero-byte file between its
// creation and SQLite's first write (sessiondb's prepareFile and Python's
// sqlite3.connect both create it empty; under lock contention that can take
// seconds), so a young empty file is most likely a sibling process's
// database being initialised. Moving it would leave that process writing to
// the moved inode (TestReliabilityFreshFile fails that way without the
// grace). A zero-byte file left by a crash is older than this.
const zeroByteGrace = time.Minute

// quarantineSidecars are the files SQLite keeps next to a database. They are
// moved with it: a hot rollback journal or a WAL left next to the fresh
// database that replaces it would be replayed into the new file.
var quarantineSidecars = []string{"-wal", "-shm", "-journal"}

// QuarantineInvalid moves aside a file at path that cannot be a SQLite
// database, as Hermes does before it creates a fresh one (STORAGE.md §4.7):
// a zero-byte file (older than a minute) or a file whose first 16 bytes
// are not "SQLite format 3\x00". The file is renamed to
// <path>.invalid-YYYYmmdd_HHMMSS (with -N appended if that name is taken),
// its -wal, -shm and -journal, if present, to the same name plus their
// suffix, and the new name of the main file is returned. It returns "" and
// nil when there is nothing to move: no file, a valid header, or anything
// that is not a regular file (directories and symlinks are left to Open,
// which reports them).
//
// QuarantineInvalid reads the header through a file descriptor of its own.
// Closing a descriptor drops every POSIX lock this process holds on the file,
// including those of SQLite connections, so it must run before Open, while
// no connection of this process is open on path. As a safeguard it does
// nothing when any open descriptor of this process (listed in /dev/fd)
// refers to the file, or when /dev/fd cannot be read. It does not guard
// against another goroutine opening the same path concurrently.
func QuarantineInvalid(path string) (movedTo string, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "database %s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", nil
	}
	if processHolds(fi) {
		return "", nil
	}
	invalid, err := invalidFile(path, fi)
	if err != nil || !invalid {
		return "", err
	}
	return quarantine(path, time.Now())
}

// invalidFile reports whether the regular file path (whose Lstat is fi) is
// zero bytes and old enough, or lacks the SQLite header. A file it cannot
// read is not judged: Open reports it.
func invalidFile(path string, fi os.FileInfo) (bool, error) {
	if fi.Size() == 0 {
		return time.Since(fi.ModTime()) >= zeroByteGrace, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow|syscallCloexec, 0)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false, sessiondb.Errorf(sessiondb.EINVALID, "read the header of database %s: %v", path, err)
	}
	return !bytes.Equal(head[:n], []byte(sqliteHeader)), nil
}

// quarantine renames path and its sidecars to a free
// <path>.invalid-YYYYmmdd_HHMMSS[-N] name. The sidecars go first, so a
// fresh database created at path never finds the old ones next to it.
func quarantine(path string, now time.Time) (string, error) {
	base := path + ".invalid-" + now.Format("20060102_150405")
	target := base
	for n := 2; taken(target); n++ {
		target = fmt.Sprintf("%s-%d", base, n)
	}
	for _, suffix := range quarantineSidecars {
		fi, err := os.Lstat(path + suffix)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := os.Rename(path+suffix, target+suffix); err != nil {
			return "", sessiondb.Errorf(sessiondb.EINVALID, "move %s aside: %v", path+suffix, err)
		}
	}
	if err := os.Rename(path, target); err != nil {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "move invalid database %s aside: %v", path, err)
	}
	return target, nil
}

// taken reports whether name or any of its sidecar names exists.
func taken(name string) bool {
	for _, suffix := range append([]string{""}, quarantineSidecars...) {
		if _, err := os.Lstat(name + suffix); !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

// processHolds reports whether an open descriptor of this process refers to
// the file fi describes. It answers true when it cannot tell.
func processHolds(fi os.FileInfo) bool {
	const fdDir = "/dev/fd"
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		return true
	}
	for _, e := range entries {
		// Stat follows the descriptor's link without opening the file.
		st, err := os.Stat(filepath.Join(fdDir, e.Name()))
		if err == nil && os.SameFile(fi, st) {
			return true
		}
	}
	return false
}
