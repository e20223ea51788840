//go:build unix

package sqlite

import (
	"io"
	"os"
	"syscall"
)

const (
	noFollow       = syscall.O_NOFOLLOW
	syscallCloexec = syscall.O_CLOEXEC
	accessW        = 2 // W_OK of access(2)
)

// freeBytes returns the bytes an unprivileged process may still write on
// the file system holding dir (a variable: tests replace it).
var freeBytes = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// lockHolder reports whether another process holds a POSIX lock on any of
// the n bytes of path from start, and its pid (-1 for an open file
// description lock). It opens path read-only: F_GETLK needs no write
// access. Call it only while this process has no connection on path:
// closing the descriptor drops this process's locks on the file.
func lockHolder(path string, start, n int64) (pid int, held bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: start, Len: n}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return 0, false, err
	}
	if lk.Type == syscall.F_UNLCK {
		return 0, false, nil
	}
	return int(lk.Pid), true, nil
}
