package postgres

import (
	"context"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// DailyModelUsage returns the token, API-call and cost totals of the
// sessions started at or after since (0: all) per local day of their start
// and per model (from session_model_usage), as the SQLite store's
// DailyModelUsage: a map from the day (2026-05-01) to one row per model,
// Key the model, largest (input plus output tokens) first, then by model.
// The server sums per start time and model; the days are this process's
// time zone's, as SQLite's 'localtime' is (see UsageStats).
func (db *DB) DailyModelUsage(ctx context.Context, since float64) (map[string][]sessiondb.UsageRow, error) {
	rows, err := db.pool.Query(ctx, `SELECT s.started_at, u.model,
		COUNT(DISTINCT u.session_id), COALESCE(SUM(s.message_count), 0), SUM(u.api_call_count),
		SUM(u.input_tokens), SUM(u.output_tokens), SUM(u.cache_read_tokens), SUM(u.cache_write_tokens),
		SUM(u.reasoning_tokens), SUM(u.estimated_cost_usd), SUM(u.actual_cost_usd)
		FROM session_model_usage u JOIN sessions s ON s.id = u.session_id
		WHERE s.started_at >= $1
		GROUP BY 1, 2`, since)
	if err != nil {
		return nil, db.mapErr("daily model usage", err)
	}
	type dayModel struct{ day, model string }
	sums := map[dayModel]*sessiondb.UsageRow{}
	var started float64
	var r sessiondb.UsageRow
	_, err = pgx.ForEachRow(rows, []any{&started, &r.Key, &r.Sessions, &r.Messages, &r.APICalls, &r.InputTokens,
		&r.OutputTokens, &r.CacheReadTokens, &r.CacheWriteTokens, &r.ReasoningTokens,
		&r.EstimatedCostUSD, &r.ActualCostUSD}, func() error {
		row := r
		fromPGStruct(&row)
		k := dayModel{localDay(started), row.Key}
		if sums[k] == nil {
			sums[k] = &sessiondb.UsageRow{Key: row.Key}
		}
		addUsage(sums[k], row)
		return nil
	})
	if err != nil {
		return nil, db.mapErr("daily model usage", err)
	}
	out := map[string][]sessiondb.UsageRow{}
	for k, u := range sums {
		out[k.day] = append(out[k.day], *u)
	}
	for _, day := range out {
		sort.Slice(day, func(i, j int) bool {
			a, b := day[i].InputTokens+day[i].OutputTokens, day[j].InputTokens+day[j].OutputTokens
			if a != b {
				return a > b
			}
			return day[i].Key < day[j].Key
		})
	}
	return out, nil
}

// localDay is the day (2026-05-01) of a start time (Unix seconds) in this
// process's time zone.
func localDay(sec float64) string {
	return time.Unix(0, int64(sec*1e9)).Local().Format("2006-01-02")
}

// addUsage adds r's counts and costs to d.
func addUsage(d *sessiondb.UsageRow, r sessiondb.UsageRow) {
	d.Sessions += r.Sessions
	d.Messages += r.Messages
	d.APICalls += r.APICalls
	d.InputTokens += r.InputTokens
	d.OutputTokens += r.OutputTokens
	d.CacheReadTokens += r.CacheReadTokens
	d.CacheWriteTokens += r.CacheWriteTokens
	d.ReasoningTokens += r.ReasoningTokens
	d.EstimatedCostUSD += r.EstimatedCostUSD
	d.ActualCostUSD += r.ActualCostUSD
}
