// Package sqlite implements sessiondb.Store on a Hermes-compatible SQLite
// file (state.db). See DESIGN.md for the invariants that let it share a live
// file with running Hermes processes.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
	"github.com/sessiondb/sessiondb/sqlite/walbuf"
)

// Write patience budgets, as in Hermes: how long a write keeps retrying while
// another process holds the write lock.
const (
	DefaultWritePatience    = 20 * time.Second
	TranscriptWritePatience = 60 * time.Second

	writeRetrySlowAfter = 2 * time.Second
	checkpointEvery     = 50 // writes between PASSIVE checkpoints
	journalSizeLimit    = 64 << 20
	writerBusyTimeout   = 1000 // ms: contention is handled by retrying whole transactions
	readerBusyTimeout   = 5000 // ms
	readPoolMax         = 8
)

// Options configure Open. The zero value is what Hermes uses.
type Options struct {
	// Synchronous is the synchronous pragma of the writer: "FULL" (the
	// default: every write is durable when it returns) or "NORMAL" (faster;
	// a power loss may drop the last transactions, never corrupt the file).
	Synchronous string
	// JournalMode is "wal" (default) or "delete". A file that is already WAL
	// is never switched back to DELETE.
	JournalMode string
	// WritePatience bounds the retry of one write on a locked database
	// (default DefaultWritePatience; appends use TranscriptWritePatience).
	WritePatience time.Duration
	// Now is the clock, in tests a fixed one. Default time.Now.
	Now func() time.Time
	// ReadOnly opens an existing database without ever writing to it: no
	// migration, no chmod, no journal-mode switch, no identity stamping, no
	// index backfill or merge, no moving an invalid file aside. A missing or
	// empty file is an error (ErrNoDatabase); a file at an older schema is
	// refused with the advice to run `sessiondb init`; every write method
	// returns EPERM. Where SQLite would have to create or write the -shm of
	// a WAL file and cannot (a directory or mount the user cannot write),
	// the file is read as an immutable snapshot, but only when no process
	// has it open and its WAL holds nothing (see Immutable).
	ReadOnly bool
	// NoCreate makes Open of a writable handle fail with ErrNoDatabase
	// instead of creating a missing (or initialising an empty) database;
	// an invalid state.db is then not moved aside either.
	NoCreate bool
	// MaxMessageBytes bounds the text of one message written (appended or
	// imported): content, tool calls, reasoning and its other fields
	// together. 0 means sessiondb.DefaultMaxMessageBytes, a negative value
	// no limit but SQLite's own (1 GB per value).
	MaxMessageBytes int64
}

// MaxMessageSizeEnv is the environment variable the sessiondb command reads
// Options.MaxMessageBytes from (a size such as 128MiB); this package never
// reads it.
const MaxMessageSizeEnv = sessiondb.MaxMessageSizeEnv

// DB is a session store on one SQLite file. It is safe for concurrent use.
type DB struct {
	path  string
	now   func() time.Time
	write *sql.DB // exactly one connection: every write is BEGIN IMMEDIATE on it
	read  *sql.DB // read-only pool (WAL only); == write in DELETE mode

	journalMode string
	patience    time.Duration
	maxMessage  int64 // Options.MaxMessageBytes resolved; <= 0: no limit
	writes      atomic.Int64
	usermerge   atomic.Bool // mergeFTS lowered usermerge to 2 (once per handle)
	ident       fileIdentity
	// halted is the error every write returns once the handle stopped
	// writing: another file is at the path, or the file is damaged.
	halted atomic.Pointer[sessiondb.Error]

	mu     sync.Mutex // guards layout
	layout ftsLayout

	group groupCommit // coalesces concurrent appends

	quarantined string // where Open moved an invalid file, if it did
	readOnly    bool   // opened with Options.ReadOnly: every write is refused
	immutable   bool   // read with SQLite's immutable=1 (see Immutable)

	watch watchConn // the read connection DataVersion asks (changes.go)
}

var _ sessiondb.Store = (*DB)(nil)

