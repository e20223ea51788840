package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessiondb/sessiondb"
)

// This file is the writing side of `sessiondb sync`: bulk upserts of rows
// read from a Hermes state.db, keyed so that a copy retried after a crash
// changes nothing, and the per-origin sync state (migrations/0003_sync.sql)
// committed in the same transactions as the rows it describes.

// A column of a copied table and the PostgreSQL type its values take.
type column struct {
	name string
	kind byte // 't' text, 'i' bigint, 'f' double precision, 'b' bytea
}

func names(cols []column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

var sessionCols = []column{
	{"id", 't'}, {"source", 't'}, {"created_source", 't'}, {"user_id", 't'}, {"session_key", 't'},
	{"chat_id", 't'}, {"chat_type", 't'}, {"thread_id", 't'}, {"display_name", 't'}, {"origin_json", 't'},
	{"expiry_finalized", 'i'}, {"model", 't'}, {"model_config", 't'}, {"system_prompt", 't'},
	{"system_prompt_hash", 't'}, {"parent_session_id", 't'}, {"started_at", 'f'}, {"ended_at", 'f'},
	{"end_reason", 't'}, {"message_count", 'i'}, {"tool_call_count", 'i'}, {"input_tokens", 'i'},
	{"output_tokens", 'i'}, {"cache_read_tokens", 'i'}, {"cache_write_tokens", 'i'}, {"reasoning_tokens", 'i'},
	{"cwd", 't'}, {"git_branch", 't'}, {"git_repo_root", 't'}, {"git_metadata_generation", 'i'},
	{"billing_provider", 't'}, {"billing_base_url", 't'}, {"billing_mode", 't'}, {"estimated_cost_usd", 'f'},
	{"actual_cost_usd", 'f'}, {"cost_status", 't'}, {"cost_source", 't'}, {"pricing_version", 't'},
	{"title", 't'}, {"title_source", 't'}, {"last_activity_at", 'f'}, {"last_activity_description", 't'},
	{"last_activity_provenance", 't'}, {"api_call_count", 'i'}, {"handoff_state", 't'},
	{"handoff_platform", 't'}, {"handoff_error", 't'}, {"compression_failure_cooldown_until", 'f'},
	{"compression_failure_error", 't'}, {"compression_fallback_streak", 'i'},
	{"compression_ineffective_count", 'i'}, {"compression_recovery_deadline", 'f'},
	{"compression_overload_streak", 'i'}, {"profile_name", 't'}, {"transport_profile", 't'},
	{"rewind_count", 'i'}, {"archived", 'i'}, {"auto_archived", 'i'}, {"pinned", 'i'}, {"hidden", 'i'},
	{"last_read_at", 'f'}, {"tool_names", 't'},
}

// messageCols start with the source's id, stored as origin_id.
var messageCols = []column{
	{"id", 'i'}, {"session_id", 't'}, {"role", 't'}, {"content", 't'}, {"tool_call_id", 't'},
	{"tool_calls", 't'}, {"tool_name", 't'}, {"effect_disposition", 't'}, {"timestamp", 'f'},
	{"token_count", 'i'}, {"finish_reason", 't'}, {"reasoning", 't'}, {"reasoning_content", 't'},
	{"reasoning_details", 't'}, {"codex_reasoning_items", 't'}, {"codex_message_items", 't'},
	{"platform_message_id", 't'}, {"observed", 'i'}, {"_compressed_summary", 'i'}, {"active", 'i'},
	{"compacted", 'i'}, {"api_content", 't'}, {"display_kind", 't'}, {"display_metadata", 't'},
	{"display_identity", 'b'}, {"display_order", 'i'}, {"message_uid", 't'},
	{"absorbed_message_uids", 't'}, {"tool_call_uids", 't'}, {"tool_call_uid", 't'},
}

var usageCols = []column{
	{"session_id", 't'}, {"model", 't'}, {"billing_provider", 't'}, {"billing_base_url", 't'},
	{"billing_mode", 't'}, {"task", 't'}, {"api_call_count", 'i'}, {"input_tokens", 'i'},
	{"output_tokens", 'i'}, {"cache_read_tokens", 'i'}, {"cache_write_tokens", 'i'},
	{"reasoning_tokens", 'i'}, {"estimated_cost_usd", 'f'}, {"actual_cost_usd", 'f'},
	{"cost_status", 't'}, {"cost_source", 't'}, {"first_seen", 'f'}, {"last_seen", 'f'},
}

var promptCols = []column{{"hash", 't'}, {"prompt", 't'}}

// The columns of each copied table, in the order the rows given to Ingest
// hold their values: Hermes' column names (schema version 30), so a copier
// reads them from the source by these names. MessageColumns[0] is the
// source's message id (stored as origin_id).
var (
	SessionColumns = names(sessionCols)
	MessageColumns = names(messageCols)
	UsageColumns   = names(usageCols)
	PromptColumns  = names(promptCols)
)

// MessageMutableColumns are the message columns Hermes changes after the
// insert (compaction, display order, observation, ids assigned later): a
// copier compares them to find messages to copy again.
var MessageMutableColumns = []string{
	"id", "active", "compacted", "_compressed_summary", "observed", "display_kind", "display_order",
	"display_identity", "token_count", "finish_reason", "platform_message_id", "message_uid",
	"absorbed_message_uids", "tool_call_uids", "tool_call_uid", "effect_disposition",
}

// searchColumnNames are the messages columns indexMessage computes
// (searchColumns), in the order of indexRow.args.
var searchColumnNames = strings.Split(searchColumns, ", ")

// ingestSearch computes one copied message's search columns, in the order
// of searchColumnNames. Every message copied goes through it once.
func ingestSearch(in indexInput) ([]any, error) {
	r, err := indexMessage(in)
	if err != nil {
		return nil, err
	}
	return r.args(), nil
}

// Ingest is one transaction of a bulk copy into the store, for one origin.
// Rows are []any in the order of the *Columns variables, holding what
// SQLite stores (int64, float64, string, []byte or nil); Ingest converts
// them to the columns' types and escapes text (NUL) on the way.
type Ingest struct {
	tx     pgx.Tx
	origin string
}

// Ingest runs fn in one write transaction for origin and commits it. The
// whole transaction is retried (fn runs again) after a serialization
// failure or a lost connection, so fn must not keep state across calls.
func (db *DB) Ingest(ctx context.Context, origin string, fn func(in *Ingest) error) error {
	return db.write(ctx, "sync origin "+origin, func(tx pgx.Tx) error {
		return fn(&Ingest{tx: tx, origin: origin})
	})
}

// convert turns a value as SQLite stores it into what column c takes.
// SQLite lets any column hold any type; a value PostgreSQL's type cannot
// hold is converted as SQLite's own CAST would (text to number: its
// leading number, else 0). Text that is not valid UTF-8, which PostgreSQL
// refuses, has its invalid bytes replaced with U+FFFD.
func convert(c column, v any) any {
	switch c.kind {
	case 't':
		switch x := v.(type) {
		case string:
			return pgText(x)
		case []byte:
			return pgText(string(x))
		case int64:
			return strconv.FormatInt(x, 10)
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case 'i':
		switch x := v.(type) {
		case int64:
			return x
		case float64:
			if math.IsNaN(x) {
				return int64(0)
			}
			return int64(x)
		case string:
			return textInt(x)
		case []byte:
			return textInt(string(x))
		}
	case 'f':
		switch x := v.(type) {
		case float64:
			return x
		case int64:
			return float64(x)
		case string:
			return textFloat(x)
		case []byte:
			return textFloat(string(x))
		}
	case 'b':
		switch x := v.(type) {
		case []byte:
			return x
		case string:
			return []byte(x)
		case int64:
			return []byte(strconv.FormatInt(x, 10))
		case float64:
			return []byte(strconv.FormatFloat(x, 'g', -1, 64))
		}
	}
	return nil
}

func pgText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return toPG(s)
}

func textInt(s string) int64 {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) {
		return int64(f)
	}
	return 0
}

