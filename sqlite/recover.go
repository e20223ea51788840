package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb"
)

/*
#include <stddef.h>

typedef struct sqlite3 sqlite3;
int sqlite3_auto_extension(void (*xEntryPoint)(void));
const char *sqlite3_db_filename(sqlite3 *db, const char *zDbName);
int sqlite3_uri_boolean(const char *zFile, const char *zParam, int bDefault);
int sqlite3_db_config(sqlite3 *db, int op, ...);
int sqlite3_exec(sqlite3 *db, const char *zSql, int (*xCallback)(void *, int, char **, char **), void *pArg, char **pzErrMsg);

#define RECOVER_DBCONFIG_WRITABLE_SCHEMA 1011

// recoverInit runs inside sqlite3_open_v2 for every connection of the
// process (in-memory ones have an empty name, which sqlite3_uri_boolean
// must not see) and acts only on one whose URI has sessiondb_recover=1: it turns
// on writable_schema before the driver's own pragmas load the schema, and
// spends on a throwaway statement the one failure SQLite reports for a
// schema it could load only in part.
static int recoverInit(sqlite3 *db, char **pzErrMsg, const void *pApi) {
	const char *file = sqlite3_db_filename(db, "main");
	(void)pzErrMsg;
	(void)pApi;
	if (file == NULL || file[0] == 0 || !sqlite3_uri_boolean(file, "sessiondb_recover", 0)) {
		return 0;
	}
	sqlite3_db_config(db, RECOVER_DBCONFIG_WRITABLE_SCHEMA, 1, (int *)NULL);
	sqlite3_exec(db, "SELECT 1 FROM sqlite_master LIMIT 0", NULL, NULL, NULL);
	return 0;
}

static int recoverRegister(void) {
	return sqlite3_auto_extension((void (*)(void))recoverInit);
}
*/
import "C"

// registerRecoverHook installs recoverInit once per process. The driver
// applies the _writable_schema DSN pragma only after `PRAGMA synchronous`,
// which needs the schema: without the hook a file whose sqlite_master is
// damaged could not be opened at all.
var registerRecoverHook = sync.OnceValue(func() error {
	if rc := C.recoverRegister(); rc != 0 {
		return fmt.Errorf("sqlite3_auto_extension: code %d", int(rc))
	}
	return nil
})

// Recovery works on a private copy of the source bundle and writes a fresh
// store; see Recover. The numbers are Hermes' (`hermes sessions recover`).
const (
	recoverChunk      = 1000   // rows per source read and per output transaction
	recoverMaxQueries = 10_000 // bisection range queries per recovery
	recoveredSource   = "recovered"
)

// recoverTables are the tables Hermes' recovery copies, in its order:
// parents before the rows that point to them.
var recoverTables = []string{"system_prompts", "sessions", "messages", "session_model_usage",
	"compression_locks", "gateway_routing", "async_delegations", "state_meta"}

// recoverSkipTables are never copied: the version (the output has its own)
// and runtime-only state that a restarted Hermes rebuilds.
var recoverSkipTables = map[string]bool{"schema_version": true, "gateway_hygiene_state": true,
	"conversation_generations": true, "gateway_heartbeats": true, "session_turn_leases": true,
	"sessiondb_rank_terms": true, "sessiondb_rank_sources": true, "sessiondb_rank_dirty": true} // summaries of the old index

// recoverSkipKeys are the generated state_meta keys the output mints or
// derives itself.
var recoverSkipKeys = []string{keyStorage, keyOptimizeAvail, keyHighWater, keyProgress, keyCJKStale,
	keyCJKHighWater, keyCJKProgress, keyStale, keyGeneration, "telegram_dm_topic_schema_version",
	keyRankThrough, keyRankGone}

// recoverDropChunk, when set by a test, makes writeChunk skip a chunk of
// the named table silently: a copy that stops short without an error, which
// verification must catch.
var recoverDropChunk func(table string) bool

var (
	withoutRowidRE = regexp.MustCompile(`(?i)\)\s*WITHOUT\s+ROWID`)
	virtualTableRE = regexp.MustCompile(`(?i)^\s*CREATE\s+VIRTUAL\s+TABLE`)
	bundleSuffixes = []string{"", "-wal", "-shm", "-journal"}
	shadowSuffixes = []string{"_content", "_data", "_docsize", "_idx", "_config"}
)

// metaFilter selects the state_meta rows Recover copies: not the generated
// keys, nor any other fts_* bookkeeping (finalise drops those).
func metaFilter() (string, []any) {
	args := []any{}
	for _, k := range recoverSkipKeys {
		args = append(args, k)
	}
	return `key NOT IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ") + `) AND key NOT LIKE 'fts\_%' ESCAPE '\'`, args
}

