package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb"
)

// openReadOnly opens an existing database at abs for reading only (see
// Options.ReadOnly): it checks the file, refuses a foreign, empty or
// older-schema one, and opens a pool of mode=ro connections, falling back
// to an immutable read where SQLite cannot use the -shm.
func openReadOnly(abs string, opts Options) (*DB, error) {
	ctx := context.Background()
	if err := checkExisting(abs); err != nil {
		return nil, err
	}
	facts, ierr := inspect(ctx, abs)
	if ierr == nil {
		if err := facts.refuse(abs, true); err != nil {
			return nil, err
		}
		if facts.version < SchemaVersion {
			// Refused before the pool opens: no -wal or -shm is left.
			return nil, olderSchema(abs, facts.version)
		}
	} else if sessiondb.ErrorCode(ierr) != sessiondb.EPERM {
		return nil, ierr
	}
	walFormat := facts.walFormat
	pool, immutable, err := openReadPool(ctx, abs, walFormat)
	if err != nil {
		return nil, err
	}
	db := &DB{path: abs, now: opts.Now, patience: opts.WritePatience, readOnly: true, immutable: immutable, write: pool, read: pool}
	if err := db.openReadOnly(ctx, ierr != nil); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) openReadOnly(ctx context.Context, inspectAgain bool) error {
	if inspectAgain {
		// The first look needed the -shm; the pool can read.
		f := &fileFacts{}
		if err := f.read(ctx, db.read); err != nil {
			return db.mapErr("read the schema of "+db.path, err)
		}
		if err := f.refuse(db.path, true); err != nil {
			return err
		}
	}
	if err := db.checkFTS5(ctx); err != nil {
		return err
	}
	layout, err := readableSchema(ctx, db.read, db.path)
	if err != nil {
		return err
	}
	db.setLayout(layout)
	if db.immutable {
		db.journalMode = "wal" // the fallback is only taken for WAL files
		return nil
	}
	if err := db.read.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&db.journalMode); err != nil {
		return db.mapErr("read the journal mode of "+db.path, err)
	}
	db.journalMode = strings.ToLower(db.journalMode)
	return nil
}

// checkExisting checks, without creating or opening anything, that path is
// there and can be a database.
func checkExisting(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return noDatabase(path, "")
	case err != nil:
		return fileErr("database "+path, err)
	case fi.IsDir():
		return sessiondb.Errorf(sessiondb.EINVALID, "database %s is a directory, not a file; pass --db with a file path", path)
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Stat(path)
		if err != nil {
			return sessiondb.Errorf(sessiondb.EINVALID, "database %s is a symlink to a missing target: %v", path, err)
		}
		if !target.Mode().IsRegular() {
			return sessiondb.Errorf(sessiondb.EINVALID, "database %s is a symlink to something that is not a regular file", path)
		}
	case !fi.Mode().IsRegular():
		return sessiondb.Errorf(sessiondb.EINVALID, "database %s is not a regular file (%s)", path, fi.Mode().Type())
	}
	return nil
}

// readableSchema checks that the read paths can run on the file as it is:
// schema version 30 or newer and every table and column of schema.sql. It
// returns the file's search-index layout. An older file is refused rather
// than read through queries that guess at its layout: `sessiondb init`
// upgrades it, as Hermes does at its next start.
func readableSchema(ctx context.Context, q querier, path string) (ftsLayout, error) {
	var rows int
	var version sql.NullInt64
	err := q.QueryRowContext(ctx, "SELECT COUNT(*), MAX(version) FROM schema_version").Scan(&rows, &version)
	if err != nil && !strings.Contains(err.Error(), "no such table") {
		return 0, mapErr(path, true, "read the schema version of "+path, err)
	}
	if rows == 0 || version.Int64 < SchemaVersion {
		return 0, olderSchema(path, version.Int64)
	}
	want, err := expectedColumns()
	if err != nil {
		return 0, fmt.Errorf("parse schema columns: %w", err)
	}
	var missing []string
	for _, t := range want {
		live, err := tableInfo(ctx, q, t.table)
		if err != nil {
			return 0, mapErr(path, true, "read the schema of "+path, err)
		}
		if len(live) == 0 {
			missing = append(missing, "table "+t.table)
			continue
		}
		have := map[string]bool{}
		for _, c := range live {
			have[strings.ToLower(c.name)] = true
		}
		for _, c := range t.cols {
			if !have[strings.ToLower(c.name)] {
				missing = append(missing, t.table+"."+c.name)
			}
		}
	}
	if len(missing) > 0 {
		return 0, &sessiondb.Error{Code: sessiondb.ECONFLICT, Message: fmt.Sprintf(
			"%s (schema %d) lacks %s; run `sessiondb init` to add them — Hermes does the same at its next start", path, version.Int64, listNames(missing, 4))}
	}
	objs, err := readSchema(ctx, q)
	if err != nil {
		return 0, mapErr(path, true, "read the schema of "+path, err)
	}
	if base := objs["messages_fts"]; base != "" && !strings.Contains(base, "tool_name") {
		return layoutLegacy, nil
	}
	return layoutCurrent, nil
}

