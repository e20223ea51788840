//go:build unix

package sqlite

import "syscall"

const (
	noFollow       = syscall.O_NOFOLLOW
	syscallCloexec = syscall.O_CLOEXEC
)
