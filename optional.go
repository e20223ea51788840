package sessiondb

import (
	"fmt"
)

// BatchError is the error AppendBatch returns when it refuses one message
// of the batch; nothing of the batch was written. Index is the message's
// position in the batch, from 0. Err carries the sessiondb error code.
type BatchError struct {
	Index     int
	SessionID string
	Err       error
}

// Error implements the error interface.
func (e *BatchError) Error() string {
	return fmt.Sprintf("message %d (session %q): %v", e.Index+1, e.SessionID, e.Err)
}

// Unwrap returns the reason the message was refused.
func (e *BatchError) Unwrap() error { return e.Err }

// Groups of a usage report (a backend's UsageStats).
const (
	UsageByTotal  = ""
	UsageByModel  = "model"
	UsageBySource = "source"
	UsageByDay    = "day"
)
