package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
)

// ddlObjectRE finds the name of every object a DDL file creates.
var ddlObjectRE = regexp.MustCompile(`(?i)CREATE\s+(?:UNIQUE\s+)?(?:INDEX|TRIGGER|VIEW|VIRTUAL\s+TABLE|TABLE)\s+IF\s+NOT\s+EXISTS\s+(\w+)`)

func ddlObjects(ddl string) []string {
	var out []string
	for _, m := range ddlObjectRE.FindAllStringSubmatch(ddl, -1) {
		out = append(out, m[1])
	}
	return out
}

// deferredTriggers are the display-order triggers deferred.sql drops and
// recreates, as Hermes' DEFERRED_INDEX_SQL does on every open.
var deferredTriggers = []string{"messages_display_order_insert", "messages_display_visibility_update",
	"messages_display_identity_update", "messages_display_identity_delete"}

// schemaCurrent reports, with reads only, whether migrate would leave the
// file as it is: then a writer's open skips the migration and its write
// transaction (a rewritten trigger would bump the schema cookie and make
// every other connection re-prepare its statements). It mirrors each step
// of migrateTx and ensureFTS and answers false whenever a step would write;
// a false answer only costs the migration, which is always safe. It also
// returns the file's search-index layout.
func schemaCurrent(ctx context.Context, q querier) (ftsLayout, bool, error) {
	var rows int
	var version sql.NullInt64
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*), MIN(version) FROM schema_version").Scan(&rows, &version); err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return 0, false, nil
		}
		return 0, false, err
	}
	if rows == 0 || version.Int64 < SchemaVersion {
		return 0, false, nil // data migrations and the version bump
	}
	ok, err := columnsCurrent(ctx, q)
	if err != nil || !ok {
		return 0, false, err
	}
	for _, pk := range [][]string{
		{"gateway_routing", "scope", "session_key"},
		{"session_model_usage", "session_id", "model", "billing_provider", "billing_base_url", "billing_mode", "task"},
	} {
		if ok, err := hasPK(ctx, q, pk[0], pk[1:]...); err != nil || !ok {
			return 0, false, err
		}
	}
	objs, err := readSchema(ctx, q)
	if err != nil {
		return 0, false, err
	}
	_, indexes := splitSchema(ddlSchema)
	for _, name := range append(append(ddlObjects(indexes), ddlObjects(ddlDeferred)...),
		"idx_messages_platform_msg_id", "idx_sessions_title_unique") {
		if !objs.has(name) {
			return 0, false, nil
		}
	}
	for _, ix := range ownIndexes {
		if !objs.has(ix.name) {
			return 0, false, nil
		}
	}
	for _, name := range deferredTriggers {
		if normSQL(objs[name]) != normSQL(storedTrigger(ddlDeferred, name)) {
			return 0, false, nil
		}
	}
	var nullActive bool
	if err := q.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM messages WHERE active IS NULL)").Scan(&nullActive); err != nil {
		return 0, false, err
	}
	if nullActive {
		return 0, false, nil
	}
	meta, err := readMeta(ctx, q, keyStale, keyCJKStale, keyHighWater, keyStorage, keyOptimizeAvail)
	if err != nil {
		return 0, false, err
	}
	if _, stale := meta[keyStale]; stale {
		return 0, false, nil
	}
	for _, fam := range []string{"messages_fts", "messages_fts_trigram", "messages_fts_cjk"} {
		if strings.HasPrefix(objs[fam], "CREATE VIRTUAL TABLE") {
			continue
		}
		for _, suffix := range []string{"_content", "_data", "_docsize", "_idx", "_config"} {
			if objs.has(fam + suffix) {
				return 0, false, nil // dropOrphanShadows
			}
		}
	}
	base := objs["messages_fts"]
	if base == "" {
		return 0, false, nil
	}
	if !strings.Contains(base, "tool_name") {
		return layoutLegacy, legacyFTSCurrent(objs, meta), nil
	}
	return layoutCurrent, currentFTSCurrent(objs, meta), nil
}

