package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// ErrNoDatabase is in the chain of the error Open returns when there is no
// database to open: the file is missing, or (for a read-only or NoCreate
// open) it has no tables yet. Its code is ENOTFOUND.
var ErrNoDatabase = errors.New("no database")

// ErrForeign is in the chain of the error Open returns for a SQLite file of
// another application. Its code is ECONFLICT; nothing was written.
var ErrForeign = errors.New("not a Hermes state.db")

// noDatabase is the error for a missing database (or, with what, one that
// is there but holds no tables yet): it names the path and the fixes.
func noDatabase(path, what string) error {
	if what == "" {
		what = "no database at " + path
	}
	return &sessiondb.Error{Code: sessiondb.ENOTFOUND, Err: ErrNoDatabase, Message: what +
		"; create it with `sessiondb init`, or use another with --db PATH or HERMES_HOME"}
}

// fileFacts is what inspect learns about a database file without writing
// anything to it.
type fileFacts struct {
	empty     bool     // zero bytes, or a SQLite database without tables
	walFormat bool     // the header says WAL (bytes 18 and 19 are 2); false when unread
	tables    []string // tables other than sqlite_*, sorted
	appID     int64    // PRAGMA application_id
	token     string   // state_meta.db_file_generation, if any
	version   int64    // MAX(schema_version.version); 0 without one
	// columns of the sessions and messages tables, lower case; nil when
	// the table is missing
	sessionCols, messageCols map[string]bool
}

// inspect reads the kind of database at path (which exists) through a
// connection of its own that never writes. When reading fails, the facts
// returned still tell whether the header says WAL. A WAL-format file whose -wal
// is missing is read with immutable=1: no process has it open in WAL mode,
// so the main file holds everything, and a plain read-only connection
// would leave an empty -wal and a -shm next to a file that may not be ours.
// The header is read with a file descriptor of its own only when no
// descriptor of this process refers to the file (closing it would drop the
// POSIX locks of this process's connections).
func inspect(ctx context.Context, path string) (*fileFacts, error) {
	f := &fileFacts{}
	fi, err := os.Stat(path)
	if err != nil {
		return f, fileErr("database "+path, err)
	}
	if fi.Size() == 0 {
		f.empty = true
		return f, nil
	}
	if !processHolds(fi) {
		head, err := readHeader(path)
		if err != nil {
			return f, fileErr("read the header of "+path, err)
		}
		if !bytes.HasPrefix(head, []byte(sqliteHeader)) {
			return f, &sessiondb.Error{Code: sessiondb.ECORRUPT, Message: fmt.Sprintf(
				"%s is not a SQLite database (it does not start with the SQLite header); nothing was written. If it was a sessiondb database, `sessiondb recover --source %s --output NEW.db` copies what can be read", path, path)}
		}
		f.walFormat = len(head) >= 20 && head[18] == 2 && head[19] == 2
	}
	immutable := false
	if f.walFormat {
		if _, err := os.Lstat(path + "-wal"); errors.Is(err, os.ErrNotExist) {
			immutable = true
		}
	}
	err = f.readFrom(ctx, path, immutable)
	if _, werr := os.Lstat(path + "-wal"); err != nil && immutable && werr == nil {
		// Another process opened it meanwhile, and may have written.
		err = f.readFrom(ctx, path, false)
	}
	if err != nil {
		return f, mapErr(path, true, "read the schema of "+path, err)
	}
	return f, nil
}

// readHeader returns the first 100 bytes of path (fewer if it is shorter).
func readHeader(path string) ([]byte, error) {
	file, err := os.OpenFile(path, os.O_RDONLY|syscallCloexec, 0)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	head := make([]byte, 100)
	n, err := io.ReadFull(file, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	return head[:n], nil
}

func (f *fileFacts) readFrom(ctx context.Context, path string, immutable bool) error {
	q := url.Values{"mode": {"ro"}, "_busy_timeout": {fmt.Sprint(readerBusyTimeout)}}
	if immutable {
		q.Set("immutable", "1")
	}
	conn, err := sql.Open(driverName, dsn(path, q))
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	return f.read(ctx, conn)
}

// read fills f from an open connection.
func (f *fileFacts) read(ctx context.Context, q querier) error {
	*f = fileFacts{walFormat: f.walFormat}
	rows, err := q.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		f.tables = append(f.tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	f.empty = len(f.tables) == 0
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&f.appID); err != nil {
		return err
	}
	for _, t := range []struct {
		name string
		cols *map[string]bool
	}{{"sessions", &f.sessionCols}, {"messages", &f.messageCols}} {
		info, err := tableInfo(ctx, q, t.name)
		if err != nil {
			return err
		}
		if len(info) == 0 {
			continue
		}
		*t.cols = map[string]bool{}
		for _, c := range info {
			(*t.cols)[strings.ToLower(c.name)] = true
		}
	}
	if f.has("schema_version") {
		// A schema_version of another shape leaves the version 0.
		var v sql.NullInt64
		if q.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_version").Scan(&v) == nil {
			f.version = v.Int64
		}
	}
	if f.has("state_meta") {
		// A state_meta of another shape leaves the token empty.
		var token sql.NullString
		if q.QueryRowContext(ctx, "SELECT value FROM state_meta WHERE key = ?", keyGeneration).Scan(&token) == nil {
			f.token = token.String
		}
	}
	return nil
}

