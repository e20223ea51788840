package postgres

import (
	"context"
	"hash/fnv"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// The change feed (`sessiondb serve`'s live events) on PostgreSQL. Message
// ids come from a sequence, and a transaction that drew id 10 may commit
// after one that drew id 11: "id > last seen" alone would skip 10. Every
// writing transaction claims the ids it may draw before it draws any (a
// statement trigger, migrations/0006_change_feed.sql), and the feed reports
// messages only up to the horizon below which no id can appear any more.
// DESIGN.md, "Change feed", states the invariants.

// DataVersion returns a number that changes whenever a transaction that
// wrote sessions, messages or usage rows commits, in this process or any
// other (a sync from a Hermes host, another sessiondb): a hash of the
// change counter every writing transaction bumps and of the writing
// transactions open now. A transaction's commit changes the second (its
// claim goes), one that began and ended between two calls the first. It
// reads no table: one sequence and the lock table, so a caller may ask it
// several times a second.
func (db *DB) DataVersion(ctx context.Context) (int64, error) {
	var counter int64
	var holders string
	err := db.pool.QueryRow(ctx, `SELECT COALESCE(pg_sequence_last_value('sessiondb_change_seq'), 0),
		COALESCE((SELECT string_agg(holder, ',' ORDER BY holder) FROM sessiondb_feed_claims()), '')`).Scan(&counter, &holders)
	if err != nil {
		return 0, db.mapErr("data version", err)
	}
	h := fnv.New64a()
	h.Write([]byte(strconv.FormatInt(counter, 10) + "/" + holders))
	return int64(h.Sum64()), nil
}

// ChangeHead returns the horizon as both the message and the session
// cursor: every message and session at or below it is visible now or
// never will be, so Changes from there reports exactly what commits
// afterwards (and what committed above the horizon while a transaction
// below it was still open).
func (db *DB) ChangeHead(ctx context.Context) (lastMessageID, sessionSeq int64, err error) {
	h, err := db.feedHorizon(ctx)
	return h, h, err
}

// feedHorizon returns sessiondb_feed_horizon(): every message id and
// session feed_seq at most this is visible to a statement that starts
// after it returns, or will never be.
func (db *DB) feedHorizon(ctx context.Context) (int64, error) {
	var h int64
	err := db.pool.QueryRow(ctx, "SELECT sessiondb_feed_horizon()").Scan(&h)
	return h, db.mapErr("change horizon", err)
}

// Changes returns what was committed after a cursor, as the SQLite store's
// Changes does, reading by primary key and index only:
//
//   - up to limit messages with an id above afterMessageID and at most the
//     horizon, in id order, with the id, session, role, time and tool name
//     of each and its text cut to 200 characters as Content (a preview);
//   - the sessions whose position (feed_seq) is above afterSessionSeq and
//     at most the horizon, those the returned messages belong to, and the
//     sessiondb.ChangeWindow most recently active sessions, each once;
//   - the session cursor to pass next time.
//
// A message committed above the horizon while a transaction that may still
// add one below it is open waits for that transaction; so a caller that
// passes back the last id and cursor it saw gets every message exactly
// once, in id order.
func (db *DB) Changes(ctx context.Context, afterMessageID, afterSessionSeq int64, limit int) ([]*sessiondb.Message, []*sessiondb.Session, int64, error) {
	if limit <= 0 {
		limit = 500
	}
	// The horizon first, in a statement of its own: the reads below must
	// see a snapshot taken after it was computed.
	horizon, err := db.feedHorizon(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	var msgs []*sessiondb.Message
	var out []*sessiondb.Session
	seq := afterSessionSeq
	err = pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// One snapshot for the reads. Of a plain text only its start is
		// read (twice the preview: an escaped NUL is two characters);
		// structured content is read whole to be decoded.
		rows, err := tx.Query(ctx, `SELECT id, session_id, role, timestamp, tool_name,
			CASE WHEN starts_with(content, $4) THEN content ELSE left(content, $5) END
			FROM messages WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3`,
			afterMessageID, horizon, limit, toPG(sessiondb.ContentJSONPrefix), 2*sessiondb.ChangePreviewChars)
		if err != nil {
			return err
		}
		var changed sessiondb.ChangedSessions
		add := changed.Add
		var m sessiondb.Message
		var content *string
		_, err = pgx.ForEachRow(rows, []any{&m.ID, &m.SessionID, &m.Role, &m.Timestamp, &m.ToolName, &content}, func() error {
			c := m
			fromPGStruct(&c)
			c.Content = nil
			if content != nil {
				c.Content = sessiondb.ChangePreview(fromPG(*content))
			}
			c.Active = true
			msgs = append(msgs, &c)
			add(c.SessionID)
			return nil
		})
		if err != nil {
			return err
		}
		// A message committed above the horizon (waiting for an open
		// transaction below it) is in this snapshot's session rows already,
		// but not reported yet: its session waits for it, so that no
		// session event comes before a message it counts. (A full page
		// leaves messages for the next one; their sessions are not held
		// back, which would read every remaining message.)
		later := map[string]bool{}
		if len(msgs) < limit {
			rows, err = tx.Query(ctx, "SELECT DISTINCT session_id FROM messages WHERE id > $1", horizon)
			if err != nil {
				return err
			}
			var id string
			if _, err = pgx.ForEachRow(rows, []any{&id}, func() error {
				later[fromPG(id)] = true
				return nil
			}); err != nil {
				return err
			}
		}
		rows, err = tx.Query(ctx, `SELECT id, feed_seq FROM sessions WHERE feed_seq > $1 AND feed_seq <= $2
			ORDER BY feed_seq LIMIT $3`, afterSessionSeq, horizon, limit)
		if err != nil {
			return err
		}
		var id string
		var pos int64
		_, err = pgx.ForEachRow(rows, []any{&id, &pos}, func() error {
			add(fromPG(id))
			seq = max(seq, pos)
			return nil
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT id FROM sessions
			ORDER BY COALESCE(last_activity_at, started_at) DESC, started_at DESC LIMIT $1`, sessiondb.ChangeWindow)
		if err != nil {
			return err
		}
		_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
			add(fromPG(id))
			return nil
		})
		if err != nil {
			return err
		}
		keys := make([]string, len(changed.IDs))
		for i, id := range changed.IDs {
			keys[i] = toPG(id)
		}
		rows, err = tx.Query(ctx, "SELECT "+sessionColumns+" FROM sessions s WHERE s.id = ANY($1)", keys)
		if err != nil {
			return err
		}
		defer rows.Close()
		byID := map[string]*sessiondb.Session{}
		for rows.Next() {
			s, err := scanSession(rows)
			if err != nil {
				return err
			}
			byID[s.ID] = s
		}
		if err := rows.Err(); err != nil {
			return err
		}
		out = make([]*sessiondb.Session, 0, len(changed.IDs))
		for _, id := range changed.IDs {
			// Absent: deleted since its message was written.
			if s := byID[id]; s != nil && !later[id] {
				out = append(out, s)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, 0, db.mapErr("changes", err)
	}
	return msgs, out, seq, nil
}