// RecoverOptions configure Recover.
type RecoverOptions struct {
	// AllowPartial copies every readable row of a damaged source and
	// records the unreadable rowid ranges instead of failing.
	AllowPartial bool
	// Progress, when set, is called after every chunk with the rows done
	// so far and the rows the source says it holds.
	Progress Progress
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// RecoverReport says what Recover copied, lost, cleaned up and verified.
type RecoverReport struct {
	Source   string `json:"source"`
	Output   string `json:"output"`
	Complete bool   `json:"complete"` // every row copied and the output verified
	// Tables lists every table considered, in copy order.
	Tables   []*RecoverTable `json:"tables"`
	Cleanup  RecoverCleanup  `json:"cleanup"`
	Counters RecoverCounters `json:"session_counters"`
	Verify   RecoverVerify   `json:"verification"`
	// SourceSchemaVersion is the source's schema_version (0: unreadable).
	// Below 30 the version-gated data steps of an upgrade (delegate
	// tagging, usage seeding, system prompts moved out of sessions) run on
	// the output, as opening the source with the store would have.
	SourceSchemaVersion int `json:"source_schema_version"`
	// SchemaIncomplete is set when only part of the source's schema could
	// be read (AllowPartial); tables past the damage are unavailable.
	SchemaIncomplete bool `json:"schema_incomplete,omitempty"`
	// RangeQueries counts the source reads bisection spent on unreadable
	// ranges (at most 10,000).
	RangeQueries    int     `json:"range_queries"`
	DurationSeconds float64 `json:"duration_seconds"`
	Error           string  `json:"error,omitempty"` // why Recover failed, when it did
}

// Table status values of RecoverTable.Status.
const (
	RecoverComplete    = "complete"    // every row read and copied
	RecoverPartial     = "partial"     // some rows unreadable, refused or uncounted
	RecoverUnavailable = "unavailable" // nothing of the table could be read
	RecoverAbsent      = "absent"      // the source has no such table
)

// RecoverTable is the outcome for one table.
type RecoverTable struct {
	Name       string `json:"name"`
	Status     string `json:"status"`
	SourceRows *int64 `json:"source_rows"` // nil: the source could not count them
	Copied     int64  `json:"copied"`
	// Rejected are rowids read from the source that the output refused (a
	// constraint the damaged value breaks); only with AllowPartial.
	Rejected   []int64      `json:"rejected_rowids,omitempty"`
	Added      int64        `json:"added,omitempty"`   // placeholder sessions; rows the data upgrade adds
	Removed    int64        `json:"removed,omitempty"` // orphans deleted by the cleanup
	OutputRows int64        `json:"output_rows"`
	Lost       []RowidRange `json:"lost_ranges,omitempty"`
	Created    bool         `json:"created,omitempty"` // created in the output from the source's DDL
	Note       string       `json:"note,omitempty"`
}

// RowidRange is an inclusive range of rowids.
type RowidRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// RecoverCleanup counts what the orphan cleanup changed in the output.
type RecoverCleanup struct {
	// PlaceholderSessions were created (source "recovered") for messages
	// whose session row is missing, so no message is dropped.
	PlaceholderSessions int   `json:"placeholder_sessions"`
	ParentsCleared      int64 `json:"parents_cleared"`       // parent_session_id pointing to nothing
	PromptHashesCleared int64 `json:"prompt_hashes_cleared"` // unknown system_prompt_hash
	PromptsDeleted      int64 `json:"prompts_deleted"`       // unreferenced system_prompts
	UsageDeleted        int64 `json:"usage_deleted"`         // session_model_usage of missing sessions
	LocksDeleted        int64 `json:"locks_deleted"`         // compression_locks of missing sessions
	OtherDeleted        int64 `json:"other_deleted"`         // rows of other tables failing their foreign keys
	TitlesCleared       int64 `json:"titles_cleared"`        // duplicate titles (the later session keeps it)
}

// RecoverCounters reports sessions whose stored counters disagree with the
// messages copied. The stored values are kept as the source had them.
type RecoverCounters struct {
	MessageCount  int      `json:"message_count_mismatches"`
	ToolCallCount int      `json:"tool_call_count_mismatches"`
	Sessions      []string `json:"sessions,omitempty"` // the first 20 mismatching sessions
}

// RecoverVerify holds the checks run on the output.
type RecoverVerify struct {
	OK                   bool              `json:"ok"`
	IntegrityCheck       []string          `json:"integrity_check"`
	ForeignKeyViolations int               `json:"foreign_key_violations"`
	SchemaVersion        int               `json:"schema_version"`
	FTSStorageVersion    string            `json:"fts_storage_version"`
	FTS                  map[string]string `json:"fts"` // index → "ok" or the error
	RowCountsMatch       bool              `json:"row_counts_match"`
	Problems             []string          `json:"problems,omitempty"`
}

// Recover copies what can be read of the Hermes database src into a new
// store at dst, as `hermes sessions recover` does. The source is never
// opened: its bundle (the file and any -wal, -shm, -journal) is copied into
// a temporary directory next to dst first, and the copy is read with
// writable_schema and query_only. dst must not exist.
//
// The output is created by Open (newest schema, search indexes, schema 30),
// then filled table by table in chunks of 1000 rows by rowid, each chunk its
// own transaction; messages keep their ids and are indexed by the search
// triggers as they land. Orphans are cleaned up in one transaction and the
// output is verified (integrity_check, foreign_key_check, schema version,
// FTS5 integrity-check of every index, row counts).
//
// A source read that fails makes Recover fail, naming the table and rowid
// range, and deletes the output; with AllowPartial the range is bisected to
// salvage every readable row, the lost ranges are reported and the report's
// Complete is false. On error the report, when not nil, says how far the
// recovery got.
func Recover(ctx context.Context, src, dst string, opts RecoverOptions) (*RecoverReport, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	start := opts.Now()
	srcAbs, dstAbs, err := checkRecoverPaths(src, dst)
	if err != nil {
		return nil, err
	}
	// Claim the output atomically: a concurrent recover to the same path
	// fails here instead of sharing the file.
	if err := os.MkdirAll(filepath.Dir(dstAbs), 0o700); err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "create output directory: %v", err)
	}
	if err := checkRecoverSpace(srcAbs, filepath.Dir(dstAbs)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(dstAbs, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, sessiondb.Errorf(sessiondb.ECONFLICT, "output %s already exists; recover never overwrites a file: choose a new path", dstAbs)
		}
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "create output %s: %v", dstAbs, err)
	}
	f.Close()

	rep := &RecoverReport{Source: srcAbs, Output: dstAbs}
	keep, err := recoverInto(ctx, srcAbs, dstAbs, opts, rep)
	rep.DurationSeconds = opts.Now().Sub(start).Seconds()
	if err != nil {
		rep.Complete = false
		rep.Error = err.Error()
		if !keep {
			removeBundle(dstAbs)
		}
		return rep, err
	}
	return rep, nil
}

// recoverInto runs the recovery into the claimed output. keep says whether
// the output is worth keeping after an error (only a partial recovery whose
// verification failed).
func recoverInto(ctx context.Context, src, dst string, opts RecoverOptions, rep *RecoverReport) (keep bool, err error) {
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".sessiondb-recover-")
	if err != nil {
		return false, sessiondb.Errorf(sessiondb.EINVALID, "create a temporary directory next to %s: %v", dst, err)
	}
	defer os.RemoveAll(tmp)
	copyPath, err := copyBundle(src, tmp)
	if err != nil {
		return false, err
	}
	source, err := openRecoverSource(ctx, copyPath, src)
	if err != nil {
		return false, err
	}
	defer source.Close()

	out, err := Open(dst, Options{Synchronous: "NORMAL", Now: opts.Now})
	if err != nil {
		return false, fmt.Errorf("create output %s: %w", dst, err)
	}
	defer out.Close()
	r := &recoverer{opts: opts, src: source, srcPath: src, out: out, rep: rep, sessions: map[string]bool{}}
	if err := r.copyAll(ctx); err != nil {
		return false, err
	}
	if err := r.countMismatches(ctx); err != nil {
		return false, err
	}
	if err := r.verify(ctx); err != nil {
		return false, err
	}
	rep.RangeQueries = r.queries
	rep.Complete = rep.Verify.OK
	for _, t := range rep.Tables {
		rep.Complete = rep.Complete && (t.Status == RecoverComplete || t.Status == RecoverAbsent)
	}
	if !rep.Verify.OK {
		return opts.AllowPartial, sessiondb.Errorf(sessiondb.EINTERNAL, "the recovered file %s failed verification: %s",
			dst, strings.Join(rep.Verify.Problems, "; "))
	}
	return true, nil
}

// checkRecoverPaths validates the source and output paths and returns them
// absolute.
func checkRecoverPaths(src, dst string) (string, string, error) {
	if src == "" || dst == "" {
		return "", "", sessiondb.Errorf(sessiondb.EINVALID, "recover needs a source and an output path")
	}
	srcAbs, err := filepath.Abs(src)
	if err != nil {
		return "", "", sessiondb.Errorf(sessiondb.EINVALID, "source %q: %v", src, err)
	}
	dstAbs, err := filepath.Abs(dst)
	if err != nil {
		return "", "", sessiondb.Errorf(sessiondb.EINVALID, "output %q: %v", dst, err)
	}
	fi, err := os.Stat(srcAbs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", "", sessiondb.Errorf(sessiondb.ENOTFOUND, "source %s does not exist", srcAbs)
	case err != nil:
		return "", "", sessiondb.Errorf(sessiondb.EINVALID, "source %s: %v", srcAbs, err)
	case fi.IsDir():
		return "", "", sessiondb.Errorf(sessiondb.EINVALID, "source %s is a directory; pass the database file (state.db)", srcAbs)
	case !fi.Mode().IsRegular():
		return "", "", sessiondb.Errorf(sessiondb.EINVALID, "source %s is not a regular file", srcAbs)
	}
	srcReal, err := filepath.EvalSymlinks(srcAbs)
	if err != nil {
		return "", "", sessiondb.Errorf(sessiondb.EINVALID, "source %s: %v", srcAbs, err)
	}
	dstReal := dstAbs
	if dir, err := filepath.EvalSymlinks(filepath.Dir(dstAbs)); err == nil {
		dstReal = filepath.Join(dir, filepath.Base(dstAbs))
	}
	for _, suffix := range bundleSuffixes {
		same := dstReal == srcReal+suffix || dstAbs == srcAbs+suffix
		if dfi, err := os.Stat(dstAbs); err == nil && suffix == "" {
			same = same || os.SameFile(fi, dfi)
		}
		if same {
			return "", "", sessiondb.Errorf(sessiondb.EINVALID, "output %s is the source or one of its files; recover writes a new file: choose another path", dstAbs)
		}
	}
	for _, suffix := range bundleSuffixes {
		if _, err := os.Lstat(dstAbs + suffix); err == nil {
			return "", "", sessiondb.Errorf(sessiondb.ECONFLICT, "output %s already exists; recover never overwrites a file: choose a new path", dstAbs+suffix)
		}
	}
	return srcAbs, dstAbs, nil
}