// DefaultPath returns $HERMES_HOME/state.db, or ~/.hermes/state.db.
func DefaultPath() (string, error) {
	if home := os.Getenv("HERMES_HOME"); home != "" {
		return filepath.Join(home, "state.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "cannot find the home directory for the default database (%v); pass --db PATH or set HERMES_HOME", err)
	}
	return filepath.Join(home, ".hermes", "state.db"), nil
}

// Open opens (creating if needed) the database at path, upgrades its schema
// to the newest Hermes layout and returns the store. A file at the current
// layout is not written at all. With opts.ReadOnly nothing is ever written
// (see Options). Every mode refuses a SQLite file of another application
// (ErrForeign) before touching it.
func Open(path string, opts Options) (*DB, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.WritePatience == 0 {
		opts.WritePatience = DefaultWritePatience
	}
	syncMode := strings.ToUpper(opts.Synchronous)
	switch syncMode {
	case "":
		syncMode = "FULL"
	case "FULL", "NORMAL", "EXTRA":
	default:
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "synchronous %q: want FULL or NORMAL", opts.Synchronous)
	}
	mode := strings.ToLower(opts.JournalMode)
	switch mode {
	case "":
		mode = "wal"
	case "wal", "delete":
	default:
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "journal mode %q: want wal or delete", opts.JournalMode)
	}

	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "database path %q: %v", path, err)
	}
	if err := checkPathLength(abs); err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		return openReadOnly(abs, opts)
	}
	// Hermes moves a zero-byte or headerless state.db aside and starts
	// afresh (STORAGE.md §4.7). It must run before any connection opens.
	// Other file names are the user's own files: they get an error instead.
	var moved string
	if filepath.Base(abs) == "state.db" && !opts.NoCreate {
		if moved, err = QuarantineInvalid(abs); err != nil {
			return nil, err
		}
	}
	if err := prepareFile(abs, !opts.NoCreate); err != nil {
		return nil, err
	}
	// Look before writing: another application's file is refused, and
	// NoCreate refuses a database without tables.
	facts, err := inspect(context.Background(), abs)
	if err != nil {
		return nil, err
	}
	if err := facts.refuse(abs, opts.NoCreate); err != nil {
		return nil, err
	}
	// SQLite would open a file it cannot write read-only without a word,
	// and a current file would then fail only at its first write.
	if err := syscall.Access(abs, accessW); err != nil {
		return nil, fileErr("open "+abs+" for writing: cannot write "+abs, err)
	}

	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = sessiondb.DefaultMaxMessageBytes
	}
	db := &DB{path: abs, now: opts.Now, patience: opts.WritePatience, maxMessage: opts.MaxMessageBytes, quarantined: moved}
	params := url.Values{
		"_busy_timeout": {fmt.Sprint(writerBusyTimeout)},
		"_foreign_keys": {"on"},
		"_synchronous":  {syncMode},
		"_txlock":       {"immediate"},
	}
	if syncMode == "FULL" {
		// Every commit syncs the WAL, so its writes can be gathered until
		// then (see package walbuf).
		params.Set("vfs", walbuf.Name)
	}
	db.write, err = sql.Open(driverName, dsn(abs, params))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	db.write.SetMaxOpenConns(1)
	db.write.SetMaxIdleConns(1)
	db.write.SetConnMaxLifetime(0)
	db.write.SetConnMaxIdleTime(0)

	if err := db.open(mode); err != nil {
		db.write.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) open(mode string) error {
	ctx := context.Background()
	if err := db.checkFTS5(ctx); err != nil {
		return err
	}
	jm, err := db.setJournalMode(ctx, mode)
	if err != nil {
		return err
	}
	db.journalMode = jm
	chmodFiles(db.path)

	// A file at the current layout is left as it is: no write transaction,
	// no rewritten trigger, no schema cookie bump for other processes.
	layout, current, err := schemaCurrent(ctx, db.write)
	if err != nil {
		return db.mapErr("read the schema of "+db.path, err)
	}
	if current {
		db.setLayout(layout)
	} else if err := db.migrate(ctx); err != nil {
		return err
	}
	if err := db.ensureIdentity(ctx); err != nil {
		return err
	}
	if err := db.recordIdentity(ctx); err != nil {
		return err
	}
	if err := db.autoBackfill(ctx); err != nil {
		return err
	}
	chmodFiles(db.path)

	db.read = db.write
	if jm == "wal" {
		db.read, err = sql.Open(driverName, dsn(db.path, url.Values{
			"mode":          {"ro"},
			"_busy_timeout": {fmt.Sprint(readerBusyTimeout)},
		}))
		if err != nil {
			return fmt.Errorf("open read pool %s: %w", db.path, err)
		}
		db.read.SetMaxOpenConns(readPoolMax)
		db.read.SetMaxIdleConns(readPoolMax)
	}
	return nil
}

