package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
)

// Deferred-rebuild keys of state_meta (see DESIGN.md, "Trigger gating").
const (
	keyHighWater     = "fts_rebuild_high_water"
	keyProgress      = "fts_rebuild_progress"
	keyCJKHighWater  = "fts_cjk_rebuild_high_water"
	keyCJKProgress   = "fts_cjk_rebuild_progress"
	keyStale         = "fts_stale"
	keyCJKStale      = "fts_cjk_stale"
	keyStorage       = "fts_storage_version"
	keyOptimizeAvail = "fts_optimize_available"
)

// ensureFTS makes the file's full-text indexes consistent and their
// triggers present, inside the open transaction:
//   - no FTS yet: the newest layout, filled from existing rows;
//   - a legacy layout (messages_fts without tool_name): kept as Hermes keeps
//     it; the v1–v9 external-content form is converted to the v11 inline form
//     and rebuilt, and triggers are normalised to Hermes' legacy DDL;
//   - the v23 external-content layout: the base index moves to the
//     messages_fts_src projection and the trigram index to the v30
//     exclusions, each rebuilt;
//   - the CJK index is created when missing, with a deferred backfill of the
//     rows written before it (fts_cjk_rebuild_* keys), and restarted the same
//     way when a tokenizer-less process marked it stale.
func ensureFTS(ctx context.Context, tx *sql.Tx) (ftsLayout, error) {
	objs, err := readSchema(ctx, tx)
	if err != nil {
		return 0, err
	}
	for _, fam := range []string{"messages_fts", "messages_fts_trigram", "messages_fts_cjk"} {
		if err := dropOrphanShadows(ctx, tx, objs, fam); err != nil {
			return 0, err
		}
	}
	_, stale, err := metaInt(ctx, tx, keyStale)
	if err != nil {
		return 0, err
	}
	base := objs["messages_fts"]
	if base != "" && !strings.Contains(base, "tool_name") {
		return layoutLegacy, ensureLegacyFTS(ctx, tx, objs, stale)
	}
	return layoutCurrent, ensureCurrentFTS(ctx, tx, objs, stale)
}

// dropOrphanShadows drops FTS5 shadow tables left without their virtual
// table (as after `sqlite3 .recover`), so the index can be recreated.
func dropOrphanShadows(ctx context.Context, tx *sql.Tx, objs schemaObjects, fam string) error {
	if strings.HasPrefix(objs[fam], "CREATE VIRTUAL TABLE") {
		return nil
	}
	for _, suffix := range []string{"_content", "_data", "_docsize", "_idx", "_config"} {
		if objs.has(fam + suffix) {
			if _, err := tx.ExecContext(ctx, "DROP TABLE "+quoteIdent(fam+suffix)); err != nil {
				return err
			}
			delete(objs, fam+suffix)
		}
	}
	return nil
}

func exec(ctx context.Context, tx *sql.Tx, stmts ...string) error {
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", firstLine(s), err)
		}
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func dropTriggers(ctx context.Context, tx *sql.Tx, names ...string) error {
	for _, n := range names {
		if err := exec(ctx, tx, "DROP TRIGGER IF EXISTS "+n); err != nil {
			return err
		}
	}
	return nil
}

// ensureLegacyFTS keeps a pre-v23 file on its inline layout. Both tables
// are recreated and refilled once when anything differs from Hermes' legacy
// DDL: the v1–v9 external-content form, a missing trigram table, a missing
// trigger (a gap), or triggers of an older release (v10's 'delete' commands
// and broad update triggers may have left the index inconsistent; the v11
// fixture's trigram index fails FTS5's integrity check as Hermes left it).
func ensureLegacyFTS(ctx context.Context, tx *sql.Tx, objs schemaObjects, stale bool) error {
	rebuild := stale || strings.Contains(objs["messages_fts"], "content=") || !objs.has("messages_fts_trigram")
	for _, name := range ftsTriggers {
		rebuild = rebuild || normSQL(objs[name]) != normSQL(storedTrigger(ddlLegacy, name))
	}
	if rebuild {
		if err := dropTriggers(ctx, tx, ftsTriggers...); err != nil {
			return err
		}
		if err := exec(ctx, tx, "DROP TABLE IF EXISTS messages_fts", "DROP TABLE IF EXISTS messages_fts_trigram"); err != nil {
			return err
		}
	}
	if err := exec(ctx, tx, ddlLegacy); err != nil {
		return err
	}
	if rebuild {
		for _, t := range []string{"messages_fts", "messages_fts_trigram"} {
			if err := exec(ctx, tx, "INSERT INTO "+t+"(rowid, content) SELECT id, "+legacyConcatSQL+" FROM messages"); err != nil {
				return err
			}
		}
	}
	if stale {
		if err := exec(ctx, tx, "DELETE FROM state_meta WHERE key = '"+keyStale+"'"); err != nil {
			return err
		}
	}
	return setMeta(ctx, tx, keyOptimizeAvail, "1")
}

