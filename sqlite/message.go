package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Hermes' sane window for timestamps (Unix seconds), which recency
// expressions keep to.
const (
	epochMin = sessiondb.MinTimestamp
	epochMax = sessiondb.MaxTimestamp
)

func unixSeconds(t time.Time) float64 { return sessiondb.UnixSeconds(t) }

// row is a message prepared for INSERT (sessiondb.PrepareMessage), its
// nullable values as SQL arguments.
type row struct {
	role                                                         string
	content                                                      *string
	toolCallID, toolName, effect, finish, platformID, apiContent any
	displayKind                                                  any
	toolCalls, reasoning, reasoningContent, reasoningDetails     any
	codexReasoning, codexMessage, displayMetadata                any
	tokenCount                                                   any
	timestamp                                                    float64
	observed, compressed                                         int
	counted                                                      int // what it adds to tool_call_count
}

// prepare checks and encodes a message for INSERT with the store's limits
// (sessiondb.PrepareMessage; imported as PrepareOptions.Imported).
func (db *DB) prepare(m sessiondb.NewMessage, imported bool) (*row, error) {
	p, err := sessiondb.PrepareMessage(m, db.prepareOptions(imported))
	if err != nil {
		return nil, err
	}
	return rowOf(p), nil
}

func (db *DB) prepareOptions(imported bool) sessiondb.PrepareOptions {
	return sessiondb.PrepareOptions{MaxBytes: db.maxMessage, Now: db.now, Imported: imported}
}

// rowOf turns a prepared message into a row's SQL arguments.
func rowOf(p *sessiondb.PreparedMessage) *row {
	arg := func(s *string) any {
		if s == nil {
			return nil
		}
		return *s
	}
	r := &row{
		role: p.Role, content: p.Content,
		toolCallID: arg(p.ToolCallID), toolName: arg(p.ToolName), effect: arg(p.EffectDisposition),
		finish: arg(p.FinishReason), platformID: arg(p.PlatformMessageID), apiContent: arg(p.APIContent),
		displayKind: arg(p.DisplayKind), toolCalls: arg(p.ToolCalls), reasoning: arg(p.Reasoning),
		reasoningContent: arg(p.ReasoningContent), reasoningDetails: arg(p.ReasoningDetails),
		codexReasoning: arg(p.CodexReasoningItems), codexMessage: arg(p.CodexMessageItems),
		displayMetadata: arg(p.DisplayMetadata), timestamp: p.Timestamp, counted: p.CountedCalls(),
	}
	if p.TokenCount != nil {
		r.tokenCount = *p.TokenCount
	}
	if p.Observed {
		r.observed = 1
	}
	if p.CompressedSummary {
		r.compressed = 1
	}
	return r
}

const insertMessageSQL = `INSERT INTO messages (id, display_order, session_id, role, content, tool_call_id, tool_calls,
	tool_name, effect_disposition, timestamp, token_count, finish_reason, reasoning, reasoning_content,
	reasoning_details, codex_reasoning_items, codex_message_items, platform_message_id, observed,
	_compressed_summary, active, api_content, display_kind, display_metadata)
	VALUES ` + insertMessageValues

// insertMessageValues is one row of insertMessageSQL; it takes
// insertMessageArgs arguments.
const (
	insertMessageValues = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)"
	insertMessageArgs   = 23
	maxInsertRows       = 500 // rows per statement: 500*23 bound values, under SQLite's 32,766
)

// nextMessageIDSQL is the id SQLite's AUTOINCREMENT gives the next message:
// one past the largest id ever issued and the largest id present.
const nextMessageIDSQL = `SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0),
	COALESCE((SELECT MAX(id) FROM messages), 0)) + 1`

// AppendMessage appends one message and updates the session's counters in
// the same transaction. It is refused once the session ended with
// 'compression' (the conversation continues in a child session).
func (db *DB) AppendMessage(ctx context.Context, m sessiondb.NewMessage) (int64, error) {
	r, err := db.prepare(m, false)
	if err != nil {
		return 0, err
	}
	return db.group.append(ctx, db, m.SessionID, r)
}

