package sqlite_test

import (
	"path/filepath"
	"reflect"
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

// TestBackfillProgress: Backfill reports, after each chunk of 500 ids,
// the ids covered so far of all its index families, up to the total.
func TestBackfillProgress(t *testing.T) {
	db := MustOpen(t)
	rawExec(t, rawDB(t, db.Path()), `INSERT INTO state_meta(key, value) VALUES ('fts_rebuild_high_water', '1200'), ('fts_rebuild_progress', '0'),
		('fts_cjk_rebuild_high_water', '300'), ('fts_cjk_rebuild_progress', '0')`)
	var got [][2]int64
	if err := db.Backfill(ctx, func(done, total int64) { got = append(got, [2]int64{done, total}) }); err != nil {
		t.Fatal(err)
	}
	if want := [][2]int64{{500, 1500}, {1000, 1500}, {1200, 1500}, {1500, 1500}}; !reflect.DeepEqual(got, want) {
		t.Errorf("progress = %v, want %v", got, want)
	}
	if n, err := db.PendingBackfill(ctx); err != nil || n != 0 {
		t.Errorf("pending after Backfill = %d, %v", n, err)
	}
}
