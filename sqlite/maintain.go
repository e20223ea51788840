package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// resetFTS recreates every full-text index empty, with its triggers, in one
// transaction, and marks all existing rows as a backfill gap (high water =
// the largest id, progress 0): from then on new rows are indexed live and
// Backfill fills the gap in short chunks while search tops up from LIKE.
// The file is never without FTS triggers, even for an instant. A legacy
// inline layout is small and ungated; it is rebuilt in place instead.
func (db *DB) resetFTS(ctx context.Context, op string) error {
	return db.writeTx(ctx, 0, op, func(tx *sql.Tx) error {
		if db.legacy() {
			objs, err := readSchema(ctx, tx)
			if err != nil {
				return err
			}
			return ensureLegacyFTS(ctx, tx, objs, true)
		}
		return resetCurrentFTS(ctx, tx)
	})
}

func resetCurrentFTS(ctx context.Context, tx *sql.Tx) error {
	if err := clearRank(ctx, tx, ""); err != nil {
		return err
	}
	if err := dropTriggers(ctx, tx, append(append([]string{}, ftsTriggers...), ftsCJKTriggers...)...); err != nil {
		return err
	}
	if err := exec(ctx, tx, "DROP TABLE IF EXISTS messages_fts", "DROP TABLE IF EXISTS messages_fts_trigram",
		"DROP TABLE IF EXISTS messages_fts_cjk", ddlFTS, ddlTrigram, ddlCJK, ddlCJKTriggers,
		"DELETE FROM state_meta WHERE key IN ('"+keyStale+"', '"+keyCJKStale+"', '"+keyHighWater+"', '"+keyProgress+
			"', '"+keyCJKHighWater+"', '"+keyCJKProgress+"')"); err != nil {
		return err
	}
	for _, k := range []struct{ highWater, progress, where string }{
		{keyHighWater, keyProgress, ""},
		{keyCJKHighWater, keyCJKProgress, " WHERE role <> 'tool'"},
	} {
		var maxID sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT MAX(id) FROM messages"+k.where).Scan(&maxID); err != nil {
			return err
		}
		if !maxID.Valid {
			continue
		}
		if err := setMeta(ctx, tx, k.highWater, strconv.FormatInt(maxID.Int64, 10)); err != nil {
			return err
		}
		if err := setMeta(ctx, tx, k.progress, "0"); err != nil {
			return err
		}
	}
	return nil
}

// RebuildFTS rebuilds every full-text index from the messages: the indexes
// are recreated empty at once (search keeps working from the rows not yet
// indexed) and refilled in short chunks, reporting progress.
func (db *DB) RebuildFTS(ctx context.Context, progress Progress) error {
	if err := db.resetFTS(ctx, "rebuild search indexes"); err != nil {
		return err
	}
	if err := db.Backfill(ctx, progress); err != nil {
		return err
	}
	_, err := db.SummarizeTerms(ctx, nil)
	return err
}

