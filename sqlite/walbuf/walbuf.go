// Package walbuf registers the SQLite VFS "sessiondb_walbuf": the default
// VFS, except that the writes SQLite makes to a WAL file during a commit
// (two per page: the frame header, then the page) reach the file as one
// write. See walbuf.c for when the gathered bytes are written out and why
// it is only for connections with synchronous=FULL.
package walbuf

/*
#cgo CFLAGS: -O2
#include "walbuf.h"
*/
import "C"

import (
	"fmt"
	"sync"

	// Provides the sqlite3_* symbols the C code is linked against.
	_ "github.com/mattn/go-sqlite3"
)

// Name is the VFS name to give SQLite (the "vfs" URI parameter).
const Name = "sessiondb_walbuf"

var once sync.Once

// Register registers the VFS; calling it again does nothing. It panics if
// SQLite has no default VFS of version 3 (it always has on Unix).
func Register() {
	once.Do(func() {
		if rc := C.walbuf_register(); rc != 0 {
			panic(fmt.Sprintf("walbuf: register VFS: %s (code %d)", C.GoString(C.sqlite3_errstr(rc)), int(rc)))
		}
	})
}

// counts returns how many writes SQLite has asked of WAL files through
// this VFS, how many reached them, and how many times new frames were
// about to be published while still in the buffer. A test aid.
func counts() (asked, done, late int64) {
	var a, d, l C.sqlite3_int64
	C.walbuf_counts(&a, &d, &l)
	return int64(a), int64(d), int64(l)
}
