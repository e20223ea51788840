package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Hermes' sane window for timestamps (Unix seconds): a caller-supplied
// value outside it is replaced by the store's clock, and recency
// expressions ignore stored values outside it.
const (
	epochMin = 0.0
	epochMax = 4200000000.0
)

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// row is a message prepared for INSERT: every value already scrubbed and
// encoded as Hermes stores it.
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
	calls                                                        int
}

// prepare checks and encodes a message for INSERT: its size
// (messageBytes) and the nesting of its JSON fields (MaxJSONDepth) are
// bounded. For an import (imported), a JSON field given as a JSON string is
// stored as that text whatever its nesting, and content given as text
// starting with ContentJSONPrefix is stored as it is: that is how an export
// writes a stored value it cannot read back as JSON, so it restores as it
// was.
func (db *DB) prepare(m sessiondb.NewMessage, imported bool) (*row, error) {
	if m.Role == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "append message: a role is required (user, assistant, tool, system)")
	}
	if err := db.checkMessageSize(m); err != nil {
		return nil, err
	}
	var content *string
	var err error
	if s, ok := m.Content.(string); ok && imported && strings.HasPrefix(s, sessiondb.ContentJSONPrefix) {
		s = sessiondb.ScrubText(s)
		content = &s
	} else if content, err = sessiondb.EncodeContent(m.Content); err != nil {
		return nil, appendErr(err)
	}
	r := &row{
		role:        sessiondb.ScrubText(m.Role),
		content:     content,
		toolCallID:  nullString(m.ToolCallID),
		toolName:    nullString(m.ToolName),
		effect:      nullString(m.EffectDisposition),
		finish:      nullString(m.FinishReason),
		platformID:  nullString(m.PlatformMessageID),
		apiContent:  nullString(m.APIContent),
		displayKind: nullString(m.DisplayKind),
		timestamp:   m.Timestamp,
	}
	if math.IsNaN(r.timestamp) || r.timestamp <= epochMin || r.timestamp > epochMax {
		r.timestamp = unixSeconds(db.now())
	}
	if m.TokenCount != nil {
		r.tokenCount = *m.TokenCount
	}
	if m.Reasoning != nil {
		r.reasoning = sessiondb.ScrubText(*m.Reasoning)
	}
	if m.ReasoningContent != nil {
		r.reasoningContent = sessiondb.ScrubText(*m.ReasoningContent)
	}
	if m.Observed {
		r.observed = 1
	}
	if m.CompressedSummary {
		r.compressed = 1
	}
	calls, err := toolCallsJSON(m.ToolCalls, imported)
	if err != nil {
		return nil, err
	}
	if calls != "" {
		r.toolCalls = calls
		r.calls = sessiondb.ToolCallCount(json.RawMessage(calls))
	}
	for _, f := range []struct {
		name string
		in   json.RawMessage
		out  *any
	}{
		{"reasoning_details", m.ReasoningDetails, &r.reasoningDetails},
		{"codex_reasoning_items", m.CodexReasoningItems, &r.codexReasoning},
		{"codex_message_items", m.CodexMessageItems, &r.codexMessage},
		{"display_metadata", m.DisplayMetadata, &r.displayMetadata},
	} {
		v, err := jsonColumn(f.name, f.in, imported)
		if err != nil {
			return nil, err
		}
		*f.out = v
	}
	return r, nil
}

// toolCallsJSON normalises tool_calls: a JSON string holding JSON is
// unwrapped, an empty value (null, "", [], {}) becomes NULL, anything else
// must be valid JSON, nested at most MaxJSONDepth deep, and is stored as
// given. For an import, a string nested deeper is stored as it is.
func toolCallsJSON(raw json.RawMessage, imported bool) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	if err := sessiondb.CheckJSONDepth("tool_calls", raw); err != nil {
		return "", appendErr(err)
	}
	if !json.Valid(raw) {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "append message: tool_calls is not valid JSON")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return "", nil
		}
		if imported && sessiondb.TooDeep(s) {
			return sessiondb.ScrubText(s), nil
		}
		if err := sessiondb.CheckJSONDepth("tool_calls", s); err != nil {
			return "", appendErr(err)
		}
		if !json.Valid([]byte(s)) {
			return "", sessiondb.Errorf(sessiondb.EINVALID, "append message: tool_calls string is not valid JSON")
		}
		raw = json.RawMessage(s)
	}
	if sessiondb.ToolCallCount(raw) == 0 {
		return "", nil
	}
	return sessiondb.ScrubText(string(raw)), nil
}

