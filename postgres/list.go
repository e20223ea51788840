package postgres

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// resetReasonsSQL is sessiondb.ResetEndReasons as an SQL list.
var resetReasonsSQL = func() string {
	var rs []string
	for r := range sessiondb.ResetEndReasons {
		rs = append(rs, "'"+r+"'")
	}
	sort.Strings(rs)
	return strings.Join(rs, ", ")
}()

// listableSQL keeps the rows people pick from: roots, and branch or reset
// children; subagent runs and compression continuations are left out (a
// chain is listed through its root).
var listableSQL = `(s.parent_session_id IS NULL OR ` + marker("s", "_branched_from") + ` IS NOT NULL
	OR ` + marker("s", "_reset_from") + ` IS NOT NULL
	OR EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id AND (
		(p.end_reason = 'branched' AND s.started_at >= p.ended_at)
		OR (p.end_reason IN (` + resetReasonsSQL + `)
			AND COALESCE(s.session_key, '') <> '' AND s.session_key = p.session_key))))`

// lastActiveSQL is the recency of session s: its newest message or
// activity stamp inside Hermes' sane window, else its start.
var lastActiveSQL = lastActive("s.started_at")

// lastActive is lastActiveSQL with another fallback than s's start.
func lastActive(fallback string) string {
	return fmt.Sprintf(`COALESCE((SELECT MAX(v) FROM (SELECT s.last_activity_at AS v
	UNION ALL SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id) a WHERE v BETWEEN %v AND %v), %s)`,
		sessiondb.MinTimestamp, int64(sessiondb.MaxTimestamp), fallback)
}

// previewSQL is the stored content of session s's first user message that
// a listing shows (sessiondb.Preview), or NULL.
const previewSQL = `(SELECT m.content FROM messages m
	WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL AND COALESCE(m.display_kind, '') <> 'hidden'
	ORDER BY m.timestamp, m.id LIMIT 1)`

// withExtra scans a row of sessionColumns followed by more columns.
type withExtra struct {
	pgx.Row
	extra []any
}

func (r withExtra) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra...)...) }

// ListSessions lists sessions newest first (see sessiondb.ListOptions) and
// returns the page and the total number of matching rows.
func (db *DB) ListSessions(ctx context.Context, o sessiondb.ListOptions) ([]sessiondb.SessionSummary, int, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if !o.IncludeChildren {
		where = append(where, listableSQL)
	}
	for _, f := range o.FlagFilters() {
		where = append(where, fmt.Sprintf("COALESCE(s.%s, 0) = %d", f.Column, f.Value))
	}
	if len(o.Sources) > 0 {
		where = append(where, "s.source = ANY("+arg(textList(o.Sources))+")")
	}
	if len(o.ExcludeSources) > 0 {
		where = append(where, "NOT (s.source = ANY("+arg(textList(o.ExcludeSources))+"))")
	}
	cond := "true"
	if len(where) > 0 {
		cond = strings.Join(where, " AND ")
	}
	countArgs := args
	order := `s.started_at DESC, s.id COLLATE "C" DESC`
	if o.OrderByActivity {
		// the freshest activity anywhere in the row's compression chain
		order = `(WITH RECURSIVE chain(id) AS (SELECT s.id UNION SELECT c.id FROM sessions c
			JOIN chain ON c.parent_session_id = chain.id JOIN sessions p ON p.id = chain.id
			WHERE p.end_reason = 'compression')
			SELECT MAX(` + strings.ReplaceAll(lastActiveSQL, "s.", "x.") + `) FROM chain JOIN sessions x ON x.id = chain.id)
			DESC, ` + order
	}
	var limit any
	switch {
	case o.Limit == 0:
		limit = 20
	case o.Limit > 0:
		limit = o.Limit
	}
	// The count and the page go to the server in one round trip.
	var total int
	var out []sessiondb.SessionSummary
	b := &pgx.Batch{}
	b.Queue("SELECT COUNT(*) FROM sessions s WHERE "+cond, countArgs...).QueryRow(func(row pgx.Row) error {
		return row.Scan(&total)
	})
	b.Queue("SELECT "+sessionColumns+", "+previewSQL+", "+lastActiveSQL+
		" FROM sessions s WHERE "+cond+" ORDER BY "+order+" LIMIT "+arg(limit)+" OFFSET "+arg(max(o.Offset, 0)), args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var preview *string
			var sum sessiondb.SessionSummary
			s, err := scanSession(withExtra{rows, []any{&preview, &sum.LastActive}})
			if err != nil {
				return err
			}
			sum.Session = *s
			if preview != nil {
				sum.Preview = sessiondb.Preview(fromPG(*preview))
			}
			out = append(out, sum)
		}
		return rows.Err()
	})
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, 0, db.mapErr("list sessions", err)
	}
	err := sessiondb.ProjectChainTips(out, o,
		func(id string) (string, error) { return db.compressionTip(ctx, id) },
		func(id string) (*sessiondb.Session, error) { return db.Session(ctx, id) },
		func(row *sessiondb.SessionSummary) error {
			// the tip's preview and activity; the chain started with its root
			var preview *string
			err := db.pool.QueryRow(ctx, "SELECT "+previewSQL+", "+lastActive("$2::double precision")+" FROM sessions s WHERE s.id = $1",
				toPG(row.ID), row.StartedAt).Scan(&preview, &row.LastActive)
			if err != nil {
				return db.mapErr("list sessions", err)
			}
			row.Preview = ""
			if preview != nil {
				row.Preview = sessiondb.Preview(fromPG(*preview))
			}
			return nil
		})
	if err != nil {
		return nil, 0, err
	}
	if out == nil {
		out = []sessiondb.SessionSummary{}
	}
	return out, total, nil
}

// textList escapes values for a text[] argument.
func textList(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = toPG(v)
	}
	return out
}
