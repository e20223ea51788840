// Package postgres implements sessiondb.Store on PostgreSQL (15 or newer)
// with pgx: the same contract, error codes and query language as the SQLite
// backend, for stores that several hosts or replicas share. DESIGN.md
// explains the schema, tokenizing, ranking and the sync protocol.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sessiondb/sessiondb"
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultMaxConns       = 16
	// DefaultWritePatience bounds how long one write keeps retrying after
	// serialization failures and dropped connections.
	DefaultWritePatience = 30 * time.Second
)

// Options configure Open. The zero value is usable.
type Options struct {
	// ConnectTimeout bounds each connection attempt (default 10 s), so an
	// unreachable server is an error, never a hang.
	ConnectTimeout time.Duration
	// MaxConns is the pool size (default 16).
	MaxConns int32
	// WritePatience bounds the retry of one write (default 30 s).
	WritePatience time.Duration
	// Origin names the host rows written through this store come from
	// (default ""; sessiondb sync sets the source host's name).
	Origin string
	// MaxMessageBytes bounds one message's text (0: the default,
	// sessiondb.DefaultMaxMessageBytes; negative: no limit).
	MaxMessageBytes int64
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ReadOnly opens the database for reading only: no migration runs
	// (the schema must already be at this build's version; `sessiondb init`
	// or `sessiondb doctor --fix` brings it there), every connection starts
	// with default_transaction_read_only, and every write method returns
	// EPERM, as the SQLite store opened read-only does.
	ReadOnly bool
}

// DB is a session store on one PostgreSQL database. It is safe for
// concurrent use.
type DB struct {
	pool       *pgxpool.Pool
	origin     string
	patience   time.Duration
	maxMessage int64
	now        func() time.Time
	readOnly   bool
	where      string // the database, as errors name it (no password)

	trigramMu sync.Mutex
	noTrigram map[string]bool // session id → sessionTrigram is false (appendOnce's guess)
}

var _ sessiondb.Store = (*DB)(nil)

// IsURL reports whether s names a PostgreSQL database (postgres:// or
// postgresql://) rather than a SQLite file.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the database at url (a postgres:// URL or a key=value
// connection string) and brings its schema up to date, taking an advisory
// lock so that processes starting at once migrate it once.
func Open(ctx context.Context, url string, o Options) (*DB, error) {
	cfg, err := parseConfig(url, o.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	cfg.MaxConns = o.MaxConns
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	// Writes are durable when they return, whatever the server's default.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	cfg.ConnConfig.RuntimeParams["application_name"] = "sessiondb"
	if o.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if o.WritePatience <= 0 {
		o.WritePatience = DefaultWritePatience
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = sessiondb.DefaultMaxMessageBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connectErr(cfg, err)
	}
	db := &DB{pool: pool, origin: o.Origin, patience: o.WritePatience, maxMessage: o.MaxMessageBytes, now: o.Now,
		readOnly: o.ReadOnly, where: where(cfg)}
	prepare := db.migrate
	if o.ReadOnly {
		prepare = db.checkSchema
	}
	if err := prepare(ctx); err != nil {
		pool.Close()
		if errors.As(err, new(*sessiondb.Error)) {
			return nil, err
		}
		return nil, connectErr(cfg, err)
	}
	return db, nil
}

// ReadOnly reports whether the store was opened with Options.ReadOnly.
func (db *DB) ReadOnly() bool { return db.readOnly }

// ErrOlderSchema is in the chain of the error a ReadOnly Open returns for a
// database whose schema lacks migrations this build knows (code
// ECONFLICT).
var ErrOlderSchema = errors.New("older schema")

// ErrNoSchema is in the chain of the error a ReadOnly Open returns for a
// database that holds no sessiondb schema (code ENOTFOUND).
var ErrNoSchema = errors.New("no sessiondb schema")

// checkSchema is what a read-only Open does instead of migrating: it reads
// the applied migrations and refuses a database that lacks one this build
// knows, or holds one it does not know.
func (db *DB) checkSchema(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	have, newest, err := appliedMigrations(ctx, db.pool, ms)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		return &sessiondb.Error{Code: sessiondb.ENOTFOUND, Err: ErrNoSchema, Message: fmt.Sprintf(
			"postgres %s holds no sessiondb schema; create it with `sessiondb --db URL init` (or `sessiondb doctor --fix`), or name another database", db.where)}
	}
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].version
	for _, m := range ms {
		if !have[m.version] {
			return &sessiondb.Error{Code: sessiondb.ECONFLICT, Err: ErrOlderSchema, Message: fmt.Sprintf(
				"postgres %s lacks schema migration %04d_%s (it is at %d, this sessiondb reads %d); run `sessiondb --db URL init` or `sessiondb doctor --fix` to upgrade it",
				db.where, m.version, m.name, newest, latest)}
		}
	}
	return nil
}