// AppendMessages appends ms to one session in a single transaction: all of
// them or none.
func (db *DB) AppendMessages(ctx context.Context, sessionID string, ms []sessiondb.NewMessage) (int, error) {
	rows := make([]*row, len(ms))
	calls := 0
	for i, m := range ms {
		r, err := db.prepare(sessiondb.BatchMessage(m), false)
		if err != nil {
			return 0, fmt.Errorf("message %d: %w", i+1, err)
		}
		rows[i] = r
		calls += r.countedCalls()
	}
	if len(rows) == 0 {
		return 0, nil
	}
	sessionIDs := make([]string, min(len(rows), maxInsertRows))
	for i := range sessionIDs {
		sessionIDs[i] = sessionID
	}
	err := db.writeTx(ctx, TranscriptWritePatience, fmt.Sprintf("append %d messages to %q", len(rows), sessionID), func(tx *sql.Tx) error {
		if err := appendable(ctx, tx, sessionID); err != nil {
			return err
		}
		for start := 0; start < len(rows); start += maxInsertRows {
			chunk := rows[start:min(start+maxInsertRows, len(rows))]
			if _, err := insertMessages(ctx, tx, sessionIDs[:len(chunk)], chunk); err != nil {
				return err
			}
		}
		return bumpCounters(ctx, tx, sessionID, len(rows), calls)
	})
	if err != nil {
		return 0, err
	}
	return len(rows), nil
}

// countedCalls is what a row adds to tool_call_count
// (sessiondb.PreparedMessage.CountedCalls).
func (r *row) countedCalls() int { return r.counted }

func appendable(ctx context.Context, tx *sql.Tx, sessionID string) error {
	var endReason sql.NullString
	var endedAt sql.NullFloat64
	err := tx.QueryRowContext(ctx, "SELECT ended_at, end_reason FROM sessions WHERE id = ?", sessionID).Scan(&endedAt, &endReason)
	if errors.Is(err, sql.ErrNoRows) {
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "session %q not found; create it first (sessiondb new --id %s --source SOURCE)", sessionID, sessionID)
	}
	if err != nil {
		return err
	}
	if endedAt.Valid && endReason.String == sessiondb.EndReasonCompression {
		return sessiondb.Errorf(sessiondb.ECONFLICT, "session %q ended with compression; append to its continuation session instead", sessionID)
	}
	return nil
}

// insertMessages inserts rows (row i into session sessionIDs[i]) with one
// statement and returns the first row's id; the others follow it, one
// apart. The ids are the ones AUTOINCREMENT would give (the write lock is
// held), and each row's display_order is its id, which is what Hermes'
// messages_display_order_insert trigger would set for a row without a
// display_identity: given at the INSERT, the trigger does not fire, and
// does not rewrite the whole row (a second copy of a large message).
func insertMessages(ctx context.Context, tx *sql.Tx, sessionIDs []string, rows []*row) (int64, error) {
	var first int64
	if err := tx.QueryRowContext(ctx, nextMessageIDSQL).Scan(&first); err != nil {
		return 0, err
	}
	var q strings.Builder
	q.WriteString(insertMessageSQL)
	args := make([]any, 0, len(rows)*insertMessageArgs)
	for i, r := range rows {
		if i > 0 {
			q.WriteString(", " + insertMessageValues)
		}
		var content any
		if r.content != nil {
			content = *r.content
		}
		id := first + int64(i)
		args = append(args, id, id, sessionIDs[i], r.role, content, r.toolCallID, r.toolCalls,
			r.toolName, r.effect, r.timestamp, r.tokenCount, r.finish, r.reasoning, r.reasoningContent,
			r.reasoningDetails, r.codexReasoning, r.codexMessage, r.platformID, r.observed,
			r.compressed, r.apiContent, r.displayKind, r.displayMetadata)
	}
	res, err := tx.ExecContext(ctx, q.String(), args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if n != int64(len(rows)) {
		return 0, fmt.Errorf("inserted %d messages of %d", n, len(rows))
	}
	return first, nil
}

func bumpCounters(ctx context.Context, tx *sql.Tx, sessionID string, messages, calls int) error {
	_, err := tx.ExecContext(ctx, `UPDATE sessions SET message_count = COALESCE(message_count, 0) + ?,
		tool_call_count = COALESCE(tool_call_count, 0) + ? WHERE id = ?`, messages, calls, sessionID)
	return err
}

const messageColumns = `id, session_id, role, content, tool_call_id, tool_calls, tool_name,
	effect_disposition, timestamp, token_count, finish_reason, reasoning, reasoning_content,
	reasoning_details, codex_reasoning_items, codex_message_items, platform_message_id,
	COALESCE(observed, 0), COALESCE(_compressed_summary, 0), COALESCE(active, 1), COALESCE(compacted, 0),
	api_content, display_kind, display_metadata`

func scanMessage(rs scanner) (*sessiondb.Message, error) {
	var m sessiondb.Message
	var content, toolCalls, details, codexR, codexM, meta sql.NullString
	err := rs.Scan(&m.ID, &m.SessionID, &m.Role, &content, &m.ToolCallID, &toolCalls, &m.ToolName,
		&m.EffectDisposition, &m.Timestamp, &m.TokenCount, &m.FinishReason, &m.Reasoning, &m.ReasoningContent,
		&details, &codexR, &codexM, &m.PlatformMessageID,
		&m.Observed, &m.CompressedSummary, &m.Active, &m.Compacted,
		&m.APIContent, &m.DisplayKind, &meta)
	if err != nil {
		return nil, err
	}
	if content.Valid {
		m.Content = sessiondb.DecodeContent(&content.String)
	}
	m.ToolCalls = rawJSON(toolCalls, "[]")
	m.ReasoningDetails = rawJSON(details, "")
	m.CodexReasoningItems = rawJSON(codexR, "")
	m.CodexMessageItems = rawJSON(codexM, "")
	m.DisplayMetadata = rawJSON(meta, "")
	return &m, nil
}

// rawJSON is sessiondb.StoredJSON for a scanned column.
func rawJSON(s sql.NullString, fallback string) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return sessiondb.StoredJSON(&s.String, fallback)
}

