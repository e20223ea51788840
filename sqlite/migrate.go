package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// SchemaVersion is the Hermes schema version this package writes.
const SchemaVersion = 30

// FTSStorageVersion is the FTS layout version of a file in the newest layout.
const FTSStorageVersion = 3

//go:embed schema/*.sql
var schemaFS embed.FS

func schemaSQL(name string) string {
	b, err := schemaFS.ReadFile("schema/" + name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return string(b)
}

var (
	ddlSchema       = schemaSQL("schema.sql")
	ddlDeferred     = schemaSQL("deferred.sql")
	ddlFTS          = schemaSQL("fts.sql")
	ddlTrigram      = schemaSQL("fts_trigram.sql")
	ddlCJK          = schemaSQL("fts_cjk.sql")
	ddlCJKTriggers  = schemaSQL("fts_cjk_triggers.sql")
	ddlLegacy       = schemaSQL("fts_legacy.sql")
	ftsTriggers     = []string{"messages_fts_insert", "messages_fts_delete", "messages_fts_update", "messages_fts_trigram_insert", "messages_fts_trigram_delete", "messages_fts_trigram_update"}
	ftsCJKTriggers  = []string{"messages_fts_cjk_insert", "messages_fts_cjk_delete", "messages_fts_cjk_update"}
	legacyConcatSQL = "COALESCE(content, '') || ' ' || COALESCE(tool_name, '') || ' ' || COALESCE(tool_calls, '')"
)

// ftsLayout is the FTS layout found in a file.
type ftsLayout int

const (
	layoutCurrent ftsLayout = iota // external content, v30 (FTS_STORAGE_VERSION 3)
	layoutLegacy                   // inline content || tool_name || tool_calls (schema v11–v22)
)

// String names the layout for `sessiondb info`.
func (l ftsLayout) String() string {
	if l == layoutLegacy {
		return "legacy-inline"
	}
	return "external-content"
}

// schemaObjects is a snapshot of sqlite_master: name → sql.
type schemaObjects map[string]string

func readSchema(ctx context.Context, q querier) (schemaObjects, error) {
	rows, err := q.QueryContext(ctx, "SELECT name, COALESCE(sql, '') FROM sqlite_master")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	objs := schemaObjects{}
	for rows.Next() {
		var name, s string
		if err := rows.Scan(&name, &s); err != nil {
			return nil, err
		}
		objs[name] = s
	}
	return objs, rows.Err()
}

func (o schemaObjects) has(name string) bool { _, ok := o[name]; return ok }

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// migrate brings the file to the newest Hermes layout in one BEGIN IMMEDIATE
// transaction (retried while another process holds the write lock), so a
// crash or an error leaves the file exactly as it was. The only step that
// cannot run inside it, the session_model_usage primary-key heal (it needs
// foreign_keys off), runs first in a transaction of its own.
func (db *DB) migrate(ctx context.Context) error {
	if err := db.healUsagePK(ctx); err != nil {
		return err
	}
	return db.writeTx(ctx, 0, "upgrade schema of "+db.path, func(tx *sql.Tx) error {
		// Another process may have upgraded the file since Open looked.
		layout, current, err := schemaCurrent(ctx, tx)
		if err != nil {
			return err
		}
		if !current {
			if layout, err = migrateTx(ctx, tx); err != nil {
				return err
			}
		}
		db.setLayout(layout)
		return nil
	})
}

func (db *DB) setLayout(l ftsLayout) {
	db.mu.Lock()
	db.layout = l
	db.mu.Unlock()
}

func migrateTx(ctx context.Context, tx *sql.Tx) (ftsLayout, error) {
	// Tables first, then the columns older files lack, then the indexes
	// that may name those columns.
	tables, indexes := splitSchema(ddlSchema)
	if _, err := tx.ExecContext(ctx, tables); err != nil {
		return 0, fmt.Errorf("create tables: %w", err)
	}
	if err := reconcileColumns(ctx, tx); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, indexes); err != nil {
		return 0, fmt.Errorf("create indexes: %w", err)
	}
	if err := healRoutingPK(ctx, tx); err != nil {
		return 0, err
	}
	_, _ = tx.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS idx_messages_platform_msg_id
		ON messages(session_id, platform_message_id) WHERE platform_message_id IS NOT NULL`)
	if _, err := tx.ExecContext(ctx, ddlDeferred); err != nil {
		return 0, fmt.Errorf("create deferred indexes: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE messages SET active = 1 WHERE active IS NULL"); err != nil {
		return 0, err
	}

	var version int
	err := tx.QueryRowContext(ctx, "SELECT version FROM schema_version LIMIT 1").Scan(&version)
	fresh := err == sql.ErrNoRows
	if err != nil && !fresh {
		return 0, err
	}
	if fresh {
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_version (version) VALUES (?)", SchemaVersion); err != nil {
			return 0, err
		}
	} else if err := dataMigrations(ctx, tx, version); err != nil {
		return 0, err
	}
	if err := ensureTitleIndex(ctx, tx); err != nil {
		return 0, err
	}
	for _, ix := range ownIndexes {
		if _, err := tx.ExecContext(ctx, ix.create); err != nil {
			return 0, fmt.Errorf("create %s: %w", ix.name, err)
		}
	}
	layout, err := ensureFTS(ctx, tx)
	if err != nil {
		return 0, err
	}
	if !fresh && version < SchemaVersion {
		if _, err := tx.ExecContext(ctx, "UPDATE schema_version SET version = ? WHERE version < ?", SchemaVersion, SchemaVersion); err != nil {
			return 0, err
		}
	}
	return layout, nil
}

// ownIndexes are sessiondb's own indexes, which Hermes never reads
// (idx_sessions_unlisted for the listing's total, idx_messages_newest for
// newest-first scans); migrateTx creates them, and a file without one is
// not current.
var ownIndexes = []struct{ name, create string }{
	{unlistedIndex, createUnlistedIndex},
	{newestIndex, createNewestIndex},
}

// splitSchema splits schema.sql into its CREATE TABLE and CREATE INDEX
// statements.
func splitSchema(ddl string) (tables, indexes string) {
	var t, i strings.Builder
	for _, stmt := range strings.Split(ddl, ";\n") {
		body := strings.TrimSpace(stripComments(stmt))
		switch {
		case body == "":
		case strings.HasPrefix(body, "CREATE INDEX"), strings.HasPrefix(body, "CREATE UNIQUE INDEX"):
			i.WriteString(body + ";\n")
		default:
			t.WriteString(body + ";\n")
		}
	}
	return t.String(), i.String()
}

func stripComments(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// expectedColumns maps every table of schema.sql to its columns, in order,
// with the type expression ALTER TABLE ADD COLUMN needs. It is derived from
// our own DDL by running it in an in-memory database.
var expectedColumns = sync.OnceValues(func() ([]tableColumns, error) {
	mem, err := sql.Open(driverName, ":memory:")
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	if _, err := mem.Exec(ddlSchema); err != nil {
		return nil, err
	}
	rows, err := mem.Query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	rows.Close()
	var out []tableColumns
	for _, n := range names {
		cols, err := tableInfo(context.Background(), mem, n)
		if err != nil {
			return nil, err
		}
		tc := tableColumns{table: n}
		for _, c := range cols {
			var parts []string
			if c.typ != "" {
				parts = append(parts, c.typ)
			}
			if c.notNull && c.pk == 0 {
				parts = append(parts, "NOT NULL")
			}
			if c.dflt.Valid {
				parts = append(parts, "DEFAULT "+c.dflt.String)
			}
			tc.cols = append(tc.cols, columnDef{name: c.name, expr: strings.Join(parts, " ")})
		}
		out = append(out, tc)
	}
	return out, nil
})

type tableColumns struct {
	table string
	cols  []columnDef
}

type columnDef struct{ name, expr string }

type columnInfo struct {
	name, typ string
	notNull   bool
	dflt      sql.NullString
	pk        int
}

func tableInfo(ctx context.Context, q querier, table string) ([]columnInfo, error) {
	rows, err := q.QueryContext(ctx, "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []columnInfo
	for rows.Next() {
		var c columnInfo
		if err := rows.Scan(&c.name, &c.typ, &c.notNull, &c.dflt, &c.pk); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// reconcileColumns adds every column of schema.sql that a table lacks. It
// never drops or alters a column; extra columns of a newer Hermes stay.
func reconcileColumns(ctx context.Context, tx *sql.Tx) error {
	want, err := expectedColumns()
	if err != nil {
		return fmt.Errorf("parse schema columns: %w", err)
	}
	for _, t := range want {
		live, err := tableInfo(ctx, tx, t.table)
		if err != nil {
			return err
		}
		if len(live) == 0 {
			continue // not created yet
		}
		have := map[string]bool{}
		for _, c := range live {
			have[strings.ToLower(c.name)] = true
		}
		for _, c := range t.cols {
			if have[strings.ToLower(c.name)] {
				continue
			}
			stmt := fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", quoteIdent(t.table), quoteIdent(c.name), c.expr)
			if _, err := tx.ExecContext(ctx, stmt); err != nil && !strings.Contains(err.Error(), "duplicate column") {
				return fmt.Errorf("add column %s.%s: %w", t.table, c.name, err)
			}
		}
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// healRoutingPK rebuilds gateway_routing when its primary key is not
// (scope, session_key); the newest row per key wins.
func healRoutingPK(ctx context.Context, tx *sql.Tx) error {
	ok, err := hasPK(ctx, tx, "gateway_routing", "scope", "session_key")
	if err != nil || ok {
		return err
	}
	for _, stmt := range []string{
		"ALTER TABLE gateway_routing RENAME TO gateway_routing_legacy_pk",
		`CREATE TABLE gateway_routing (
    scope TEXT NOT NULL DEFAULT '',
    session_key TEXT NOT NULL,
    entry_json TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (scope, session_key)
)`,
		`INSERT OR REPLACE INTO gateway_routing (scope, session_key, entry_json, updated_at)
		SELECT COALESCE(scope, ''), session_key, entry_json, updated_at FROM gateway_routing_legacy_pk ORDER BY updated_at ASC`,
		"DROP TABLE gateway_routing_legacy_pk",
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("heal gateway_routing primary key: %w", err)
		}
	}
	return nil
}

// hasPK reports whether table's primary key is exactly cols (a missing
// table counts as correct: schema.sql creates it).
func hasPK(ctx context.Context, q querier, table string, cols ...string) (bool, error) {
	info, err := tableInfo(ctx, q, table)
	if err != nil || len(info) == 0 {
		return true, err
	}
	var pk []string
	for _, c := range info {
		if c.pk > 0 {
			pk = append(pk, c.name)
		}
	}
	if len(pk) != len(cols) {
		return false, nil
	}
	for _, c := range cols {
		found := false
		for _, p := range pk {
			found = found || p == c
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}

// healUsagePK rebuilds session_model_usage when task is not part of its
// primary key (files from schema < 22). Rows of deleted sessions are kept,
// so foreign keys are off for the copy, which needs a transaction of its own.
func (db *DB) healUsagePK(ctx context.Context) error {
	ok, err := hasPK(ctx, db.write, "session_model_usage", "session_id", "model", "billing_provider", "billing_base_url", "billing_mode", "task")
	if err != nil {
		return db.mapErr("inspect session_model_usage", err)
	}
	if ok {
		return nil
	}
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return db.mapErr("heal session_model_usage", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys=OFF"); err != nil {
		return db.mapErr("heal session_model_usage", err)
	}
	defer conn.ExecContext(ctx, "PRAGMA foreign_keys=ON")
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return db.mapErr("heal session_model_usage", err)
	}
	defer tx.Rollback()
	// reconcile first so the legacy table has every column the copy reads
	if err := reconcileColumns(ctx, tx); err != nil {
		return db.mapErr("heal session_model_usage", err)
	}
	usageDDL := ddlSchema[strings.Index(ddlSchema, "CREATE TABLE IF NOT EXISTS session_model_usage"):]
	usageDDL = usageDDL[:strings.Index(usageDDL, ");")+2]
	for _, stmt := range []string{
		"ALTER TABLE session_model_usage RENAME TO session_model_usage_legacy_pk",
		usageDDL,
		`INSERT OR IGNORE INTO session_model_usage (session_id, model, billing_provider, billing_base_url,
			billing_mode, task, api_call_count, input_tokens, output_tokens, cache_read_tokens,
			cache_write_tokens, reasoning_tokens, estimated_cost_usd, actual_cost_usd, cost_status,
			cost_source, first_seen, last_seen)
		SELECT session_id, model, COALESCE(billing_provider, ''), COALESCE(billing_base_url, ''),
			COALESCE(billing_mode, ''), COALESCE(task, ''), COALESCE(api_call_count, 0), COALESCE(input_tokens, 0),
			COALESCE(output_tokens, 0), COALESCE(cache_read_tokens, 0), COALESCE(cache_write_tokens, 0),
			COALESCE(reasoning_tokens, 0), COALESCE(estimated_cost_usd, 0), COALESCE(actual_cost_usd, 0),
			cost_status, cost_source, first_seen, last_seen
		FROM session_model_usage_legacy_pk`,
		"DROP TABLE session_model_usage_legacy_pk",
		"CREATE INDEX IF NOT EXISTS idx_session_model_usage_session ON session_model_usage(session_id)",
		"CREATE INDEX IF NOT EXISTS idx_session_model_usage_model ON session_model_usage(model)",
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return db.mapErr("heal session_model_usage primary key", err)
		}
	}
	return db.mapErr("heal session_model_usage", tx.Commit())
}

// jx is Hermes' non-throwing JSON marker lookup on a JSON text column.
func jx(col, path string) string {
	return fmt.Sprintf("json_extract((CASE WHEN json_valid(%[1]s) THEN %[1]s ELSE json_object() END), '%[2]s')", col, path)
}

// dataMigrations runs the version-gated data steps for a file at version.
func dataMigrations(ctx context.Context, tx *sql.Tx, version int) error {
	if version < 16 {
		// Tag delegate subagent children, which Hermes hides and deletes with
		// their parent. Best effort, as in Hermes.
		branch := jx("sessions.model_config", "$._branched_from") + ` IS NOT NULL OR EXISTS (SELECT 1 FROM sessions p
			WHERE p.id = sessions.parent_session_id AND p.end_reason = 'branched' AND sessions.started_at >= p.ended_at)`
		compression := `EXISTS (SELECT 1 FROM sessions p WHERE p.id = sessions.parent_session_id AND p.end_reason = 'compression')`
		reset := jx("sessions.model_config", "$._reset_from") + ` IS NOT NULL OR EXISTS (SELECT 1 FROM sessions p
			WHERE p.id = sessions.parent_session_id
			AND p.end_reason IN ('session_reset', 'session_switch', 'idle', 'daily', 'suspended', 'resume_pending_expired')
			AND sessions.session_key IS NOT NULL AND sessions.session_key != '' AND sessions.session_key = p.session_key)`
		_, _ = tx.ExecContext(ctx, `UPDATE sessions SET model_config = json_set(COALESCE(model_config, '{}'), '$._delegate_from', parent_session_id)
			WHERE parent_session_id IS NOT NULL AND `+jx("model_config", "$._delegate_from")+` IS NULL
			AND NOT (`+branch+`) AND NOT (`+compression+`) AND NOT (`+reset+`)`)
		_, _ = tx.ExecContext(ctx, `UPDATE sessions SET model_config = json_set(COALESCE(model_config, '{}'), '$._delegate_from', '__orphaned__')
			WHERE parent_session_id IS NULL AND `+jx("model_config", "$._delegate_from")+` IS NULL
			AND `+jx("model_config", "$._branched_from")+` IS NULL AND title IS NULL AND message_count <= 25
			AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id AND m.role = 'tool')
			AND NOT EXISTS (SELECT 1 FROM sessions ch WHERE ch.parent_session_id = sessions.id)`)
	}
	if version < 20 {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO session_model_usage (session_id, model,
				billing_provider, billing_base_url, billing_mode, api_call_count, input_tokens, output_tokens,
				cache_read_tokens, cache_write_tokens, reasoning_tokens, estimated_cost_usd, actual_cost_usd,
				cost_status, cost_source, first_seen, last_seen)
			SELECT id, COALESCE(model, 'unknown'), COALESCE(billing_provider, ''), COALESCE(billing_base_url, ''),
				COALESCE(billing_mode, ''), COALESCE(api_call_count, 0), COALESCE(input_tokens, 0),
				COALESCE(output_tokens, 0), COALESCE(cache_read_tokens, 0), COALESCE(cache_write_tokens, 0),
				COALESCE(reasoning_tokens, 0), COALESCE(estimated_cost_usd, 0), COALESCE(actual_cost_usd, 0),
				cost_status, cost_source, started_at, COALESCE(ended_at, started_at)
			FROM sessions
			WHERE COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0)
				+ COALESCE(cache_write_tokens, 0) + COALESCE(reasoning_tokens, 0) + COALESCE(api_call_count, 0) > 0`); err != nil {
			return fmt.Errorf("seed session_model_usage: %w", err)
		}
	}
	if version < 25 {
		if err := movePrompts(ctx, tx); err != nil {
			return err
		}
	}
	return nil
}