// checkRecoverSpace refuses to start a recovery that cannot fit on the
// output's file system: it holds a copy of the source's files and the new
// database (about the source's size) at once. A file system that cannot
// tell is not checked.
func checkRecoverSpace(src, dir string) error {
	var size int64
	for _, suffix := range bundleSuffixes {
		if fi, err := os.Stat(src + suffix); err == nil {
			size += fi.Size()
		}
	}
	need := 2 * uint64(size)
	free, err := freeBytes(dir)
	if err != nil || free >= need {
		return nil
	}
	return sessiondb.Errorf(sessiondb.EINVALID,
		"not enough free space in %s: recovering %s needs about %.1f MiB (a copy of its files and the new database), %.1f MiB are free; free some space or choose an output on another disk",
		dir, src, float64(need)/(1<<20), float64(free)/(1<<20))
}

// fingerprint is what a bundle file looked like: absent, or its size and
// modification time.
type fingerprint struct {
	exists bool
	size   int64
	mtime  time.Time
}

func bundleFingerprint(path string) ([]fingerprint, error) {
	fps := make([]fingerprint, len(bundleSuffixes))
	for i, suffix := range bundleSuffixes {
		fi, err := os.Stat(path + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, sessiondb.Errorf(sessiondb.EINVALID, "source %s: %v", path+suffix, err)
		}
		fps[i] = fingerprint{exists: true, size: fi.Size(), mtime: fi.ModTime()}
	}
	return fps, nil
}

// copyBundle copies the source and its sidecars into dir and returns the
// path of the copied database. It fails when any of them changed during the
// copy: another process is writing to the source.
func copyBundle(src, dir string) (string, error) {
	before, err := bundleFingerprint(src)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "source.db")
	for i, suffix := range bundleSuffixes {
		if !before[i].exists {
			continue
		}
		if err := copyFile(src+suffix, dst+suffix); err != nil {
			return "", sessiondb.Errorf(sessiondb.EINVALID, "copy %s: %v", src+suffix, err)
		}
	}
	after, err := bundleFingerprint(src)
	if err != nil {
		return "", err
	}
	for i := range before {
		if before[i].exists != after[i].exists || before[i].size != after[i].size || !before[i].mtime.Equal(after[i].mtime) {
			return "", sessiondb.Errorf(sessiondb.EBUSY, "source %s changed while it was being copied: another process is writing to it; stop Hermes (and any other writer) and try again",
				src+bundleSuffixes[i])
		}
	}
	return dst, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// removeBundle deletes a database file this process created and its
// sidecars.
func removeBundle(path string) {
	for _, suffix := range bundleSuffixes {
		_ = os.Remove(path + suffix)
	}
}

// openRecoverSource opens the private copy on one connection. The copy is
// opened normally (not mode=ro), so a hot WAL or journal in it is applied;
// writable_schema (set by recoverInit as the connection opens) lets SQLite
// load what it can of a damaged schema, and query_only keeps every
// statement a read.
func openRecoverSource(ctx context.Context, path, orig string) (*sql.DB, error) {
	if err := registerRecoverHook(); err != nil {
		return nil, fmt.Errorf("open copy of %s: %w", orig, err)
	}
	db, err := sql.Open(driverName, dsn(path, url.Values{
		"sessiondb_recover": {"1"},
		"_writable_schema":  {"on"},
		"_query_only":       {"on"},
		"_busy_timeout":     {fmt.Sprint(readerBusyTimeout)},
	}))
	if err != nil {
		return nil, fmt.Errorf("open copy of %s: %w", orig, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	var typ sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT type FROM sqlite_master LIMIT 1").Scan(&typ); err != nil && !errors.Is(err, sql.ErrNoRows) {
		db.Close()
		return nil, sourceErr(orig, "read the schema", err)
	}
	return db, nil
}

// sourceErr describes a failed read of the source.
func sourceErr(path, op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &sessiondb.Error{Code: sessiondb.EINTERNAL, Err: err, Message: "recover: " + err.Error()}
	}
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrNotADB {
		return &sessiondb.Error{Code: sessiondb.ECORRUPT, Err: err, Message: fmt.Sprintf("source %s is not a SQLite database (%v): nothing can be recovered from it", path, err)}
	}
	return &sessiondb.Error{Code: sessiondb.ECORRUPT, Err: err, Message: fmt.Sprintf("source %s: cannot %s: %v", path, op, err)}
}

// unreadable reports whether a source read failed because of the file (any
// SQLite error but an interrupt or memory exhaustion): the copy is private,
// so nothing else can be the cause.
func unreadable(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code != sqlite3.ErrInterrupt && se.Code != sqlite3.ErrNomem
}

// refused reports whether the output refused a row for its value.
func refused(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrConstraint || se.Code == sqlite3.ErrMismatch || se.Code == sqlite3.ErrTooBig)
}

// recoverer carries one recovery.
type recoverer struct {
	opts    RecoverOptions
	src     *sql.DB // the private copy, one connection
	srcPath string  // the original source, for messages
	out     *DB
	conn    *sql.Conn // the output's writer connection, foreign keys off during the copy
	rep     *RecoverReport

	queries     int   // bisection range queries so far
	done, total int64 // progress
	sessions    map[string]bool
	placeholder []any            // ids of placeholder sessions
	seqs        map[string]int64 // the source's sqlite_sequence, as far as readable
	partial     bool             // the source's schema could only be read in part
}

// copyTable is one table being copied.
type copyTable struct {
	rep        *RecoverTable
	sql        string   // the source's CREATE statement
	extra      bool     // not one of recoverTables
	cols       []string // copied columns
	exprs      []string // what is selected for each of them
	rowid      string   // rowid alias usable on the source ("" for WITHOUT ROWID)
	filter     string   // extra WHERE clause (state_meta's generated keys)
	filterArgs []any
	insert     string
	sessionCol int // messages.session_id, messages.timestamp, sessions.title: -1 if absent
	tsCol      int
	titleCol   int
	lo, hi     int64 // rowid bounds (1 and MaxInt64 when unreadable)
	bounded    [2]bool
	failed     bool // some read failed
}

func (t *copyTable) lose(from, to int64) {
	if t.bounded[0] {
		from = max(from, t.lo)
	}
	if t.bounded[1] {
		to = min(to, t.hi)
	}
	if from > to {
		return
	}
	if n := len(t.rep.Lost); n > 0 && t.rep.Lost[n-1].To < math.MaxInt64 && t.rep.Lost[n-1].To+1 >= from {
		t.rep.Lost[n-1].To = max(t.rep.Lost[n-1].To, to)
		return
	}
	t.rep.Lost = append(t.rep.Lost, RowidRange{from, to})
}

// sourceObject is one row of the source's sqlite_master.
type sourceObject struct{ typ, name, table, sql string }

