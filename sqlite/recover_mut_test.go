package sqlite_test

import (
	"cmp"
	"database/sql"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// The tests of this file pin what Recover's user sees at the edges its other
// tests do not reach (TESTING.md: recover.go's mutation survivors).

// smallSource returns a store file with one session and one message, closed.
func smallSource(tb testing.TB) string {
	tb.Helper()
	src := filepath.Join(tb.TempDir(), "state.db")
	db, err := sqlite.Open(src, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "hello"}); err != nil {
		tb.Fatal(err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	return src
}

// TestRecoverClock: the report's duration is measured with the given clock,
// from before the copy to after the verification; without one Recover uses
// the system clock.
func TestRecoverClock(t *testing.T) {
	src := smallSource(t)
	t.Run("given clock", func(t *testing.T) {
		calls := 0
		opts := sqlite.RecoverOptions{Now: func() time.Time {
			calls++
			if calls == 1 {
				return fixedNow
			}
			return fixedNow.Add(90 * time.Second)
		}}
		rep, err := sqlite.Recover(ctx, src, filepath.Join(t.TempDir(), "new.db"), opts)
		if err != nil {
			t.Fatalf("recover: %v", err)
		}
		if rep.DurationSeconds != 90 {
			t.Errorf("duration %v s, want the clock's 90", rep.DurationSeconds)
		}
	})
	t.Run("no clock", func(t *testing.T) {
		rep, err := sqlite.Recover(ctx, src, filepath.Join(t.TempDir(), "new.db"), sqlite.RecoverOptions{})
		if err != nil {
			t.Fatalf("recover: %v", err)
		}
		if !rep.Complete || rep.DurationSeconds < 0 {
			t.Errorf("complete=%v duration %v s", rep.Complete, rep.DurationSeconds)
		}
	})
}

// TestRecoverRefusesAliasesOfTheSource: an output path that names one of
// the source's files by another route (a symlinked directory, a hard link)
// is refused as the source, and nothing is written.
func TestRecoverRefusesAliasesOfTheSource(t *testing.T) {
	src := fixture(t, "hermes-v23.db")
	srcDir := filepath.Dir(src)
	before := bundleHash(t, src)
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(srcDir, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.db")
	if err := os.Link(src, hard); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dst string }{
		{"the source's WAL through a symlinked directory", filepath.Join(link, "state.db-wal")},
		{"the source's journal through a symlinked directory", filepath.Join(link, "state.db-journal")},
		{"a hard link to the source", hard},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := sqlite.Recover(ctx, src, tc.dst, recoverOpts)
			if err == nil {
				t.Fatalf("recover succeeded: %+v", rep)
			}
			if got := sessiondb.ErrorCode(err); got != sessiondb.EINVALID || !strings.Contains(err.Error(), "is the source or one of its files") {
				t.Errorf("code %s, want %s (the output is the source): %v", got, sessiondb.EINVALID, err)
			}
		})
	}
	if bundleHash(t, src) != before {
		t.Error("the source bundle changed")
	}
	noLeftovers(t, srcDir, "state.db")
	noLeftovers(t, dir, "link", "hard.db")
}