func (f *fileFacts) has(table string) bool {
	for _, t := range f.tables {
		if strings.EqualFold(t, table) {
			return true
		}
	}
	return false
}

// The columns every Hermes release since schema 1 has in the two tables
// that make a file a session store.
var (
	hermesSessionCols = []string{"id", "source", "started_at"}
	hermesMessageCols = []string{"id", "session_id", "role", "content", "timestamp"}
)

// hermesTable reports whether name is a table Hermes or sessiondb creates
// (schema.sql, the search indexes and their shadow tables, and the names
// the migrations use in passing).
func hermesTable(name string) bool {
	n := strings.ToLower(name)
	if strings.HasPrefix(n, "messages_fts") || strings.HasPrefix(n, "fts_v22_trash_") ||
		strings.HasSuffix(n, "_legacy_pk") || n == "session_model_usage_v21" {
		return true
	}
	want, err := expectedColumns()
	if err != nil {
		return false
	}
	for _, t := range want {
		if t.table == n {
			return true
		}
	}
	return false
}

// foreign says why the file is not a Hermes session store, or "" when it
// is one (of any schema version, partly created, or empty). A file is
// foreign when its application_id is not 0 and not the one Hermes derives
// from its db_file_generation, when its sessions or messages table lacks
// the columns every Hermes release has, or when it lacks either table and
// has a table Hermes does not create.
func (f *fileFacts) foreign() string {
	if f.empty {
		return ""
	}
	var why []string
	if f.appID != 0 && f.appID != derivedAppID(f.token) {
		why = append(why, fmt.Sprintf("application_id 0x%08x", uint32(f.appID)))
	}
	missing := func(cols map[string]bool, want []string) []string {
		var out []string
		for _, c := range want {
			if !cols[c] {
				out = append(out, c)
			}
		}
		return out
	}
	if f.sessionCols != nil {
		if m := missing(f.sessionCols, hermesSessionCols); len(m) > 0 {
			why = append(why, "a sessions table without "+strings.Join(m, ", "))
		}
	}
	if f.messageCols != nil {
		if m := missing(f.messageCols, hermesMessageCols); len(m) > 0 {
			why = append(why, "a messages table without "+strings.Join(m, ", "))
		}
	}
	if f.sessionCols == nil || f.messageCols == nil {
		for _, t := range f.tables {
			if !hermesTable(t) {
				why = append(why, "no sessions and messages tables")
				break
			}
		}
	}
	if len(why) == 0 {
		return ""
	}
	return "tables: " + listNames(f.tables, 6) + "; " + strings.Join(why, "; ")
}

// refuse returns the error that stops an open of the file: a foreign file
// always, a database without tables when noEmpty is set.
func (f *fileFacts) refuse(path string, noEmpty bool) error {
	if why := f.foreign(); why != "" {
		return &sessiondb.Error{Code: sessiondb.ECONFLICT, Err: ErrForeign, Message: fmt.Sprintf(
			"%s is a SQLite database of another application (%s); sessiondb will not change it", path, why)}
	}
	if f.empty && noEmpty {
		return noDatabase(path, path+" is an empty SQLite file, not a session database yet")
	}
	return nil
}

// derivedAppID is the application_id Hermes stamps for a db_file_generation
// token (STORAGE.md §4.6), or 0 when it stamps none.
func derivedAppID(token string) int64 {
	if len(token) < 8 {
		return 0
	}
	n, err := strconv.ParseUint(token[:8], 16, 32)
	if err != nil {
		return 0
	}
	if id := int64(n & 0x7FFFFFFF); id != 0 {
		return id
	}
	return 1
}

// listNames joins up to max names, then says how many more there are.
func listNames(names []string, max int) string {
	if len(names) == 0 {
		return "none"
	}
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	if len(sorted) <= max {
		return strings.Join(sorted, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(sorted[:max], ", "), len(sorted)-max)
}