// copyAll copies every table, then cleans up orphans and finalises the
// search bookkeeping, all on the output's writer connection with foreign
// keys off (sessions may point at parents copied later; cleanup fixes
// what stays dangling).
func (r *recoverer) copyAll(ctx context.Context) error {
	objs, err := r.sourceSchema(ctx)
	if err != nil {
		return err
	}
	r.seqs = r.sourceSequences(ctx)
	_ = r.src.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&r.rep.SourceSchemaVersion)
	r.conn, err = r.out.write.Conn(ctx)
	if err != nil {
		return r.out.mapErr("recover", err)
	}
	defer r.conn.Close()
	var tables []*copyTable
	defer func() {
		for _, t := range tables {
			t.rep.Status = t.status()
		}
	}()
	if _, err := r.conn.ExecContext(ctx, "PRAGMA foreign_keys=OFF"); err != nil {
		return r.out.mapErr("recover", err)
	}

	for _, name := range r.plan(objs) {
		t, err := r.prepare(ctx, objs, name)
		if err != nil {
			return err
		}
		r.rep.Tables = append(r.rep.Tables, t.rep)
		tables = append(tables, t)
		if t.rep.SourceRows != nil {
			r.total += *t.rep.SourceRows
		}
	}
	for _, t := range tables {
		if t.insert == "" {
			continue
		}
		if err := r.copyTable(ctx, t); err != nil {
			return err
		}
	}
	if err := r.cleanup(ctx, tables); err != nil {
		return err
	}
	if err := r.finalise(ctx); err != nil {
		return err
	}
	_, err = r.conn.ExecContext(ctx, "PRAGMA foreign_keys=ON")
	return r.out.mapErr("recover", err)
}

func (t *copyTable) status() string {
	switch {
	case t.rep.Status != "":
		return t.rep.Status
	case t.failed && t.rep.Copied == 0 && t.rep.SourceRows == nil:
		return RecoverUnavailable
	case t.failed || len(t.rep.Lost) > 0 || len(t.rep.Rejected) > 0 || t.rep.SourceRows == nil:
		return RecoverPartial
	case *t.rep.SourceRows != t.rep.Copied:
		t.rep.Note = fmt.Sprintf("the source counts %d rows but %d could be read", *t.rep.SourceRows, t.rep.Copied)
		return RecoverPartial
	}
	return RecoverComplete
}

func (r *recoverer) sourceSchema(ctx context.Context) ([]sourceObject, error) {
	rows, err := r.src.QueryContext(ctx, "SELECT COALESCE(type, ''), COALESCE(name, ''), COALESCE(tbl_name, ''), COALESCE(sql, '') FROM sqlite_master ORDER BY rowid")
	if err != nil {
		return nil, sourceErr(r.srcPath, "read the schema", err)
	}
	defer rows.Close()
	var objs []sourceObject
	for rows.Next() {
		var o sourceObject
		if err := rows.Scan(&o.typ, &o.name, &o.table, &o.sql); err != nil {
			return nil, sourceErr(r.srcPath, "read the schema", err)
		}
		objs = append(objs, o)
	}
	if err := rows.Err(); err != nil {
		if !unreadable(err) || !r.opts.AllowPartial {
			return nil, r.readFailed("read the schema", err)
		}
		// Go on with the entries read before the damage: they are the
		// ones SQLite itself loaded (writable_schema).
		r.partial = true
		r.rep.SchemaIncomplete = true
	}
	return objs, nil
}

// plan lists the tables to copy: recoverTables, then every other plain
// table of the source (not internal, not a search index or its shadow
// tables, not runtime-only), in the source's order.
func (r *recoverer) plan(objs []sourceObject) []string {
	virtual := []string{"messages_fts", "messages_fts_trigram", "messages_fts_cjk"}
	for _, o := range objs {
		if o.typ == "table" && virtualTableRE.MatchString(o.sql) {
			virtual = append(virtual, o.name)
		}
	}
	shadow := func(name string) bool {
		if strings.HasPrefix(name, "fts_v22_trash_") {
			return true
		}
		for _, v := range virtual {
			for _, s := range shadowSuffixes {
				if name == v+s {
					return true
				}
			}
		}
		return false
	}
	plan := slices.Clone(recoverTables)
	for _, o := range objs {
		lower := strings.ToLower(o.name)
		if o.typ != "table" || slices.Contains(plan, o.name) || recoverSkipTables[o.name] ||
			strings.HasPrefix(lower, "sqlite_") || virtualTableRE.MatchString(o.sql) || shadow(o.name) {
			continue
		}
		plan = append(plan, o.name)
	}
	return plan
}

