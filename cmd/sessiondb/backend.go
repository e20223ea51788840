package main

import (
	"context"
	"fmt"
	"net/url"
	"os"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

// This file is where the command wires a backend to the contract: it
// chooses SQLite or PostgreSQL from the command line and opens it. The
// commands see a sessiondb.Store and the optional interfaces of the
// sessiondb package; only the file-level commands (sqliteOnly) see
// *sqlite.DB.

// dbEnv names the environment variable that chooses the database when
// --db is not given: a postgres:// URL or a SQLite file.
const dbEnv = "SESSIONDB_DB"

// location is the database a command line names.
type location struct {
	name string // a file path or a postgres:// URL
	from string // "--db", dbEnv, or "" for the default path
	pg   bool   // a PostgreSQL URL
}

// where returns the database the command line names: --db, else
// $SESSIONDB_DB, else $HERMES_HOME/state.db, else ~/.hermes/state.db.
func (e *env) where() (location, error) {
	switch {
	case e.dbPath != "":
		return location{e.dbPath, "--db", postgres.IsURL(e.dbPath)}, nil
	case os.Getenv(dbEnv) != "":
		v := os.Getenv(dbEnv)
		return location{v, dbEnv, postgres.IsURL(v)}, nil
	}
	path, err := sqlite.DefaultPath()
	return location{name: path}, err
}

// String is the location as it may be shown: a URL without its password.
func (l location) String() string {
	if !l.pg {
		return l.name
	}
	if u, err := url.Parse(l.name); err == nil {
		return u.Redacted()
	}
	return "a PostgreSQL database"
}

// unsupportedError is a command that does not work on the backend the
// database names (exit status 7). It is printed after the command's name:
// "sessiondb recover works on SQLite files only; …".
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }

// sqliteOnly is the one check of the file-level commands: the database
// must be a SQLite file.
func (l location) sqliteOnly() error {
	if !l.pg {
		return nil
	}
	return &unsupportedError{fmt.Sprintf("works on SQLite files only; %s names a PostgreSQL database", l.from)}
}

// lacks is the error of a command whose backend lacks a capability the
// command needs; what says what (e.g. "usage totals").
func (e *env) lacks(what string) error {
	kind := "this backend"
	if l, err := e.where(); err == nil && l.pg {
		kind = "the PostgreSQL backend"
	}
	return &unsupportedError{fmt.Sprintf("needs %s, which %s does not provide", what, kind)}
}

// openPostgres connects to the PostgreSQL database at l, bringing its
// schema up to date.
func (e *env) openPostgres(ctx context.Context, l location) (*postgres.DB, error) {
	return e.openPostgresMode(ctx, l, false)
}

// openPostgresMode connects to the PostgreSQL database at l; read-only, it
// runs no migration and refuses every write (postgres.Options.ReadOnly).
func (e *env) openPostgresMode(ctx context.Context, l location, readOnly bool) (*postgres.DB, error) {
	limit, err := maxMessageBytes()
	if err != nil {
		return nil, err
	}
	return postgres.Open(ctx, l.name, postgres.Options{ConnectTimeout: e.connectTimeout, MaxMessageBytes: limit, ReadOnly: readOnly})
}

// openServer opens the PostgreSQL database at l as a store.
func (e *env) openServer(ctx context.Context, l location, readOnly bool) (sessiondb.Store, error) {
	db, err := e.openPostgresMode(ctx, l, readOnly)
	if err != nil {
		return nil, err
	}
	return db, nil
}

// openRead opens the database the command line names for reading. A
// SQLite file is opened read-only: nothing is migrated, chmodded or
// written, and a missing file is an error naming the path and the fixes.
// A PostgreSQL database is opened read-only too: no migration runs, its
// sessions are read-only, and a database without the current schema is an
// error naming init and doctor --fix. Read commands use it.
func (e *env) openRead(ctx context.Context) (sessiondb.Store, error) {
	l, err := e.where()
	if err != nil {
		return nil, err
	}
	if l.pg {
		return e.openServer(ctx, l, true)
	}
	db, err := e.openSQLiteRead(l)
	if err != nil {
		return nil, err
	}
	return db, nil
}

