package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// This file is the reading side of replication (sessiondb sync): raw rows
// of the tables Hermes keeps history in, every column as SQLite stores it,
// read in one consistent snapshot from a handle that never writes.

// ErrOlderSchema is in the chain of the error a ReadOnly Open returns for a
// file at an older schema version (code ECONFLICT). UpgradedCopy reads such
// a file.
var ErrOlderSchema = errors.New("older schema")

// UpgradedCopy writes a copy of the database at src, brought to the newest
// schema as Hermes would bring it (the same migration Open runs), to dst,
// which must not exist yet. src is only read, through a read-only
// connection, in one snapshot (VACUUM INTO); it may be in use.
func UpgradedCopy(ctx context.Context, src, dst string) error {
	abs, err := filepath.Abs(src)
	if err != nil {
		return sessiondb.Errorf(sessiondb.EINVALID, "database path %q: %v", src, err)
	}
	if err := checkExisting(abs); err != nil {
		return err
	}
	facts, err := inspect(ctx, abs)
	if err != nil {
		return err
	}
	if err := facts.refuse(abs, true); err != nil {
		return err
	}
	if _, err := os.Lstat(dst); err == nil {
		return sessiondb.Errorf(sessiondb.ECONFLICT, "copy %s: %s exists", abs, dst)
	}
	pool, _, err := openReadPool(ctx, abs, facts.walFormat)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		return mapErr(abs, true, "copy "+abs+" to "+dst, err)
	}
	db, err := Open(dst, Options{Synchronous: "NORMAL", NoCreate: true})
	if err != nil {
		return err
	}
	// Open stamped the copy with an identity of its own; it keeps the
	// source's (or none, like the source): its generation token and
	// application_id.
	if facts.token == "" {
		_, err = db.write.ExecContext(ctx, "DELETE FROM state_meta WHERE key = ?", keyGeneration)
	} else {
		_, err = db.write.ExecContext(ctx, "INSERT OR REPLACE INTO state_meta (key, value) VALUES (?, ?)", keyGeneration, facts.token)
	}
	if err == nil {
		_, err = db.write.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id=%d", facts.appID))
	}
	if err != nil {
		db.Close()
		return db.mapErr("copy the identity of "+abs, err)
	}
	return db.Close()
}

// Snapshot is one consistent read of the database (a read transaction),
// for copying its rows elsewhere. Rows come as []any holding what SQLite
// stores: int64, float64, string, []byte or nil. A Snapshot is used by one
// goroutine at a time; Close ends it.
type Snapshot struct {
	db *DB
	tx *sql.Tx
}

// Snapshot begins a read transaction on a read connection. Writers go on
// writing; the snapshot does not see them.
func (db *DB) Snapshot(ctx context.Context) (*Snapshot, error) {
	tx, err := db.read.BeginTx(ctx, nil)
	if err != nil {
		return nil, db.mapErr("begin a read of "+db.path, err)
	}
	// SQLite takes the snapshot at the first read.
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master").Scan(&n); err != nil {
		tx.Rollback()
		return nil, db.mapErr("begin a read of "+db.path, err)
	}
	return &Snapshot{db: db, tx: tx}, nil
}

// Close ends the snapshot.
func (s *Snapshot) Close() error {
	err := s.tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// FileGeneration returns the file's identity token
// (state_meta.db_file_generation, minted by Hermes or sessiondb at their
// first write), or "" when the file has none.
func (s *Snapshot) FileGeneration(ctx context.Context) (string, error) {
	var v sql.NullString
	err := s.tx.QueryRowContext(ctx, "SELECT value FROM state_meta WHERE key = ?", keyGeneration).Scan(&v)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return v.String, s.db.mapErr("read the file generation", err)
}

// MessageIDs returns the largest message id ever issued (AUTOINCREMENT
// never issues an id twice, even after the newest messages are deleted)
// and how many messages have an id above after.
func (s *Snapshot) MessageIDs(ctx context.Context, after int64) (maxID, count int64, err error) {
	err = s.tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0), (SELECT COUNT(*) FROM messages WHERE id > ?) FROM messages", after).Scan(&maxID, &count)
	if err != nil {
		return 0, 0, s.db.mapErr("count messages", err)
	}
	var seq sql.NullInt64
	err = s.tx.QueryRowContext(ctx, "SELECT seq FROM sqlite_sequence WHERE name = 'messages'").Scan(&seq)
	if err != nil && err != sql.ErrNoRows && !strings.Contains(err.Error(), "no such table") {
		return 0, 0, s.db.mapErr("count messages", err)
	}
	return max(maxID, seq.Int64), count, nil
}

// Sessions calls fn with every session row (cols, in order), by id.
func (s *Snapshot) Sessions(ctx context.Context, cols []string, fn func([]any) error) error {
	return s.rows(ctx, "sessions", cols, "", "ORDER BY id", nil, fn)
}

// Usage calls fn with every session_model_usage row (cols, in order).
func (s *Snapshot) Usage(ctx context.Context, cols []string, fn func([]any) error) error {
	return s.rows(ctx, "session_model_usage", cols, "", "ORDER BY session_id, model, billing_provider, billing_base_url, billing_mode, task", nil, fn)
}