func textFloat(s string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0
	}
	return f
}

func convertRow(cols []column, row []any, extra int) ([]any, error) {
	if len(row) != len(cols) {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "sync: a row of %d values for %d columns", len(row), len(cols))
	}
	out := make([]any, len(cols), len(cols)+extra)
	for i, c := range cols {
		out[i] = convert(c, row[i])
	}
	return out, nil
}

// stage copies rows (already converted, columns cols) into a temporary
// table shaped like table's cols, dropped at commit, and returns its name.
func (in *Ingest) stage(ctx context.Context, table string, cols []string, rows [][]any) (string, error) {
	name := "sync_in_" + table
	if _, err := in.tx.Exec(ctx, "CREATE TEMP TABLE IF NOT EXISTS "+name+" ON COMMIT DROP AS SELECT "+
		quoteCols(cols)+" FROM "+table+" WITH NO DATA"); err != nil {
		return "", err
	}
	if _, err := in.tx.Exec(ctx, "TRUNCATE "+name); err != nil {
		return "", err
	}
	_, err := in.tx.CopyFrom(ctx, pgx.Identifier{name}, cols, pgx.CopyFromRows(rows))
	return name, err
}

func quoteCols(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = pgx.Identifier{c}.Sanitize()
	}
	return strings.Join(q, ", ")
}