// openWrite opens the database the command line names for writing,
// upgrading an older schema. Only with create (init, new, append, import,
// bench) is a missing SQLite file created; other write commands get the
// same error as read commands.
func (e *env) openWrite(ctx context.Context, create bool) (sessiondb.Store, error) {
	l, err := e.where()
	if err != nil {
		return nil, err
	}
	if l.pg {
		return e.openServer(ctx, l, false)
	}
	db, err := e.openSQLiteWrite(l, create)
	if err != nil {
		return nil, err
	}
	return db, nil
}

func (e *env) openSQLiteRead(l location) (*sqlite.DB, error) {
	db, err := sqlite.Open(l.name, sqlite.Options{ReadOnly: true})
	if err == nil && db.Immutable() {
		fmt.Fprintf(e.stderr, "sessiondb: note: %s was read as an immutable snapshot: it is in WAL mode and this user cannot create or write its -shm; no other process had it open\n", db.Path())
	}
	return db, err
}

func (e *env) openSQLiteWrite(l location, create bool) (*sqlite.DB, error) {
	limit, err := maxMessageBytes()
	if err != nil {
		return nil, err
	}
	db, err := sqlite.Open(l.name, sqlite.Options{NoCreate: !create, MaxMessageBytes: limit})
	if err == nil && db.Quarantined() != "" {
		fmt.Fprintf(e.stderr, "sessiondb: %s was not a SQLite database; it was moved to %s and a fresh database created. Inspect it with `sessiondb recover --source %s --output NEW.db`\n",
			l.name, db.Quarantined(), db.Quarantined())
	}
	return db, err
}

// openFile opens the SQLite file the command line names, for the
// file-level commands (info, optimize, optimize-storage, rebuild-fts): on
// a PostgreSQL URL they say in one line that they work on files only.
func (e *env) openFile(write bool) (*sqlite.DB, error) {
	l, err := e.where()
	if err != nil {
		return nil, err
	}
	if err := l.sqliteOnly(); err != nil {
		return nil, err
	}
	if write {
		return e.openSQLiteWrite(l, false)
	}
	return e.openSQLiteRead(l)
}

// resolve turns a session argument into an id: an exact id, else a unique
// id prefix, else a title (the latest "title #N" of a numbered lineage).
func resolve(ctx context.Context, db sessiondb.Store, arg string) (string, error) {
	id, err := db.ResolveSessionID(ctx, arg)
	if err == nil {
		return id, nil
	}
	if code := sessiondb.ErrorCode(err); code != sessiondb.ENOTFOUND && code != sessiondb.EINVALID {
		return "", err
	}
	if tid, terr := db.ResolveTitle(ctx, arg); terr == nil {
		return tid, nil
	}
	if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND {
		return "", sessiondb.Errorf(sessiondb.ENOTFOUND, "no session with id, id prefix or title %q; `sessiondb list` shows them", arg)
	}
	return "", err
}

// openSessionRead opens the database for reading (openRead) and resolves
// the session argument; the caller closes the database.
func (e *env) openSessionRead(ctx context.Context, arg string) (sessiondb.Store, string, error) {
	return withSession(ctx, arg)(e.openRead(ctx))
}

// openSessionWrite opens the database for writing (openWrite) and
// resolves the session argument; the caller closes the database.
func (e *env) openSessionWrite(ctx context.Context, arg string, create bool) (sessiondb.Store, string, error) {
	return withSession(ctx, arg)(e.openWrite(ctx, create))
}

func withSession(ctx context.Context, arg string) func(sessiondb.Store, error) (sessiondb.Store, string, error) {
	return func(db sessiondb.Store, err error) (sessiondb.Store, string, error) {
		if err != nil {
			return nil, "", err
		}
		id, err := resolve(ctx, db, arg)
		if err != nil {
			db.Close()
			return nil, "", err
		}
		return db, id, nil
	}
}
