package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite"
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

// TestBackfillBulkMergePolicy: a rebuild of at least bulkFillRows ids (the
// word and trigram family's and the CJK family's, summed) raises FTS5's
// automerge (to 64) and crisismerge (to 128) on every index while it
// refills them, and when it ends, finished or cancelled, leaves each
// index's settings as Hermes has them (neither setting, usermerge 2); when
// it finished, it merged each index into one segment. A smaller rebuild
// leaves the settings and the segments (one per chunk of 500) alone.
func TestBackfillBulkMergePolicy(t *testing.T) {
	sqlite.SetBulkFillRows(t, 2000) // ids to index, summed over the two families
	settings := func(raw *sql.DB) string {
		return perIndex(t, raw, "SELECT COALESCE(group_concat(k || '=' || v, ' '), '') FROM (SELECT k, v FROM {t}_config WHERE k <> 'version' ORDER BY k)")
	}
	const bulk = "automerge=64 crisismerge=128; automerge=64 crisismerge=128; automerge=64 crisismerge=128"
	const restored = "usermerge=2; usermerge=2; usermerge=2"
	for _, c := range []struct {
		name     string
		rows     int
		cancel   bool
		segments string
	}{{"large", 1000, false, "1; 1; 1"}, {"large, cancelled", 1200, true, ""}, {"small", 999, false, "2; 2; 2"}} {
		t.Run(c.name, func(t *testing.T) {
			db := MustOpen(t)
			raw := rawDB(t, db.Path())
			rawExec(t, raw, "INSERT INTO sessions(id, source, started_at) VALUES ('s', 'cli', 1)")
			rawExec(t, raw, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
				INSERT INTO messages(session_id, role, content, timestamp) SELECT 's', 'user', 'alpha w' || i, i FROM n`, c.rows)
			before := settings(raw)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var during string
			err := db.RebuildFTS(ctx, func(done, total int64) {
				if during == "" {
					during = settings(raw)
				}
				if c.cancel {
					cancel()
				}
			})
			if (err != nil) != c.cancel {
				t.Fatalf("RebuildFTS: %v", err)
			}
			wantDuring, wantAfter := bulk, restored
			if 2*c.rows < 2000 {
				wantDuring, wantAfter = before, before
			}
			if during != wantDuring {
				t.Errorf("settings during the rebuild %q, want %q", during, wantDuring)
			}
			if got := settings(raw); got != wantAfter {
				t.Errorf("settings after the rebuild %q, want %q", got, wantAfter)
			}
			if c.cancel {
				return
			}
			if got := ftsSegments(t, raw); got != c.segments {
				t.Errorf("segments after the rebuild %q, want %q", got, c.segments)
			}
			want := strconv.Itoa(c.rows)
			if got := perIndex(t, raw, "SELECT count(*) FROM {t} WHERE {t} MATCH 'alpha'"); got != want+"; "+want+"; "+want {
				t.Errorf("rows found per index after the rebuild: %s, want %s each", got, want)
			}
		})
	}
}

// perIndex runs query on each full-text index ({t} stands for its name)
// and joins the answers with "; ".
func perIndex(tb testing.TB, raw *sql.DB, query string) string {
	tb.Helper()
	var all []string
	for _, tbl := range []string{"messages_fts", "messages_fts_trigram", "messages_fts_cjk"} {
		var s string
		if err := raw.QueryRow(strings.ReplaceAll(query, "{t}", tbl)).Scan(&s); err != nil {
			tb.Fatal(err)
		}
		all = append(all, s)
	}
	return strings.Join(all, "; ")
}

// ftsSegments returns each full-text index's number of segments: a
// segment's pages are %_data rows whose id holds its number above bit 37.
func ftsSegments(tb testing.TB, raw *sql.DB) string {
	tb.Helper()
	return perIndex(tb, raw, "SELECT count(DISTINCT id >> 37) FROM {t}_data WHERE id >= 1 << 37")
}