// updateSet is "c = EXCLUDED.c, …" for cols.
func updateSet(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		id := pgx.Identifier{c}.Sanitize()
		q[i] = id + " = EXCLUDED." + id
	}
	return strings.Join(q, ", ")
}

// Conflict is a session id of the source that another origin already
// holds in the database: it is not copied.
type Conflict struct {
	SessionID string
	Origin    string // the origin holding it
}

// UpsertSessions inserts or updates session rows (SessionColumns) of the
// ingest's origin. A session id another origin holds is not touched: it
// comes back as a Conflict.
func (in *Ingest) UpsertSessions(ctx context.Context, rows [][]any) ([]Conflict, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	cols := append(names(sessionCols), "origin")
	conv := make([][]any, len(rows))
	ids := make([]string, len(rows))
	for i, r := range rows {
		out, err := convertRow(sessionCols, r, 1)
		if err != nil {
			return nil, err
		}
		conv[i] = append(out, in.origin)
		ids[i], _ = out[0].(string)
	}
	name, err := in.stage(ctx, "sessions", cols, conv)
	if err != nil {
		return nil, fmt.Errorf("stage sessions: %w", err)
	}
	q := "INSERT INTO sessions (" + quoteCols(cols) + ") SELECT " + quoteCols(cols) + " FROM " + name +
		" ON CONFLICT (id) DO UPDATE SET " + updateSet(names(sessionCols[1:])) +
		" WHERE sessions.origin = EXCLUDED.origin RETURNING id"
	done, err := collectStrings(in.tx.Query(ctx, q))
	if err != nil {
		return nil, fmt.Errorf("upsert sessions: %w", err)
	}
	if len(done) == len(rows) {
		return nil, nil
	}
	applied := map[string]bool{}
	for _, id := range done {
		applied[id] = true
	}
	var rest []string
	for _, id := range ids {
		if !applied[id] {
			rest = append(rest, toPG(id))
		}
	}
	rs, err := in.tx.Query(ctx, "SELECT id, origin FROM sessions WHERE id = ANY($1) ORDER BY id", rest)
	if err != nil {
		return nil, err
	}
	var out []Conflict
	for rs.Next() {
		var c Conflict
		if err := rs.Scan(&c.SessionID, &c.Origin); err != nil {
			rs.Close()
			return nil, err
		}
		c.SessionID = fromPG(c.SessionID)
		out = append(out, c)
	}
	return out, rs.Err()
}

func collectStrings(rows pgx.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, fromPG(s))
	}
	return out, rows.Err()
}

// CopyMessages inserts or updates message rows (MessageColumns) of the
// ingest's origin, keyed by (origin, source id): copying a message twice
// stores it once. A message whose session is not the origin's in the
// database (missing, or another origin's) is skipped; the count of rows
// stored is returned.
func (in *Ingest) CopyMessages(ctx context.Context, rows [][]any) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	b, err := prepareMessages(ctx, in.tx, in.origin, rows)
	if err != nil {
		return 0, err
	}
	return in.upsertMessages(ctx, b.cols, b.rows)
}

// MessageBatch is message rows (MessageColumns) converted for the
// database, their search columns computed: the work of storing them that
// needs no transaction, done by PrepareMessages while another batch is
// written.
type MessageBatch struct {
	origin string
	cols   []string
	rows   [][]any
	text   []byte // rows in COPY's text format (copytext.go), or nil
}

