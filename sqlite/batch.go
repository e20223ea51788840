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
	plan, err := sessiondb.PlanBatch(ms, db.prepareOptions(false))
	if err != nil {
		return 0, err
	}
	rows := make([]*row, len(plan.Messages))
	for i, p := range plan.Messages {
		rows[i] = rowOf(p)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	op := fmt.Sprintf("append %d messages to %d sessions", len(rows), len(plan.Sessions))
	err = db.writeTx(ctx, TranscriptWritePatience, op, func(tx *sql.Tx) error {
		for _, s := range plan.Sessions {
			err := appendable(ctx, tx, s.ID)
			var refusal *sessiondb.Error
			if errors.As(err, &refusal) {
				return &BatchError{Index: s.First, SessionID: s.ID, Err: err}
			}
			if err != nil {
				return err
			}
		}
		for start := 0; start < len(rows); start += maxInsertRows {
			end := min(start+maxInsertRows, len(rows))
			if _, err := insertMessages(ctx, tx, plan.SessionIDs[start:end], rows[start:end]); err != nil {
				return err
			}
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
	return len(rows), nil
}