// TestRecoverFreeSpaceBoundary: a recovery needs twice the source bundle's
// size free (the private copy and the new file); exactly that much is
// enough, a byte less is refused with both figures in MiB.
func TestRecoverFreeSpaceBoundary(t *testing.T) {
	src := fixture(t, "hermes-v23.db")
	var size int64
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if fi, err := os.Stat(src + suffix); err == nil {
			size += fi.Size()
		}
	}
	need := uint64(2 * size)
	if need < 1<<20 {
		t.Fatalf("the source bundle holds %d bytes: too small for the MiB figures to say anything", size)
	}
	for _, tc := range []struct {
		name string
		free uint64
		ok   bool
	}{
		{"exactly enough", need, true},
		{"one byte short", need - 1, false},
		{"half a MiB free", 1 << 19, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sqlite.SetFreeBytes(t, func(string) (uint64, error) { return tc.free, nil })
			rep, err := sqlite.Recover(ctx, src, filepath.Join(t.TempDir(), "new.db"), recoverOpts)
			if tc.ok {
				if err != nil || !rep.Complete {
					t.Fatalf("recover with %d bytes free for %d needed: %v", tc.free, need, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("recover with %d bytes free for %d needed succeeded", tc.free, need)
			}
			msg := err.Error()
			wantNeed := fmt.Sprintf("needs about %.1f MiB", float64(need)/(1<<20))
			wantFree := fmt.Sprintf(", %.1f MiB are free", float64(tc.free)/(1<<20))
			if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(msg, wantNeed) || !strings.Contains(msg, wantFree) {
				t.Errorf("error %q (code %s), want EINVALID with %q and %q", msg, sessiondb.ErrorCode(err), wantNeed, wantFree)
			}
		})
	}
}

// TestRecoverUnreadableSidecar: a sidecar of the source that cannot be
// copied (here a directory where the journal would be) fails the recovery;
// skipping it could recover a half-written transaction.
func TestRecoverUnreadableSidecar(t *testing.T) {
	src := smallSource(t)
	if err := os.Mkdir(src+"-journal", 0o700); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rep, err := sqlite.Recover(ctx, src, filepath.Join(dir, "new.db"), recoverOpts)
	if err == nil {
		t.Fatalf("recover succeeded: %+v", rep)
	}
	if got := sessiondb.ErrorCode(err); got != sessiondb.EINVALID || !strings.Contains(err.Error(), "copy "+src+"-journal") {
		t.Errorf("code %s: %v; want EINVALID naming the journal", got, err)
	}
	noLeftovers(t, dir)
}

// TestRecoverSkipsOtherVirtualTables: a virtual table of another
// application is not copied (its module may be missing), and neither are
// its shadow tables, which would come out as plain tables with nothing to
// read them.
func TestRecoverSkipsOtherVirtualTables(t *testing.T) {
	src := smallSource(t)
	withRawDB(t, src, func(db *sql.DB) {
		rawExec(t, db, "CREATE VIRTUAL TABLE notes_fts USING fts5(body)")
		rawExec(t, db, "INSERT INTO notes_fts (body) VALUES ('a note')")
	})
	rep, out := recoverWith(t, src, recoverOpts)
	if !rep.Complete {
		t.Fatalf("recover: incomplete: %+v", rep)
	}
	for _, tb := range rep.Tables {
		if strings.HasPrefix(tb.Name, "notes_fts") {
			t.Errorf("table %s was copied (%s)", tb.Name, tb.Status)
		}
	}
	if got := count(t, rawDB(t, out), "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'notes%'"); got != 0 {
		t.Errorf("the output holds %d objects of the notes index", got)
	}
}

// TestRecoverUnreadableTableDefinition: a table whose schema entry SQLite
// cannot parse has no columns to copy. Recover fails naming it, or with
// AllowPartial reports it unavailable and copies the rest.
func TestRecoverUnreadableTableDefinition(t *testing.T) {
	src := smallSource(t)
	withRawDB(t, src, func(db *sql.DB) {
		rawExec(t, db, deliveryDDL)
		rawExec(t, db, "INSERT INTO compression_locks (session_id, holder, acquired_at, expires_at) VALUES ('s', 'pid=1', 1, 2)")
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, q := range []string{"PRAGMA writable_schema=ON",
			"UPDATE sqlite_master SET sql = 'CREATE TABLE ' || name || '(' WHERE name IN ('compression_locks', 'delivery_obligations')"} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	})
	t.Run("strict", func(t *testing.T) { strictRefuses(t, src, `read the columns of table "compression_locks"`) })
	t.Run("allow partial", func(t *testing.T) {
		rep, out := recoverPartial(t, src)
		if rep.Complete || !rep.Verify.OK {
			t.Errorf("complete=%v verify=%+v; want incomplete and verified", rep.Complete, rep.Verify)
		}
		for _, name := range []string{"compression_locks", "delivery_obligations"} {
			tb := reportTable(t, rep, name)
			if tb.Status != sqlite.RecoverUnavailable || !strings.Contains(tb.Note, "columns unreadable") {
				t.Errorf("%s: %s (%q), want unavailable: columns unreadable", name, tb.Status, tb.Note)
			}
		}
		if got := count(t, rawDB(t, out), "SELECT COUNT(*) FROM messages"); got != 1 {
			t.Errorf("%d messages, want 1", got)
		}
	})
}

