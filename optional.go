package sessiondb

import (
	"context"
	"fmt"
	"io"
	"iter"
)

// The optional capabilities below are what some backends have beyond Store.
// A caller checks for one with a type assertion, as io.WriterTo is checked:
//
//	if u, ok := s.(sessiondb.UsageReporter); ok { rows, err := u.UsageStats(ctx, by, 0) }
//
// and, where the backend lacks it, says so rather than guessing.

// BatchAppender is a store that appends messages to several sessions in one
// transaction: all of them or none.
type BatchAppender interface {
	// AppendBatch appends ms, each to the session its SessionID names, in
	// order. A refused message is a *BatchError naming it; nothing of the
	// batch is written on any error.
	AppendBatch(ctx context.Context, ms []NewMessage) (int, error)
}

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

// UsageReporter is a store that totals tokens, API calls and costs.
type UsageReporter interface {
	// UsageStats returns the totals of the sessions started at or after
	// since (Unix seconds; 0: all), grouped by UsageByModel, UsageBySource
	// or UsageByDay, or one grand total (UsageByTotal).
	UsageStats(ctx context.Context, by string, since float64) ([]UsageRow, error)
}

// CostRanker is a store that finds its costliest sessions without
// reading them all.
type CostRanker interface {
	// CostliestSessions returns up to limit sessions started at or after
	// since (Unix seconds; 0: all) whose cost is above zero, the costliest
	// first. A session's cost is its actual cost where one was recorded,
	// else its estimate. Every session counts (children, archived and
	// hidden ones too); among equal costs the newest comes first.
	CostliestSessions(ctx context.Context, since float64, limit int) ([]*Session, error)
}

// SessionCostSQL is a session's cost as CostRanker defines it, in SQL that
// both backends run (the session table aliased s): the actual cost where
// one was recorded (not zero), else the estimate, else 0.
const SessionCostSQL = "COALESCE(NULLIF(s.actual_cost_usd, 0), s.estimated_cost_usd, 0)"

// DeletePlanner is a store that says what DeleteSession would delete
// before it does (the session and its delegate children), so a caller can
// ask first.
type DeletePlanner interface {
	DeleteTargets(ctx context.Context, id string) ([]string, error)
}

// ExportSelection chooses what Exporter.ExportSessions exports. The zero
// value selects every session, archived and hidden ones included.
type ExportSelection struct {
	// SessionID exports this session only (an exact id).
	SessionID string
	// Lineage, with SessionID, exports the session's logical conversation
	// as one object: its compression lineage from root to tip, as Hermes'
	// export_session_lineage does.
	Lineage bool
	// Source exports every session of this source (not with SessionID).
	Source string
}

// ExportedSession is one exported object, in the shape of Hermes'
// export_session: the session row (every column, the system prompt
// resolved) and its active messages in id order. For a lineage
// (export_session_lineage) Session is a copy of the last segment whose
// MessageCount is the number of messages of all segments, Messages
// concatenates the segments' messages root first, and Segments holds every
// segment with its own messages.
//
// Messages reads the store a page at a time as it is ranged over (each
// range reads afresh); the sequence is valid until the callback of
// ExportSessions returns.
type ExportedSession struct {
	Session  *Session
	Messages iter.Seq2[*Message, error]
	Segments []ExportedSession
}

// Check refuses a selection no export can satisfy: a lineage without a
// session, or a session together with a source.
func (sel ExportSelection) Check() error {
	switch {
	case sel.Lineage && sel.SessionID == "":
		return Errorf(EINVALID, "export: a lineage export needs a session id")
	case sel.SessionID != "" && sel.Source != "":
		return Errorf(EINVALID, "export: give a session id or a source, not both")
	}
	return nil
}

// LineageExport assembles the export_session_lineage object of a
// compression lineage from its segments, root first, and the number of
// active messages they hold together: the tip's row counting them all,
// the segments' messages one after the other, and the segments.
func LineageExport(segs []ExportedSession, messages int64) *ExportedSession {
	tip := *segs[len(segs)-1].Session
	tip.MessageCount = messages
	all := func(yield func(*Message, error) bool) {
		for _, s := range segs {
			for m, err := range s.Messages {
				if !yield(m, err) || err != nil {
					return
				}
			}
		}
	}
	return &ExportedSession{Session: &tip, Messages: all, Segments: segs}
}