// Messages returns a session's messages in id order; by default only active
// rows. It returns ENOTFOUND when the session does not exist.
func (db *DB) Messages(ctx context.Context, sessionID string, f sessiondb.MessageFilter) ([]*sessiondb.Message, error) {
	if f.AfterID > 0 && (f.Latest || f.Offset > 0 || f.IncludeCompacted) {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "messages: after_id cannot be combined with latest, offset or include_compacted")
	}
	if _, err := db.Session(ctx, sessionID); err != nil {
		return nil, err
	}
	where := []string{"session_id = ?"}
	args := []any{sessionID}
	switch {
	case f.IncludeInactive:
	case f.IncludeCompacted:
		where = append(where, "(active = 1 OR compacted = 1)")
	default:
		where = append(where, "active = 1")
	}
	if f.AfterID > 0 {
		where = append(where, "id > ?")
		args = append(args, f.AfterID)
	}
	order := "id"
	if f.Latest {
		order = "id DESC"
	}
	q := "SELECT " + messageColumns + " FROM messages WHERE " + strings.Join(where, " AND ") + " ORDER BY " + order
	if f.Limit > 0 || f.Offset > 0 {
		limit := f.Limit
		if limit <= 0 {
			limit = -1
		}
		q += " LIMIT ? OFFSET ?"
		args = append(args, limit, f.Offset)
	}
	rows, err := db.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.mapErr("get messages", err)
	}
	defer rows.Close()
	var out []*sessiondb.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, db.mapErr("get messages", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr("get messages", err)
	}
	if f.Latest {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}

// Conversation returns a session's messages in the OpenAI chat format:
// every message has role and content; other keys appear only when they carry
// information. With IncludeAncestors the compression lineage comes first,
// root to tip, and a user prompt replayed at the start of a continuation is
// kept once.
func (db *DB) Conversation(ctx context.Context, sessionID string, o sessiondb.ConversationOptions) ([]map[string]any, error) {
	chain := []string{sessionID}
	if o.IncludeAncestors {
		var err error
		if chain, err = db.compressionAncestors(ctx, sessionID); err != nil {
			return nil, err
		}
	}
	return sessiondb.ReplayChain(chain, o, func(id string, f sessiondb.MessageFilter) ([]*sessiondb.Message, error) {
		return db.Messages(ctx, id, f)
	})
}

// compressionAncestors returns the session's compression lineage, root
// first: parents are followed while they ended with 'compression'.
func (db *DB) compressionAncestors(ctx context.Context, id string) ([]string, error) {
	rows, err := db.read.QueryContext(ctx, `WITH RECURSIVE up(id, parent, depth) AS (
			SELECT id, parent_session_id, 0 FROM sessions WHERE id = ?
			UNION ALL
			SELECT p.id, p.parent_session_id, up.depth + 1 FROM sessions p JOIN up ON p.id = up.parent
			WHERE p.end_reason = 'compression' AND up.depth < 1000)
		SELECT id FROM up ORDER BY depth DESC`, id)
	if err != nil {
		return nil, db.mapErr("get lineage", err)
	}
	defer rows.Close()
	var chain []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, db.mapErr("get lineage", err)
		}
		chain = append(chain, s)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr("get lineage", err)
	}
	if len(chain) == 0 {
		return nil, notFound(id)
	}
	return chain, nil
}