// TestRecoverNullInDefaultedColumn: a NULL in a column the output declares
// NOT NULL with a default (a source that declared it nullable) is copied as
// that default, not refused.
func TestRecoverNullInDefaultedColumn(t *testing.T) {
	src := smallSource(t)
	withRawDB(t, src, func(db *sql.DB) {
		rawExec(t, db, "DROP TABLE session_model_usage")
		rawExec(t, db, "CREATE TABLE session_model_usage (session_id TEXT, model TEXT, api_call_count INTEGER, input_tokens INTEGER, PRIMARY KEY (session_id, model))")
		rawExec(t, db, "INSERT INTO session_model_usage VALUES ('s', 'm', NULL, 5)")
	})
	rep, out := recoverWith(t, src, recoverOpts)
	if !rep.Complete {
		t.Fatalf("recover: incomplete: %+v", rep)
	}
	var calls, input int
	if err := rawDB(t, out).QueryRow("SELECT api_call_count, input_tokens FROM session_model_usage WHERE session_id = 's' AND model = 'm'").Scan(&calls, &input); err != nil {
		t.Fatal(err)
	}
	if calls != 0 || input != 5 {
		t.Errorf("api_call_count %d, input_tokens %d; want the default 0 and the copied 5", calls, input)
	}
}

// TestRecoverTitleMatchingOtherValues: only a session's title is compared
// with the titles already copied; a value of another table that happens to
// equal a title (here a message's session id) leaves it alone.
func TestRecoverTitleMatchingOtherValues(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, src)
	for _, id := range []string{"alpha", "beta"} {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "beta", Role: "user", Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	withRawDB(t, src, func(raw *sql.DB) {
		rawExec(t, raw, "UPDATE sessions SET title = 'beta' WHERE id = 'alpha'")
		rawExec(t, raw, "INSERT INTO state_meta (key, value) VALUES ('loop:x', 'beta')")
	})
	rep, out := recoverWith(t, src, recoverOpts)
	if rep.Cleanup.TitlesCleared != 0 {
		t.Errorf("titles cleared = %d, want 0", rep.Cleanup.TitlesCleared)
	}
	if got := count(t, rawDB(t, out), "SELECT COUNT(*) FROM sessions WHERE id = 'alpha' AND title = 'beta'"); got != 1 {
		t.Error("session alpha lost its title")
	}
}