// Len is the count of messages in the batch.
func (b *MessageBatch) Len() int { return len(b.rows) }

// PrepareMessages converts message rows (MessageColumns) of origin for
// AppendBatch. Their sessions must be stored (committed) already: indexing
// a message reads its session's source and model_config.
func (db *DB) PrepareMessages(ctx context.Context, origin string, rows [][]any) (*MessageBatch, error) {
	b, err := prepareMessages(ctx, db.pool, origin, rows)
	if err != nil {
		return nil, db.mapErr("prepare messages", err)
	}
	// Encoded here, by the preparers, not by the writer of the batch.
	var text []byte
	for _, r := range b.rows {
		if text, err = appendCopyRow(text, r); err != nil {
			return b, nil // the binary COPY takes any value
		}
	}
	b.text = text
	return b, nil
}

// AppendBatch stores a prepared batch of messages the database does not
// hold yet, with COPY straight into the table: the fast path of a first
// copy. Should a row be there already, or its session be missing, the
// batch goes through CopyMessages' upsert instead (which skips messages of
// sessions the origin does not hold).
func (in *Ingest) AppendBatch(ctx context.Context, b *MessageBatch) (int64, error) {
	if b.Len() == 0 {
		return 0, nil
	}
	if b.origin != in.origin {
		return 0, sessiondb.Errorf(sessiondb.EINVALID, "append messages: a batch of origin %q in a sync of origin %q", b.origin, in.origin)
	}
	if _, err := in.tx.Exec(ctx, "SAVEPOINT append_messages"); err != nil {
		return 0, err
	}
	var n int64
	var err error
	if b.text != nil {
		var tag pgconn.CommandTag
		tag, err = in.tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(b.text),
			"COPY messages ("+quoteCols(b.cols)+") FROM STDIN")
		n = tag.RowsAffected()
	} else {
		n, err = in.tx.CopyFrom(ctx, pgx.Identifier{"messages"}, b.cols, pgx.CopyFromRows(b.rows))
	}
	if err == nil {
		_, err = in.tx.Exec(ctx, "RELEASE SAVEPOINT append_messages")
		return n, err
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || (pe.Code != "23505" && pe.Code != "23503") {
		return 0, fmt.Errorf("copy messages: %w", err)
	}
	// 23505: a row is there already; 23503: a session is missing.
	if _, err := in.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT append_messages"); err != nil {
		return 0, err
	}
	return in.upsertMessages(ctx, b.cols, b.rows)
}

// querier is a transaction or the pool.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// prepareMessages converts message rows for COPY: the columns (origin_id,
// the rest of MessageColumns, origin, the search columns) and the values.
func prepareMessages(ctx context.Context, q querier, origin string, rows [][]any) (*MessageBatch, error) {
	cols := append([]string{"origin_id"}, names(messageCols[1:])...)
	cols = append(append(cols, "origin"), searchColumnNames...)
	sessions, err := sessionFacts(ctx, q, rows)
	if err != nil {
		return nil, err
	}
	conv := make([][]any, len(rows))
	for i, r := range rows {
		out, err := convertRow(messageCols, r, 1+len(searchColumnNames))
		if err != nil {
			return nil, err
		}
		out = append(out, origin)
		s := sessions[str(r[1])]
		search, err := ingestSearch(indexInput{Role: str(r[2]), Content: strPtr(r[3]), ToolName: strPtr(r[6]),
			ToolCalls: strPtr(r[5]), Source: s.source, ModelConfig: s.modelConfig})
		if err != nil {
			return nil, fmt.Errorf("index message %d: %w", out[0], err)
		}
		conv[i] = append(out, search...)
	}
	return &MessageBatch{origin: origin, cols: cols, rows: conv}, nil
}

// sessionFact is what indexing a message reads of its session.
type sessionFact struct {
	source      string
	modelConfig *string
}