// ensureCurrentFTS keeps the external-content layout and moves older forms
// of it to the v30 one.
func ensureCurrentFTS(ctx context.Context, tx *sql.Tx, objs schemaObjects, stale bool) error {
	_, pending, err := metaInt(ctx, tx, keyHighWater)
	if err != nil {
		return err
	}
	// Base index: a table not reading messages_fts_src (v23) is recreated.
	rebuildBase := stale || !strings.Contains(objs["messages_fts"], "messages_fts_src")
	// Trigram index: v23's still indexes tool_calls and lacks the v30
	// delegate exclusion; a newer process's definition is left alone.
	rebuildTrigram := stale || !objs.has("messages_fts_trigram") ||
		strings.Contains(strings.ToLower(objs["messages_fts_trigram"]), "tool_calls") ||
		!strings.Contains(objs["messages_fts_trigram_src"], "_delegate_from")
	for _, name := range ftsTriggers[:3] {
		rebuildBase = rebuildBase || !objs.has(name)
	}
	for _, name := range ftsTriggers[3:] {
		rebuildTrigram = rebuildTrigram || !objs.has(name)
	}
	if pending && (rebuildBase || rebuildTrigram) {
		// Both indexes share the backfill keys: rebuild both completely.
		rebuildBase, rebuildTrigram = true, true
	}
	if rebuildBase {
		if err := dropTriggers(ctx, tx, ftsTriggers[:3]...); err != nil {
			return err
		}
		if err := exec(ctx, tx, "DROP TABLE IF EXISTS messages_fts", "DROP VIEW IF EXISTS messages_fts_src"); err != nil {
			return err
		}
	}
	if rebuildTrigram {
		if err := dropTriggers(ctx, tx, ftsTriggers[3:]...); err != nil {
			return err
		}
		if err := exec(ctx, tx, "DROP TABLE IF EXISTS messages_fts_trigram", "DROP VIEW IF EXISTS messages_fts_trigram_src"); err != nil {
			return err
		}
	}
	if err := replaceBroadUpdateTriggers(ctx, tx, objs, "messages_fts_update", "messages_fts_trigram_update"); err != nil {
		return err
	}
	if err := exec(ctx, tx, ddlFTS, ddlTrigram); err != nil {
		return err
	}
	if rebuildBase {
		if err := exec(ctx, tx, "INSERT INTO messages_fts(messages_fts) VALUES('rebuild')"); err != nil {
			return err
		}
	}
	if rebuildTrigram {
		if err := exec(ctx, tx, "INSERT INTO messages_fts_trigram(messages_fts_trigram) VALUES('rebuild')"); err != nil {
			return err
		}
	}
	if rebuildBase && rebuildTrigram {
		if err := exec(ctx, tx, "DELETE FROM state_meta WHERE key IN ('"+keyHighWater+"', '"+keyProgress+"')"); err != nil {
			return err
		}
		pending = false
	}
	if stale {
		if err := exec(ctx, tx, "DELETE FROM state_meta WHERE key = '"+keyStale+"'"); err != nil {
			return err
		}
	}
	if err := ensureCJK(ctx, tx, objs, false); err != nil {
		return err
	}
	if !pending {
		if err := setMeta(ctx, tx, keyStorage, fmt.Sprint(FTSStorageVersion)); err != nil {
			return err
		}
	}
	return exec(ctx, tx, "DELETE FROM state_meta WHERE key = '"+keyOptimizeAvail+"'")
}