// TestRecoverDuplicateKeyRefused: rows of a source table that break a key
// the output declares (a file whose table lacked it) are refused, never
// replaced: the strict recovery fails naming the row, the partial one
// keeps the first and reports the second.
func TestRecoverDuplicateKeyRefused(t *testing.T) {
	src := smallSource(t)
	withRawDB(t, src, func(db *sql.DB) {
		rawExec(t, db, "DROP TABLE compression_locks")
		rawExec(t, db, "CREATE TABLE compression_locks (session_id TEXT, holder TEXT NOT NULL, acquired_at REAL NOT NULL, expires_at REAL NOT NULL)")
		rawExec(t, db, "INSERT INTO compression_locks VALUES ('s', 'first', 1, 2), ('s', 'second', 3, 4)")
	})
	t.Run("strict", func(t *testing.T) {
		strictRefuses(t, src, `table "compression_locks" rowid 2 holds a value the output refuses`)
	})
	t.Run("allow partial", func(t *testing.T) {
		rep, out := recoverPartial(t, src)
		tb := reportTable(t, rep, "compression_locks")
		if tb.Status != sqlite.RecoverPartial || tb.Copied != 1 || len(tb.Rejected) != 1 || tb.Rejected[0] != 2 {
			t.Errorf("compression_locks: %s, copied %d, rejected %v; want partial, 1, [2]", tb.Status, tb.Copied, tb.Rejected)
		}
		var holder string
		if err := rawDB(t, out).QueryRow("SELECT holder FROM compression_locks WHERE session_id = 's'").Scan(&holder); err != nil || holder != "first" {
			t.Errorf("holder %q (%v), want the first row's", holder, err)
		}
	})
}