// columnsCurrent reports whether every table of schema.sql exists with all
// its columns (reconcileColumns would add nothing).
func columnsCurrent(ctx context.Context, q querier) (bool, error) {
	want, err := expectedColumns()
	if err != nil {
		return false, fmt.Errorf("parse schema columns: %w", err)
	}
	for _, t := range want {
		live, err := tableInfo(ctx, q, t.table)
		if err != nil || len(live) == 0 {
			return false, err
		}
		have := map[string]bool{}
		for _, c := range live {
			have[strings.ToLower(c.name)] = true
		}
		for _, c := range t.cols {
			if !have[strings.ToLower(c.name)] {
				return false, nil
			}
		}
	}
	return true, nil
}

// legacyFTSCurrent mirrors ensureLegacyFTS: it writes nothing when the
// inline tables and Hermes' legacy triggers are all there and the
// optimize-storage offer is already recorded.
func legacyFTSCurrent(objs schemaObjects, meta map[string]string) bool {
	if strings.Contains(objs["messages_fts"], "content=") || !objs.has("messages_fts_trigram") {
		return false
	}
	for _, name := range ftsTriggers {
		if normSQL(objs[name]) != normSQL(storedTrigger(ddlLegacy, name)) {
			return false
		}
	}
	return hasAll(objs, ddlObjects(ddlLegacy)) && meta[keyOptimizeAvail] == "1"
}

// currentFTSCurrent mirrors ensureCurrentFTS and ensureCJK: nothing to
// rebuild, create or replace, the layout version already stamped (unless a
// backfill is pending) and no optimize-storage offer left.
func currentFTSCurrent(objs schemaObjects, meta map[string]string) bool {
	if !strings.Contains(objs["messages_fts"], "messages_fts_src") || !objs.has("messages_fts_trigram") ||
		strings.Contains(strings.ToLower(objs["messages_fts_trigram"]), "tool_calls") ||
		!strings.Contains(objs["messages_fts_trigram_src"], "_delegate_from") {
		return false
	}
	if !hasAll(objs, ftsTriggers) || !hasAll(objs, ddlObjects(ddlFTS)) || !hasAll(objs, ddlObjects(ddlTrigram)) {
		return false
	}
	if broadUpdate(objs, "messages_fts_update", "messages_fts_trigram_update") {
		return false
	}
	if !objs.has("messages_fts_cjk") {
		return false
	}
	if _, cjkStale := meta[keyCJKStale]; !cjkStale {
		if broadUpdate(objs, "messages_fts_cjk_update") || !hasAll(objs, ddlObjects(ddlCJK)) || !hasAll(objs, ddlObjects(ddlCJKTriggers)) {
			return false
		}
	}
	if _, pending := meta[keyHighWater]; !pending && meta[keyStorage] != fmt.Sprint(FTSStorageVersion) {
		return false
	}
	_, offer := meta[keyOptimizeAvail]
	return !offer
}

func hasAll(objs schemaObjects, names []string) bool {
	for _, n := range names {
		if !objs.has(n) {
			return false
		}
	}
	return true
}

// broadUpdate reports whether any of the named triggers is one
// replaceBroadUpdateTriggers would replace.
func broadUpdate(objs schemaObjects, names ...string) bool {
	for _, n := range names {
		s := strings.ToUpper(normSQL(objs[n]))
		if strings.Contains(s, "AFTER UPDATE ON ") && !strings.Contains(s, "AFTER UPDATE OF ") {
			return true
		}
	}
	return false
}

// readMeta returns the state_meta values of the given keys that are set.
func readMeta(ctx context.Context, q querier, keys ...string) (map[string]string, error) {
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	rows, err := q.QueryContext(ctx, "SELECT key, COALESCE(value, '') FROM state_meta WHERE key IN ("+placeholders(len(keys))+")", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, rows.Err()
}