// ensureCJK creates the CJK bigram index when the file has none, as a
// Hermes with the tokenizer does. An index a tokenizer-less process marked
// stale (fts_cjk_stale, its triggers dropped) is left alone, again as
// Hermes does: reinstalling its triggers while such a process still runs
// would fail that process's next insert. RestoreCJK (sessiondb init,
// optimize-storage, doctor --fix) restarts it. Rows already in messages
// are indexed by the chunked backfill, gated by the fts_cjk_rebuild_* keys,
// so no open holds the write lock for a whole-table rebuild.
func ensureCJK(ctx context.Context, tx *sql.Tx, objs schemaObjects, restore bool) error {
	_, stale, err := metaInt(ctx, tx, keyCJKStale)
	if err != nil {
		return err
	}
	if objs.has("messages_fts_cjk") && stale && !restore {
		return nil
	}
	if objs.has("messages_fts_cjk") && !stale {
		if err := replaceBroadUpdateTriggers(ctx, tx, objs, "messages_fts_cjk_update"); err != nil {
			return err
		}
		return exec(ctx, tx, ddlCJK, ddlCJKTriggers)
	}
	if err := clearRank(ctx, tx, "messages_fts_cjk"); err != nil {
		return err
	}
	if err := dropTriggers(ctx, tx, ftsCJKTriggers...); err != nil {
		return err
	}
	if err := exec(ctx, tx, "DROP TABLE IF EXISTS messages_fts_cjk", ddlCJK, ddlCJKTriggers,
		"DELETE FROM state_meta WHERE key IN ('"+keyCJKStale+"', '"+keyCJKHighWater+"', '"+keyCJKProgress+"')"); err != nil {
		return err
	}
	var maxID sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT MAX(id) FROM messages WHERE role <> 'tool'").Scan(&maxID); err != nil {
		return err
	}
	if !maxID.Valid {
		return nil
	}
	if err := setMeta(ctx, tx, keyCJKHighWater, fmt.Sprint(maxID.Int64)); err != nil {
		return err
	}
	return setMeta(ctx, tx, keyCJKProgress, "0")
}

// replaceBroadUpdateTriggers drops update triggers written as
// `AFTER UPDATE ON messages` (every column) so the DDL that follows
// recreates them as `AFTER UPDATE OF …`; their indexing is otherwise the
// same, so no rebuild is needed.
func replaceBroadUpdateTriggers(ctx context.Context, tx *sql.Tx, objs schemaObjects, names ...string) error {
	for _, n := range names {
		if broadUpdate(objs, n) {
			if err := dropTriggers(ctx, tx, n); err != nil {
				return err
			}
		}
	}
	return nil
}

var spaceRE = regexp.MustCompile(`\s+`)

// normSQL collapses whitespace so stored DDL can be compared with ours.
func normSQL(s string) string {
	return strings.TrimSuffix(strings.TrimSpace(spaceRE.ReplaceAllString(s, " ")), ";")
}

// storedTrigger returns the CREATE TRIGGER statement for name in ddl as
// SQLite stores it in sqlite_master (without IF NOT EXISTS).
func storedTrigger(ddl, name string) string {
	start := strings.Index(ddl, "CREATE TRIGGER IF NOT EXISTS "+name+" ")
	if start < 0 {
		start = strings.Index(ddl, "CREATE TRIGGER IF NOT EXISTS "+name+"\n")
	}
	if start < 0 {
		return ""
	}
	stmt := ddl[start:]
	stmt = stmt[:strings.Index(stmt, "\nEND;")+len("\nEND")]
	return strings.Replace(stmt, "IF NOT EXISTS ", "", 1)
}

// RestoreCJK restarts a CJK index that a process without the cjk_unicode61
// tokenizer marked stale: the table is recreated empty with its triggers
// and the rows written so far are backfilled in chunks. Do this when no
// tokenizer-less Hermes is running (its next insert would fail on the
// reinstalled triggers until it marks the index stale again).
func (db *DB) RestoreCJK(ctx context.Context, progress Progress) (bool, error) {
	if db.legacy() {
		return false, nil
	}
	restored := false
	err := db.writeTx(ctx, 0, "restore the CJK index", func(tx *sql.Tx) error {
		_, stale, err := metaInt(ctx, tx, keyCJKStale)
		if err != nil || !stale {
			restored = false
			return err
		}
		objs, err := readSchema(ctx, tx)
		if err != nil {
			return err
		}
		restored = true
		return ensureCJK(ctx, tx, objs, true)
	})
	if err != nil || !restored {
		return false, err
	}
	return true, db.Backfill(ctx, progress)
}