// TestRecoverWithoutRowidTable: a WITHOUT ROWID table (no rowid ranges to
// read by) is copied whole in one pass.
func TestRecoverWithoutRowidTable(t *testing.T) {
	src := smallSource(t)
	withRawDB(t, src, func(db *sql.DB) {
		rawExec(t, db, "CREATE TABLE plugin_kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID")
		rawExec(t, db, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 2499)
			INSERT INTO plugin_kv SELECT printf('key%04d', i), i FROM n`)
	})
	rep, out := recoverWith(t, src, recoverOpts)
	if !rep.Complete {
		t.Fatalf("recover: incomplete: %+v", rep)
	}
	if tb := reportTable(t, rep, "plugin_kv"); !tb.Created || tb.Copied != 2500 || tb.Status != sqlite.RecoverComplete {
		t.Errorf("plugin_kv: created %v, copied %d, %s", tb.Created, tb.Copied, tb.Status)
	}
	o := rawDB(t, out)
	if got := count(t, o, "SELECT COUNT(*) FROM plugin_kv WHERE v = CAST(substr(k, 4) AS INTEGER)"); got != 2500 {
		t.Errorf("%d of 2500 rows copied intact", got)
	}
	if got := count(t, o, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'plugin_kv' AND sql LIKE '%WITHOUT ROWID'"); got != 1 {
		t.Error("plugin_kv is not a WITHOUT ROWID table in the output")
	}
}

// TestRecoverBoundsFromAnIndex: when a table's first page is unreadable,
// its smallest rowid is read from one of its indexes, so the lost range
// starts at the table's first row, not at rowid 1.
func TestRecoverBoundsFromAnIndex(t *testing.T) {
	base := upgradedFixture(t, "hermes-v23.db")
	var first int64
	withRawDB(t, base, func(db *sql.DB) {
		rawExec(t, db, "DELETE FROM messages WHERE id <= 20")
		if err := db.QueryRow("SELECT MIN(id) FROM messages").Scan(&first); err != nil {
			t.Fatal(err)
		}
	})
	leaves := leafRowids(t, base, "messages")
	page := 0
	for pg, ids := range leaves {
		if slices.Contains(ids, first) {
			page = pg
		}
	}
	if page == 0 || first <= 1 {
		t.Fatalf("no leaf page holds the first message %d", first)
	}
	src := filepath.Join(t.TempDir(), "broken.db")
	copyDBFile(t, base, src)
	zeroPage(t, src, page)

	rep, _ := recoverPartial(t, src)
	mt := reportTable(t, rep, "messages")
	if len(mt.Lost) == 0 || mt.Lost[0].From != first || mt.Lost[0].To < slices.Max(leaves[page]) {
		t.Errorf("lost ranges %v; want the first from rowid %d to at least %d", mt.Lost, first, slices.Max(leaves[page]))
	}
}

// notesSource returns a store file with an extra table notes (no index,
// no AUTOINCREMENT) of rows rows, ids 1 to rows, each with a body of about
// 2*size bytes, and the rowids of its leaf pages, the pages in rowid order.
func notesSource(tb testing.TB, rows, size int) (path string, leaves map[int][]int64, pages []int) {
	tb.Helper()
	path = smallSource(tb)
	withRawDB(tb, path, func(db *sql.DB) {
		rawExec(tb, db, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
		rawExec(tb, db, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "+
			"INSERT INTO notes SELECT i, hex(zeroblob(?)) || i FROM n", rows, size)
	})
	leaves = leafRowids(tb, path, "notes")
	pages = slices.Collect(maps.Keys(leaves))
	slices.SortFunc(pages, func(a, b int) int { return cmp.Compare(slices.Min(leaves[a]), slices.Min(leaves[b])) })
	return path, leaves, pages
}

// damagedTail returns a source whose extra table notes (no index, no
// AUTOINCREMENT, so nothing but its last page knows its largest rowid) has
// a middle leaf page and its last leaf page zeroed, and the rowids of the
// two pages.
func damagedTail(tb testing.TB, rows int) (src string, middle, last []int64) {
	tb.Helper()
	base, leaves, pages := notesSource(tb, rows, 200)
	if len(pages) < 8 {
		tb.Fatalf("notes spans %d leaf pages, want at least 8", len(pages))
	}
	mid, end := pages[len(pages)/2], pages[len(pages)-1]
	src = filepath.Join(tb.TempDir(), "broken.db")
	copyDBFile(tb, base, src)
	zeroPage(tb, src, mid)
	zeroPage(tb, src, end)
	return src, leaves[mid], leaves[end]
}

// TestRecoverDamagedTail: when a table's largest rowid cannot be read,
// recover seeks past a damaged page in growing steps, copies every row
// after it up to the next damage, and records the unreadable end of the
// table as lost up to the largest possible rowid.
func TestRecoverDamagedTail(t *testing.T) {
	const rows = 600
	src, middle, last := damagedTail(t, rows)
	t.Run("strict", func(t *testing.T) { strictRefuses(t, src, `count the rows of table "notes"`) })
	t.Run("allow partial", func(t *testing.T) {
		rep, out := recoverPartial(t, src)
		nt := reportTable(t, rep, "notes")
		// Every read counts against the budget: the 63 seeks past the
		// unreadable end (steps 1, 2, 4, … 2^62), at least one past the
		// middle page, and the single-row read of each row lost there.
		if least := 63 + 1 + len(middle); rep.RangeQueries < least {
			t.Errorf("%d range queries, want at least %d", rep.RangeQueries, least)
		}
		wantLost := []sqlite.RowidRange{{From: slices.Min(middle), To: slices.Max(middle)}, {From: slices.Min(last), To: math.MaxInt64}}
		if !slices.Equal(nt.Lost, wantLost) {
			t.Errorf("lost ranges %v, want %v", nt.Lost, wantLost)
		}
		var want []int64
		for id := int64(1); id <= rows; id++ {
			if !slices.Contains(middle, id) && !slices.Contains(last, id) {
				want = append(want, id)
			}
		}
		if got := noteIDs(t, out); !slices.Equal(got, want) {
			t.Errorf("copied rowids %v,\nwant every rowid of 1..%d but those of the two damaged pages %v", got, rows, want)
		}
		if nt.Copied != int64(len(want)) || nt.Status != sqlite.RecoverPartial {
			t.Errorf("notes: %s, copied %d; want partial with %d copied", nt.Status, nt.Copied, len(want))
		}
	})
}

// TestRecoverQueryBudget: a source with more unreadable rows than the
// recovery's 10,000 range queries can bisect stops at exactly that budget
// and records every rowid it did not copy as lost: no row is both copied
// and lost, none is neither, and no unreadable row is copied.
func TestRecoverQueryBudget(t *testing.T) {
	const rows = 24_000
	base, leaves, pages := notesSource(t, rows, 24)
	src := filepath.Join(t.TempDir(), "broken.db")
	copyDBFile(t, base, src)
	unreadable := map[int64]bool{}
	for i := 1; i < len(pages)-1; i += 2 {
		zeroPage(t, src, pages[i])
		for _, id := range leaves[pages[i]] {
			unreadable[id] = true
		}
	}
	if len(unreadable) <= 10_000 {
		t.Fatalf("%d unreadable rows, want more than the budget", len(unreadable))
	}

	rep, out := recoverPartial(t, src)
	if rep.RangeQueries != 10_000 {
		t.Errorf("%d range queries, want the budget of 10000", rep.RangeQueries)
	}
	nt := reportTable(t, rep, "notes")
	lost := func(id int64) bool {
		for _, r := range nt.Lost {
			if r.From <= id && id <= r.To {
				return true
			}
		}
		return false
	}
	copied := map[int64]bool{}
	for _, id := range noteIDs(t, out) {
		copied[id] = true
	}
	lostReadable := 0
	for id := int64(1); id <= rows; id++ {
		switch {
		case copied[id] && unreadable[id]:
			t.Fatalf("rowid %d copied from a zeroed page", id)
		case copied[id] == lost(id):
			t.Fatalf("rowid %d: copied %v, in a lost range %v", id, copied[id], lost(id))
		case lost(id) && !unreadable[id]:
			lostReadable++
		}
	}
	if lostReadable == 0 {
		t.Errorf("every readable row was copied; want the budget to run out before the end of the table")
	}
	if nt.Copied != int64(len(copied)) {
		t.Errorf("report says %d copied, output holds %d", nt.Copied, len(copied))
	}
}

// indexLeaves walks the b-tree of a WITHOUT ROWID table (an index b-tree,
// whose interior pages hold rows too) and returns its leaf pages in key
// order, each with the number of rows that come before it.
func indexLeaves(tb testing.TB, path, table string) (pages []int, before map[int]int) {
	tb.Helper()
	var root int
	withRawDB(tb, path, func(db *sql.DB) {
		if err := db.QueryRow("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(&root); err != nil {
			tb.Fatal(err)
		}
	})
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	ps := int(binary.BigEndian.Uint16(data[16:18]))
	before = map[int]int{}
	seen := 0
	var walk func(pg int)
	walk = func(pg int) {
		off := (pg - 1) * ps
		n := int(binary.BigEndian.Uint16(data[off+3:]))
		switch data[off] {
		case 0x02: // interior index page: each cell's child, then the cell's row
			for i := range n {
				cell := off + int(binary.BigEndian.Uint16(data[off+12+2*i:]))
				walk(int(binary.BigEndian.Uint32(data[cell:])))
				seen++
			}
			walk(int(binary.BigEndian.Uint32(data[off+8:])))
		case 0x0a: // leaf index page
			pages = append(pages, pg)
			before[pg] = seen
			seen += n
		default:
			tb.Fatalf("page %d: type %#x is not an index b-tree page", pg, data[off])
		}
	}
	walk(root)
	return pages, before
}

// TestRecoverDamagedWithoutRowidTable: a WITHOUT ROWID table whose pages
// cannot all be read fails a strict recovery; with AllowPartial the rows
// before the damage are copied and the note says how many.
func TestRecoverDamagedWithoutRowidTable(t *testing.T) {
	const rows = 2500
	base := smallSource(t)
	withRawDB(t, base, func(db *sql.DB) {
		rawExec(t, db, "CREATE TABLE plugin_kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID")
		rawExec(t, db, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
			INSERT INTO plugin_kv SELECT printf('key%04d', i), hex(zeroblob(50)) FROM n`, rows)
	})
	pages, before := indexLeaves(t, base, "plugin_kv")
	if len(pages) < 8 {
		t.Fatalf("plugin_kv spans %d leaf pages, want at least 8", len(pages))
	}
	damaged := pages[len(pages)/2]
	kept := before[damaged]
	src := filepath.Join(t.TempDir(), "broken.db")
	copyDBFile(t, base, src)
	zeroPage(t, src, damaged)

	t.Run("strict", func(t *testing.T) { strictRefuses(t, src, `"plugin_kv"`) })
	t.Run("allow partial", func(t *testing.T) {
		rep, out := recoverPartial(t, src)
		tb := reportTable(t, rep, "plugin_kv")
		if tb.Status != sqlite.RecoverPartial || tb.Copied != int64(kept) {
			t.Errorf("plugin_kv: %s, copied %d; want partial with the %d rows before the damaged page", tb.Status, tb.Copied, kept)
		}
		if want := fmt.Sprintf("reading stopped after %d rows", kept); !strings.Contains(tb.Note, want) {
			t.Errorf("note %q, want it to say %q", tb.Note, want)
		}
		o := rawDB(t, out)
		if got := count(t, o, "SELECT COUNT(*) FROM plugin_kv WHERE k < printf('key%04d', ?)", kept); got != kept {
			t.Errorf("%d of the first %d keys copied", got, kept)
		}
		if got := count(t, o, "SELECT COUNT(*) FROM plugin_kv"); got != kept {
			t.Errorf("%d rows in the output, want %d", got, kept)
		}
	})
}