// Prompts calls fn with the system_prompts rows (cols) of the given hashes.
func (s *Snapshot) Prompts(ctx context.Context, cols []string, hashes []string, fn func([]any) error) error {
	for len(hashes) > 0 {
		n := min(len(hashes), 500)
		args := make([]any, n)
		for i, h := range hashes[:n] {
			args[i] = h
		}
		if err := s.rows(ctx, "system_prompts", cols, "hash IN ("+placeholders(n)+")", "", args, fn); err != nil {
			return err
		}
		hashes = hashes[n:]
	}
	return nil
}

// MessagesAfter calls fn with the message rows (cols) whose id is above
// after, in id order, limit at the most (limit <= 0: all).
func (s *Snapshot) MessagesAfter(ctx context.Context, cols []string, after int64, limit int, fn func([]any) error) error {
	order := "ORDER BY id"
	if limit > 0 {
		order += fmt.Sprintf(" LIMIT %d", limit)
	}
	return s.rows(ctx, "messages", cols, "id > ?", order, []any{after}, fn)
}

// SessionMessages calls fn with the message rows (cols) of one session
// whose id is at most maxID, in id order.
func (s *Snapshot) SessionMessages(ctx context.Context, cols []string, sessionID string, maxID int64, fn func([]any) error) error {
	return s.rows(ctx, "messages", cols, "session_id = ? AND id <= ?", "ORDER BY id", []any{sessionID, maxID}, fn)
}

// rows runs SELECT cols FROM table [WHERE where] [tail] and calls fn with
// each row; the slice is fn's to keep. cols must be columns of Hermes'
// schema (schema/schema.sql).
func (s *Snapshot) rows(ctx context.Context, table string, cols []string, where, tail string, args []any, fn func([]any) error) error {
	if err := knownColumns(table, cols); err != nil {
		return err
	}
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = quoteIdent(c)
	}
	q := "SELECT " + strings.Join(quoted, ", ") + " FROM " + table
	if where != "" {
		q += " WHERE " + where
	}
	q += " " + tail
	rows, err := s.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return s.db.mapErr("read "+table, err)
	}
	defer rows.Close()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return s.db.mapErr("read "+table, err)
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	return s.db.mapErr("read "+table, rows.Err())
}

// knownColumns refuses a column schema.sql does not give table.
func knownColumns(table string, cols []string) error {
	want, err := expectedColumns()
	if err != nil {
		return fmt.Errorf("parse schema columns: %w", err)
	}
	for _, t := range want {
		if t.table != table {
			continue
		}
		have := map[string]bool{}
		for _, c := range t.cols {
			have[c.name] = true
		}
		for _, c := range cols {
			if !have[c] {
				return sessiondb.Errorf(sessiondb.EINVALID, "read %s: no column %q in Hermes' schema", table, c)
			}
		}
		return nil
	}
	return sessiondb.Errorf(sessiondb.EINVALID, "read %s: no such table in Hermes' schema", table)
}

// Watcher tells when other connections have committed to a database file:
// it polls PRAGMA data_version on a read-only connection of its own, which
// costs no I/O while nothing changes.
type Watcher struct {
	pool *sql.DB
	conn *sql.Conn
	path string
	file os.FileInfo // the file the connection has open
	last int64
}

// Watch opens a Watcher on the database at path (which exists). It never
// writes the file.
func Watch(ctx context.Context, path string) (*Watcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "database path %q: %v", path, err)
	}
	if err := checkExisting(abs); err != nil {
		return nil, err
	}
	pool, err := sql.Open(driverName, dsn(abs, url.Values{"mode": {"ro"}, "_busy_timeout": {fmt.Sprint(readerBusyTimeout)}}))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	pool.SetMaxOpenConns(1)
	conn, err := pool.Conn(ctx)
	if err != nil {
		pool.Close()
		return nil, mapErr(abs, true, "watch "+abs, err)
	}
	w := &Watcher{pool: pool, conn: conn, path: abs}
	if w.last, err = w.version(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if w.file, err = os.Stat(abs); err != nil {
		w.Close()
		return nil, fileErr("watch "+abs, err)
	}
	return w, nil
}

func (w *Watcher) version(ctx context.Context) (int64, error) {
	var v int64
	err := w.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v)
	return v, mapErr(w.path, true, "watch "+w.path, err)
}

// Changed reports whether another connection committed to the file since
// Watch or the last call of Changed. Another file moved into its place
// counts as a change, and is watched from then on.
func (w *Watcher) Changed(ctx context.Context) (bool, error) {
	if fi, err := os.Stat(w.path); err == nil && !os.SameFile(fi, w.file) {
		nw, err := Watch(ctx, w.path)
		if err != nil {
			return false, err
		}
		w.Close()
		*w = *nw
		return true, nil
	}
	v, err := w.version(ctx)
	if err != nil {
		return false, err
	}
	changed := v != w.last
	w.last = v
	return changed, nil
}

// Close releases the Watcher's connection.
func (w *Watcher) Close() error {
	w.conn.Close()
	return w.pool.Close()
}
