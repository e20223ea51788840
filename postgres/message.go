package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessiondb/sessiondb"
)

// prepare checks and encodes a message with the store's limits
// (sessiondb.PrepareMessage).
func (db *DB) prepare(m sessiondb.NewMessage) (*sessiondb.PreparedMessage, error) {
	return sessiondb.PrepareMessage(m, db.prepareOptions())
}

func (db *DB) prepareOptions() sessiondb.PrepareOptions {
	return sessiondb.PrepareOptions{MaxBytes: db.maxMessage, Now: db.now}
}

// insertMessageSQL inserts one message; its id comes from the identity
// sequence and display_order is that id, as Hermes' insert trigger sets it
// for a row without a display identity (the CTE draws the id once). It
// takes insertMessageArgs, then the search columns' values.
var insertMessageSQL = `WITH n AS (SELECT nextval(pg_get_serial_sequence('messages', 'id')) AS id)
	INSERT INTO messages (id, display_order, session_id, role, content, tool_call_id,
	tool_calls, tool_name, effect_disposition, timestamp, token_count, finish_reason, reasoning,
	reasoning_content, reasoning_details, codex_reasoning_items, codex_message_items, platform_message_id,
	observed, _compressed_summary, active, api_content, display_kind, display_metadata, origin, ` + searchColumns + `)
	VALUES ((SELECT id FROM n), (SELECT id FROM n), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
		$16, $17, $18, 1, $19, $20, $21, $22, ` + searchPlaceholders(insertMessageArgs+1) + `)
	RETURNING id`

// insertMessageArgs is how many arguments insertArgs gives.
const insertMessageArgs = 22

// insertArgs are the arguments of insertMessageSQL for p, every text
// escaped for PostgreSQL.
func (db *DB) insertArgs(sessionID string, p *sessiondb.PreparedMessage) []any {
	t := func(s *string) any {
		if s == nil {
			return nil
		}
		return toPG(*s)
	}
	flag := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	return []any{toPG(sessionID), toPG(p.Role), t(p.Content), t(p.ToolCallID),
		t(p.ToolCalls), t(p.ToolName), t(p.EffectDisposition), p.Timestamp, p.TokenCount, t(p.FinishReason), t(p.Reasoning),
		t(p.ReasoningContent), t(p.ReasoningDetails), t(p.CodexReasoningItems), t(p.CodexMessageItems), t(p.PlatformMessageID),
		flag(p.Observed), flag(p.CompressedSummary), t(p.APIContent), t(p.DisplayKind), t(p.DisplayMetadata), db.origin}
}

// indexArgs is the one place the insert path (insertMessages) hands a
// message, and the session it goes to, to the search index: it returns the
// values of the search columns (searchColumns) every row must get.
func indexArgs(p *sessiondb.PreparedMessage, to *appendTarget) ([]any, error) {
	x, err := indexMessage(indexInput{Role: p.Role, Content: p.Content, ToolName: p.ToolName, ToolCalls: p.ToolCalls,
		Source: to.source, ModelConfig: to.modelConfig})
	if err != nil {
		return nil, err
	}
	return x.args(), nil
}

