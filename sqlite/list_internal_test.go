package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// listOneByOne is the listing as it was computed before the one-statement
// page: the page, then a count, a preview query and a last-activity query
// per row. TestListMatchesRowByRow holds ListSessions to it.
func (db *DB) listOneByOne(ctx context.Context, o sessiondb.ListOptions) ([]sessiondb.SessionSummary, int, error) {
	all := o
	all.Limit, all.Offset = -1, 0
	rows, _, err := db.ListSessions(ctx, all) // order, filters and tips
	if err != nil {
		return nil, 0, err
	}
	total := len(rows)
	rows = rows[min(o.Offset, total):]
	if limit := o.Limit; limit >= 0 {
		if limit == 0 {
			limit = 20
		}
		rows = rows[:min(limit, len(rows))]
	}
	out := []sessiondb.SessionSummary{}
	for _, r := range rows {
		// The session as a single-session read scans it (database/sql's
		// conversions), projected as the listing projects a chain.
		s, err := db.Session(ctx, r.ID)
		if err != nil {
			return nil, 0, err
		}
		if r.LineageRootID != nil {
			root, err := db.Session(ctx, *r.LineageRootID)
			if err != nil {
				return nil, 0, err
			}
			sessiondb.ProjectTip(root, s)
			s = root
		}
		r.Session = *s
		if r.Preview, err = db.preview(ctx, r.ID); err != nil {
			return nil, 0, err
		}
		if r.LastActive, err = db.lastActive(ctx, r.ID, r.StartedAt); err != nil {
			return nil, 0, err
		}
		out = append(out, r)
	}
	return out, total, nil
}