// appliedMigrations reads the versions schema_migrations records and the
// newest of them; a version newer than every migration of ms (this build's)
// is refused with ECONFLICT.
func appliedMigrations(ctx context.Context, q querier, ms []migration) (map[int]bool, int, error) {
	rows, err := q.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, 0, err
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, 0, err
	}
	have := map[int]bool{}
	newest := 0
	for _, v := range applied {
		have[int(v)] = true
		newest = max(newest, int(v))
	}
	if latest := ms[len(ms)-1].version; newest > latest {
		return nil, 0, sessiondb.Errorf(sessiondb.ECONFLICT,
			"postgres: the database has schema version %d, newer than this sessiondb knows (%d); upgrade sessiondb", newest, latest)
	}
	return have, newest, nil
}

// writable refuses a write on a read-only store.
func (db *DB) writable() error {
	if !db.readOnly {
		return nil
	}
	return sessiondb.Errorf(sessiondb.EPERM, "postgres %s was opened read-only; nothing was written. Open it without ReadOnly to write", db.where)
}

// Close releases the store's connections.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

// Pool returns the connection pool, for the tools that copy into the
// database (sessiondb sync) and for tests.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Origin returns the origin the store writes rows with.
func (db *DB) Origin() string { return db.origin }

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step, migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "migrations/"), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: the name must be NNNN_name.sql", n)
		}
		body, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, name, string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// SchemaVersion is the newest schema version this build knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrationLock is the advisory lock key every sessiondb process takes
// while it migrates (an arbitrary constant: "sessiondb" in ASCII, folded).
const migrationLock = 0x73657373696f6e

// migrate applies the embedded migrations the database lacks, each in its
// own transaction, under a session-level advisory lock.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLock)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY,
		name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return migrationErr("create schema_migrations", err)
	}
	have, _, err := appliedMigrations(ctx, conn, ms)
	if err != nil {
		return err
	}
	// Every missing version is applied, in order, even one numbered below
	// a version already there (two branches may land out of order).
	for _, m := range ms {
		if have[m.version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return migrationErr(fmt.Sprintf("schema migration %04d_%s", m.version, m.name), err)
		}
	}
	return nil
}

// migrationErr names what a failed migration needs: most often an
// extension the server lacks, or the right to create one.
func migrationErr(step string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "58P01", "0A000": // undefined_file: the extension's files are not installed
			if strings.Contains(pe.Message, "extension") {
				return &sessiondb.Error{Code: sessiondb.EUNAVAILABLE, Err: err,
					Message: "postgres: " + step + ": " + pe.Message + "; install the server's contrib package (Debian: apt-get install postgresql-contrib)"}
			}
		case "42501": // insufficient_privilege
			return &sessiondb.Error{Code: sessiondb.EPERM, Err: err,
				Message: "postgres: " + step + ": " + pe.Message + "; connect once as a role that may create tables and extensions (the database owner), or run CREATE EXTENSION pg_trgm as a superuser"}
		}
	}
	return fmt.Errorf("postgres: %s: %w", step, err)
}

// connectErr turns a failure to reach or log in to the server into one
// line naming the cause and the fix.
func connectErr(cfg *pgxpool.Config, err error) error {
	where := where(cfg)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "28P01" || pe.Code == "28000":
			return &sessiondb.Error{Code: sessiondb.EUNAVAILABLE, Err: err,
				Message: fmt.Sprintf("postgres %s: the server refused user %q (%s); check the user and password in the URL or PGPASSWORD", where, cfg.ConnConfig.User, pe.Message)}
		case pe.Code == "3D000":
			return &sessiondb.Error{Code: sessiondb.EUNAVAILABLE, Err: err,
				Message: fmt.Sprintf("postgres %s: %s; create it (createdb %s) or name another in the URL", where, pe.Message, cfg.ConnConfig.Database)}
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || isConnErr(err) {
		return &sessiondb.Error{Code: sessiondb.EUNAVAILABLE, Err: err,
			Message: fmt.Sprintf("postgres %s: cannot connect (%s); check that the server runs and the host and port are right", where, redactURL(lastErrLine(err)))}
	}
	return fmt.Errorf("postgres %s: %w", where, err)
}

// where names the database cfg connects to, without a password:
// host:port/database, or socket-directory/database.
func where(cfg *pgxpool.Config) string {
	w := cfg.ConnConfig.Host
	if !strings.HasPrefix(w, "/") {
		w = net.JoinHostPort(w, strconv.Itoa(int(cfg.ConnConfig.Port)))
	}
	return w + "/" + cfg.ConnConfig.Database
}

func lastErrLine(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}

// redactURL hides a password that an error quoting the URL might show.
func redactURL(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		if at := strings.Index(s[i+3:], "@"); at >= 0 {
			if colon := strings.Index(s[i+3:i+3+at], ":"); colon >= 0 {
				return s[:i+3+colon+1] + "xxxxx" + s[i+3+at:]
			}
		}
	}
	return s
}

// isConnErr reports an error of the connection itself (refused, reset,
// closed, the server shutting down): the transaction did not happen, or for
// a COMMIT its outcome is unknown.
func isConnErr(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, os.ErrDeadlineExceeded) ||
		pgconn.SafeToRetry(err) || strings.Contains(err.Error(), "conn closed") ||
		strings.Contains(err.Error(), "unexpected EOF") || strings.Contains(err.Error(), "connection reset")
}