// prepare inspects one table on both sides: the columns to copy, the rows
// the source counts, its rowid bounds. A table the source lacks is
// reported absent; an extra table the output lacks is created from the
// source's DDL, with its indexes.
func (r *recoverer) prepare(ctx context.Context, objs []sourceObject, name string) (*copyTable, error) {
	t := &copyTable{rep: &RecoverTable{Name: name}, extra: !slices.Contains(recoverTables, name),
		sessionCol: -1, tsCol: -1, titleCol: -1, lo: math.MinInt64, hi: math.MaxInt64}
	found := false
	for _, o := range objs {
		if o.typ == "table" && o.name == name {
			found, t.sql = true, o.sql
		}
	}
	if !found {
		t.rep.Status = RecoverAbsent
		if r.partial {
			t.rep.Status, t.rep.Note = RecoverUnavailable, "not in the readable part of the source's schema"
		}
		return t, nil
	}
	srcCols, err := tableInfo(ctx, r.src, name)
	if err == nil && len(srcCols) == 0 {
		err = fmt.Errorf("no columns (its schema entry is unreadable)")
	}
	if err != nil {
		if !r.opts.AllowPartial {
			return nil, sourceErr(r.srcPath, fmt.Sprintf("read the columns of table %q", name), err)
		}
		t.rep.Status, t.rep.Note = RecoverUnavailable, "columns unreadable: "+err.Error()
		return t, nil
	}
	outCols, err := tableInfo(ctx, r.conn, name)
	if err != nil {
		return nil, r.out.mapErr("recover: inspect output table "+name, err)
	}
	if len(outCols) == 0 {
		if err := r.createTable(ctx, objs, name, t.sql); err != nil {
			return nil, err
		}
		t.rep.Created = true
		if outCols, err = tableInfo(ctx, r.conn, name); err != nil {
			return nil, r.out.mapErr("recover: inspect output table "+name, err)
		}
	}
	have := map[string]columnInfo{}
	for _, c := range outCols {
		have[strings.ToLower(c.name)] = c
	}
	srcNames := map[string]bool{}
	for _, c := range srcCols {
		srcNames[strings.ToLower(c.name)] = true
		if oc, ok := have[strings.ToLower(c.name)]; ok {
			t.cols = append(t.cols, c.name)
			// +col has no declared type, so the driver hands back SQLite's
			// own value (no DATETIME or BOOLEAN conversion). A NULL in a
			// column the output declares NOT NULL with a default (older
			// files allow it there) becomes that default, as migrate heals it.
			expr := "+" + quoteIdent(c.name)
			if oc.notNull && oc.dflt.Valid && oc.pk == 0 {
				expr = fmt.Sprintf("COALESCE(%s, %s)", expr, oc.dflt.String)
			}
			t.exprs = append(t.exprs, expr)
		}
	}
	if len(t.cols) == 0 {
		t.rep.Status, t.rep.Note = RecoverUnavailable, "no column in common with the output"
		return t, nil
	}
	for _, alias := range []string{"rowid", "_rowid_", "oid"} {
		if !srcNames[alias] {
			t.rowid = alias
			break
		}
	}
	if withoutRowidRE.MatchString(t.sql) {
		t.rowid = ""
	}
	if name == "state_meta" {
		t.filter, t.filterArgs = metaFilter()
	}
	for i, c := range t.cols {
		switch {
		case name == "messages" && strings.EqualFold(c, "session_id"):
			t.sessionCol = i
		case name == "messages" && strings.EqualFold(c, "timestamp"):
			t.tsCol = i
		case name == "sessions" && strings.EqualFold(c, "title"):
			t.titleCol = i
		}
	}
	quoted := make([]string, len(t.cols))
	for i, c := range t.cols {
		quoted[i] = quoteIdent(c)
	}
	verb := "INSERT"
	if name == "state_meta" {
		verb = "INSERT OR REPLACE"
	}
	t.insert = fmt.Sprintf("%s INTO %s (%s) VALUES (%s)", verb, quoteIdent(name), strings.Join(quoted, ", "),
		strings.TrimSuffix(strings.Repeat("?, ", len(t.cols)), ", "))

	var n int64
	if err := r.src.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoteIdent(name)+t.where(""), t.filterArgs...).Scan(&n); err != nil {
		if !unreadable(err) || !r.opts.AllowPartial {
			return nil, r.readFailed("count the rows of table "+quote(name), err)
		}
		t.failed = true
		t.rep.Note = "the source cannot count its rows: " + err.Error()
	} else {
		t.rep.SourceRows = &n
	}
	if t.rowid != "" {
		if err := r.bounds(ctx, objs, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// bounds reads the smallest and largest rowid of t. When the table's own
// b-tree cannot give them, each of its indexes is asked (INDEXED BY reads
// only the index, which holds every rowid), then sqlite_sequence for the
// largest. Failing that the range starts at 1, the first rowid SQLite
// assigns, or runs to the largest possible rowid.
func (r *recoverer) bounds(ctx context.Context, objs []sourceObject, t *copyTable) error {
	name := t.rep.Name
	var indexes []string
	for _, o := range objs {
		if o.typ == "index" && o.table == name {
			indexes = append(indexes, o.name)
		}
	}
	for i, agg := range []string{"MIN", "MAX"} {
		var v sql.NullInt64
		q := fmt.Sprintf("SELECT %s(%s) FROM %s", agg, t.rowid, quoteIdent(name))
		err := r.src.QueryRowContext(ctx, q).Scan(&v)
		if err != nil && unreadable(err) {
			if !r.opts.AllowPartial {
				return r.readFailed("read the rowid bounds of table "+quote(name), err)
			}
			t.failed = true
			for _, idx := range indexes {
				if r.src.QueryRowContext(ctx, q+" INDEXED BY "+quoteIdent(idx)).Scan(&v) == nil {
					err = nil
					break
				}
			}
		}
		if err != nil && !unreadable(err) {
			return sourceErr(r.srcPath, "read the rowid bounds of table "+quote(name), err)
		}
		switch {
		case err == nil && !v.Valid:
			t.insert = "" // empty table
			if t.rep.SourceRows == nil || *t.rep.SourceRows != 0 {
				t.failed = true
			}
			return nil
		case err == nil && i == 0:
			t.lo, t.bounded[0] = v.Int64, true
		case err == nil:
			t.hi, t.bounded[1] = v.Int64, true
		case i == 0:
			t.lo = 1
		default:
			if seq, ok := r.seqs[name]; ok {
				t.hi, t.bounded[1] = seq, true
			}
		}
	}
	return nil
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// where returns the WHERE clause combining cond with the table's filter.
func (t *copyTable) where(cond string) string {
	var parts []string
	for _, p := range []string{cond, t.filter} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(parts, " AND ")
}

// readFailed is the error of a failed source read without AllowPartial.
func (r *recoverer) readFailed(op string, err error) error {
	if !unreadable(err) {
		return sourceErr(r.srcPath, op, err)
	}
	return &sessiondb.Error{Code: sessiondb.ECORRUPT, Err: err, Message: fmt.Sprintf(
		"source %s is damaged: cannot %s (%v); nothing was written. Run again with --allow-partial to copy every readable row",
		r.srcPath, op, err)}
}

// createTable creates an extra table in the output with the source's DDL,
// and its explicit indexes.
func (r *recoverer) createTable(ctx context.Context, objs []sourceObject, name, ddl string) error {
	tx, err := r.conn.BeginTx(ctx, nil)
	if err != nil {
		return r.out.mapErr("recover: create table "+name, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, ddl); err != nil {
		return r.out.mapErr("recover: create table "+name+" from the source's definition", err)
	}
	for _, o := range objs {
		if o.typ == "index" && o.table == name && o.sql != "" {
			if _, err := tx.ExecContext(ctx, o.sql); err != nil {
				return r.out.mapErr("recover: create index "+o.name, err)
			}
		}
	}
	return r.out.mapErr("recover: create table "+name, tx.Commit())
}

// copyTable copies one table: by rowid range for ordinary tables, in one
// pass for WITHOUT ROWID tables.
func (r *recoverer) copyTable(ctx context.Context, t *copyTable) error {
	if t.rowid == "" {
		return r.copyWithoutRowid(ctx, t)
	}
	return r.copyRange(ctx, t, t.lo, t.hi, false)
}

// copyRange copies the rows with rowid in [lo, hi], 1000 at a time. A
// probe is a range chosen by bisection: its first read counts against the
// query budget. A read that fails fails the recovery, or with AllowPartial
// hands the rest of the range to salvage; the rows it returned before
// failing are kept.
func (r *recoverer) copyRange(ctx context.Context, t *copyTable, lo, hi int64, probe bool) error {
	for lo <= hi {
		if probe {
			if r.queries >= recoverMaxQueries {
				t.lose(lo, hi)
				return nil
			}
			r.queries++
			probe = false
		}
		rows, ids, err := r.readChunk(ctx, t, lo, hi)
		if len(rows) > 0 {
			if werr := r.writeChunk(ctx, t, rows, ids); werr != nil {
				return werr
			}
		}
		next := lo
		if len(ids) > 0 {
			last := ids[len(ids)-1]
			if last >= hi {
				return nil
			}
			next = last + 1
		}
		if err == nil {
			if len(rows) < recoverChunk {
				return nil
			}
			lo = next
			continue
		}
		if !unreadable(err) {
			return sourceErr(r.srcPath, "read table "+quote(t.rep.Name), err)
		}
		t.failed = true
		if !r.opts.AllowPartial {
			return r.readFailed(fmt.Sprintf("read table %q at rowids %s", t.rep.Name, t.span(next, hi)), err)
		}
		if hi == math.MaxInt64 && !t.bounded[1] {
			return r.salvageTail(ctx, t, next)
		}
		return r.salvage(ctx, t, next, hi)
	}
	return nil
}

// salvageTail handles a failed read at lo when the table's largest rowid
// is unknown: it seeks at lo+1, lo+2, lo+4, … for the first rowid from
// which the table reads again, bisects the stretch before it and copies on
// from there. If no seek works, the rest of the rowid space is lost, after
// at most 64 queries (bisecting up to the largest possible rowid would
// spend the whole budget).
func (r *recoverer) salvageTail(ctx context.Context, t *copyTable, lo int64) error {
	for step := int64(1); step > 0 && step <= math.MaxInt64-lo; step *= 2 {
		if r.queries >= recoverMaxQueries {
			break
		}
		r.queries++
		x := lo + step
		var next int64
		err := r.src.QueryRowContext(ctx, fmt.Sprintf("SELECT %[1]s FROM %[2]s WHERE %[1]s >= ? ORDER BY %[1]s LIMIT 1",
			t.rowid, quoteIdent(t.rep.Name)), x).Scan(&next)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			if !unreadable(err) {
				return sourceErr(r.srcPath, "read table "+quote(t.rep.Name), err)
			}
			continue
		}
		if err := r.salvage(ctx, t, lo, x-1); err != nil {
			return err
		}
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return r.copyRange(ctx, t, x, math.MaxInt64, false)
	}
	t.lose(lo, math.MaxInt64)
	return nil
}

// span names a rowid range for a message, clipped to the known bounds.
func (t *copyTable) span(from, to int64) string {
	if t.bounded[0] {
		from = max(from, t.lo)
	}
	if t.bounded[1] {
		to = min(to, t.hi)
		return fmt.Sprintf("%d..%d", from, to)
	}
	return fmt.Sprintf("%d and above", from)
}

// salvage copies the readable rows of [lo, hi], a range whose read failed:
// one row is read by itself (lost if that fails), a longer range is split
// in two halves that are copied in turn, until the budget of range queries
// runs out; the rest is then recorded as lost.
func (r *recoverer) salvage(ctx context.Context, t *copyTable, lo, hi int64) error {
	if r.queries >= recoverMaxQueries {
		t.lose(lo, hi)
		return nil
	}
	if lo == hi {
		r.queries++
		rows, ids, err := r.readChunk(ctx, t, lo, hi)
		if len(rows) > 0 {
			if werr := r.writeChunk(ctx, t, rows, ids); werr != nil {
				return werr
			}
		}
		if err != nil {
			if !unreadable(err) {
				return sourceErr(r.srcPath, "read table "+quote(t.rep.Name), err)
			}
			t.lose(lo, hi)
		}
		return nil
	}
	mid := lo + int64((uint64(hi)-uint64(lo))/2)
	if err := r.copyRange(ctx, t, lo, mid, true); err != nil {
		return err
	}
	return r.copyRange(ctx, t, mid+1, hi, true)
}

// readChunk reads up to 1000 rows with rowid in [lo, hi] in rowid order.
// On an error it returns the rows read before it. A single rowid is read by
// a point lookup, which never steps into the next page.
func (r *recoverer) readChunk(ctx context.Context, t *copyTable, lo, hi int64) ([][]any, []int64, error) {
	args := []any{lo}
	cond := t.rowid + " = ?"
	if lo != hi {
		cond = t.rowid + " >= ? AND " + t.rowid + " <= ?"
		args = append(args, hi)
	}
	q := fmt.Sprintf("SELECT %s, %s FROM %s%s ORDER BY %s LIMIT %d",
		t.rowid, strings.Join(t.exprs, ", "), quoteIdent(t.rep.Name), t.where(cond), t.rowid, recoverChunk)
	rows, err := r.src.QueryContext(ctx, q, append(args, t.filterArgs...)...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var out [][]any
	var ids []int64
	for rows.Next() {
		var id int64
		vals := make([]any, len(t.cols))
		dest := []any{&id}
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return out, ids, err
		}
		out = append(out, vals)
		ids = append(ids, id)
	}
	return out, ids, rows.Err()
}

// copyWithoutRowid copies a WITHOUT ROWID table in one pass, 1000 rows per
// output transaction; a read that fails ends the table (no rowid ranges to
// bisect).
func (r *recoverer) copyWithoutRowid(ctx context.Context, t *copyTable) error {
	rows, err := r.src.QueryContext(ctx, "SELECT "+strings.Join(t.exprs, ", ")+" FROM "+quoteIdent(t.rep.Name)+t.where(""), t.filterArgs...)
	if err == nil {
		defer rows.Close()
	}
	var batch [][]any
	var read int64
	for err == nil && rows.Next() {
		vals := make([]any, len(t.cols))
		dest := make([]any, len(vals))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err = rows.Scan(dest...); err != nil {
			break
		}
		batch = append(batch, vals)
		read++
		if len(batch) == recoverChunk {
			if werr := r.writeChunk(ctx, t, batch, nil); werr != nil {
				return werr
			}
			batch = nil
		}
	}
	if err == nil {
		err = rows.Err()
	}
	if len(batch) > 0 {
		if werr := r.writeChunk(ctx, t, batch, nil); werr != nil {
			return werr
		}
	}
	if err == nil {
		return nil
	}
	if !unreadable(err) {
		return sourceErr(r.srcPath, "read table "+quote(t.rep.Name), err)
	}
	t.failed = true
	if !r.opts.AllowPartial {
		return r.readFailed(fmt.Sprintf("read table %q (WITHOUT ROWID) after row %d", t.rep.Name, read), err)
	}
	t.rep.Note = fmt.Sprintf("WITHOUT ROWID table: reading stopped after %d rows: %v", read, err)
	return nil
}

// writeChunk inserts rows in one transaction on the output. Messages whose
// session is missing get a placeholder session first, in the same
// transaction, so the search triggers see a session row when the message
// lands (the trigram index's membership depends on it). A session whose
// title an earlier-copied session already holds takes it over (older files
// allow duplicate titles; the later row keeps it, as in migrate).
func (r *recoverer) writeChunk(ctx context.Context, t *copyTable, rows [][]any, ids []int64) error {
	op := "recover: write table " + t.rep.Name
	if recoverDropChunk != nil && recoverDropChunk(t.rep.Name) {
		return nil
	}
	tx, err := r.conn.BeginTx(ctx, nil)
	if err != nil {
		return r.out.mapErr(op, err)
	}
	defer tx.Rollback()
	var created []any
	if t.sessionCol >= 0 {
		if created, err = r.placeholders(ctx, tx, t, rows); err != nil {
			return r.out.mapErr(op, err)
		}
	}
	stmt, err := tx.PrepareContext(ctx, t.insert)
	if err != nil {
		return r.out.mapErr(op, err)
	}
	defer stmt.Close()
	var copied, titles int64
	var rejected []int64
	for i, row := range rows {
		if t.titleCol >= 0 && row[t.titleCol] != nil {
			res, err := tx.ExecContext(ctx, "UPDATE sessions SET title = NULL WHERE title = ?", row[t.titleCol])
			if err != nil {
				return r.out.mapErr(op, err)
			}
			n, _ := res.RowsAffected()
			titles += n
		}
		if _, err := stmt.ExecContext(ctx, row...); err != nil {
			if !refused(err) {
				return r.out.mapErr(op, err)
			}
			where := fmt.Sprintf("row %d", t.rep.Copied+int64(i)+1)
			id := int64(-1)
			if ids != nil {
				id = ids[i]
				where = fmt.Sprintf("rowid %d", id)
			}
			if !r.opts.AllowPartial {
				return &sessiondb.Error{Code: sessiondb.ECORRUPT, Err: err, Message: fmt.Sprintf(
					"source %s: table %q %s holds a value the output refuses (%v); nothing was written. Run again with --allow-partial to skip such rows",
					r.srcPath, t.rep.Name, where, err)}
			}
			rejected = append(rejected, id)
			continue
		}
		copied++
	}
	if err := tx.Commit(); err != nil {
		return r.out.mapErr(op, err)
	}
	for _, id := range created {
		r.sessions[sessionKey(id)] = true
	}
	r.placeholder = append(r.placeholder, created...)
	t.rep.Copied += copied
	t.rep.Rejected = append(t.rep.Rejected, rejected...)
	r.rep.Cleanup.TitlesCleared += titles
	r.done += int64(len(rows))
	if r.opts.Progress != nil {
		r.opts.Progress(min(r.done, max(r.total, r.done)), max(r.total, r.done))
	}
	return nil
}

func sessionKey(v any) string { return fmt.Sprintf("%T\x00%v", v, v) }

// placeholders inserts a session (source "recovered", started at the
// chunk's earliest message; cleanup moves it to the earliest of all) for
// every session id of the chunk that the output lacks, and returns their
// ids.
func (r *recoverer) placeholders(ctx context.Context, tx *sql.Tx, t *copyTable, rows [][]any) ([]any, error) {
	type missing struct {
		id    any
		start float64
	}
	var order []string
	need := map[string]*missing{}
	for _, row := range rows {
		id := row[t.sessionCol]
		if id == nil {
			continue
		}
		key := sessionKey(id)
		exists, known := r.sessions[key]
		if !known {
			var one int
			err := tx.QueryRowContext(ctx, "SELECT 1 FROM sessions WHERE id = ?", id).Scan(&one)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, err
			}
			exists = err == nil
			if exists {
				r.sessions[key] = true
			}
		}
		if exists {
			continue
		}
		ts := float64(r.opts.Now().UnixNano()) / 1e9
		if t.tsCol >= 0 {
			switch v := row[t.tsCol].(type) {
			case float64:
				ts = v
			case int64:
				ts = float64(v)
			}
		}
		if m, ok := need[key]; ok {
			m.start = min(m.start, ts)
			continue
		}
		need[key] = &missing{id: id, start: ts}
		order = append(order, key)
	}
	var created []any
	for _, key := range order {
		m := need[key]
		if _, err := tx.ExecContext(ctx, "INSERT INTO sessions (id, source, started_at) VALUES (?, ?, ?)", m.id, recoveredSource, m.start); err != nil {
			return nil, err
		}
		created = append(created, m.id)
	}
	return created, nil
}

// toolCallsSQL approximates what a message adds to tool_call_count (the
// length of an assistant row's tool_calls list), for the mismatch report.
const toolCallsSQL = `CASE WHEN role = 'tool' OR tool_calls IS NULL OR tool_calls IN ('', '[]', '{}', 'null', '""') THEN 0
	WHEN json_valid(tool_calls) AND json_type(tool_calls) = 'array' THEN json_array_length(tool_calls) ELSE 1 END`

// cleanup upgrades old data (upgradeData) and fixes orphans, in one
// transaction: placeholder sessions get their
// earliest message time and real counters; dangling parents and unknown
// prompt hashes are cleared; unreferenced prompts and usage and lock rows
// of missing sessions are deleted, as are rows of other tables whose
// foreign keys point to nothing. The AUTOINCREMENT counters are raised to
// the source's, so ids of lost rows are never handed out again.
func (r *recoverer) cleanup(ctx context.Context, tables []*copyTable) error {
	const op = "recover: clean up orphans"
	tx, err := r.conn.BeginTx(ctx, nil)
	if err != nil {
		return r.out.mapErr(op, err)
	}
	defer tx.Rollback()
	byName := map[string]*copyTable{}
	for _, t := range tables {
		byName[t.rep.Name] = t
	}
	if err := r.upgradeData(ctx, tx, byName); err != nil {
		return r.out.mapErr("recover: upgrade data from schema "+fmt.Sprint(r.rep.SourceSchemaVersion), err)
	}
	for _, id := range r.placeholder {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET
			started_at = COALESCE((SELECT MIN(timestamp) FROM messages WHERE session_id = ?1), started_at),
			message_count = (SELECT COUNT(*) FROM messages WHERE session_id = ?1),
			tool_call_count = (SELECT COALESCE(SUM(`+toolCallsSQL+`), 0) FROM messages WHERE session_id = ?1)
			WHERE id = ?1`, id); err != nil {
			return r.out.mapErr(op, err)
		}
	}
	r.rep.Cleanup.PlaceholderSessions = len(r.placeholder)
	if t := byName["sessions"]; t != nil {
		t.rep.Added += int64(len(r.placeholder))
	}
	for _, step := range []struct {
		table, stmt string
		count       *int64
		removes     bool
	}{
		{"sessions", "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IS NOT NULL AND parent_session_id NOT IN (SELECT id FROM sessions)", &r.rep.Cleanup.ParentsCleared, false},
		{"sessions", "UPDATE sessions SET system_prompt_hash = NULL WHERE system_prompt_hash IS NOT NULL AND system_prompt_hash NOT IN (SELECT hash FROM system_prompts)", &r.rep.Cleanup.PromptHashesCleared, false},
		{"system_prompts", "DELETE FROM system_prompts WHERE hash NOT IN (SELECT system_prompt_hash FROM sessions WHERE system_prompt_hash IS NOT NULL)", &r.rep.Cleanup.PromptsDeleted, true},
		{"session_model_usage", "DELETE FROM session_model_usage WHERE session_id NOT IN (SELECT id FROM sessions)", &r.rep.Cleanup.UsageDeleted, true},
		{"compression_locks", "DELETE FROM compression_locks WHERE session_id NOT IN (SELECT id FROM sessions)", &r.rep.Cleanup.LocksDeleted, true},
	} {
		res, err := tx.ExecContext(ctx, step.stmt)
		if err != nil {
			return r.out.mapErr(op, err)
		}
		n, _ := res.RowsAffected()
		*step.count += n
		if t := byName[step.table]; t != nil && step.removes {
			t.rep.Removed += n
		}
	}
	if err := r.deleteForeignOrphans(ctx, tx, byName); err != nil {
		return r.out.mapErr(op, err)
	}
	if err := r.raiseSequences(ctx, tx, byName); err != nil {
		return r.out.mapErr(op, err)
	}
	return r.out.mapErr(op, tx.Commit())
}

// upgradeData runs the version-gated data steps of migrate for a source
// older than SchemaVersion, whose rows now sit in a schema-30 file. Rows
// they add (usage seeded from sessions, prompts moved out of sessions)
// count as added. Delegate tagging (< 16) changes which messages the
// trigram index holds, so that index is rebuilt after it.
func (r *recoverer) upgradeData(ctx context.Context, tx *sql.Tx, byName map[string]*copyTable) error {
	v := r.rep.SourceSchemaVersion
	if v == 0 || v >= SchemaVersion {
		return nil
	}
	counted := []string{"system_prompts", "session_model_usage"}
	before := make([]int64, len(counted))
	for i, name := range counted {
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+name).Scan(&before[i]); err != nil {
			return err
		}
	}
	if err := dataMigrations(ctx, tx, v); err != nil {
		return err
	}
	if v < 16 {
		if _, err := tx.ExecContext(ctx, "INSERT INTO messages_fts_trigram(messages_fts_trigram) VALUES('rebuild')"); err != nil {
			return err
		}
	}
	for i, name := range counted {
		var n int64
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+name).Scan(&n); err != nil {
			return err
		}
		if t := byName[name]; t != nil {
			t.rep.Added += n - before[i]
		}
	}
	return nil
}

// deleteForeignOrphans deletes the rows of copied extra tables that
// foreign_key_check reports (Hermes deletes orphan topic bindings).
func (r *recoverer) deleteForeignOrphans(ctx context.Context, tx *sql.Tx, byName map[string]*copyTable) error {
	rows, err := tx.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return err
	}
	type orphan struct {
		table string
		rowid int64
	}
	var orphans []orphan
	for rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fkid int
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			rows.Close()
			return err
		}
		if t := byName[table]; t != nil && t.extra && rowid.Valid {
			orphans = append(orphans, orphan{table, rowid.Int64})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, o := range orphans {
		res, err := tx.ExecContext(ctx, "DELETE FROM "+quoteIdent(o.table)+" WHERE rowid = ?", o.rowid)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		byName[o.table].rep.Removed += n
		r.rep.Cleanup.OtherDeleted += n
	}
	return nil
}

// sourceSequences reads what it can of the source's sqlite_sequence.
func (r *recoverer) sourceSequences(ctx context.Context) map[string]int64 {
	seqs := map[string]int64{}
	rows, err := r.src.QueryContext(ctx, "SELECT name, seq FROM sqlite_sequence")
	if err != nil {
		return seqs // none, or unreadable: the copied ids are the floor
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var seq int64
		if rows.Scan(&name, &seq) == nil {
			seqs[name] = seq
		}
	}
	return seqs
}

// raiseSequences sets the output's AUTOINCREMENT counters to at least the
// source's.
func (r *recoverer) raiseSequences(ctx context.Context, tx *sql.Tx, byName map[string]*copyTable) error {
	for name, seq := range r.seqs {
		if byName[name] == nil {
			continue
		}
		res, err := tx.ExecContext(ctx, "UPDATE sqlite_sequence SET seq = ? WHERE name = ? AND seq < ?", seq, name, seq)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			continue
		}
		var ddl string
		if err := tx.QueryRowContext(ctx, "SELECT COALESCE(sql, '') FROM sqlite_master WHERE type = 'table' AND name = ?", name).Scan(&ddl); err != nil {
			continue
		}
		var exists int
		_ = tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_sequence WHERE name = ?", name).Scan(&exists)
		if exists == 0 && strings.Contains(strings.ToUpper(ddl), "AUTOINCREMENT") {
			if _, err := tx.ExecContext(ctx, "INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", name, seq); err != nil {
				return err
			}
		}
	}
	return nil
}

// finalise drops every generated fts_* key and stamps the layout version:
// the triggers indexed every message as it landed, so nothing is pending.
func (r *recoverer) finalise(ctx context.Context) error {
	const op = "recover: stamp search layout"
	tx, err := r.conn.BeginTx(ctx, nil)
	if err != nil {
		return r.out.mapErr(op, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM state_meta WHERE key LIKE 'fts\_%' ESCAPE '\' AND key <> ?`, keyStorage); err != nil {
		return r.out.mapErr(op, err)
	}
	if err := setMeta(ctx, tx, keyStorage, fmt.Sprint(FTSStorageVersion)); err != nil {
		return r.out.mapErr(op, err)
	}
	return r.out.mapErr(op, tx.Commit())
}

// countMismatches reports sessions whose stored message_count or
// tool_call_count disagree with the copied messages.
func (r *recoverer) countMismatches(ctx context.Context) error {
	rows, err := r.out.write.QueryContext(ctx, `SELECT s.id,
			COALESCE(s.message_count, 0) <> COALESCE(m.n, 0),
			COALESCE(s.tool_call_count, 0) <> COALESCE(m.calls, 0)
		FROM sessions s LEFT JOIN (
			SELECT session_id, COUNT(*) AS n, SUM(`+toolCallsSQL+`) AS calls FROM messages GROUP BY session_id
		) m ON m.session_id = s.id
		WHERE COALESCE(s.message_count, 0) <> COALESCE(m.n, 0) OR COALESCE(s.tool_call_count, 0) <> COALESCE(m.calls, 0)
		ORDER BY s.id`)
	if err != nil {
		return r.out.mapErr("recover: compare session counters", err)
	}
	defer rows.Close()
	c := &r.rep.Counters
	for rows.Next() {
		var id string
		var msgs, calls bool
		if err := rows.Scan(&id, &msgs, &calls); err != nil {
			return r.out.mapErr("recover: compare session counters", err)
		}
		if msgs {
			c.MessageCount++
		}
		if calls {
			c.ToolCallCount++
		}
		if len(c.Sessions) < 20 {
			c.Sessions = append(c.Sessions, id)
		}
	}
	return r.out.mapErr("recover: compare session counters", rows.Err())
}

// verify checks the output: integrity_check, foreign_key_check, schema
// version, search layout stamp, FTS5 integrity-check of every index (rank=1
// re-reads external content) and every table's row count against the
// source's count (against what was copied where rows were lost or refused).
// Failures are collected in Verify.Problems.
func (r *recoverer) verify(ctx context.Context) error {
	v := &r.rep.Verify
	q := r.out.write
	fail := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }
	op := "recover: verify the output"

	rows, err := q.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return r.out.mapErr(op, err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return r.out.mapErr(op, err)
		}
		v.IntegrityCheck = append(v.IntegrityCheck, s)
	}
	rows.Close()
	if len(v.IntegrityCheck) != 1 || v.IntegrityCheck[0] != "ok" {
		fail("integrity_check: %s", strings.Join(v.IntegrityCheck, "; "))
	}

	rows, err = q.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return r.out.mapErr(op, err)
	}
	for rows.Next() {
		v.ForeignKeyViolations++
	}
	rows.Close()
	if v.ForeignKeyViolations > 0 {
		fail("foreign_key_check: %d violations", v.ForeignKeyViolations)
	}

	if err := q.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&v.SchemaVersion); err != nil {
		return r.out.mapErr(op, err)
	}
	if v.SchemaVersion != SchemaVersion {
		fail("schema_version is %d, want %d", v.SchemaVersion, SchemaVersion)
	}
	v.FTSStorageVersion, _, err = r.out.Meta(ctx, keyStorage)
	if err != nil {
		return err
	}
	if v.FTSStorageVersion != fmt.Sprint(FTSStorageVersion) {
		fail("fts_storage_version is %q, want %d", v.FTSStorageVersion, FTSStorageVersion)
	}
	for _, k := range []string{keyHighWater, keyCJKHighWater, keyStale, keyCJKStale} {
		if _, ok, _ := r.out.Meta(ctx, k); ok {
			fail("search index marker %s is still set", k)
		}
	}

	objs, err := readSchema(ctx, q)
	if err != nil {
		return r.out.mapErr(op, err)
	}
	v.FTS = map[string]string{}
	for name, ddl := range objs {
		if !virtualTableRE.MatchString(ddl) {
			continue
		}
		check := fmt.Sprintf("INSERT INTO %[1]s(%[1]s) VALUES('integrity-check')", quoteIdent(name))
		if strings.Contains(ddl, "content=") {
			check = fmt.Sprintf("INSERT INTO %[1]s(%[1]s, rank) VALUES('integrity-check', 1)", quoteIdent(name))
		}
		v.FTS[name] = "ok"
		if _, err := q.ExecContext(ctx, check); err != nil {
			v.FTS[name] = err.Error()
			fail("search index %s: %v", name, err)
		}
	}
	for _, name := range []string{"messages_fts", "messages_fts_trigram"} {
		if _, ok := v.FTS[name]; !ok {
			fail("search index %s is missing", name)
		}
	}

	v.RowCountsMatch = true
	for _, t := range r.rep.Tables {
		if t.Status == RecoverAbsent || t.Status == RecoverUnavailable && !t.Created && t.Copied == 0 {
			if n, ok := r.outputRows(ctx, t.Name); ok {
				t.OutputRows = n
			}
			continue
		}
		n, ok := r.outputRows(ctx, t.Name)
		if !ok {
			v.RowCountsMatch = false
			fail("table %s: cannot count the output rows", t.Name)
			continue
		}
		t.OutputRows = n
		// A table read without a known loss must hold every row the source
		// counted: comparing with what was copied would call a copy that
		// stopped early complete. Where rows were lost or refused (reported
		// with their rowids), the copied rows are what the output holds.
		basis, base := "copied", t.Copied
		if t.SourceRows != nil && len(t.Lost) == 0 && len(t.Rejected) == 0 {
			basis, base = "the source counts", *t.SourceRows
		}
		if want := base + t.Added - t.Removed; n != want {
			v.RowCountsMatch = false
			fail("table %s holds %d rows, want %d (%s %d + added %d - removed %d)", t.Name, n, want, basis, base, t.Added, t.Removed)
		}
	}
	v.OK = len(v.Problems) == 0
	return nil
}

// outputRows counts a table of the output the way its source was counted
// (state_meta without the generated keys).
func (r *recoverer) outputRows(ctx context.Context, name string) (int64, bool) {
	q := "SELECT COUNT(*) FROM " + quoteIdent(name)
	var args []any
	if name == "state_meta" {
		var cond string
		cond, args = metaFilter()
		q += " WHERE " + cond
	}
	var n int64
	if err := r.out.write.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, false
	}
	return n, true
}