// Quarantined returns where Open moved an invalid (zero-byte or headerless)
// state.db before creating a fresh one, or "".
func (db *DB) Quarantined() string { return db.quarantined }

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// JournalMode returns the journal mode SQLite reported for the file.
func (db *DB) JournalMode() string { return db.journalMode }

// ReadOnly reports whether the handle was opened with Options.ReadOnly.
func (db *DB) ReadOnly() bool { return db.readOnly }

// Immutable reports whether a read-only handle reads the file as an
// immutable snapshot (SQLite's immutable=1): the file is in WAL mode, this
// user cannot create or write its -shm, and when Open looked no process had
// it open and its WAL held nothing. Such a handle takes no locks and does
// not see later writes: keep it for a short read, and say so to the user.
func (db *DB) Immutable() bool { return db.immutable }

// synchronousNames are the values of PRAGMA synchronous, by number.
var synchronousNames = []string{"off", "normal", "full", "extra"}

// Synchronous returns the synchronous setting the writer connection runs
// with, as SQLite reports it: "off", "normal", "full" or "extra".
func (db *DB) Synchronous(ctx context.Context) (string, error) {
	var n int
	if err := db.write.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&n); err != nil {
		return "", db.mapErr("read synchronous", err)
	}
	if n < 0 || n >= len(synchronousNames) {
		return "", sessiondb.Errorf(sessiondb.EINTERNAL, "PRAGMA synchronous returned %d", n)
	}
	return synchronousNames[n], nil
}

// Close checkpoints the WAL (PASSIVE; not once writes were halted, never on
// a read-only handle) and closes every connection.
func (db *DB) Close() error {
	errs := []error{db.watch.close()}
	if db.read != db.write {
		errs = append(errs, db.read.Close())
	}
	if db.journalMode == "wal" && db.halted.Load() == nil && !db.readOnly {
		_, _ = db.write.Exec("PRAGMA wal_checkpoint(PASSIVE)")
	}
	errs = append(errs, db.write.Close())
	return errors.Join(errs...)
}

// driverName is the database/sql driver every connection goes through:
// go-sqlite3, which turns on the query planner stability guarantee of each
// connection it opens (fts5cjk's sessiondb_stable_plans: FTS5 lookups
// otherwise re-parse their SQL during searches). Every SQLite connection
// of the process has the cjk_unicode61 tokenizer from the start.
const driverName = "sessiondb_sqlite3"

// configured tells whether SQLite took fts5cjk.Configure's settings.
var configured bool

func init() {
	// first: both configure SQLite, which takes it only before it initializes
	configured = fts5cjk.Configure()
	walbuf.Register()
	fts5cjk.Register()
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec("SELECT sessiondb_stable_plans(1)", nil)
		return err
	}})
}

// dsn builds a file: URI for path (escaping ?, # and %) with the given
// query parameters; mattn/go-sqlite3 applies the _-prefixed ones as pragmas
// on every new connection and SQLite reads the rest. Every connection keeps
// its last 64 statements prepared (search, append and list run the same few
// statements over and over), and runs without SQLite's per-call mutex:
// database/sql hands a connection to one goroutine at a time.
func dsn(path string, q url.Values) string {
	q.Set("_stmt_cache_size", "64")
	q.Set("_mutex", "no")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// maxPathBytes is the longest database path SQLite opens: its unix VFS
// holds a path in 512 bytes (MAX_PATHNAME) with room for the "-journal" it
// appends for the sidecars (measured: 504 bytes open, 505 fail with "unable
// to open database file").
const maxPathBytes = 512 - len("-journal")

// checkPathLength refuses a path SQLite cannot open, before anything is
// created, with the cause: SQLite's own error blames permissions.
func checkPathLength(abs string) error {
	if n := len(abs); n > maxPathBytes {
		return sessiondb.Errorf(sessiondb.EINVALID, "database path %s is %d bytes long; SQLite opens no database path longer than %d bytes: move the database to a shorter path", abs, n, maxPathBytes)
	}
	return nil
}

// prepareFile creates the database directory (0700) and file (0600) when
// they are missing and create is set, and checks that path can be a
// database. It opens no file descriptor on an existing database: closing
// one would drop the POSIX locks of any SQLite connection this process
// holds on it.
func prepareFile(path string, create bool) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) && create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fileErr("create database directory "+dir, err)
		}
	}
	_, err := os.Lstat(path)
	if !errors.Is(err, os.ErrNotExist) || !create {
		return checkExisting(path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow|syscallCloexec, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil // a sibling process created it first
		}
		return fileErr("create database "+path, err)
	}
	return f.Close()
}

