package sqlite

import "testing"

// SetFreeBytes replaces the free-space probe until the test ends.
func SetFreeBytes(tb testing.TB, f func(dir string) (uint64, error)) {
	old := freeBytes
	freeBytes = f
	tb.Cleanup(func() { freeBytes = old })
}