// retryable reports a failure after which the whole transaction may run
// again: a serialization failure or deadlock, or a connection lost before
// the commit was sent.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01" || isConnErr(err)
	}
	return isConnErr(err)
}

// errCommitUnknown marks a commit whose connection failed before the
// server's answer arrived.
type errCommitUnknown struct {
	xid uint64
	err error
}

func (e *errCommitUnknown) Error() string { return "commit outcome unknown: " + e.err.Error() }
func (e *errCommitUnknown) Unwrap() error { return e.err }

// write runs fn in a transaction and commits it, retrying the whole
// transaction (bounded, with jittered backoff) on serialization failures
// and lost connections. A commit whose answer was lost is looked up by its
// transaction id (pg_xact_status) before any retry, so a retry never stores
// a write twice. op names the operation in errors.
func (db *DB) write(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	return db.retry(ctx, op, func() error { return db.writeOnce(ctx, fn) })
}

// retry runs attempt, one try of a write transaction, until it succeeds or
// fails for good, as write describes. An attempt whose commit's answer was
// lost returns an *errCommitUnknown carrying the transaction's id.
func (db *DB) retry(ctx context.Context, op string, attemptOnce func() error) error {
	if err := db.writable(); err != nil {
		return err
	}
	deadline := time.Now().Add(db.patience)
	backoff := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := attemptOnce()
		var unknown *errCommitUnknown
		if errors.As(err, &unknown) {
			committed, lookErr := db.committed(ctx, unknown.xid, deadline)
			if lookErr == nil && committed {
				return nil
			}
			if lookErr != nil {
				return db.mapErr(op, fmt.Errorf("%w (and its outcome could not be read back: %v)", err, lookErr))
			}
			err = unknown.err // aborted: retry as any lost connection
		}
		if err == nil || !retryable(err) || ctx.Err() != nil || time.Now().After(deadline) {
			if err != nil && retryable(err) && ctx.Err() == nil {
				return &sessiondb.Error{Code: sessiondb.EBUSY, Err: err,
					Message: fmt.Sprintf("%s: gave up after %d attempts over %s: %v", op, attempt, db.patience, err)}
			}
			return db.mapErr(op, err)
		}
		sleep := backoff/2 + rand.N(backoff)
		select {
		case <-ctx.Done():
			return db.mapErr(op, ctx.Err())
		case <-time.After(sleep):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// writeOnce runs one attempt of a write transaction. Its BEGIN and the
// read of its transaction id go to the server in one round trip.
func (db *DB) writeOnce(ctx context.Context, fn func(tx pgx.Tx) error) error {
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	var xid uint64
	b.Queue("SELECT txid_current()").QueryRow(func(row pgx.Row) error { return row.Scan(&xid) })
	br := db.pool.SendBatch(ctx, b)
	tx := br.Tx()
	if err := br.Close(); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return err
	}
	return commit(ctx, tx, xid)
}

// commit commits tx, whose transaction id is xid; a commit whose answer
// was lost is an *errCommitUnknown.
func commit(ctx context.Context, tx pgx.Tx, xid uint64) error {
	if err := tx.Commit(ctx); err != nil {
		if isConnErr(err) {
			return &errCommitUnknown{xid: xid, err: err}
		}
		return err
	}
	return nil
}

// committed asks the server whether transaction xid committed, waiting
// for the server to come back until deadline.
func (db *DB) committed(ctx context.Context, xid uint64, deadline time.Time) (bool, error) {
	for {
		var status *string
		err := db.pool.QueryRow(ctx, "SELECT txid_status($1)", int64(xid)).Scan(&status)
		if err == nil {
			return status != nil && *status == "committed", nil
		}
		if !isConnErr(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return false, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mapErr gives an error of the driver its sessiondb code; an error that
// already is a *sessiondb.Error passes unchanged.
func (db *DB) mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *sessiondb.Error
	if errors.As(err, &se) {
		return err
	}
	code := sessiondb.EINTERNAL
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		code = sessiondb.ETIMEOUT
	case errors.As(err, &pe):
		switch {
		case pe.Code == "23505":
			code = sessiondb.ECONFLICT
		case pe.Code == "57014":
			code = sessiondb.ETIMEOUT
		case pe.Code == "42501":
			code = sessiondb.EPERM
		case pe.Code == "25006": // read_only_sql_transaction: a standby
			code = sessiondb.EPERM
		case pe.Code == "XX001" || pe.Code == "XX002":
			code = sessiondb.ECORRUPT
		case strings.HasPrefix(pe.Code, "22"): // data exception
			code = sessiondb.EINVALID
		case retryable(err):
			code = sessiondb.EBUSY
		}
	case isConnErr(err):
		code = sessiondb.EUNAVAILABLE
	}
	return &sessiondb.Error{Code: code, Err: err, Message: op + ": " + err.Error()}
}