// TestListMatchesRowByRow: the one-statement page gives every row the
// preview and last activity the per-row queries give, whatever the stored
// stamps (out of the sane window, text, later than the newest message),
// and the total is the count of matching rows whether the page is full,
// short or past the end.
func TestListMatchesRowByRow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	now := time.Unix(1777593600, 0)
	db, err := Open(path, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := float64(now.Unix()) - 86400
	for i := range 27 {
		id := fmt.Sprintf("s%02d", i)
		src := []string{"cli", "telegram", "discord"}[i%3]
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: src, StartedAt: base + float64(i*100)}); err != nil {
			t.Fatal(err)
		}
		for j := range i % 4 {
			m := sessiondb.NewMessage{SessionID: id, Role: []string{"assistant", "user"}[(i+j)%2],
				Content: fmt.Sprintf("message %d of %s\nsecond line", j, id), Timestamp: base + float64(i*100+j+1)}
			if _, err := db.AppendMessage(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A compression chain whose continuation holds the newest message of
	// all: the activity order puts its root first.
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "c20a", Source: "cli", ParentSessionID: "s20", StartedAt: base + 2006}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "c20a", Role: "user", Content: "continued", Timestamp: base + 9000}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE sessions SET end_reason = 'compression', ended_at = started_at + 5 WHERE id = 's20'`,
		// no activity stamp: the newest message decides (s14's, moved
		// late, is newer than any of s15's, its first is older)
		`UPDATE sessions SET last_activity_at = NULL WHERE id IN ('s14', 's15')`,
		`UPDATE messages SET timestamp = timestamp + 190 WHERE id = (SELECT MAX(id) FROM messages WHERE session_id = 's14')`,
		`UPDATE sessions SET last_activity_at = started_at + 50 WHERE id IN ('s01', 's05', 's09')`, // later than every message
		`UPDATE sessions SET last_activity_at = 9e12 WHERE id = 's02'`,                             // milliseconds: outside the window
		`UPDATE sessions SET last_activity_at = -5 WHERE id = 's03'`,
		`UPDATE messages SET timestamp = 5e12 WHERE session_id = 's07' AND id = (SELECT MAX(id) FROM messages WHERE session_id = 's07')`,
		`UPDATE messages SET timestamp = 'soon' WHERE session_id = 's11' AND id = (SELECT MIN(id) FROM messages WHERE session_id = 's11')`,
		`UPDATE messages SET display_kind = 'hidden' WHERE session_id = 's06' AND role = 'user'`,
		`UPDATE sessions SET archived = 1 WHERE id IN ('s04', 's13')`,
		// blobs where text belongs: values only database/sql's conversions
		// read (column affinity turns the other odd values into the
		// column's type)
		`UPDATE sessions SET title = X'4142', model = X'' WHERE id = 's10'`,
		`UPDATE sessions SET source = CAST('discord' AS BLOB) WHERE id = 's14'`,
		`UPDATE sessions SET ended_at = started_at + 7, end_reason = 'user_exit', estimated_cost_usd = 3 WHERE id = 's08'`,
	} {
		if _, err := db.write.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	checkActivityOrder(t, db)
	for _, o := range []sessiondb.ListOptions{
		{}, {Limit: 5}, {Limit: 5, Offset: 5}, {Limit: 5, Offset: 23}, {Limit: 5, Offset: 25}, {Limit: 5, Offset: 40},
		{Limit: -1}, {Limit: 25}, {Limit: 26}, {Sources: []string{"telegram"}, Limit: 4}, {ExcludeSources: []string{"cli"}, Limit: 3, Offset: 6},
		{IncludeArchived: true, Limit: 10, Offset: 20}, {ArchivedOnly: true}, {OrderByActivity: true, Limit: 7},
	} {
		got, gotTotal, err := db.ListSessions(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		want, wantTotal, err := db.listOneByOne(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if gotTotal != wantTotal {
			t.Errorf("%+v: total %d, want %d", o, gotTotal, wantTotal)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v: page differs from the row-by-row listing:\n got %+v\nwant %+v", o, got, want)
		}
	}
}

// checkActivityOrder holds the activity order to its definition: the
// latest last activity (lastActive) of any session of the row's
// compression chain (the sessions reached through parents that ended in
// compression), newest first, then the start and the id, newest first.
func checkActivityOrder(t *testing.T, db *DB) {
	t.Helper()
	ctx := context.Background()
	got, _, err := db.ListSessions(ctx, sessiondb.ListOptions{OrderByActivity: true, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id       string
		started  float64
		activity float64
	}
	var want []row
	var gotIDs []string
	for _, r := range got {
		root := r.ID
		if r.LineageRootID != nil {
			root = *r.LineageRootID
		}
		gotIDs = append(gotIDs, root)
		activity := math.Inf(-1)
		for queue := []string{root}; len(queue) > 0; queue = queue[1:] {
			m, err := db.Session(ctx, queue[0])
			if err != nil {
				t.Fatal(err)
			}
			a, err := db.lastActive(ctx, m.ID, m.StartedAt)
			if err != nil {
				t.Fatal(err)
			}
			activity = max(activity, a)
			if m.EndReason != nil && *m.EndReason == sessiondb.EndReasonCompression {
				rows, err := db.read.QueryContext(ctx, "SELECT id FROM sessions WHERE parent_session_id = ?", m.ID)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var c string
					if err := rows.Scan(&c); err != nil {
						t.Fatal(err)
					}
					queue = append(queue, c)
				}
				rows.Close()
			}
		}
		rs, err := db.Session(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, row{root, rs.StartedAt, activity})
	}
	slices.SortFunc(want, func(a, b row) int {
		return cmp.Or(cmp.Compare(b.activity, a.activity), cmp.Compare(b.started, a.started), strings.Compare(b.id, a.id))
	})
	var wantIDs []string
	for _, r := range want {
		wantIDs = append(wantIDs, r.id)
	}
	if !slices.Equal(gotIDs, wantIDs) {
		t.Errorf("activity order:\n got %v\nwant %v", gotIDs, wantIDs)
	}
	if len(gotIDs) == 0 || gotIDs[0] != "s20" {
		t.Errorf("activity order starts with %v, want s20 (its continuation holds the newest message)", gotIDs)
	}
}