// chmodFiles tightens the database and its WAL sidecars to 0600 with chmod
// only, skipping symlinks and anything that is not a regular file.
func chmodFiles(path string) {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		// only ever remove bits: a read-only file stays read-only
		if perm := fi.Mode().Perm(); perm&^0o600 != 0 {
			_ = os.Chmod(p, perm&0o600)
		}
	}
}

// checkFTS5 fails with a clear message when the SQLite build lacks FTS5 or
// its trigram tokenizer.
func (db *DB) checkFTS5(ctx context.Context) error {
	_, err := db.write.ExecContext(ctx, `CREATE VIRTUAL TABLE IF NOT EXISTS temp._sessiondb_fts5_probe USING fts5(x, tokenize='trigram');
DROP TABLE temp._sessiondb_fts5_probe`)
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "no such module"):
		return sessiondb.Errorf(sessiondb.EINTERNAL, "this build of sessiondb has no SQLite FTS5 (%v): rebuild it with `go build -tags sqlite_fts5`", err)
	case strings.Contains(msg, "no such tokenizer"):
		return sessiondb.Errorf(sessiondb.EINTERNAL, "this build's SQLite lacks the FTS5 trigram tokenizer (%v): SQLite 3.34 or newer is required", err)
	}
	return db.mapErr("open "+db.path, err)
}

// setJournalMode applies Hermes' journal-mode policy: keep a file that is
// already WAL, switch others to the configured mode, but never to WAL on a
// filesystem shared between a VM and its host, and trust the mode SQLite
// reports back (some filesystems refuse WAL silently).
func (db *DB) setJournalMode(ctx context.Context, want string) (string, error) {
	var cur string
	if err := db.write.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&cur); err != nil {
		return "", db.mapErr("read journal mode of "+db.path, err)
	}
	cur = strings.ToLower(cur)
	if cur != "wal" && want == "wal" && crossVMFS(fsType(db.path)) {
		want = "delete"
	}
	if cur != "wal" && cur != want {
		// Switching rewrites the header: never do it to a damaged file.
		var ok string
		if err := db.write.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&ok); err != nil {
			return "", db.mapErr("check "+db.path, err)
		}
		if ok != "ok" && !strings.Contains(ok, "FTS5 table") {
			return "", sessiondb.Errorf(sessiondb.ECORRUPT, "database %s is damaged (%s); nothing was written. Copy what can be saved with `sessiondb recover --source %s --output NEW.db`", db.path, ok, db.path)
		}
		var got string
		var err error
		for attempt := 0; attempt < 4; attempt++ {
			err = db.write.QueryRowContext(ctx, "PRAGMA journal_mode="+want).Scan(&got)
			if err == nil || !isBusy(err) {
				break
			}
			time.Sleep(time.Second)
		}
		if err != nil {
			return "", db.mapErr("set journal mode of "+db.path, err)
		}
		cur = strings.ToLower(got)
	}
	if cur == "wal" {
		if _, err := db.write.ExecContext(ctx, fmt.Sprintf("PRAGMA journal_size_limit=%d", journalSizeLimit)); err != nil {
			return "", db.mapErr("set journal_size_limit", err)
		}
	}
	return cur, nil
}

