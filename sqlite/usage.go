package sqlite

import (
	"context"

	"github.com/sessiondb/sessiondb"
)

// Stats groups for UsageStats (sessiondb.UsageBy*).
const (
	ByTotal  = sessiondb.UsageByTotal
	ByModel  = sessiondb.UsageByModel
	BySource = sessiondb.UsageBySource
	ByDay    = sessiondb.UsageByDay
)

// UsageStats returns token, API-call and cost totals of the sessions
// started at or after since (0: all), grouped by model (per model, provider
// and task, from session_model_usage), by source or by local day, or one
// grand total. Rows come largest (by total tokens) first, days newest first.
func (db *DB) UsageStats(ctx context.Context, by string, since float64) ([]sessiondb.UsageRow, error) {
	var q string
	switch by {
	case ByModel:
		q = `SELECT u.model, u.billing_provider, u.task, COUNT(DISTINCT u.session_id),
			COALESCE(SUM(s.message_count), 0), SUM(u.api_call_count), SUM(u.input_tokens), SUM(u.output_tokens),
			SUM(u.cache_read_tokens), SUM(u.cache_write_tokens), SUM(u.reasoning_tokens),
			SUM(u.estimated_cost_usd), SUM(u.actual_cost_usd)
			FROM session_model_usage u JOIN sessions s ON s.id = u.session_id
			WHERE s.started_at >= ?
			GROUP BY u.model, u.billing_provider, u.task
			ORDER BY SUM(u.input_tokens + u.output_tokens) DESC, u.model`
	case BySource, ByDay, ByTotal:
		key := map[string]string{BySource: "s.source", ByDay: "date(s.started_at, 'unixepoch', 'localtime')", ByTotal: "''"}[by]
		order := "SUM(COALESCE(s.input_tokens, 0) + COALESCE(s.output_tokens, 0)) DESC, 1"
		if by == ByDay {
			order = "1 DESC"
		}
		q = `SELECT ` + key + `, '', '', COUNT(*), SUM(COALESCE(s.message_count, 0)), SUM(COALESCE(s.api_call_count, 0)),
			SUM(COALESCE(s.input_tokens, 0)), SUM(COALESCE(s.output_tokens, 0)), SUM(COALESCE(s.cache_read_tokens, 0)),
			SUM(COALESCE(s.cache_write_tokens, 0)), SUM(COALESCE(s.reasoning_tokens, 0)),
			SUM(COALESCE(s.estimated_cost_usd, 0)), SUM(COALESCE(s.actual_cost_usd, 0))
			FROM sessions s WHERE s.started_at >= ? GROUP BY 1 HAVING COUNT(*) > 0 ORDER BY ` + order
	default:
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "stats by %q: want model, source or day", by)
	}
	return db.usageRows(ctx, "usage stats", q, since)
}

// usageRows runs a query whose columns are those of sessiondb.UsageRow.
func (db *DB) usageRows(ctx context.Context, op, q string, args ...any) ([]sessiondb.UsageRow, error) {
	rows, err := db.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.mapErr(op, err)
	}
	defer rows.Close()
	out := []sessiondb.UsageRow{}
	for rows.Next() {
		var r sessiondb.UsageRow
		if err := rows.Scan(&r.Key, &r.Provider, &r.Task, &r.Sessions, &r.Messages, &r.APICalls, &r.InputTokens,
			&r.OutputTokens, &r.CacheReadTokens, &r.CacheWriteTokens, &r.ReasoningTokens,
			&r.EstimatedCostUSD, &r.ActualCostUSD); err != nil {
			return nil, db.mapErr(op, err)
		}
		out = append(out, r)
	}
	return out, db.mapErr(op, rows.Err())
}

// SessionUsage returns a session's usage per (model, provider, task).
func (db *DB) SessionUsage(ctx context.Context, id string) ([]sessiondb.UsageRow, error) {
	if _, err := db.Session(ctx, id); err != nil {
		return nil, err
	}
	return db.usageRows(ctx, "session usage", `SELECT model, billing_provider, task, 1, 0, api_call_count,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
		estimated_cost_usd, actual_cost_usd
		FROM session_model_usage WHERE session_id = ? ORDER BY COALESCE(first_seen, 0), model`, id)
}

// CostliestSessions returns up to limit sessions started at or after since
// (0: all) that have a cost, the costliest first: a session's cost is its
// actual cost where one was recorded, else its estimate. Every session
// counts, children, archived and hidden ones included; ties
// go to the newest.
func (db *DB) CostliestSessions(ctx context.Context, since float64, limit int) ([]*sessiondb.Session, error) {
	const cost = sessiondb.SessionCostSQL
	rows, err := db.read.QueryContext(ctx, "SELECT "+sessionColumns+" FROM sessions s WHERE s.started_at >= ? AND "+
		cost+" > 0 ORDER BY "+cost+" DESC, s.started_at DESC, s.id LIMIT ?", since, limit)
	if err != nil {
		return nil, db.mapErr("costliest sessions", err)
	}
	defer rows.Close()
	out := []*sessiondb.Session{}
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, db.mapErr("costliest sessions", err)
		}
		out = append(out, s)
	}
	return out, db.mapErr("costliest sessions", rows.Err())
}