// olderSchema is the error for a read-only open of a file at an older
// schema version.
func olderSchema(path string, version int64) error {
	return &sessiondb.Error{Code: sessiondb.ECONFLICT, Err: ErrOlderSchema, Message: fmt.Sprintf(
		"%s is at schema %d; run `sessiondb init` to upgrade it to %d — Hermes does the same at its next start", path, version, SchemaVersion)}
}

// openReadPool opens the pool of read-only connections. SQLite opens a
// file lazily, so the schema is read once: a WAL file needs its -shm
// (created or written by every connection), and where this user cannot do
// that (SQLITE_READONLY or SQLITE_CANTOPEN), the file is opened
// immutable=1 instead, when immutableUnsafe finds that safe.
func openReadPool(ctx context.Context, path string, walFormat bool) (*sql.DB, bool, error) {
	pool, err := openPool(ctx, path, false)
	if err == nil {
		return pool, false, nil
	}
	if !shmProblem(err) {
		return nil, false, mapErr(path, true, "open "+path+" read-only", err)
	}
	if why := immutableUnsafe(path, walFormat); why != "" {
		return nil, false, &sessiondb.Error{Code: sessiondb.EPERM, Err: err, Message: fmt.Sprintf(
			"open %s read-only: SQLite needs to create or write %s-shm and this user cannot (%v), and an immutable read is not safe: %s. Read it as a user who can write its directory, or copy the file with its -wal elsewhere",
			path, path, err, why)}
	}
	pool, err = openPool(ctx, path, true)
	if err != nil {
		return nil, false, mapErr(path, true, "open "+path+" immutable", err)
	}
	return pool, true, nil
}

func openPool(ctx context.Context, path string, immutable bool) (*sql.DB, error) {
	q := url.Values{"mode": {"ro"}, "_busy_timeout": {fmt.Sprint(readerBusyTimeout)}}
	if immutable {
		q.Set("immutable", "1")
	}
	pool, err := sql.Open(driverName, dsn(path, q))
	if err != nil {
		return nil, err
	}
	pool.SetMaxOpenConns(readPoolMax)
	pool.SetMaxIdleConns(readPoolMax)
	var n int
	if err := pool.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master").Scan(&n); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// shmProblem reports whether a read-only open failed because SQLite could
// not create or write a sidecar file (-wal, -shm): SQLITE_READONLY (e.g.
// READONLY_DIRECTORY) or SQLITE_CANTOPEN.
func shmProblem(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrReadonly || se.Code == sqlite3.ErrCantOpen)
}

// The lock bytes SQLite's unix VFS uses: on the database file the pending,
// reserved and shared bytes (every connection to a WAL file holds a shared
// lock there while it is open); in the -shm the WAL locks and the
// dead-man switch byte.
const (
	dbLockStart  = 0x40000000
	dbLockLen    = 2 + 510
	shmLockStart = 120
	shmLockLen   = 9
)

// immutableUnsafe says why reading path with immutable=1 could return what
// is not in the file, or "" when it is safe: the file is in WAL mode, its
// WAL holds nothing (an immutable read ignores the WAL), and no process has
// it open (this one, by its descriptors; any other, by its SQLite locks on
// the file and the -shm, which every connection holds while open). A
// process that opens the file after this check is not seen: the immutable
// handle is meant for one short read.
func immutableUnsafe(path string, walFormat bool) string {
	if !walFormat {
		return "the file is not in WAL mode (or this process has it open)"
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return fmt.Sprintf("%s-wal holds %d bytes of changes not yet in the file", path, fi.Size())
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err.Error()
	}
	if processHolds(fi) {
		return "this process has it open"
	}
	for _, p := range []string{path + "-wal", path + "-shm"} {
		if sfi, err := os.Stat(p); err == nil && processHolds(sfi) {
			return "this process has it open"
		}
	}
	pid, held, err := lockHolder(path, dbLockStart, dbLockLen)
	if err != nil {
		return "its locks cannot be checked (" + err.Error() + ")"
	}
	if !held {
		if _, serr := os.Stat(path + "-shm"); serr == nil {
			// An unreadable -shm is no obstacle: the locks on the file
			// above already show every open connection.
			pid, held, _ = lockHolder(path+"-shm", shmLockStart, shmLockLen)
		}
	}
	if held {
		return fmt.Sprintf("another process (pid %d) has it open", pid)
	}
	return ""
}