// write runs fn inside BEGIN IMMEDIATE and commits. On SQLITE_BUSY/LOCKED the
// whole transaction is retried with jitter (20–150 ms for the first 2 s, then
// 250–1000 ms) until the patience budget runs out, so fn must be safe to run
// again; a disk I/O error of BEGIN itself is retried once, at once. Every
// 50th successful write runs a PASSIVE checkpoint, every
// 1000th a bounded merge of the search indexes (mergeFTS).
func (db *DB) writeTx(ctx context.Context, patience time.Duration, op string, fn func(tx *sql.Tx) error) error {
	if patience == 0 {
		patience = db.patience
	}
	start := time.Now()
	deadline := start.Add(patience)
	repaired, reBegun := false, false
	for {
		err := db.writeOnce(ctx, fn)
		if err != nil && isFTSCorrupt(err) && !repaired {
			// FTS fail-open: the write must not be lost to a damaged search
			// index. Recreate the indexes (gated, never without triggers)
			// and run the write again; the backfill refills them.
			repaired = true
			if rerr := db.resetFTS(ctx, op+": reset damaged search index"); rerr != nil {
				return rerr
			}
			continue
		}
		if err == nil {
			n := db.writes.Add(1)
			if n%checkpointEvery == 0 && db.journalMode == "wal" {
				_, _ = db.write.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
			}
			if n%ftsMergeEvery == 0 {
				db.mergeFTS(ctx)
			}
			if repaired {
				return db.autoBackfill(ctx)
			}
			return nil
		}
		var be beginError
		if errors.As(err, &be) {
			err = be.err
			if isIOErr(err) && !reBegun {
				// As in Hermes: a disk I/O error of BEGIN IMMEDIATE itself,
				// before fn ran, is retried once on the same connection
				// (another process resetting the WAL can cause one).
				reBegun = true
				continue
			}
		}
		if !isBusy(err) {
			err = db.mapErr(op, err)
			if sessiondb.ErrorCode(err) == sessiondb.ECORRUPT {
				// As in Hermes: a damaged file gets no more writes from
				// this handle, and no close-time checkpoint.
				db.halted.CompareAndSwap(nil, sessiondb.Errorf(sessiondb.ECORRUPT,
					"database %s was found damaged by an earlier write (%v); this handle writes nothing more to it. Copy what can be saved with `sessiondb recover --source %s --output NEW.db`",
					db.path, errors.Unwrap(err), db.path))
			}
			return err
		}
		now := time.Now()
		if !now.Before(deadline) {
			return &sessiondb.Error{Code: sessiondb.EBUSY, Err: err, Message: fmt.Sprintf(
				"%s: database is locked: another process held the write lock of %s for over %s; the database itself is healthy, try again later",
				op, db.path, roundPatience(patience))}
		}
		var pause time.Duration
		if now.Sub(start) < writeRetrySlowAfter {
			pause = jitter(20*time.Millisecond, 150*time.Millisecond)
		} else {
			pause = jitter(250*time.Millisecond, 1000*time.Millisecond)
		}
		pause = max(min(pause, deadline.Sub(now)), time.Millisecond)
		select {
		case <-ctx.Done():
			return &sessiondb.Error{Code: sessiondb.EINTERNAL, Err: ctx.Err(), Message: op + ": " + ctx.Err().Error()}
		case <-time.After(pause):
		}
	}
}

// beginError is an error of BEGIN IMMEDIATE itself: nothing ran yet.
type beginError struct{ err error }

func (e beginError) Error() string { return e.err.Error() }
func (e beginError) Unwrap() error { return e.err }

// beginFault, when set (by tests), fails BEGIN with its error.
var beginFault func() error

func (db *DB) writeOnce(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if beginFault != nil {
		if err := beginFault(); err != nil {
			return beginError{err}
		}
	}
	if e := db.halted.Load(); e != nil {
		return e
	}
	if err := db.writable(); err != nil {
		return err
	}
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return beginError{err}
	}
	defer tx.Rollback()
	if err := db.checkIdentity(ctx, tx); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func jitter(lo, hi time.Duration) time.Duration {
	return lo + rand.N(hi-lo)
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended
// code), judged by result code, not by message text.
func isBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}

// isIOErr reports whether err is SQLITE_IOERR (any extended code).
func isIOErr(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrIoErr
}

