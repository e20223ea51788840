package sqlite_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

func seed(tb testing.TB, db *sqlite.DB, n int) {
	tb.Helper()
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		content := "docker deployment step " + strings.Repeat("x", i%7)
		if i%5 == 0 {
			content = "项目通信 东京の天気 " + content
		}
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: content}); err != nil {
			tb.Fatal(err)
		}
	}
}

func TestOptimizeStorageConvertsLegacy(t *testing.T) {
	path := fixture(t, "hermes-v11.db")
	db := MustOpenPath(t, path)
	before := len(search(t, db, "docker", sessiondb.SearchOptions{Limit: 1000}))
	var steps int
	rep, err := db.OptimizeStorage(ctx, func(done, total int64) { steps++ }, true)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Converted || rep.Backfilled == 0 || steps == 0 {
		t.Fatalf("report %+v, %d progress calls", rep, steps)
	}
	raw := rawDB(t, path)
	var ddl string
	raw.QueryRow("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'").Scan(&ddl)
	if !strings.Contains(ddl, "messages_fts_src") {
		t.Fatalf("messages_fts not converted: %s", ddl)
	}
	if v, _, _ := db.Meta(ctx, "fts_storage_version"); v != "3" {
		t.Errorf("fts_storage_version = %q", v)
	}
	checkIntegrity(t, raw)
	// Only the 8192-character prefix of the two ~50k tool outputs is indexed now.
	if after := len(search(t, db, "docker", sessiondb.SearchOptions{Limit: 1000})); after < before-2 || after == 0 {
		t.Errorf("docker: %d hits after conversion, %d before", after, before)
	}
	if got := len(search(t, db, "東京の天気", sessiondb.SearchOptions{Limit: 1000})); got != 23 {
		t.Errorf("東京の天気: %d hits, want 23", got)
	}
	// A reopen sees the new layout and changes nothing.
	db.Close()
	db = MustOpenPath(t, path)
	checkIntegrity(t, raw)
	if v, _, _ := db.Meta(ctx, "fts_storage_version"); v != "3" {
		t.Errorf("after reopening, fts_storage_version = %q", v)
	}
}

// TestMergeFTS: a write that completes a cadence of writes runs Hermes'
// bounded 'merge' pass, which leaves each index with fewer segments (about
// one per level), with usermerge lowered to 2 in its config as Hermes does;
// search finds the same rows and every index stays consistent.
func TestMergeFTS(t *testing.T) {
	sqlite.SetFTSMergeEvery(t, 1<<62) // no pass while seeding
	db := MustOpen(t)
	seed(t, db, 300)
	raw := rawDB(t, db.Path())
	tables := []string{"messages_fts", "messages_fts_trigram", "messages_fts_cjk"}
	segments := func(table string) int {
		return count(t, raw, "SELECT COUNT(DISTINCT segid) FROM "+table+"_idx")
	}
	before := map[string]int{}
	for _, table := range tables {
		if before[table] = segments(table); before[table] < 4 {
			t.Fatalf("%s: %d segments after 300 one-message writes; the test needs more", table, before[table])
		}
		if n := count(t, raw, "SELECT COUNT(*) FROM "+table+"_config WHERE k = 'usermerge'"); n != 0 {
			t.Fatalf("%s: usermerge set before any pass", table)
		}
	}

	// The next write completes a cadence. It leaves the indexes alone, so
	// only the pass can change their segments (a message would add one, and
	// FTS5 merges 16 new segments into one by itself).
	sqlite.SetFTSMergeEvery(t, 1)
	if err := db.SetTitle(ctx, "s", "merged"); err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		if after := segments(table); after*2 > before[table] {
			t.Errorf("%s: %d segments after the pass, %d before", table, after, before[table])
		}
		if n := count(t, raw, "SELECT v FROM "+table+"_config WHERE k = 'usermerge'"); n != 2 {
			t.Errorf("%s: usermerge = %d, want 2", table, n)
		}
	}
	checkIntegrity(t, raw)
	if got := len(search(t, db, "docker", sessiondb.SearchOptions{Limit: 1000})); got != 300 {
		t.Errorf("docker: %d hits, want 300", got)
	}
	if got := len(search(t, db, "项目", sessiondb.SearchOptions{Limit: 1000})); got != 60 {
		t.Errorf("项目: %d hits, want 60", got)
	}
}