// TestRecoverKeepsSequences: the output's AUTOINCREMENT counters are the
// source's, also past the last copied row (its newest messages deleted)
// and for tables whose rows were all deleted, so no id is handed out
// twice.
func TestRecoverKeepsSequences(t *testing.T) {
	src := smallSource(t)
	db, err := sqlite.Open(src, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: fmt.Sprint("more ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	withRawDB(t, src, func(db *sql.DB) {
		rawExec(t, db, "DELETE FROM messages WHERE id > 3")
		for _, name := range []string{"jobs", "tasks"} {
			rawExec(t, db, "CREATE TABLE "+name+" (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT)")
			rawExec(t, db, "INSERT INTO "+name+" (name) VALUES ('a'), ('b'), ('c')")
			rawExec(t, db, "DELETE FROM "+name)
		}
	})
	want := map[string]int{}
	withRawDB(t, src, func(db *sql.DB) {
		for _, name := range []string{"messages", "jobs", "tasks"} {
			want[name] = count(t, db, "SELECT seq FROM sqlite_sequence WHERE name = ?", name)
		}
	})
	if want["messages"] != 6 || want["jobs"] != 3 || want["tasks"] != 3 {
		t.Fatalf("source sequences %v, want messages 6, jobs and tasks 3", want)
	}
	out := filepath.Join(t.TempDir(), "new.db")
	if _, err := sqlite.Recover(ctx, src, out, recoverOpts); err != nil {
		t.Fatalf("recover: %v", err)
	}
	o := rawDB(t, out)
	for name, seq := range want {
		if got := count(t, o, "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?), -1)", name); got != seq {
			t.Errorf("%s: sequence %d in the output, want the source's %d", name, got, seq)
		}
	}
}

