package postgres

import (
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// usageColumns sums sessions s as the columns of sessiondb.UsageRow after
// the key, provider and task.
const usageColumns = `COUNT(*), SUM(COALESCE(s.message_count, 0)), SUM(COALESCE(s.api_call_count, 0)),
	SUM(COALESCE(s.input_tokens, 0)), SUM(COALESCE(s.output_tokens, 0)), SUM(COALESCE(s.cache_read_tokens, 0)),
	SUM(COALESCE(s.cache_write_tokens, 0)), SUM(COALESCE(s.reasoning_tokens, 0)),
	SUM(COALESCE(s.estimated_cost_usd, 0)), SUM(COALESCE(s.actual_cost_usd, 0))`

// UsageStats returns token, API-call and cost totals of the sessions
// started at or after since (0: all), grouped by model (per model, provider
// and task, from session_model_usage), by source or by local day, or one
// grand total (sessiondb.UsageBy*), as the SQLite store's UsageStats. Rows
// come largest (by total tokens) first, days newest first. Days are those
// of this process's time zone, as SQLite's 'localtime' is.
func (db *DB) UsageStats(ctx context.Context, by string, since float64) ([]sessiondb.UsageRow, error) {
	switch by {
	case sessiondb.UsageByModel:
		return db.usageRows(ctx, "usage stats", `SELECT u.model, u.billing_provider, u.task, COUNT(DISTINCT u.session_id),
			COALESCE(SUM(s.message_count), 0), SUM(u.api_call_count), SUM(u.input_tokens), SUM(u.output_tokens),
			SUM(u.cache_read_tokens), SUM(u.cache_write_tokens), SUM(u.reasoning_tokens),
			SUM(u.estimated_cost_usd), SUM(u.actual_cost_usd)
			FROM session_model_usage u JOIN sessions s ON s.id = u.session_id
			WHERE s.started_at >= $1
			GROUP BY u.model, u.billing_provider, u.task
			ORDER BY SUM(u.input_tokens + u.output_tokens) DESC, u.model COLLATE "C"`, since)
	case sessiondb.UsageBySource, sessiondb.UsageByTotal:
		key := map[string]string{sessiondb.UsageBySource: "s.source", sessiondb.UsageByTotal: "''"}[by]
		return db.usageRows(ctx, "usage stats", `SELECT `+key+`, '', '', `+usageColumns+`
			FROM sessions s WHERE s.started_at >= $1 GROUP BY 1 HAVING COUNT(*) > 0
			ORDER BY SUM(COALESCE(s.input_tokens, 0) + COALESCE(s.output_tokens, 0)) DESC, `+key+` COLLATE "C"`, since)
	case sessiondb.UsageByDay:
		// Sessions are summed per start second, then per local day here.
		rows, err := db.usageRows(ctx, "usage stats", `SELECT s.started_at::text, '', '', `+usageColumns+`
			FROM sessions s WHERE s.started_at >= $1 GROUP BY s.started_at`, since)
		if err != nil {
			return nil, err
		}
		return byLocalDay(rows), nil
	}
	return nil, sessiondb.Errorf(sessiondb.EINVALID, "stats by %q: want model, source or day", by)
}

// byLocalDay sums rows keyed by a start time (Unix seconds) per local day,
// newest first.
func byLocalDay(rows []sessiondb.UsageRow) []sessiondb.UsageRow {
	days := map[string]*sessiondb.UsageRow{}
	for _, r := range rows {
		var sec float64
		if _, err := fmt.Sscan(r.Key, &sec); err != nil {
			continue
		}
		day := localDay(sec)
		d := days[day]
		if d == nil {
			d = &sessiondb.UsageRow{Key: day}
			days[day] = d
		}
		addUsage(d, r)
	}
	out := make([]sessiondb.UsageRow, 0, len(days))
	for _, d := range days {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key > out[j].Key })
	return out
}

// usageRows runs a query whose columns are those of sessiondb.UsageRow.
func (db *DB) usageRows(ctx context.Context, op, q string, args ...any) ([]sessiondb.UsageRow, error) {
	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, db.mapErr(op, err)
	}
	out := []sessiondb.UsageRow{}
	var r sessiondb.UsageRow
	_, err = pgx.ForEachRow(rows, []any{&r.Key, &r.Provider, &r.Task, &r.Sessions, &r.Messages, &r.APICalls, &r.InputTokens,
		&r.OutputTokens, &r.CacheReadTokens, &r.CacheWriteTokens, &r.ReasoningTokens,
		&r.EstimatedCostUSD, &r.ActualCostUSD}, func() error {
		row := r
		fromPGStruct(&row)
		out = append(out, row)
		return nil
	})
	if err != nil {
		return nil, db.mapErr(op, err)
	}
	return out, nil
}

// SessionUsage returns a session's usage per (model, provider, task).
func (db *DB) SessionUsage(ctx context.Context, id string) ([]sessiondb.UsageRow, error) {
	if _, err := db.Session(ctx, id); err != nil {
		return nil, err
	}
	return db.usageRows(ctx, "session usage", `SELECT model, billing_provider, task, 1, 0, api_call_count,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
		estimated_cost_usd, actual_cost_usd
		FROM session_model_usage WHERE session_id = $1 ORDER BY COALESCE(first_seen, 0), model COLLATE "C"`, toPG(id))
}

// CostliestSessions returns up to limit sessions started at or after since
// (0: all) that have a cost, the costliest first, as the SQLite store's
// CostliestSessions: the actual cost where one was recorded, else the
// estimate; every session counts; ties go to the newest.
func (db *DB) CostliestSessions(ctx context.Context, since float64, limit int) ([]*sessiondb.Session, error) {
	const cost = sessiondb.SessionCostSQL
	rows, err := db.pool.Query(ctx, "SELECT "+sessionColumns+" FROM sessions s WHERE s.started_at >= $1 AND "+
		cost+" > 0 ORDER BY "+cost+` DESC, s.started_at DESC, s.id COLLATE "C" LIMIT $2`, since, limit)
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