// jsonColumn stores a JSON column: null/empty as NULL, a JSON string as the
// string itself (not encoded twice), anything else as JSON text. What is
// stored may nest at most MaxJSONDepth deep, except a string an import
// stores as it is.
func jsonColumn(name string, raw json.RawMessage, imported bool) (any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if err := sessiondb.CheckJSONDepth(name, raw); err != nil {
		return nil, appendErr(err)
	}
	if !json.Valid(raw) {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "append message: %s is not valid JSON", name)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if !imported {
			if err := sessiondb.CheckJSONDepth(name, s); err != nil {
				return nil, appendErr(err)
			}
		}
		return sessiondb.ScrubText(s), nil
	}
	return sessiondb.ScrubText(string(raw)), nil
}

// appendErr prefixes an EINVALID error of the domain with "append message".
func appendErr(err error) error {
	var e *sessiondb.Error
	if errors.As(err, &e) && e.Code == sessiondb.EINVALID {
		return &sessiondb.Error{Code: e.Code, Message: "append message: " + e.Message, Err: e.Err}
	}
	return err
}

// checkMessageSize refuses a message whose text fields together are over
// the store's MaxMessageBytes. Structured content is measured as its JSON.
func (db *DB) checkMessageSize(m sessiondb.NewMessage) error {
	if db.maxMessage <= 0 {
		return nil
	}
	n := int64(len(m.ToolCallID) + len(m.ToolCalls) + len(m.ToolName) + len(m.EffectDisposition) + len(m.FinishReason) +
		len(m.ReasoningDetails) + len(m.CodexReasoningItems) + len(m.CodexMessageItems) + len(m.PlatformMessageID) +
		len(m.APIContent) + len(m.DisplayKind) + len(m.DisplayMetadata) + len(m.Role))
	if m.Reasoning != nil {
		n += int64(len(*m.Reasoning))
	}
	if m.ReasoningContent != nil {
		n += int64(len(*m.ReasoningContent))
	}
	switch c := m.Content.(type) {
	case nil:
	case string:
		n += int64(len(c))
	case json.RawMessage:
		n += int64(len(c))
	default:
		if n <= db.maxMessage { // measure it only when it could still fit
			b, err := json.Marshal(c)
			if err != nil {
				return &sessiondb.Error{Code: sessiondb.EINVALID, Message: "append message: structured message content cannot be encoded as JSON: " + err.Error(), Err: err}
			}
			n += int64(len(b))
		}
	}
	if n > db.maxMessage {
		return sessiondb.Errorf(sessiondb.EINVALID, "append message: the message holds %s of text (content, tool calls, reasoning and the other fields together), over the limit of %s; keep large outputs in a file and store a reference, or raise the limit (Options.MaxMessageBytes; %s for the sessiondb command)",
			sessiondb.FormatBytes(n), sessiondb.FormatBytes(db.maxMessage), MaxMessageSizeEnv)
	}
	return nil
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
		if m.Role != sessiondb.RoleAssistant {
			// A batch keeps reasoning for assistant rows only, as Hermes does.
			m.Reasoning, m.ReasoningContent, m.ReasoningDetails = nil, nil, nil
			m.CodexReasoningItems, m.CodexMessageItems = nil, nil
		}
		r, err := db.prepare(m, false)
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

// countedCalls is what a row adds to tool_call_count: tool results add
// nothing, the calls themselves are counted on the assistant row.
func (r *row) countedCalls() int {
	if r.role == sessiondb.RoleTool {
		return 0
	}
	return r.calls
}

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

// rawJSON returns a stored JSON column as raw JSON: NULL stays nil, valid
// JSON is returned as it is, and invalid text becomes fallback (or, when
// fallback is "", a JSON string holding the text). Text nested deeper than
// MaxJSONDepth, valid or not, becomes a JSON string holding it: no reader
// of the message (JSON encoders, Python's json) has to descend into it.
func rawJSON(s sql.NullString, fallback string) json.RawMessage {
	if !s.Valid || s.String == "" {
		return nil
	}
	deep := sessiondb.TooDeep(s.String)
	if !deep && json.Valid([]byte(s.String)) {
		return json.RawMessage(s.String)
	}
	if fallback != "" && !deep {
		return json.RawMessage(fallback)
	}
	b, _ := json.Marshal(s.String)
	return b
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

// memoryContextREs strip recalled-memory blocks that leaked into stored
// user and assistant text, in Hermes' order: whole blocks, the system note
// that introduces them, then stray tags.
var memoryContextREs = []*regexp.Regexp{
	regexp.MustCompile(`(?i)<\s*memory-context\s*>[\s\S]*?</\s*memory-context\s*>`),
	regexp.MustCompile(`(?i)\[System note:\s*The following is recalled memory context,\s*NOT new user input\.\s*Treat as (?:informational background data|authoritative reference data[^\]]*)\.\]\s*`),
	regexp.MustCompile(`(?i)</?\s*memory-context\s*>`),
}

func stripMemoryContext(s string) string {
	for _, re := range memoryContextREs {
		if re.MatchString(s) { // ReplaceAllString copies s twice even when nothing matches
			s = re.ReplaceAllString(s, "")
		}
	}
	return strings.TrimSpace(s)
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
	var out []map[string]any
	for i, sid := range chain {
		ms, err := db.Messages(ctx, sid, sessiondb.MessageFilter{IncludeInactive: o.IncludeInactive})
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			msg := conversationMessage(m, o.IncludeRowIDs)
			if i > 0 && m.Role == sessiondb.RoleUser && replayed(out, msg) {
				continue // a continuation replays a prompt its ancestor already holds
			}
			out = append(out, msg)
		}
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out, nil
}

// replayed reports whether user message msg repeats one already in ms: a
// clone (same timestamp and content) anywhere, or the same content in the
// current turn (scanning back to the last assistant message with content or
// tool calls).
func replayed(ms []map[string]any, msg map[string]any) bool {
	key := contentKey(msg["content"])
	if key == "" {
		return false
	}
	for _, m := range ms {
		if m["role"] == sessiondb.RoleUser && m["timestamp"] == msg["timestamp"] && contentKey(m["content"]) == key {
			return true
		}
	}
	text, ok := msg["content"].(string)
	if !ok {
		return false
	}
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m["role"] == sessiondb.RoleAssistant && (m["content"] != "" || m["tool_calls"] != nil) {
			return false
		}
		if m["role"] == sessiondb.RoleUser && m["content"] == text {
			return true
		}
	}
	return false
}

func conversationMessage(m *sessiondb.Message, rowIDs bool) map[string]any {
	msg := map[string]any{"role": m.Role, "content": m.Content}
	if s, ok := m.Content.(string); ok && (m.Role == sessiondb.RoleUser || m.Role == sessiondb.RoleAssistant) {
		msg["content"] = stripMemoryContext(s)
	}
	if m.Content == nil {
		msg["content"] = ""
	}
	if m.Timestamp != 0 {
		msg["timestamp"] = m.Timestamp
	}
	putString := func(key string, v *string) {
		if v != nil && *v != "" {
			msg[key] = *v
		}
	}
	putJSON := func(key string, raw json.RawMessage) {
		if len(raw) == 0 {
			return
		}
		var v any
		if json.Unmarshal(raw, &v) == nil && v != nil {
			msg[key] = v
		}
	}
	putString("tool_call_id", m.ToolCallID)
	putString("tool_name", m.ToolName)
	putString("effect_disposition", m.EffectDisposition)
	putString("api_content", m.APIContent)
	putString("display_kind", m.DisplayKind)
	putString("message_id", m.PlatformMessageID)
	putJSON("display_metadata", m.DisplayMetadata)
	if calls := sessiondb.ToolCallCount(m.ToolCalls); calls > 0 {
		putJSON("tool_calls", m.ToolCalls)
	}
	if m.Observed {
		msg["observed"] = true
	}
	if m.Role == sessiondb.RoleAssistant {
		putString("finish_reason", m.FinishReason)
		putString("reasoning", m.Reasoning)
		if m.ReasoningContent != nil {
			msg["reasoning_content"] = *m.ReasoningContent
		}
		putJSON("reasoning_details", m.ReasoningDetails)
		putJSON("codex_reasoning_items", m.CodexReasoningItems)
		putJSON("codex_message_items", m.CodexMessageItems)
	}
	if rowIDs {
		msg["_row_id"] = m.ID
	}
	return msg
}

// contentKey is a comparable form of a content value ("" for no content).
func contentKey(v any) string {
	switch c := v.(type) {
	case nil:
		return ""
	case string:
		return c
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "[]" {
		return ""
	}
	return string(b)
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