// TestRecoverForeignOrphansInExtraTable: a row of a copied extra table
// whose foreign key points at a session that is not there is deleted by
// the cleanup (as Hermes deletes orphan bindings) and counted; its
// neighbour that points at a real session stays.
func TestRecoverForeignOrphansInExtraTable(t *testing.T) {
	src := smallSource(t)
	withRawDB(t, src, func(db *sql.DB) {
		rawExec(t, db, "CREATE TABLE bindings (id INTEGER PRIMARY KEY, session_id TEXT REFERENCES sessions(id), note TEXT)")
		rawExec(t, db, "INSERT INTO bindings (id, session_id, note) VALUES (1, 's', 'kept'), (2, 'gone', 'orphan'), (3, 's', 'kept too')")
	})
	rep, out := recoverWith(t, src, recoverOpts)
	tb := reportTable(t, rep, "bindings")
	if tb.Copied != 3 || tb.Removed != 1 || tb.OutputRows != 2 || rep.Cleanup.OtherDeleted != 1 {
		t.Errorf("bindings: copied %d, removed %d, output %d, cleanup deleted %d; want 3, 1, 2, 1", tb.Copied, tb.Removed, tb.OutputRows, rep.Cleanup.OtherDeleted)
	}
	if got := count(t, rawDB(t, out), "SELECT COUNT(*) FROM bindings WHERE note LIKE 'kept%' AND id IN (1, 3)"); got != 2 {
		t.Errorf("%d of the 2 bound rows kept", got)
	}
}

