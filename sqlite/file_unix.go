//go:build unix

package sqlite

import "syscall"

const (
	noFollow       = syscall.O_NOFOLLOW
	syscallCloexec = syscall.O_CLOEXEC
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
