package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sessiondb/sessiondb"
)

// stats serves GET /api/v1/stats?group_by=day|model|source&since&until:
// {"group_by": ..., "rows": [...]}, the rows of `sessiondb stats --json`.
// since and until are dates (2026-05-01) or Unix seconds; until applies to
// group_by=day, whose rows are days.
func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	rep, ok := s.cfg.Store.(UsageReporter)
	if !ok {
		writeError(w, &apiError{http.StatusNotImplemented, codeNotImplemented, "this store has no usage statistics"})
		return
	}
	q := &query{r: r}
	by := q.oneOf("group_by", "", "", "day", "model", "source")
	since, err := parseTime(q.str("since"))
	if err == nil && q.err != nil {
		err = q.err
	}
	var until float64
	if err == nil {
		until, err = parseTime(q.str("until"))
	}
	if err == nil && until != 0 && by != "day" {
		err = sessiondb.Errorf(sessiondb.EINVALID, "until needs group_by=day")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	rows, err := rep.UsageStats(r.Context(), by, since)
	if err != nil {
		writeError(w, err)
		return
	}
	if until != 0 {
		last := time.Unix(int64(until), 0).Format(time.DateOnly)
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
