// Package walbuf saves the store's writer system calls. It registers the
// SQLite VFS "sessiondb_walbuf": the default VFS, except that the writes
// SQLite makes to a WAL file during a commit (two per page: the frame
// header, then the page) reach the file as one write (see walbuf.c for
// when the gathered bytes are written out, and why it is only for
// connections with synchronous=FULL). And it keeps statement journals of
// up to 120 KiB in memory instead of temporary files.
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

// stmtSpill is how large a statement journal grows in memory before SQLite
// moves it to a temporary file (SQLite's default: 64 KiB). A group commit
// inserts its messages with one statement, which records the original of
// every page it changes in the statement journal (to undo just that
// statement on error): for a group of 8 messages that passes 64 KiB, and
// every group then created, wrote and deleted a file in /var/tmp.
//
// It must stay under 128 KiB. The in-memory journal is kept in chunks of
// this size and, when it spills, each chunk goes to the file with one
// write; the unix VFS writes at most 128 KiB - 1 bytes per system call and
// reports a write of a multiple of 128 KiB as a full disk, without a
// system error. With 4 MiB, every statement whose journal passed 4 MiB (a
// batch of messages to many sessions, an FTS rebuild inside a migration)
// failed with "database or disk is full" (issue 19).
const stmtSpill = 120 << 10

// Register registers the VFS; calling it again does nothing. Called before
// anything else in the process initializes SQLite, it also raises the
// statement journal's in-memory size (a process-wide setting) to 120 KiB;
// later it leaves it alone. It panics if SQLite has no default VFS of
// version 3 (it always has on Unix).
func Register() {
	once.Do(func() {
		C.walbuf_stmt_spill(stmtSpill) // SQLITE_MISUSE once initialized: keep the default
		if rc := C.walbuf_register(); rc != 0 {
			panic(fmt.Sprintf("walbuf: register VFS: %s (code %d)", C.GoString(C.sqlite3_errstr(rc)), int(rc)))
		}
	})
}

// Counts returns how many writes SQLite has asked of WAL files through
// this VFS, how many reached them, and how many times new frames were
// about to be published while still in the buffer, in this process. A test
// aid: it tells whether a store's writes go through this VFS at all.
func Counts() (asked, done, late int64) {
	var a, d, l C.sqlite3_int64
	C.walbuf_counts(&a, &d, &l)
	return int64(a), int64(d), int64(l)
}