// sessionFacts reads the source and model_config of the sessions of rows.
func sessionFacts(ctx context.Context, q querier, rows [][]any) (map[string]sessionFact, error) {
	seen := map[string]bool{}
	var ids []string
	for _, r := range rows {
		if id := str(r[1]); !seen[id] {
			seen[id] = true
			ids = append(ids, toPG(id))
		}
	}
	rs, err := q.Query(ctx, "SELECT id, source, model_config FROM sessions WHERE id = ANY($1)", ids)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[string]sessionFact{}
	for rs.Next() {
		var id, source string
		var mc *string
		if err := rs.Scan(&id, &source, &mc); err != nil {
			return nil, err
		}
		out[fromPG(id)] = sessionFact{source: fromPG(source), modelConfig: fromPGPtr(mc)}
	}
	return out, rs.Err()
}

func (in *Ingest) upsertMessages(ctx context.Context, cols []string, conv [][]any) (int64, error) {
	name, err := in.stage(ctx, "messages", cols, conv)
	if err != nil {
		return 0, fmt.Errorf("stage messages: %w", err)
	}
	set := make([]string, 0, len(cols))
	for _, c := range cols {
		if c != "origin_id" && c != "origin" {
			set = append(set, c)
		}
	}
	tag, err := in.tx.Exec(ctx, "INSERT INTO messages ("+quoteCols(cols)+") SELECT "+prefixCols("t", cols)+
		" FROM "+name+" t JOIN sessions s ON s.id = t.session_id AND s.origin = t.origin"+
		" ON CONFLICT (origin, origin_id) DO UPDATE SET "+updateSet(set))
	if err != nil {
		return 0, fmt.Errorf("copy messages: %w", err)
	}
	return tag.RowsAffected(), nil
}

func prefixCols(alias string, cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = alias + "." + pgx.Identifier{c}.Sanitize()
	}
	return strings.Join(q, ", ")
}

// strPtr is str of a value, nil for NULL.
func strPtr(v any) *string {
	if v == nil {
		return nil
	}
	s := str(v)
	return &s
}

// str is the text of a value as SQLite stores it, "" for NULL.
func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// UpsertUsage inserts or updates session_model_usage rows (UsageColumns)
// of sessions the origin holds; rows of other sessions are skipped. It
// returns the count stored.
func (in *Ingest) UpsertUsage(ctx context.Context, rows [][]any) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	cols := names(usageCols)
	conv := make([][]any, len(rows))
	for i, r := range rows {
		out, err := convertRow(usageCols, r, 0)
		if err != nil {
			return 0, err
		}
		conv[i] = out
	}
	name, err := in.stage(ctx, "session_model_usage", cols, conv)
	if err != nil {
		return 0, fmt.Errorf("stage usage: %w", err)
	}
	tag, err := in.tx.Exec(ctx, "INSERT INTO session_model_usage ("+quoteCols(cols)+") SELECT "+prefixCols("t", cols)+
		" FROM "+name+" t JOIN sessions s ON s.id = t.session_id AND s.origin = $1"+
		" ON CONFLICT (session_id, model, billing_provider, billing_base_url, billing_mode, task) DO UPDATE SET "+
		updateSet(cols[6:]), in.origin)
	if err != nil {
		return 0, fmt.Errorf("upsert usage: %w", err)
	}
	return tag.RowsAffected(), nil
}

// UpsertPrompts stores system_prompts rows (PromptColumns). A prompt's
// hash names its text, so a hash already stored (by any origin) is left as
// it is. It returns the count of new prompts.
func (in *Ingest) UpsertPrompts(ctx context.Context, rows [][]any) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	cols := names(promptCols)
	conv := make([][]any, len(rows))
	for i, r := range rows {
		out, err := convertRow(promptCols, r, 0)
		if err != nil {
			return 0, err
		}
		conv[i] = out
	}
	name, err := in.stage(ctx, "system_prompts", cols, conv)
	if err != nil {
		return 0, fmt.Errorf("stage prompts: %w", err)
	}
	tag, err := in.tx.Exec(ctx, "INSERT INTO system_prompts (hash, prompt) SELECT hash, prompt FROM "+name+" ON CONFLICT (hash) DO NOTHING")
	if err != nil {
		return 0, fmt.Errorf("upsert prompts: %w", err)
	}
	return tag.RowsAffected(), nil
}

// DeleteSessions deletes sessions of the origin, with their messages and
// usage rows, and returns how many there were.
func (in *Ingest) DeleteSessions(ctx context.Context, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := in.tx.Exec(ctx, "DELETE FROM sessions WHERE origin = $1 AND id = ANY($2)", in.origin, pgTexts(ids))
	return tag.RowsAffected(), err
}

