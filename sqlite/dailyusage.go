package sqlite

import (
	"context"

	"github.com/sessiondb/sessiondb"
)

// DailyModelUsage returns the token, API-call and cost totals of the
// sessions started at or after since (0: all) per local day of their start
// and per model (from session_model_usage): a map from the day
// (2026-05-01) to one row per model, Key the model, largest first. It is
// what a chart of usage per day stacked by model needs, in one query.
func (db *DB) DailyModelUsage(ctx context.Context, since float64) (map[string][]sessiondb.UsageRow, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT date(s.started_at, 'unixepoch', 'localtime'), u.model,
		COUNT(DISTINCT u.session_id), COALESCE(SUM(s.message_count), 0), SUM(u.api_call_count),
		SUM(u.input_tokens), SUM(u.output_tokens), SUM(u.cache_read_tokens), SUM(u.cache_write_tokens),
		SUM(u.reasoning_tokens), SUM(u.estimated_cost_usd), SUM(u.actual_cost_usd)
		FROM session_model_usage u JOIN sessions s ON s.id = u.session_id
		WHERE s.started_at >= ?
		GROUP BY 1, 2 ORDER BY 1, SUM(u.input_tokens + u.output_tokens) DESC, 2`, since)
	if err != nil {
		return nil, db.mapErr("daily model usage", err)
	}
	defer rows.Close()
	out := map[string][]sessiondb.UsageRow{}
	for rows.Next() {
		var day string
		var r sessiondb.UsageRow
		if err := rows.Scan(&day, &r.Key, &r.Sessions, &r.Messages, &r.APICalls, &r.InputTokens, &r.OutputTokens,
			&r.CacheReadTokens, &r.CacheWriteTokens, &r.ReasoningTokens, &r.EstimatedCostUSD, &r.ActualCostUSD); err != nil {
			return nil, db.mapErr("daily model usage", err)
		}
		out[day] = append(out[day], r)
	}
	return out, db.mapErr("daily model usage", rows.Err())
}
