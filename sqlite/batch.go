package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sessiondb/sessiondb"
)

// BatchError is the error AppendBatch returns when it refuses one message
// of the batch (sessiondb.BatchError).
type BatchError = sessiondb.BatchError

// AppendBatch appends messages to the sessions they name (each message's
// SessionID, an exact id), in the batch's order, in one transaction: all
// of them or none. Every message is checked first, as AppendMessages
// checks them (and, as there, reasoning is kept for assistant rows only);
// then, inside the transaction and before any row is written, every
// session the batch names must exist and take messages (not ended by
// compression). A refused message is a *BatchError naming it; a refusal
// of the database (busy, damaged, full) is returned as it is, and in
// either case nothing was written, so the same batch can be sent again
// once the cause is fixed. The counters of each session grow in the same
// transaction. Other writers wait while it runs: keep batches to what one
// transaction should hold (Hermes waits up to 60 s for a transcript write).
func (db *DB) AppendBatch(ctx context.Context, ms []sessiondb.NewMessage) (int, error) {
	type session struct {
		first           int // index of its first message
		messages, calls int
	}
	var order []string // sessions in order of first appearance
	sessions := map[string]*session{}
	rows := make([]*row, len(ms))
	sessionIDs := make([]string, len(ms))
	for i, m := range ms {
		if m.Role != sessiondb.RoleAssistant {
			m.Reasoning, m.ReasoningContent, m.ReasoningDetails = nil, nil, nil
			m.CodexReasoningItems, m.CodexMessageItems = nil, nil
		}
		if m.SessionID == "" {
			return 0, &BatchError{Index: i, Err: sessiondb.Errorf(sessiondb.EINVALID, "append message: a session id is required")}
		}
		r, err := db.prepare(m, false)
		if err != nil {
			return 0, &BatchError{Index: i, SessionID: m.SessionID, Err: err}
		}
		s := sessions[m.SessionID]
		if s == nil {
			s = &session{first: i}
			sessions[m.SessionID] = s
			order = append(order, m.SessionID)
		}
		s.messages++
		s.calls += r.countedCalls()
		rows[i], sessionIDs[i] = r, m.SessionID
	}
	if len(rows) == 0 {
		return 0, nil
	}
	op := fmt.Sprintf("append %d messages to %d sessions", len(rows), len(order))
	err := db.writeTx(ctx, TranscriptWritePatience, op, func(tx *sql.Tx) error {
		for _, id := range order {
			err := appendable(ctx, tx, id)
			var refusal *sessiondb.Error
			if errors.As(err, &refusal) {
				return &BatchError{Index: sessions[id].first, SessionID: id, Err: err}
			}
			if err != nil {
				return err
			}
		}
		for start := 0; start < len(rows); start += maxInsertRows {
			end := min(start+maxInsertRows, len(rows))
			if _, err := insertMessages(ctx, tx, sessionIDs[start:end], rows[start:end]); err != nil {
				return err
			}
		}
		for _, id := range order {
			if err := bumpCounters(ctx, tx, id, sessions[id].messages, sessions[id].calls); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(rows), nil
}