// MessagePages returns a session's active messages as a sequence that reads
// them through read (a store's Messages) size at a time, each page after
// the last id read: memory stays bounded, and nothing is held open while
// the consumer works on a page.
func MessagePages(ctx context.Context, read func(context.Context, string, MessageFilter) ([]*Message, error), sessionID string, size int) iter.Seq2[*Message, error] {
	return func(yield func(*Message, error) bool) {
		var after int64
		for {
			page, err := read(ctx, sessionID, MessageFilter{AfterID: after, Limit: size})
			if err != nil {
				yield(nil, err)
				return
			}
			for _, m := range page {
				if !yield(m, nil) {
					return
				}
			}
			if len(page) < size {
				return
			}
			after = page[len(page)-1].ID
		}
	}
}

// Exporter is a store that streams whole sessions out in bounded memory.
type Exporter interface {
	// ExportSessions calls fn for every selected session, in id order, and
	// stops at the first error fn returns. A SessionID that does not exist
	// is ENOTFOUND; a Source without sessions exports nothing.
	ExportSessions(ctx context.Context, sel ExportSelection, fn func(*ExportedSession) error) error
}

// ImportOptions modify Importer.ImportSessions.
type ImportOptions struct {
	// Replace overwrites sessions that already exist: their messages are
	// deleted and the input's inserted, and the row's columns are set from
	// the input. The row is updated in place, not deleted: its child
	// sessions keep their parent and its usage rows, which an export does
	// not carry, survive. Without Replace existing sessions are skipped.
	Replace bool
	// DryRun reports what the import would do and writes nothing.
	DryRun bool
	// KeepRuntimeState also imports the live runtime state of a session:
	// gateway routing (session_key, chat_id, chat_type, thread_id,
	// origin_json), activity (last_activity_*), handoff_*, the compression
	// back-off columns, rewind_count and the tool cache (tool_names). By
	// default, as in Hermes' import_sessions, a new session gets none of it
	// and a replaced session keeps its own: an imported conversation must
	// not take over a live chat or look busy. Use it to move a whole
	// installation to a new machine.
	KeepRuntimeState bool
}

// ImportNote is one entry of an ImportReport: where in the input, which
// session, and what happened.
type ImportNote struct {
	Line      int    `json:"line"`           // line of the input where the object starts (0: the input as a whole)
	Item      int    `json:"item,omitempty"` // position in a JSON array input, from 1
	SessionID string `json:"session_id,omitempty"`
	Message   string `json:"message"`
}

// ImportReport says what ImportSessions did, or with DryRun would do. Each
// segment of a lineage object counts as a session.
type ImportReport struct {
	DryRun      bool         `json:"dry_run"`
	Imported    int          `json:"imported"`   // sessions that did not exist
	Replaced    int          `json:"replaced"`   // sessions that existed and were overwritten (Replace)
	Skipped     int          `json:"skipped"`    // sessions that existed and were left alone
	Failed      int          `json:"failed"`     // objects or sessions not imported; see Errors
	Detached    int          `json:"detached"`   // sessions imported without their parent, which was nowhere to be found
	Messages    int          `json:"messages"`   // messages written
	Renumbered  int          `json:"renumbered"` // messages written with a new id, theirs being taken (not predicted by a dry run)
	ImportedIDs []string     `json:"imported_ids"`
	ReplacedIDs []string     `json:"replaced_ids"`
	SkippedIDs  []string     `json:"skipped_ids"`
	Errors      []ImportNote `json:"errors"`
	Warnings    []ImportNote `json:"warnings"`
}

// Importer is a store that reads sessions written by Exporter (or by
// Hermes' session export): JSON Lines or a JSON array, each session all or
// nothing.
type Importer interface {
	ImportSessions(ctx context.Context, r io.Reader, o ImportOptions) (*ImportReport, error)
}

// Check statuses.
const (
	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
)

// Check is one finding of a backend's health check (sessiondb doctor).
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"` // the command that fixes it
}

// Diagnosis is the result of a backend's health check: where the store
// is (a file path or a URL without its password) and what was found.
type Diagnosis struct {
	Path    string  `json:"path"`
	Healthy bool    `json:"healthy"` // no check failed
	Checks  []Check `json:"checks"`
}

// Add records a finding; a failed one makes the diagnosis unhealthy.
func (d *Diagnosis) Add(name, status, detail, fix string) {
	d.Checks = append(d.Checks, Check{name, status, detail, fix})
	if status == CheckFail {
		d.Healthy = false
	}
}

// FileStore is a store kept in a local file: Path names the main file
// (SQLite keeps its -wal and -shm beside it).
type FileStore interface {
	Path() string
}

// DurabilityReporter is a store that reports the settings its writes run
// with, for benchmarks: SQLite's journal mode and synchronous level.
type DurabilityReporter interface {
	JournalMode() string
	Synchronous(ctx context.Context) (string, error)
}