// DeleteMessages deletes messages of the origin by source id.
func (in *Ingest) DeleteMessages(ctx context.Context, sourceIDs []int64) (int64, error) {
	if len(sourceIDs) == 0 {
		return 0, nil
	}
	tag, err := in.tx.Exec(ctx, "DELETE FROM messages WHERE origin = $1 AND origin_id = ANY($2)", in.origin, sourceIDs)
	return tag.RowsAffected(), err
}

// MessageIDs returns the source ids of the messages of one session of the
// origin with a source id at most maxID.
func (in *Ingest) MessageIDs(ctx context.Context, sessionID string, maxID int64) ([]int64, error) {
	rows, err := in.tx.Query(ctx, "SELECT origin_id FROM messages WHERE origin = $1 AND session_id = $2 AND origin_id <= $3 ORDER BY origin_id",
		in.origin, toPG(sessionID), maxID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// DeleteUsage deletes the usage rows of sessions of the origin.
func (in *Ingest) DeleteUsage(ctx context.Context, sessionIDs []string) (int64, error) {
	if len(sessionIDs) == 0 {
		return 0, nil
	}
	tag, err := in.tx.Exec(ctx, `DELETE FROM session_model_usage u USING sessions s
		WHERE s.id = u.session_id AND s.origin = $1 AND u.session_id = ANY($2)`, in.origin, pgTexts(sessionIDs))
	return tag.RowsAffected(), err
}

func pgTexts(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = toPG(s)
	}
	return out
}

// SyncState is what the database knows of an origin's previous syncs.
type SyncState struct {
	Origin           string
	Known            bool // the origin was synced before
	SourcePath       string
	SourceGeneration string
	// MessageHW: every source message with an id at most this is copied.
	MessageHW int64
	Sessions  map[string]SessionSync
}

// SessionSync is the sync state of one session of an origin.
type SessionSync struct {
	// Fingerprint of the session row and its usage rows as last copied;
	// nil while the session was not copied (Conflict).
	Fingerprint []byte
	// MessagesFingerprint combines the copied messages' mutable columns.
	MessagesFingerprint int64
	ConflictOrigin      string
	// Gone: the source no longer has the session.
	Gone bool
}

// SyncState reads the sync state of origin.
func (db *DB) SyncState(ctx context.Context, origin string) (*SyncState, error) {
	st := &SyncState{Origin: origin, Sessions: map[string]SessionSync{}}
	err := db.pool.QueryRow(ctx, "SELECT source_path, source_generation, message_hw FROM sync_origins WHERE origin = $1", origin).
		Scan(&st.SourcePath, &st.SourceGeneration, &st.MessageHW)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return st, nil
	case err != nil:
		return nil, db.mapErr("read the sync state of origin "+origin, err)
	}
	st.Known = true
	st.SourcePath, st.SourceGeneration = fromPG(st.SourcePath), fromPG(st.SourceGeneration)
	rows, err := db.pool.Query(ctx, `SELECT session_id, fingerprint, messages_fingerprint, COALESCE(conflict_origin, ''), gone
		FROM sync_sessions WHERE origin = $1`, origin)
	if err != nil {
		return nil, db.mapErr("read the sync state of origin "+origin, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var s SessionSync
		if err := rows.Scan(&id, &s.Fingerprint, &s.MessagesFingerprint, &s.ConflictOrigin, &s.Gone); err != nil {
			return nil, db.mapErr("read the sync state of origin "+origin, err)
		}
		st.Sessions[fromPG(id)] = s
	}
	return st, db.mapErr("read the sync state of origin "+origin, rows.Err())
}

// ClaimOrigin records the origin's source (inserting its row on the first
// sync) and checks that its high-water mark is still hw: another sync of
// the same origin that moved it is an ECONFLICT error.
func (in *Ingest) ClaimOrigin(ctx context.Context, sourcePath, generation string, hw int64) error {
	if _, err := in.tx.Exec(ctx, `INSERT INTO sync_origins (origin, source_path, source_generation) VALUES ($1, $2, $3)
		ON CONFLICT (origin) DO NOTHING`, in.origin, toPG(sourcePath), toPG(generation)); err != nil {
		return err
	}
	tag, err := in.tx.Exec(ctx, `UPDATE sync_origins SET source_path = $2, source_generation = $3, last_synced_at = now()
		WHERE origin = $1 AND message_hw = $4`, in.origin, toPG(sourcePath), toPG(generation), hw)
	if err != nil {
		return err
	}
	return in.moved(tag.RowsAffected())
}

// SetHighWater moves the origin's message high-water mark from from to to.
func (in *Ingest) SetHighWater(ctx context.Context, from, to int64) error {
	tag, err := in.tx.Exec(ctx, "UPDATE sync_origins SET message_hw = $3, last_synced_at = now() WHERE origin = $1 AND message_hw = $2",
		in.origin, from, to)
	if err != nil {
		return err
	}
	return in.moved(tag.RowsAffected())
}

func (in *Ingest) moved(n int64) error {
	if n == 1 {
		return nil
	}
	return sessiondb.Errorf(sessiondb.ECONFLICT,
		"sync origin %q: another sync of the same origin moved its state meanwhile; run one sync per origin", in.origin)
}

// PutSessionSync stores the sync state of sessions of the origin.
func (in *Ingest) PutSessionSync(ctx context.Context, states map[string]SessionSync) error {
	if len(states) == 0 {
		return nil
	}
	var ids, conflicts []string
	var fps [][]byte
	var mfps []int64
	var gone []bool
	for id, s := range states {
		ids = append(ids, toPG(id))
		fps = append(fps, s.Fingerprint)
		mfps = append(mfps, s.MessagesFingerprint)
		conflicts = append(conflicts, toPG(s.ConflictOrigin))
		gone = append(gone, s.Gone)
	}
	_, err := in.tx.Exec(ctx, `INSERT INTO sync_sessions (origin, session_id, fingerprint, messages_fingerprint, conflict_origin, gone)
		SELECT $1, id, fp, mfp, NULLIF(co, ''), g FROM unnest($2::text[], $3::bytea[], $4::bigint[], $5::text[], $6::boolean[]) AS u(id, fp, mfp, co, g)
		ON CONFLICT (origin, session_id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,
			messages_fingerprint = EXCLUDED.messages_fingerprint, conflict_origin = EXCLUDED.conflict_origin, gone = EXCLUDED.gone`,
		in.origin, ids, fps, mfps, conflicts, gone)
	return err
}

// DeleteSessionSync forgets the sync state of sessions of the origin.
func (in *Ingest) DeleteSessionSync(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := in.tx.Exec(ctx, "DELETE FROM sync_sessions WHERE origin = $1 AND session_id = ANY($2)", in.origin, pgTexts(ids))
	return err
}

// LockOrigin takes a lock that one sync of origin holds while it runs (a
// session-level advisory lock on a connection of its own). It waits up to
// wait for another holder to finish (a sync killed a moment ago holds it
// until the server sees its connection close), then fails with EBUSY,
// naming the holder; release ends it.
func (db *DB) LockOrigin(ctx context.Context, origin string, wait time.Duration) (release func(), err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, db.mapErr("lock sync origin "+origin, err)
	}
	h := fnv.New64a()
	h.Write([]byte("sessiondb sync\x00" + origin))
	key := int64(h.Sum64())
	deadline := time.Now().Add(wait)
	for {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
			conn.Release()
			return nil, db.mapErr("lock sync origin "+origin, err)
		}
		if ok {
			return func() {
				_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key)
				conn.Release()
			}, nil
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			conn.Release()
			return nil, db.mapErr("lock sync origin "+origin, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	defer conn.Release()
	var holder string
	_ = conn.QueryRow(ctx, `SELECT format('server process %s, client %s, connected %s', a.pid,
			COALESCE(host(a.client_addr), 'local'), date_trunc('second', a.backend_start))
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objid = ($1::bigint & 4294967295)::oid
			AND l.classid = (($1::bigint >> 32) & 4294967295)::oid LIMIT 1`, key).Scan(&holder)
	if holder == "" {
		holder = "another session"
	}
	return nil, sessiondb.Errorf(sessiondb.EBUSY,
		"another sessiondb sync of origin %q is running (%s); wait for it, give this one another --origin, or if that sync is gone, end its connection with SELECT pg_terminate_backend(PID)", origin, holder)
}
