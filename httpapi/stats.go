package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/sessiondb/sessiondb"
)

// stats serves GET /api/v1/stats?group_by=day|model|source|day_model&since&until:
// {"group_by": ..., "rows": [...]}, the rows of `sessiondb stats --json`;
// for day_model each row also has "day" and its key is the model. since
// and until are dates (2026-05-01) or Unix seconds; until applies to the
// groupings by day.
func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	rep, ok := s.cfg.Store.(UsageReporter)
	if !ok {
		writeError(w, &apiError{http.StatusNotImplemented, codeNotImplemented, "this store has no usage statistics"})
		return
	}
	q := &query{r: r}
	by := q.oneOf("group_by", "", "", "day", "model", "source", "day_model")
	since, err := parseTime(q.str("since"))
	if err == nil && q.err != nil {
		err = q.err
	}
	var until float64
	if err == nil {
		until, err = parseTime(q.str("until"))
	}
	if err == nil && until != 0 && by != "day" && by != "day_model" {
		err = sessiondb.Errorf(sessiondb.EINVALID, "until needs group_by=day or day_model")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	last := ""
	if until != 0 {
		last = time.Unix(int64(until), 0).Format(time.DateOnly)
	}
	if by == "day_model" {
		s.dayModelStats(w, r, since, last)
		return
	}
	rows, err := rep.UsageStats(r.Context(), by, since)
	if err != nil {
		writeError(w, err)
		return
	}
	if last != "" {
		kept := rows[:0]
		for _, row := range rows {
			if row.Key <= last {
				kept = append(kept, row)
			}
		}
		rows = kept
	}
	writeJSON(w, http.StatusOK, map[string]any{"group_by": by, "rows": rows})
}

// dayModelRow is a row of group_by=day_model.
type dayModelRow struct {
	Day string `json:"day"`
	sessiondb.UsageRow
}

// dayModelStats answers group_by=day_model: days in order, each day's
// models largest first.
func (s *Server) dayModelStats(w http.ResponseWriter, r *http.Request, since float64, last string) {
	rep, ok := s.cfg.Store.(DailyUsageReporter)
	if !ok {
		writeError(w, &apiError{http.StatusNotImplemented, codeNotImplemented, "this store has no usage per day and model"})
		return
	}
	days, err := rep.DailyModelUsage(r.Context(), since)
	if err != nil {
		writeError(w, err)
		return
	}
	keys := make([]string, 0, len(days))
	for d := range days {
		if last == "" || d <= last {
			keys = append(keys, d)
		}
	}
	slices.Sort(keys)
	rows := []dayModelRow{}
	for _, d := range keys {
		for _, u := range days[d] {
			rows = append(rows, dayModelRow{d, u})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"group_by": "day_model", "rows": rows})
}

// costliest serves GET /api/v1/stats/costliest?since&limit:
// {"sessions":[…]}, the costliest sessions first (sessiondb.CostRanker).
func (s *Server) costliest(w http.ResponseWriter, r *http.Request) {
	rank, ok := s.cfg.Store.(sessiondb.CostRanker)
	if !ok {
		writeError(w, &apiError{http.StatusNotImplemented, codeNotImplemented, "this store cannot rank sessions by cost"})
		return
	}
	q := &query{r: r}
	limit := int(q.int("limit", 10, 1, maxPageSize))
	since, err := parseTime(q.str("since"))
	if err == nil {
		err = q.err
	}
	if err != nil {
		writeError(w, err)
		return
	}
	sessions, err := rank.CostliestSessions(r.Context(), since, limit)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": sessions})
}

// parseTime reads a date (local midnight) or Unix seconds; "" is 0.
func parseTime(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return float64(t.Unix()), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 {
		return f, nil
	}
	return 0, sessiondb.Errorf(sessiondb.EINVALID, "%q: want a date (2026-05-01) or Unix seconds", s)
}