func TestRebuildFTS(t *testing.T) {
	db := MustOpen(t)
	seed(t, db, 120)
	if err := db.RebuildFTS(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := len(search(t, db, "docker", sessiondb.SearchOptions{Limit: 1000})); got != 120 {
		t.Errorf("docker: %d hits, want 120", got)
	}
	if got := len(search(t, db, "项目", sessiondb.SearchOptions{Limit: 1000})); got != 24 {
		t.Errorf("项目: %d hits, want 24", got)
	}
	checkIntegrity(t, rawDB(t, db.Path()))
}

func TestOptimize(t *testing.T) {
	db := MustOpen(t)
	seed(t, db, 30)
	raw := rawDB(t, db.Path())
	// One segment on each of two levels, which no merge within a level
	// joins: FTS5's optimize puts the index in one segment a level up, and
	// the next transaction writes a new one, far smaller, on level 0.
	rawExec(t, raw, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
		INSERT INTO messages(session_id, role, content, timestamp) SELECT (SELECT session_id FROM messages LIMIT 1), 'user', 'bulk w' || i || ' 项目 ' || hex(randomblob(40)), 1 FROM n`)
	for _, tbl := range []string{"messages_fts", "messages_fts_trigram", "messages_fts_cjk"} {
		rawExec(t, raw, "INSERT INTO "+tbl+"("+tbl+") VALUES('optimize')")
	}
	rawExec(t, raw, "INSERT INTO messages(session_id, role, content, timestamp) SELECT session_id, 'user', 'one more', 1 FROM messages LIMIT 1")
	if got := ftsSegments(t, raw); got != "2; 2; 2" {
		t.Fatalf("segments before optimize: %s, want 2 per index", got)
	}
	// Merges of a few pages each: one index takes many commands.
	sqlite.SetFTSMergePages(t, 4)
	var pages int
	raw.QueryRow("SELECT count(*) FROM messages_fts_data").Scan(&pages)
	if pages < 40 {
		t.Fatalf("the word index has %d pages; the test needs more than ten merges' worth", pages)
	}
	rep, err := db.Optimize(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Optimized != 3 {
		t.Errorf("optimized %d indexes, want 3", rep.Optimized)
	}
	if got := ftsSegments(t, raw); got != "1; 1; 1" {
		t.Errorf("segments after optimize: %s, want one per index", got)
	}
	raw.Close()
	// This test's own raw connections count as other holders only if open.
	if !rep.Vacuumed && rep.VacuumSkipped == "" {
		t.Errorf("vacuum neither ran nor said why: %+v", rep)
	}
	checkIntegrity(t, rawDB(t, db.Path()))
}

// TestFTSFailOpen: a write is not lost to a damaged search index, whether
// the damage lets the insert through (blocks zeroed past the structure
// record) or fails it (the structure record lost: the indexes are recreated
// and the write runs again); the append lands, is searchable, and every index is
// consistent once refilled.
func TestFTSFailOpen(t *testing.T) {
	for _, damage := range []struct{ name, sql string }{
		{"zeroed blocks", "UPDATE messages_fts_data SET block = zeroblob(length(block)) WHERE id > 10"},
		{"structure record lost", "DELETE FROM messages_fts_data WHERE id = 10"},
	} {
		t.Run(damage.name, func(t *testing.T) {
			db := MustOpen(t)
			seed(t, db, 40)
			raw := rawDB(t, db.Path())
			rawExec(t, raw, damage.sql)
			id, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "after the damage zebrafish"})
			if err != nil {
				t.Fatalf("append on a damaged index: %v", err)
			}
			if id == 0 {
				t.Fatal("no id")
			}
			if got := count(t, raw, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'messages_fts%'"); got != 9 {
				t.Errorf("%d FTS triggers, want 9", got)
			}
			if got := len(search(t, db, "zebrafish", sessiondb.SearchOptions{})); got != 1 {
				t.Errorf("new message: %d hits", got)
			}
			if got := len(search(t, db, "docker", sessiondb.SearchOptions{Limit: 1000})); got != 40 {
				t.Errorf("old messages: %d hits, want 40", got)
			}
			checkIntegrity(t, raw)
		})
	}
}

// TestOptimizeVacuum: VACUUM compacts the file when no other process has it
// open (this process's own connections do not count), and is skipped,
// naming the other process, when one has it open: Hermes must never see
// its file rewritten under it.
func TestOptimizeVacuum(t *testing.T) {
	t.Run("no other process", func(t *testing.T) {
		db := MustOpen(t)
		seed(t, db, 30)
		rep, err := db.Optimize(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Vacuumed || rep.VacuumSkipped != "" {
			t.Errorf("vacuum did not run: %+v", rep)
		}
		if rep.SizeBefore <= 0 || rep.SizeAfter <= 0 {
			t.Errorf("sizes before and after = %d, %d; want the file's sizes", rep.SizeBefore, rep.SizeAfter)
		}
	})
	t.Run("another process has the file open", func(t *testing.T) {
		db := MustOpen(t)
		seed(t, db, 30)
		pid := holdOpenInChild(t, db.Path())
		rep, err := db.Optimize(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Vacuumed || !strings.Contains(rep.VacuumSkipped, strconv.Itoa(pid)) {
			t.Errorf("vacuum with pid %d holding the file: %+v; want it skipped, naming that pid", pid, rep)
		}
		if rep.SizeAfter != rep.SizeBefore {
			t.Errorf("size after a skipped vacuum = %d, want the size before, %d", rep.SizeAfter, rep.SizeBefore)
		}
	})
}

// holdOpenInChild starts a child process that keeps path open until the test ends,
// and returns its pid.
func holdOpenInChild(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	holder := exec.Command("sleep", "60")
	holder.ExtraFiles = []*os.File{f}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	return holder.Process.Pid
}