// AppendMessage appends one message and updates the session's counters in
// the same transaction. It is refused once the session ended with
// 'compression' (the conversation continues in a child session).
func (db *DB) AppendMessage(ctx context.Context, m sessiondb.NewMessage) (int64, error) {
	p, err := db.prepare(m)
	if err != nil {
		return 0, err
	}
	ids, err := db.appendTo(ctx, fmt.Sprintf("append message to %q", m.SessionID), m.SessionID, []*sessiondb.PreparedMessage{p})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// AppendMessages appends ms to one session in a single transaction: all of
// them or none. Reasoning is kept for assistant rows only, as Hermes does.
func (db *DB) AppendMessages(ctx context.Context, sessionID string, ms []sessiondb.NewMessage) (int, error) {
	ps := make([]*sessiondb.PreparedMessage, len(ms))
	for i, m := range ms {
		p, err := db.prepare(sessiondb.BatchMessage(m))
		if err != nil {
			return 0, fmt.Errorf("message %d: %w", i+1, err)
		}
		ps[i] = p
	}
	if len(ps) == 0 {
		return 0, nil
	}
	if _, err := db.appendTo(ctx, fmt.Sprintf("append %d messages to %q", len(ps), sessionID), sessionID, ps); err != nil {
		return 0, err
	}
	return len(ps), nil
}

// bumpAppendableSQL adds to the counters of a session that takes messages
// (it exists and did not end with 'compression') and returns what the
// search columns need of it and the transaction's id. The UPDATE locks the
// row until the transaction ends, as lockAppendable does, and at READ
// COMMITTED re-checks the condition on the newest version of a row another
// writer changed meanwhile: the counters stay exact and an append never
// lands in a session that a concurrent end closed.
const bumpAppendableSQL = `UPDATE sessions SET message_count = COALESCE(message_count, 0) + $1,
	tool_call_count = COALESCE(tool_call_count, 0) + $2
	WHERE id = $3 AND NOT COALESCE(ended_at IS NOT NULL AND end_reason = 'compression', false)
	RETURNING source, model_config, txid_current()`

// appendTo appends ps to one session in one transaction and returns their
// ids. See appendOnce.
func (db *DB) appendTo(ctx context.Context, op, sessionID string, ps []*sessiondb.PreparedMessage) ([]int64, error) {
	calls := 0
	rows := make([]indexRow, len(ps))
	for i, p := range ps {
		calls += p.CountedCalls()
		// Indexed as for a session that allows the trigram index: Trigram
		// then says whether the row is a candidate.
		x, err := indexMessage(indexInput{Role: p.Role, Content: p.Content, ToolName: p.ToolName, ToolCalls: p.ToolCalls})
		if err != nil {
			return nil, db.mapErr(op, err)
		}
		rows[i] = x
	}
	var ids []int64
	err := db.retry(ctx, op, func() error {
		var err error
		ids, err = db.appendOnce(ctx, sessionID, ps, rows, calls)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// appendOnce is one attempt of appendTo, in two round trips: BEGIN, the
// counters' UPDATE (bumpAppendableSQL) and every INSERT go in one
// pipeline; COMMIT follows once the UPDATE said that the session takes
// messages, else the transaction is rolled back and notAppendable says
// why. The rows' trigram flag depends on the session (sessionTrigram),
// which the pipeline learns only with its answer: it is guessed from the
// last append to the session and corrected in the same transaction when
// the guess was wrong.
func (db *DB) appendOnce(ctx context.Context, sessionID string, ps []*sessiondb.PreparedMessage, rows []indexRow, calls int) ([]int64, error) {
	guess := db.trigramGuess(sessionID)
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	var (
		source string
		config *string
		xid    uint64
		found  bool
	)
	b.Queue(bumpAppendableSQL, len(ps), calls, toPG(sessionID)).Query(func(rs pgx.Rows) error {
		_, err := pgx.ForEachRow(rs, []any{&source, &config, &xid}, func() error {
			found = true
			return nil
		})
		return err
	})
	ids := make([]int64, len(ps))
	for i, p := range ps {
		x := rows[i]
		x.Trigram = x.Trigram && guess
		b.Queue(insertMessageSQL, append(db.insertArgs(sessionID, p), x.args()...)...).QueryRow(func(row pgx.Row) error {
			return row.Scan(&ids[i])
		})
	}
	br := db.pool.SendBatch(ctx, b)
	tx := br.Tx()
	defer tx.Rollback(context.WithoutCancel(ctx))
	err := br.Close()
	if !found {
		// The session is missing (an INSERT then failed on the foreign
		// key) or closed (the INSERTs went in, and are rolled back).
		var pe *pgconn.PgError
		if err != nil && !(errors.As(err, &pe) && pe.Code == "23503") { // not foreign_key_violation
			return nil, err
		}
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, db.notAppendable(ctx, sessionID)
	}
	if err != nil {
		return nil, err
	}
	allowed := sessionTrigram(fromPG(source), fromPGPtr(config))
	db.rememberTrigram(sessionID, allowed)
	if allowed != guess {
		var fix []int64
		for i, x := range rows {
			if x.Trigram {
				fix = append(fix, ids[i])
			}
		}
		if len(fix) > 0 {
			if _, err := tx.Exec(ctx, "UPDATE messages SET trigram = $1 WHERE id = ANY($2)", allowed, fix); err != nil {
				return nil, err
			}
		}
	}
	return ids, commit(ctx, tx, xid)
}

// notAppendable is the error of an append to a session that did not take
// it: missing, or ended with 'compression'. A session that takes messages
// after all (created or reopened meanwhile) gives a serialization failure,
// so that the append runs again.
func (db *DB) notAppendable(ctx context.Context, sessionID string) error {
	var compressed bool
	err := db.pool.QueryRow(ctx, `SELECT COALESCE(ended_at IS NOT NULL AND end_reason = 'compression', false)
		FROM sessions WHERE id = $1`, toPG(sessionID)).Scan(&compressed)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return sessiondb.Errorf(sessiondb.ENOTFOUND, "session %q not found; create it first (sessiondb new --id %s --source SOURCE)", sessionID, sessionID)
	case err != nil:
		return err
	case compressed:
		return sessiondb.Errorf(sessiondb.ECONFLICT, "session %q ended with compression; append to its continuation session instead", sessionID)
	}
	return &pgconn.PgError{Code: "40001", Message: "the session changed while the append ran"}
}

// sessionTrigram reports whether the rows of a session with this source
// and model_config belong in the trigram index (see indexMessage): not a
// cron or subagent session, not a delegate child.
func sessionTrigram(source string, modelConfig *string) bool {
	return source != "cron" && source != "subagent" && !delegated(modelConfig)
}

// trigramCacheSize bounds the sessions whose sessionTrigram an append
// remembers; the cache starts over when it is full.
const trigramCacheSize = 4096

// trigramGuess is what the last append to the session learnt of
// sessionTrigram; true (the common case) for a session not seen yet.
func (db *DB) trigramGuess(sessionID string) bool {
	db.trigramMu.Lock()
	defer db.trigramMu.Unlock()
	return !db.noTrigram[sessionID]
}

func (db *DB) rememberTrigram(sessionID string, allowed bool) {
	db.trigramMu.Lock()
	defer db.trigramMu.Unlock()
	if db.noTrigram == nil || len(db.noTrigram) >= trigramCacheSize {
		db.noTrigram = map[string]bool{}
	}
	db.noTrigram[sessionID] = !allowed
}

// insertMessages inserts ps (p i into session sessionIDs[i], one of
// targets) in order, in one round trip, and returns their ids.
func (db *DB) insertMessages(ctx context.Context, tx pgx.Tx, targets map[string]*appendTarget, sessionIDs []string, ps []*sessiondb.PreparedMessage) ([]int64, error) {
	b := &pgx.Batch{}
	for i, p := range ps {
		search, err := indexArgs(p, targets[sessionIDs[i]])
		if err != nil {
			return nil, err
		}
		b.Queue(insertMessageSQL, append(db.insertArgs(sessionIDs[i], p), search...)...)
	}
	br := tx.SendBatch(ctx, b)
	ids := make([]int64, len(ps))
	for i := range ids {
		if err := br.QueryRow().Scan(&ids[i]); err != nil {
			br.Close()
			return nil, err
		}
	}
	return ids, br.Close()
}

// appendTarget is a session messages go to, as the insert path reads it.
type appendTarget struct {
	source      string
	modelConfig *string
}

// lockAppendable locks the rows of the sessions ids (in id order, so that
// two writers never wait on each other's locks) until the transaction
// ends, and checks that each exists and takes messages: it returns them,
// or the index in ids of the first that does not, with the reason. The
// lock keeps the counters exact and an append from racing an end with
// 'compression'.
func lockAppendable(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*appendTarget, int, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = toPG(id)
	}
	sort.Strings(keys)
	rows, err := tx.Query(ctx, `SELECT id, source, model_config, ended_at IS NOT NULL AND end_reason = 'compression'
		FROM sessions WHERE id = ANY($1) ORDER BY id FOR UPDATE`, keys)
	if err != nil {
		return nil, 0, err
	}
	targets := map[string]*appendTarget{}
	closed := map[string]bool{}
	var id, source string
	var config *string
	var compressed bool
	_, err = pgx.ForEachRow(rows, []any{&id, &source, &config, &compressed}, func() error {
		targets[fromPG(id)] = &appendTarget{source: fromPG(source), modelConfig: fromPGPtr(config)}
		closed[fromPG(id)] = compressed
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	for i, id := range ids {
		if targets[id] == nil {
			return nil, i, sessiondb.Errorf(sessiondb.ENOTFOUND, "session %q not found; create it first (sessiondb new --id %s --source SOURCE)", id, id)
		}
		if closed[id] {
			return nil, i, sessiondb.Errorf(sessiondb.ECONFLICT, "session %q ended with compression; append to its continuation session instead", id)
		}
	}
	return targets, 0, nil
}

// bumpCounters adds to a session's message and tool call counters.
func bumpCounters(ctx context.Context, tx pgx.Tx, sessionID string, messages, calls int) error {
	_, err := tx.Exec(ctx, `UPDATE sessions SET message_count = COALESCE(message_count, 0) + $1,
		tool_call_count = COALESCE(tool_call_count, 0) + $2 WHERE id = $3`, messages, calls, toPG(sessionID))
	return err
}

// AppendBatch appends messages to the sessions they name (each message's
// SessionID), in the batch's order, in one transaction: all of them or
// none, as the SQLite store's AppendBatch. A refused message is a
// *sessiondb.BatchError naming it; nothing of the batch was written.
func (db *DB) AppendBatch(ctx context.Context, ms []sessiondb.NewMessage) (int, error) {
	plan, err := sessiondb.PlanBatch(ms, db.prepareOptions())
	if err != nil || len(plan.Messages) == 0 {
		return 0, err
	}
	ids := make([]string, len(plan.Sessions))
	for i, s := range plan.Sessions {
		ids[i] = s.ID
	}
	op := fmt.Sprintf("append %d messages to %d sessions", len(plan.Messages), len(ids))
	err = db.write(ctx, op, func(tx pgx.Tx) error {
		targets, i, err := lockAppendable(ctx, tx, ids)
		if err != nil {
			if errors.As(err, new(*sessiondb.Error)) {
				return &sessiondb.BatchError{Index: plan.Sessions[i].First, SessionID: ids[i], Err: err}
			}
			return err
		}
		if _, err := db.insertMessages(ctx, tx, targets, plan.SessionIDs, plan.Messages); err != nil {
			return err
		}
		for _, s := range plan.Sessions {
			if err := bumpCounters(ctx, tx, s.ID, s.Messages, s.Calls); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(plan.Messages), nil
}

// messageColumns is the explicit column list every message read uses.
const messageColumns = `id, session_id, role, content, tool_call_id, tool_calls, tool_name,
	effect_disposition, timestamp, token_count, finish_reason, reasoning, reasoning_content,
	reasoning_details, codex_reasoning_items, codex_message_items, platform_message_id,
	COALESCE(observed, 0) <> 0, _compressed_summary <> 0, active <> 0, compacted <> 0,
	api_content, display_kind, display_metadata`

// scanMessage reads one row of messageColumns.
func scanMessage(row pgx.Row) (*sessiondb.Message, error) {
	var m sessiondb.Message
	var content, toolCalls, details, codexR, codexM, meta *string
	err := row.Scan(&m.ID, &m.SessionID, &m.Role, &content, &m.ToolCallID, &toolCalls, &m.ToolName,
		&m.EffectDisposition, &m.Timestamp, &m.TokenCount, &m.FinishReason, &m.Reasoning, &m.ReasoningContent,
		&details, &codexR, &codexM, &m.PlatformMessageID,
		&m.Observed, &m.CompressedSummary, &m.Active, &m.Compacted,
		&m.APIContent, &m.DisplayKind, &meta)
	if err != nil {
		return nil, err
	}
	fromPGStruct(&m)
	if content != nil {
		m.Content = sessiondb.DecodeContent(fromPGPtr(content))
	}
	for _, c := range []struct {
		dst      *[]byte
		src      *string
		fallback string
	}{
		{(*[]byte)(&m.ToolCalls), toolCalls, "[]"},
		{(*[]byte)(&m.ReasoningDetails), details, ""},
		{(*[]byte)(&m.CodexReasoningItems), codexR, ""},
		{(*[]byte)(&m.CodexMessageItems), codexM, ""},
		{(*[]byte)(&m.DisplayMetadata), meta, ""},
	} {
		*c.dst = sessiondb.StoredJSON(fromPGPtr(c.src), c.fallback)
	}
	return &m, nil
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
	where := []string{"session_id = $1"}
	args := []any{toPG(sessionID)}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	switch {
	case f.IncludeInactive:
	case f.IncludeCompacted:
		where = append(where, "(active = 1 OR compacted = 1)")
	default:
		where = append(where, "active = 1")
	}
	if f.AfterID > 0 {
		where = append(where, "id > "+arg(f.AfterID))
	}
	order := "id"
	if f.Latest {
		order = "id DESC"
	}
	q := "SELECT " + messageColumns + " FROM messages WHERE " + strings.Join(where, " AND ") + " ORDER BY " + order
	if f.Limit > 0 {
		q += " LIMIT " + arg(f.Limit)
	}
	if f.Offset > 0 {
		q += " OFFSET " + arg(f.Offset)
	}
	out, err := db.queryMessages(ctx, q, args...)
	if err != nil {
		return nil, db.mapErr("get messages", err)
	}
	if f.Latest {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}

// queryMessages runs a query returning messageColumns.
func (db *DB) queryMessages(ctx context.Context, q string, args ...any) ([]*sessiondb.Message, error) {
	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*sessiondb.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Conversation returns a session's messages in the OpenAI chat format
// (sessiondb.ReplayChain); with IncludeAncestors its compression lineage comes
// first, root to tip.
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
