package sqlite

import (
	"testing"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// setUntilEnd sets *p to v and puts the old value back when the test ends.
func setUntilEnd[T any](tb testing.TB, p *T, v T) {
	old := *p
	*p = v
	tb.Cleanup(func() { *p = old })
}

// SetFreeBytes replaces the free-space probe until the test ends.
func SetFreeBytes(tb testing.TB, f func(dir string) (uint64, error)) { setUntilEnd(tb, &freeBytes, f) }

// SetFTSMergeEvery sets how many writes pass between two bounded merges of
// the search indexes until the test ends.
func SetFTSMergeEvery(tb testing.TB, n int64) { setUntilEnd(tb, &ftsMergeEvery, n) }

// SetFTSMergePages sets how many pages a 'merge' command writes at most
// until the test ends.
func SetFTSMergePages(tb testing.TB, n int) { setUntilEnd(tb, &ftsMergePages, n) }

// SetBulkFillRows sets the smallest backfill that runs under the bulk merge
// policy until the test ends.
func SetBulkFillRows(tb testing.TB, n int64) { setUntilEnd(tb, &bulkFillRows, n) }

// SetBeginFault makes every BEGIN of a write fail with f's error (when it
// returns one) until the test ends.
func SetBeginFault(tb testing.TB, f func() error) {
	beginFault = f
	tb.Cleanup(func() { beginFault = nil })
}

// SetRankRefreshHook makes f run between a term summary's refresh
// computing it and writing it (nil: none) until the test ends.
func SetRankRefreshHook(tb testing.TB, f func(term string)) { setUntilEnd(tb, &rankRefreshHook, f) }

// SetFSType replaces the filesystem-type probe until the test ends.
func SetFSType(tb testing.TB, f func(path string) string) { setUntilEnd(tb, &fsType, f) }

// SetSearchHook makes f see every search statement before it runs (nil:
// none) until the test ends.
func SetSearchHook(tb testing.TB, f func(stmt string, args []any)) {
	if f == nil {
		searchHook = nil
	} else {
		searchHook = func(_ querier, stmt string, args []any) { f(stmt, args) }
	}
	tb.Cleanup(func() { searchHook = nil })
}

// SetFileSystem makes Diagnose see the file system holding the database as
// read-only or not, with avail bytes free, until the test ends.
func SetFileSystem(tb testing.TB, readOnly bool, avail uint64) {
	setUntilEnd(tb, &fsStat, func(string) (fsStats, error) { return fsStats{readOnly: readOnly, avail: avail}, nil })
}

// WriterPragma returns PRAGMA name as the store's writer connection reports
// it (the writer pool holds exactly one connection).
func WriterPragma(tb testing.TB, db *DB, name string) string {
	tb.Helper()
	var v string
	if err := db.write.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		tb.Fatalf("writer PRAGMA %s: %v", name, err)
	}
	return v
}

// ReaderPragma returns PRAGMA name as a connection of the store's read pool
// reports it.
func ReaderPragma(tb testing.TB, db *DB, name string) string {
	tb.Helper()
	var v string
	if err := db.read.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		tb.Fatalf("reader PRAGMA %s: %v", name, err)
	}
	return v
}

// ReaderExec runs stmt on a connection of the store's read pool.
func ReaderExec(db *DB, stmt string) error {
	_, err := db.read.Exec(stmt)
	return err
}

// SetRecoverDropChunk makes Recover skip, silently, every chunk of the
// tables for which drop returns true, until the test ends.
func SetRecoverDropChunk(tb testing.TB, drop func(table string) bool) {
	recoverDropChunk = drop
	tb.Cleanup(func() { recoverDropChunk = nil })
}

// SetRankSummaryScale makes term summaries on small files until the test
// ends: every term in minDocs rows or more (and in at most half of them),
// in ranges of rows rows.
func SetRankSummaryScale(tb testing.TB, minDocs int64, rows int) {
	setUntilEnd(tb, &rankMinDocs, minDocs)
	setUntilEnd(tb, &rankMinShare, 1<<62)
	setUntilEnd(tb, &rankRangeRows, rows)
	old := fts5cjk.SetRangeReadCost(0) // small tables: a summary always answers
	tb.Cleanup(func() { fts5cjk.SetRangeReadCost(old) })
}
