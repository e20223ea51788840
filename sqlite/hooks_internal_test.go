package sqlite

import "testing"

// SetFreeBytes replaces the free-space probe until the test ends.
func SetFreeBytes(tb testing.TB, f func(dir string) (uint64, error)) {
	old := freeBytes
	freeBytes = f
	tb.Cleanup(func() { freeBytes = old })
}

// SetFTSMergeEvery sets how many writes pass between two bounded merges of
// the search indexes until the test ends.
func SetFTSMergeEvery(tb testing.TB, n int64) {
	old := ftsMergeEvery
	ftsMergeEvery = n
	tb.Cleanup(func() { ftsMergeEvery = old })
}

// SetBeginFault makes every BEGIN of a write fail with f's error (when it
// returns one) until the test ends.
func SetBeginFault(tb testing.TB, f func() error) {
	beginFault = f
	tb.Cleanup(func() { beginFault = nil })
}

// SetFSType replaces the filesystem-type probe until the test ends.
func SetFSType(tb testing.TB, f func(path string) string) {
	old := fsType
	fsType = f
	tb.Cleanup(func() { fsType = old })
}

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
	old := fsStat
	fsStat = func(string) (fsStats, error) { return fsStats{readOnly: readOnly, avail: avail}, nil }
	tb.Cleanup(func() { fsStat = old })
}