// OptimizeStorage moves a legacy (pre-v23) file to the external-content
// layout, where the indexes no longer keep their own copy of every message:
// in one transaction the legacy indexes are dropped and the new ones created
// with their triggers, gated so that only new rows are indexed live; then
// the old rows are backfilled in chunks of 500 ids, each a short
// transaction, so Hermes processes keep writing. It is resumable: an
// interrupted run leaves the gap markers and the next run (or any open)
// continues. A CJK index marked stale is restarted (RestoreCJK) and any
// pending CJK backfill is finished too. With vacuum, the file
// is compacted afterwards when no other process has it open.
func (db *DB) OptimizeStorage(ctx context.Context, progress Progress, vacuum bool) (*MaintenanceReport, error) {
	rep := &MaintenanceReport{}
	if db.legacy() {
		err := db.writeTx(ctx, 0, "convert search indexes", func(tx *sql.Tx) error {
			if err := dropTriggers(ctx, tx, ftsTriggers...); err != nil {
				return err
			}
			if err := exec(ctx, tx, "DROP TABLE IF EXISTS messages_fts", "DROP TABLE IF EXISTS messages_fts_trigram",
				"DELETE FROM state_meta WHERE key IN ('"+keyStale+"', '"+keyOptimizeAvail+"')"); err != nil {
				return err
			}
			return resetCurrentFTS(ctx, tx)
		})
		if err != nil {
			return nil, err
		}
		db.mu.Lock()
		db.layout = layoutCurrent
		db.mu.Unlock()
		rep.Converted = true
	}
	if _, err := db.RestoreCJK(ctx, nil); err != nil {
		return nil, err
	}
	pending, err := db.PendingBackfill(ctx)
	if err != nil {
		return nil, err
	}
	rep.Backfilled = pending
	if err := db.Backfill(ctx, progress); err != nil {
		return nil, err
	}
	if err := db.writeTx(ctx, 0, "stamp search layout", func(tx *sql.Tx) error {
		return setMeta(ctx, tx, keyStorage, strconv.Itoa(FTSStorageVersion))
	}); err != nil {
		return nil, err
	}
	if _, err := db.SummarizeTerms(ctx, nil); err != nil {
		return nil, err
	}
	if vacuum {
		if err := db.vacuum(ctx, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// MaintenanceReport says what a maintenance command did.
type MaintenanceReport struct {
	Converted     bool   `json:"converted"`      // a legacy layout was converted
	Backfilled    int64  `json:"backfilled_ids"` // message ids indexed by the backfill
	Optimized     int    `json:"optimized"`      // FTS indexes merged into one segment
	Summarized    int    `json:"summarized"`     // terms with a range summary after it
	Vacuumed      bool   `json:"vacuumed"`
	VacuumSkipped string `json:"vacuum_skipped,omitempty"` // why VACUUM did not run
	SizeBefore    int64  `json:"size_before"`
	SizeAfter     int64  `json:"size_after"`
}

// Optimize merges every FTS index into one segment (compactFTS),
// after leaving its merge settings as Hermes keeps them (hermesMerge), and
// with vacuum compacts the file when no other process has it open.
func (db *DB) Optimize(ctx context.Context, vacuum bool) (*MaintenanceReport, error) {
	rep := &MaintenanceReport{}
	tables, err := presentFTS(ctx, db.write)
	if err != nil {
		return nil, db.mapErr("optimize", err)
	}
	for _, t := range tables {
		if err := db.writeTx(ctx, 0, "optimize "+t, func(tx *sql.Tx) error {
			return exec(ctx, tx, hermesMerge(t)...)
		}); err != nil {
			return nil, err
		}
		if err := db.compactFTS(ctx, t); err != nil {
			return nil, err
		}
		rep.Optimized++
	}
	// The term summaries are made again whole (a damaged one included).
	if err := db.writeTx(ctx, 0, "clear term summaries", func(tx *sql.Tx) error {
		return clearRank(ctx, tx, "")
	}); err != nil {
		return nil, err
	}
	if rep.Summarized, err = db.SummarizeTerms(ctx, nil); err != nil {
		return nil, err
	}
	if vacuum {
		if err := db.vacuum(ctx, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// presentFTS lists the full-text indexes the file has.
func presentFTS(ctx context.Context, q querier) ([]string, error) {
	return collect(ctx, q, `SELECT name FROM sqlite_master WHERE type = 'table'
		AND name IN ('messages_fts', 'messages_fts_trigram', 'messages_fts_cjk') ORDER BY name`)
}

// ftsMergeEvery is how many writes pass between two mergeFTS passes, as in
// Hermes (a variable for tests).
var ftsMergeEvery int64 = 1000

// ftsMergePages is how many pages a 'merge' command writes at most (a
// variable for tests).
var ftsMergePages = 500

const ftsMergeCommands = 4 // 'merge' commands per index and pass at most

// mergeFTS is Hermes' upkeep of the search indexes on the live path
// (STORAGE.md §4.3): up to ftsMergeCommands bounded 'merge' commands per
// index, each its own transaction, until one finds no work; never
// 'optimize', which rewrites a whole index under the write lock. The first
// pass of a handle lowers each index's usermerge to 2 (kept in the index's
// %_config table, as Hermes does), so that a merge takes on any level of
// two or more segments. By itself FTS5 merges little when each transaction
// writes one message, and an index keeps up to about 20 segments; every
// search looks up its terms in each of them.
//
// It runs after a committed write, so it reports nothing: an error (the
// write lock held by another process past the busy timeout, a damaged index
// that search repairs) ends the pass, and the next pass tries again.
func (db *DB) mergeFTS(ctx context.Context) {
	tables, err := presentFTS(ctx, db.write)
	if err != nil {
		return
	}
	floor := !db.usermerge.Load()
	for _, t := range tables {
		for i := 0; i < ftsMergeCommands; i++ {
			var worked bool
			err := db.writeOnce(ctx, func(tx *sql.Tx) error {
				if floor && i == 0 {
					if _, err := tx.ExecContext(ctx, "INSERT INTO "+t+"("+t+", rank) VALUES('usermerge', 2)"); err != nil {
						return err
					}
				}
				var err error
				worked, err = mergeStep(ctx, tx, t, ftsMergePages)
				return err
			})
			if err != nil {
				return
			}
			if !worked {
				break
			}
		}
	}
	db.usermerge.Store(true)
	db.upkeepRank(ctx)
}

// compactFTS merges index t into one segment with bounded 'merge'
// commands, each its own short
// transaction followed by a pause as long as it took. FTS5's 'optimize'
// would rewrite the whole index in one transaction, holding the write lock
// for seconds on a large file (4–12 s at 1M messages), past the patience
// of Hermes' heartbeats (0.5 s); STORAGE.md forbids it on a live file.
func (db *DB) compactFTS(ctx context.Context, t string) error {
	// A negative page count first moves every segment to one level, as
	// 'optimize' does, so that the bounded merges that follow merge across
	// levels too.
	for pages := -ftsMergePages; ; pages = ftsMergePages {
		start := time.Now()
		var worked bool
		err := db.writeTx(ctx, 0, "merge "+t, func(tx *sql.Tx) error {
			var err error
			worked, err = mergeStep(ctx, tx, t, pages)
			return err
		})
		if err != nil || !worked {
			return err
		}
		if err := db.pause(ctx, "merge "+t, backfillPause(time.Since(start))); err != nil {
			return err
		}
	}
}

// mergeStep runs one bounded 'merge' command of pages pages on index t
// and reports whether it merged anything.
func mergeStep(ctx context.Context, tx *sql.Tx, t string, pages int) (bool, error) {
	var before, after int64
	if err := tx.QueryRowContext(ctx, "SELECT total_changes()").Scan(&before); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+t+"("+t+", rank) VALUES('merge', ?)", pages); err != nil {
		return false, err
	}
	if err := tx.QueryRowContext(ctx, "SELECT total_changes()").Scan(&after); err != nil {
		return false, err
	}
	// The command itself is one change; a merge that wrote anything made
	// more.
	return after-before >= 2, nil
}

// vacuum runs VACUUM unless another process has the file open: Hermes must
// never see its file rewritten under it.
func (db *DB) vacuum(ctx context.Context, rep *MaintenanceReport) error {
	rep.SizeBefore = fileSize(db.path)
	if others := otherHolders(db.path); len(others) > 0 {
		rep.VacuumSkipped = fmt.Sprintf("other processes have the file open (pid %v); stop them and run again", others)
		rep.SizeAfter = rep.SizeBefore
		return nil
	}
	if err := db.writable(); err != nil {
		return err
	}
	if _, err := db.write.ExecContext(ctx, "VACUUM"); err != nil {
		return db.mapErr("vacuum "+db.path, err)
	}
	_, _ = db.write.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	rep.Vacuumed = true
	rep.SizeAfter = fileSize(db.path)
	return nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// otherHolders lists the processes other than this one that have the
// database or its WAL open (Linux /proc; empty elsewhere).
func otherHolders(path string) []int {
	targets := map[string]bool{path: true, path + "-wal": true, path + "-shm": true}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	self := os.Getpid()
	seen := map[int]bool{}
	var out []int
	for _, fd := range procs {
		link, err := os.Readlink(fd)
		if err != nil || !targets[link] {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(fd))))
		if pid != self && !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	return out
}

// backfillPause is how long Backfill waits after a chunk that took d, so it
// holds the write lock at most half the time and other writers get in.
func backfillPause(d time.Duration) time.Duration { return max(d, 2*time.Millisecond) }
