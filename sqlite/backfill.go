package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// backfillChunk is how many message ids one backfill transaction covers, as
// in Hermes: short transactions keep other writers' waits short.
const backfillChunk = 500

// autoBackfillRows bounds the gap Open fills by itself; a larger one is left
// to `sessiondb init` (or optimize-storage), which reports progress.
const autoBackfillRows = 50_000

// An index family sharing one pair of deferred-rebuild keys, and the
// statements that index the rows in (progress, next].
type backfillTarget struct {
	name, highWater, progress string
	fill                      []string
}

var backfillTargets = []backfillTarget{
	{"word and trigram", keyHighWater, keyProgress, []string{
		"INSERT INTO messages_fts(rowid, content, tool_name, tool_calls) SELECT id, content, tool_name, tool_calls FROM messages_fts_src WHERE id > ? AND id <= ?",
		"INSERT INTO messages_fts_trigram(rowid, content, tool_name) SELECT id, content, tool_name FROM messages_fts_trigram_src WHERE id > ? AND id <= ?",
	}},
	{"CJK", keyCJKHighWater, keyCJKProgress, []string{
		"INSERT INTO messages_fts_cjk(rowid, content, tool_name, tool_calls) SELECT id, content, tool_name, tool_calls FROM messages_fts_cjk_src WHERE id > ? AND id <= ?",
	}},
}

// autoBackfill fills a small index gap right away; a large one is left to
// `sessiondb init` or optimize-storage, which show progress, while search
// tops up from the rows not yet indexed.
func (db *DB) autoBackfill(ctx context.Context) error {
	pending, err := db.PendingBackfill(ctx)
	if err != nil || pending == 0 || pending > autoBackfillRows {
		return err
	}
	return db.Backfill(ctx, nil)
}

// Progress reports long work: done of total units so far.
type Progress func(done, total int64)

// PendingBackfill returns how many message ids the deferred index backfills
// still have to cover (0 when every index is complete).
func (db *DB) PendingBackfill(ctx context.Context) (int64, error) {
	if db.legacy() {
		return 0, nil
	}
	var total int64
	for _, t := range backfillTargets {
		hw, ok, err := metaInt(ctx, db.write, t.highWater)
		if err != nil {
			return 0, db.mapErr("read backfill state", err)
		}
		if !ok {
			continue
		}
		p, _, err := metaInt(ctx, db.write, t.progress)
		if err != nil {
			return 0, db.mapErr("read backfill state", err)
		}
		total += max(hw-p, 0)
	}
	return total, nil
}

// Backfill indexes the rows a deferred rebuild left out (ids in
// (progress, high_water]), 500 ids per short BEGIN IMMEDIATE transaction, so
// Hermes processes can write between chunks. Each chunk re-reads the keys
// inside its transaction, so two backfillers never index a row twice. It is
// resumable: an interrupted run leaves the keys where it stopped.
func (db *DB) Backfill(ctx context.Context, progress Progress) (err error) {
	if db.legacy() {
		return nil
	}
	total, err := db.PendingBackfill(ctx)
	if err != nil || total == 0 {
		return err
	}
	if total >= bulkFillRows {
		end, berr := db.bulkMerge(ctx)
		if berr != nil {
			return berr
		}
		defer func() {
			if eerr := end(err == nil); err == nil {
				err = eerr
			}
		}()
	}
	var done int64
	for _, t := range backfillTargets {
		for {
			var n int64
			start := time.Now()
			err := db.writeTx(ctx, 0, "backfill "+t.name+" index", func(tx *sql.Tx) error {
				var err error
				n, err = backfillStep(ctx, tx, t)
				return err
			})
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			done += n
			if progress != nil {
				progress(min(done, total), total)
			}
			if err := db.pause(ctx, "backfill", backfillPause(time.Since(start))); err != nil {
				return err
			}
		}
	}
	return nil
}

// pause waits d between two steps of long work (op), so that other
// writers get the lock, or returns ctx's error.
func (db *DB) pause(ctx context.Context, op string, d time.Duration) error {
	select {
	case <-ctx.Done():
		return db.mapErr(op, ctx.Err())
	case <-time.After(d):
		return nil
	}
}

