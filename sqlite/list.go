package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// jsonMarker is the non-throwing lookup of a model_config marker of s.
func jsonMarker(marker string) string {
	return "json_extract(CASE WHEN json_valid(s.model_config) THEN s.model_config ELSE '{}' END, '$." + marker + "')"
}

// listableSQL keeps the rows people pick from: roots, and branch or reset
// children; subagent runs and compression continuations are left out (a
// chain is listed through its root).
var listableSQL = `(s.parent_session_id IS NULL OR ` + jsonMarker("_branched_from") + ` IS NOT NULL
	OR ` + jsonMarker("_reset_from") + ` IS NOT NULL
	OR EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id AND (
		(p.end_reason = 'branched' AND s.started_at >= p.ended_at)
		OR (p.end_reason IN ('session_reset', 'session_switch', 'idle', 'daily', 'suspended', 'resume_pending_expired')
			AND COALESCE(s.session_key, '') <> '' AND s.session_key = p.session_key))))`

// ListSessions lists sessions newest first (see sessiondb.ListOptions) and
// returns the page and the total number of matching rows.
func (db *DB) ListSessions(ctx context.Context, o sessiondb.ListOptions) ([]sessiondb.SessionSummary, int, error) {
	var where []string
	var args []any
	if !o.IncludeChildren {
		where = append(where, listableSQL)
	}
	for _, f := range o.FlagFilters() {
		where = append(where, fmt.Sprintf("COALESCE(s.%s, 0) = %d", f.Column, f.Value))
	}
	if len(o.Sources) > 0 {
		where = append(where, "s.source IN ("+placeholders(len(o.Sources))+")")
		for _, v := range o.Sources {
			args = append(args, v)
		}
	}
	if len(o.ExcludeSources) > 0 {
		where = append(where, "s.source NOT IN ("+placeholders(len(o.ExcludeSources))+")")
		for _, v := range o.ExcludeSources {
			args = append(args, v)
		}
	}
	cond := "1"
	if len(where) > 0 {
		cond = strings.Join(where, " AND ")
	}
	order := "s.started_at DESC, s.id DESC"
	if o.OrderByActivity {
		// the freshest activity anywhere in the row's compression chain (a
		// row that did not end in compression is a chain of one)
		order = `(CASE WHEN s.end_reason = 'compression' THEN (WITH RECURSIVE chain(id) AS (SELECT s.id
			UNION SELECT c.id FROM sessions c
			JOIN chain ON c.parent_session_id = chain.id JOIN sessions p ON p.id = chain.id
			WHERE p.end_reason = 'compression')
			SELECT MAX(` + strings.ReplaceAll(lastActiveSQL, "s.", "x.") + `) FROM chain JOIN sessions x ON x.id = chain.id)
			ELSE ` + lastActiveSQL + ` END) DESC, s.started_at DESC, s.id DESC`
	}
	limit := o.Limit
	if limit == 0 {
		limit = 20
	}
	// One statement for the page: each row's preview and last activity are
	// correlated subqueries (two index probes), not two more round trips
	// per row.
	rows, err := db.read.QueryContext(ctx, "SELECT "+sessionColumns+", "+previewSQL+", "+newestMessageSQL+
		" FROM sessions s WHERE "+cond+" ORDER BY "+order+" LIMIT ? OFFSET ?", append(args, limit, max(o.Offset, 0))...)
	if err != nil {
		return nil, 0, db.mapErr("list sessions", err)
	}
	// A page's room at once: a summary is large, and appending row by row
	// copied the page each time the slice grew.
	out := make([]sessiondb.SessionSummary, 0, min(max(limit, 0), 100))
	var raw rawRow
	for rows.Next() {
		var sum sessiondb.SessionSummary
		var first sql.NullString
		var newest sql.NullFloat64
		err := raw.scan(rows, append(sum.ScanTargets(), &first, &newest))
		if err != nil {
			rows.Close()
			return nil, 0, db.mapErr("list sessions", err)
		}
		sum.ResetFrom, sum.BranchedFrom = sessiondb.ModelConfigMarkers(sum.ModelConfig)
		if first.Valid {
			sum.Preview = sessiondb.Preview(first.String)
		}
		sum.LastActive = listLastActive(sum.LastActivityAt, newest, sum.StartedAt)
		out = append(out, sum)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, db.mapErr("list sessions", err)
	}
	if out == nil {
		out = []sessiondb.SessionSummary{}
	}
	// A compression chain is shown as its live tip (rare: one chain per
	// row): the tip's preview and activity, the root's start.
	err = sessiondb.ProjectChainTips(out, o,
		func(id string) (string, error) { return db.compressionTip(ctx, id) },
		func(id string) (*sessiondb.Session, error) { return db.Session(ctx, id) },
		func(row *sessiondb.SessionSummary) (err error) {
			if row.Preview, err = db.preview(ctx, row.ID); err != nil {
				return err
			}
			row.LastActive, err = db.lastActive(ctx, row.ID, row.StartedAt)
			return err
		})
	if err != nil {
		return nil, 0, err
	}
	total, err := db.listTotal(ctx, o, cond, args, limit, len(out))
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// listTotal is the number of rows a listing matches. A short page already
// tells it (the page ends the listing). Otherwise, when every row the
// listing leaves out is in idx_sessions_unlisted (a child, archived or
// hidden: the listing filters no source and keeps no flag set), it is
// every row (counted from an index's pages, not its rows) less the
// unlisted rows it leaves out, which costs the number of unlisted rows,
// not of sessions; else it counts the matching rows.
func (db *DB) listTotal(ctx context.Context, o sessiondb.ListOptions, cond string, args []any, limit, got int) (int, error) {
	offset := max(o.Offset, 0)
	if limit < 0 || (got > 0 && got < limit) || (got == 0 && offset == 0) {
		return offset + got, nil
	}
	var total int
	if len(o.Sources) == 0 && len(o.ExcludeSources) == 0 && !o.ArchivedOnly && !o.PinnedOnly {
		err := db.read.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM sessions) - (SELECT COUNT(*)
			FROM sessions s INDEXED BY `+unlistedIndex+` WHERE `+unlistedWhere+` AND (`+cond+`) IS NOT TRUE)`, args...).Scan(&total)
		if err == nil {
			return total, nil
		}
		if !noSuchIndex(err) {
			return 0, db.mapErr("list sessions", err)
		}
		// A file Hermes rebuilt, or one opened read-only before sessiondb
		// wrote to it: count the rows.
	}
	if err := db.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM sessions s WHERE "+cond, args...).Scan(&total); err != nil {
		return 0, db.mapErr("list sessions", err)
	}
	return total, nil
}

// idx_sessions_unlisted holds the sessions a default listing may leave out:
// children (most are subagent runs and compression continuations), archived
// and hidden ones. Only listTotal reads it; Hermes ignores it, and a write
// maintains it only when one of its three columns changes (appends do not).
const (
	unlistedIndex       = "idx_sessions_unlisted"
	unlistedWhere       = "(s.parent_session_id IS NOT NULL OR s.archived <> 0 OR s.hidden <> 0)"
	createUnlistedIndex = `CREATE INDEX IF NOT EXISTS ` + unlistedIndex + ` ON sessions(parent_session_id)
	WHERE parent_session_id IS NOT NULL OR archived <> 0 OR hidden <> 0`
)

// lastActiveSQL is the recency of session s: its newest message or
// activity stamp inside the sane window, else its start. The newest message
// is found by newestMessageSQL's one index probe, not MAX(timestamp), which
// read every index entry of the session (the activity order and prune
// evaluate it for every session).
var lastActiveSQL = `COALESCE((SELECT MAX(v) FROM (SELECT s.last_activity_at AS v
	UNION ALL SELECT * FROM (SELECT m.timestamp FROM messages m WHERE m.session_id = s.id ORDER BY m.timestamp DESC LIMIT 1))
	WHERE v BETWEEN ` + epochWindowSQL + `), s.started_at)`

// newestMessageSQL is the timestamp of session s's newest message when it
// is inside the sane window (NULL otherwise): the last entry of
// idx_messages_session for the session, one index probe however long the
// session is. (MAX(timestamp) inside a compound subquery lets the planner
// pick idx_messages_session_active, whose order is not the timestamp's, and
// read all of the session's index entries.)
var newestMessageSQL = `(SELECT CASE WHEN m.timestamp BETWEEN ` + epochWindowSQL + ` THEN m.timestamp END
	FROM messages m WHERE m.session_id = s.id ORDER BY m.timestamp DESC LIMIT 1)`

// epochWindowSQL is the sane window of timestamps, for BETWEEN.
var epochWindowSQL = fmt.Sprint(epochMin, " AND ", epochMax)

// listLastActive is lastActive from the row's columns: the later of the
// activity stamp (when sane) and the newest message, else the start.
func listLastActive(activity *float64, newest sql.NullFloat64, started float64) float64 {
	v, ok := newest.Float64, newest.Valid
	if activity != nil && *activity >= epochMin && *activity <= epochMax && (!ok || *activity > v) {
		v, ok = *activity, true
	}
	if !ok {
		return started
	}
	return v
}

// rawRow scans a row through its driver values: database/sql converts a
// value into a typed destination by reflection, which costs more than the
// query itself on a page of 20 sessions of 64 columns. A value whose type
// is exactly the destination's (or NULL into a pointer) is assigned
// directly; any other row is scanned again by rows.Scan, so every
// conversion and every error stays database/sql's.
type rawRow struct{ vals, ptrs []any }

func (r *rawRow) scan(rows *sql.Rows, dests []any) error {
	if len(r.vals) != len(dests) {
		r.vals, r.ptrs = make([]any, len(dests)), make([]any, len(dests))
		for i := range r.vals {
			r.ptrs[i] = &r.vals[i]
		}
	}
	if err := rows.Scan(r.ptrs...); err != nil {
		return err
	}
	for i, v := range r.vals {
		if !assignExact(dests[i], v) {
			return rows.Scan(dests...)
		}
	}
	return nil
}

// assignExact stores v in dest when v's type is exactly what dest holds
// (NULL for a pointer or a sql.Null type), and reports whether it did.
func assignExact(dest, v any) bool {
	switch d := dest.(type) {
	case *string:
		s, ok := v.(string)
		*d = s
		return ok
	case **string:
		return assignPtr(d, v)
	case *float64:
		f, ok := v.(float64)
		*d = f
		return ok
	case **float64:
		return assignPtr(d, v)
	case *int64:
		n, ok := v.(int64)
		*d = n
		return ok
	case **int64:
		return assignPtr(d, v)
	case *sql.NullString:
		d.String, d.Valid = v.(string)
		return v == nil || d.Valid
	case *sql.NullFloat64:
		d.Float64, d.Valid = v.(float64)
		return v == nil || d.Valid
	}
	return false
}

func assignPtr[T any](d **T, v any) bool {
	if v == nil {
		*d = nil
		return true
	}
	x, ok := v.(T)
	if ok {
		*d = &x
	}
	return ok
}

// previewSQL is the content of session s's first visible user message
// (NULL when it has none), which sessiondb.Preview shortens.
const previewSQL = `(SELECT m.content FROM messages m
	WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL AND COALESCE(m.display_kind, '') <> 'hidden'
	ORDER BY m.timestamp, m.id LIMIT 1)`

// preview returns the start of a session's first user message
// (sessiondb.Preview).
func (db *DB) preview(ctx context.Context, id string) (string, error) {
	var content string
	err := db.read.QueryRowContext(ctx, `SELECT content FROM messages
		WHERE session_id = ? AND role = 'user' AND content IS NOT NULL AND COALESCE(display_kind, '') <> 'hidden'
		ORDER BY timestamp, id LIMIT 1`, id).Scan(&content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", db.mapErr("preview", err)
	}
	return sessiondb.Preview(content), nil
}

// lastActive is the later of the session's activity stamp and its newest
// message, ignoring values outside a sane epoch window; else started.
func (db *DB) lastActive(ctx context.Context, id string, started float64) (float64, error) {
	var v sql.NullFloat64
	err := db.read.QueryRowContext(ctx, `SELECT MAX(v) FROM (
			SELECT last_activity_at AS v FROM sessions WHERE id = ?1
			UNION ALL SELECT MAX(timestamp) FROM messages WHERE session_id = ?1)
		WHERE v BETWEEN ?2 AND ?3`, id, epochMin, epochMax).Scan(&v)
	if err != nil {
		return 0, db.mapErr("last active", err)
	}
	if !v.Valid {
		return started, nil
	}
	return v.Float64, nil
}
