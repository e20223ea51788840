package main

import (
	"strconv"
	"strings"
	"time"
)

// parseAge turns an age (90d, 12h, 2w, 30m, a bare number of days) or an
// ISO date/time into the Unix time that far before now.
func parseAge(s string, now time.Time) (float64, error) {
	s = strings.TrimSpace(s)
	units := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}
	num, unit := s, byte('d')
	if n := len(s); n > 0 {
		if _, ok := units[s[n-1]]; ok {
			num, unit = s[:n-1], s[n-1]
		}
	}
	if v, err := strconv.ParseFloat(num, 64); err == nil {
		if v < 0 {
			return 0, usagef("age %q is negative", s)
		}
		return float64(now.Add(-time.Duration(v*float64(units[unit]))).UnixNano()) / 1e9, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return float64(t.UnixNano()) / 1e9, nil
		}
	}
	return 0, usagef("age %q: want a duration like 90d, 12h, 2w, 30m or a date like 2026-01-31", s)
}