// movePrompts moves inline sessions.system_prompt values into system_prompts.
func movePrompts(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT id, system_prompt FROM sessions WHERE system_prompt IS NOT NULL")
	if err != nil {
		return err
	}
	type move struct{ id, prompt string }
	var moves []move
	for rows.Next() {
		var m move
		if err := rows.Scan(&m.id, &m.prompt); err != nil {
			rows.Close()
			return err
		}
		moves = append(moves, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, m := range moves {
		h, err := storePrompt(ctx, tx, m.prompt)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET system_prompt_hash = ?, system_prompt = NULL WHERE id = ?", h, m.id); err != nil {
			return err
		}
	}
	return nil
}

// ensureTitleIndex creates the unique title index. Duplicate titles (which
// older files allow) are healed first: the newest row keeps the title.
func ensureTitleIndex(ctx context.Context, tx *sql.Tx) error {
	const create = "CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique ON sessions(title) WHERE title IS NOT NULL"
	if _, err := tx.ExecContext(ctx, create); err == nil {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE sessions AS older SET title = NULL
		WHERE title IS NOT NULL AND EXISTS (SELECT 1 FROM sessions AS newer
			WHERE newer.title = older.title AND newer.rowid > older.rowid)`); err != nil {
		return fmt.Errorf("heal duplicate titles: %w", err)
	}
	if _, err := tx.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("create unique title index: %w", err)
	}
	return nil
}

// metaInt reads an integer state_meta value.
func metaInt(ctx context.Context, q querier, key string) (int64, bool, error) {
	var v sql.NullString
	err := q.QueryRowContext(ctx, "SELECT value FROM state_meta WHERE key = ?", key).Scan(&v)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v.String), 10, 64)
	if err != nil {
		return 0, false, nil
	}
	return n, true, nil
}