// TestRecoverRefusedRowWithoutRowid: a WITHOUT ROWID table's row that the
// output refuses (its CHECK, which the source ignored) is named by its
// place in the table (the table has no rowids): strict recovery fails
// naming it; with AllowPartial it is reported as rejected (rowid -1) and
// every other row copied.
func TestRecoverRefusedRowWithoutRowid(t *testing.T) {
	const rows, bad = 1500, 1203
	src := smallSource(t)
	withRawDB(t, src, func(db *sql.DB) {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, q := range []string{
			"CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER CHECK (v >= 0)) WITHOUT ROWID",
			"PRAGMA ignore_check_constraints = ON",
			fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
				INSERT INTO kv SELECT printf('key%%05d', i), CASE WHEN i = %d THEN -1 ELSE i END FROM n`, rows, bad),
		} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	})
	t.Run("strict", func(t *testing.T) {
		strictRefuses(t, src, fmt.Sprintf(`table "kv" row %d holds a value the output refuses`, bad))
	})
	t.Run("allow partial", func(t *testing.T) {
		rep, out := recoverPartial(t, src)
		tb := reportTable(t, rep, "kv")
		if tb.Copied != rows-1 || !slices.Equal(tb.Rejected, []int64{-1}) {
			t.Errorf("kv: copied %d, rejected %v; want %d and [-1]", tb.Copied, tb.Rejected, rows-1)
		}
		if got := count(t, rawDB(t, out), "SELECT COUNT(*) FROM kv WHERE v >= 0"); got != rows-1 {
			t.Errorf("%d rows in the output, want %d", got, rows-1)
		}
	})
}

// strictRefuses checks that a recovery of src without AllowPartial fails
// with ECORRUPT saying want, and leaves nothing behind.
func strictRefuses(t *testing.T, src, want string) {
	t.Helper()
	dir := t.TempDir()
	_, err := sqlite.Recover(ctx, src, filepath.Join(dir, "new.db"), recoverOpts)
	if got := sessiondb.ErrorCode(err); got != sessiondb.ECORRUPT || !strings.Contains(err.Error(), want) {
		t.Errorf("code %s: %v; want ECORRUPT saying %q", got, err, want)
	}
	noLeftovers(t, dir)
}

// recoverWith recovers src with opts into a new file and returns the
// report and the file's path; an error fails the test.
func recoverWith(t *testing.T, src string, opts sqlite.RecoverOptions) (*sqlite.RecoverReport, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "new.db")
	rep, err := sqlite.Recover(ctx, src, out, opts)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	return rep, out
}

// recoverPartial is recoverWith with AllowPartial.
func recoverPartial(t *testing.T, src string) (*sqlite.RecoverReport, string) {
	t.Helper()
	opts := recoverOpts
	opts.AllowPartial = true
	return recoverWith(t, src, opts)
}

// noteIDs returns the ids of the notes table in the file at path, in order.
func noteIDs(t *testing.T, path string) []int64 {
	t.Helper()
	rs, err := rawDB(t, path).Query("SELECT id FROM notes ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var ids []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}