// isFTSCorrupt reports whether err is corruption scoped to an FTS5 index.
// That includes a bare SQLITE_CONSTRAINT (no extended code): SQLite's own
// constraints always carry one, so the bare code comes from a virtual
// table, and the FTS5 indexes are the only ones a session database has.
// FTS5 fails a write that way when its structure record is damaged (zeroed:
// it then reuses segment ids its %_idx table still holds).
func isFTSCorrupt(err error) bool {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	if se.ExtendedCode == sqlite3.ErrCorruptVTab || se.ExtendedCode == sqlite3.ErrNoExtended(sqlite3.ErrConstraint) {
		return true
	}
	msg := se.Error()
	return se.Code == sqlite3.ErrCorrupt && (strings.HasPrefix(msg, "fts5:") || strings.Contains(msg, "messages_fts"))
}

// writable refuses a write on a read-only handle.
func (db *DB) writable() error {
	if !db.readOnly {
		return nil
	}
	return sessiondb.Errorf(sessiondb.EPERM, "database %s was opened read-only; nothing was written. Open it without ReadOnly to write", db.path)
}

// fileErr translates an error of the file system (creating the directory or
// the file, stat) into a *sessiondb.Error: EPERM for a permission problem or
// a read-only file system, EINTERNAL for any other I/O error.
func fileErr(op string, err error) error {
	if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return &sessiondb.Error{Code: sessiondb.EPERM, Err: err, Message: fmt.Sprintf("%s: %v; check the permissions of the file and its directory", op, err)}
	}
	return &sessiondb.Error{Code: sessiondb.EINTERNAL, Err: err, Message: fmt.Sprintf("%s: %v", op, err)}
}

// mapErr translates a driver error into a *sessiondb.Error by result code.
// Errors that already are *sessiondb.Error pass through unchanged.
func (db *DB) mapErr(op string, err error) error {
	return mapErr(db.path, db.readOnly, op, err)
}

// mapErr is DB.mapErr for the database at path, before a DB exists.
func mapErr(path string, readOnly bool, op string, err error) error {
	if err == nil {
		return nil
	}
	var de *sessiondb.Error
	if errors.As(err, &de) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &sessiondb.Error{Code: sessiondb.EINTERNAL, Err: err, Message: op + ": " + err.Error()}
	}
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return &sessiondb.Error{Code: sessiondb.EINTERNAL, Err: err, Message: op + ": " + err.Error()}
	}
	switch se.Code {
	case sqlite3.ErrBusy, sqlite3.ErrLocked:
		return &sessiondb.Error{Code: sessiondb.EBUSY, Err: err, Message: fmt.Sprintf("%s: database %s is locked by another process (%v); try again", op, path, err)}
	case sqlite3.ErrCorrupt, sqlite3.ErrNotADB:
		return &sessiondb.Error{Code: sessiondb.ECORRUPT, Err: err, Message: fmt.Sprintf(
			"%s: database %s is damaged (%v); nothing was written. Copy what can be saved with `sessiondb recover`", op, path, err)}
	case sqlite3.ErrReadonly, sqlite3.ErrPerm, sqlite3.ErrCantOpen, sqlite3.ErrAuth:
		verb := "write"
		if readOnly {
			verb = "read"
		}
		return &sessiondb.Error{Code: sessiondb.EPERM, Err: err, Message: fmt.Sprintf("%s: cannot %s %s (%v); check the permissions of the file, its directory and its -wal and -shm files", op, verb, path, err)}
	case sqlite3.ErrFull:
		return &sessiondb.Error{Code: sessiondb.EINTERNAL, Err: err, Message: fmt.Sprintf("%s: disk full writing %s; nothing was written", op, path)}
	case sqlite3.ErrIoErr:
		return &sessiondb.Error{Code: sessiondb.EINTERNAL, Err: err, Message: fmt.Sprintf(
			"%s: the system reported an I/O error on %s (%v); check the disk (dmesg), then try again; `sessiondb doctor` checks the file", op, path, err)}
	case sqlite3.ErrTooBig:
		return &sessiondb.Error{Code: sessiondb.EINVALID, Err: err, Message: op + ": value too large for SQLite"}
	}
	return &sessiondb.Error{Code: sessiondb.EINTERNAL, Err: err, Message: op + ": " + err.Error()}
}

// roundPatience shows a write patience as people set it: whole seconds,
// or milliseconds below a second (not "0s").
func roundPatience(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
