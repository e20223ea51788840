package sqlite_test

import (
	"path/filepath"
	"strconv"
	"testing"
)

// TestOpenFillsSmallGapsOnly: Open indexes a gap of up to 50,000 message ids
// itself (autoBackfillRows) and leaves a larger one to `sessiondb init`,
// which reports progress.
func TestOpenFillsSmallGapsOnly(t *testing.T) {
	for _, c := range []struct {
		gap, left int64
	}{{50_000, 0}, {50_001, 50_001}} {
		path := filepath.Join(t.TempDir(), "state.db")
		MustOpenPath(t, path).Close()
		raw := rawDB(t, path)
		rawExec(t, raw, "INSERT INTO state_meta(key, value) VALUES ('fts_rebuild_high_water', ?), ('fts_rebuild_progress', '0')", strconv.FormatInt(c.gap, 10))
		db := MustOpenPath(t, path)
		if got, err := db.PendingBackfill(ctx); err != nil || got != c.left {
			t.Errorf("a gap of %d ids: %d left after Open (%v), want %d", c.gap, got, err, c.left)
		}
		db.Close()
	}
}