// backfillStep indexes one chunk and advances (or, at the end, deletes) the
// keys. It returns how many ids the chunk covered; 0 means nothing pending.
func backfillStep(ctx context.Context, tx *sql.Tx, t backfillTarget) (int64, error) {
	hw, ok, err := metaInt(ctx, tx, t.highWater)
	if err != nil || !ok {
		return 0, err
	}
	p, _, err := metaInt(ctx, tx, t.progress)
	if err != nil {
		return 0, err
	}
	next := min(p+backfillChunk, hw)
	for _, stmt := range t.fill {
		if _, err := tx.ExecContext(ctx, stmt, p, next); err != nil {
			return 0, fmt.Errorf("backfill ids %d..%d: %w", p+1, next, err)
		}
	}
	if next >= hw {
		_, err = tx.ExecContext(ctx, "DELETE FROM state_meta WHERE key IN (?, ?)", t.highWater, t.progress)
	} else {
		err = setMeta(ctx, tx, t.progress, fmt.Sprint(next))
	}
	return max(next-p, 1), err
}

func (db *DB) legacy() bool { return db.currentLayout() == layoutLegacy }

// A backfill of at least bulkFillRows ids (rebuild-fts, optimize-storage,
// init after an upgrade) runs under a merge policy of its own. Each chunk
// is a transaction and so a new segment. FTS5's default merges a level
// once it holds 4 segments, so every row is rewritten once per level, and
// the levels grow with the chunks (log4 of them): the cost per row grew
// with the index (1.41× at 1M messages against 100k). While the backfill
// runs, automerge is bulkAutomerge (FTS5's largest), so at up to about
// 64² chunks (16M ids) a row is merged once, and crisismerge is above it
// so that only the incremental merges run; when it is done, compactFTS
// merges each index into one segment, one more rewrite of every row. A
// variable for tests.
var bulkFillRows int64 = autoBackfillRows

const (
	bulkAutomerge   = 64
	bulkCrisismerge = 128
)

// bulkMerge sets the bulk merge policy on every full-text index and returns
// what ends it: the two settings deleted from each index's %_config table,
// then usermerge set to 2 (as mergeFTS does), a command that makes every
// connection, other processes' too, read the settings again; then, when
// merge is true, compactFTS on each index (one segment, in bounded
// steps). The settings are restored even when
// ctx has ended. A process killed in between leaves the bulk policy in the
// file: FTS5 then merges in larger steps, which costs searches more
// segments, until `sessiondb optimize` or the next backfill of that size
// restores it (doctor says so).
func (db *DB) bulkMerge(ctx context.Context) (end func(merge bool) error, err error) {
	tables, err := presentFTS(ctx, db.write)
	if err != nil {
		return nil, db.mapErr("read search indexes", err)
	}
	set := func(ctx context.Context, op string, stmts func(t string) []string) error {
		return db.writeTx(ctx, 0, op, func(tx *sql.Tx) error {
			for _, t := range tables {
				if err := exec(ctx, tx, stmts(t)...); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err = set(ctx, "set the bulk merge policy", func(t string) []string {
		return []string{
			fmt.Sprintf("INSERT INTO %[1]s(%[1]s, rank) VALUES('automerge', %d)", t, bulkAutomerge),
			fmt.Sprintf("INSERT INTO %[1]s(%[1]s, rank) VALUES('crisismerge', %d)", t, bulkCrisismerge),
		}
	})
	if err != nil {
		return nil, err
	}
	return func(merge bool) error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err := set(rctx, "restore the merge policy", hermesMerge)
		for _, t := range tables {
			if err == nil && merge {
				err = db.compactFTS(ctx, t)
			}
		}
		return err
	}, nil
}

// hermesMerge are the statements that leave index t's merge settings as
// Hermes keeps them: no automerge or crisismerge of the bulk policy (FTS5's
// defaults) and usermerge 2; setting a value through FTS5 makes every
// connection read the settings again. Optimize runs them too, to mend a
// file that a killed backfill left under the bulk policy (doctor reports
// one).
func hermesMerge(t string) []string {
	return []string{
		"DELETE FROM " + t + "_config WHERE k IN ('automerge', 'crisismerge')",
		"INSERT INTO " + t + "(" + t + ", rank) VALUES('usermerge', 2)",
	}
}
