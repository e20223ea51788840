package sqlite

import (
	"context"
	"database/sql"
	"sync"

	"github.com/sessiondb/sessiondb"
)

// RecentWindow is how many of the most recently active sessions Changes
// returns on every call (sessiondb.ChangeWindow).
const RecentWindow = sessiondb.ChangeWindow

// watchConn is the one read connection PRAGMA data_version is asked on:
// the value only means something compared with an earlier value of the same
// connection.
type watchConn struct {
	mu   sync.Mutex
	conn *sql.Conn
}

func (w *watchConn) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn == nil {
		return nil
	}
	err := w.conn.Close()
	w.conn = nil
	return err
}

// DataVersion returns SQLite's PRAGMA data_version of a connection kept for
// the purpose: it changes when any other connection, of this process or
// another one (Hermes), commits a change to the file. It is one cheap call
// that reads no table, so a caller may ask it several times a second.
func (db *DB) DataVersion(ctx context.Context) (int64, error) {
	var v int64
	if db.read.Stats().MaxOpenConnections == 1 {
		// DELETE journal mode: one connection serves reads and writes, and
		// holding it would block both; it is the same connection each time.
		// (A read-only handle's pool has several: it keeps one, as WAL does.)
		err := db.read.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v)
		return v, db.mapErr("data version", err)
	}
	w := &db.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn == nil {
		c, err := db.read.Conn(ctx)
		if err != nil {
			return 0, db.mapErr("data version", err)
		}
		w.conn = c
	}
	err := w.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v)
	if err != nil {
		w.conn.Close()
		w.conn = nil
	}
	return v, db.mapErr("data version", err)
}

// Changes returns what was written after a cursor, reading only by primary
// key and the activity index:
//
//   - up to limit messages with an id above afterMessageID, in id order,
//     with the id, session, role, time and tool name of each and its text
//     cut to 200 characters as Content (a preview, not the stored text);
//   - the sessions created after afterSessionSeq (a position in the
//     sessions table: its rowid), those the returned messages belong to,
//     and the RecentWindow most recently active sessions, each once;
//   - the session cursor to pass next time.
//
// Message ids only grow (AUTOINCREMENT), so a caller that passes back the
// last id and cursor it saw misses no new message or session.
func (db *DB) Changes(ctx context.Context, afterMessageID, afterSessionSeq int64, limit int) ([]*sessiondb.Message, []*sessiondb.Session, int64, error) {
	if limit <= 0 {
		limit = 500
	}
	tx, err := db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // one snapshot for the three reads
	if err != nil {
		return nil, nil, 0, db.mapErr("changes", err)
	}
	defer tx.Rollback()
	// Only the start of a text is read (as bytes: SQLite's character
	// functions stop at a NUL); structured content, JSON behind
	// ContentJSONPrefix, is read whole to be decoded, as search's context is.
	rows, err := tx.QueryContext(ctx, `SELECT id, session_id, role, timestamp, tool_name,
		CASE WHEN substr(CAST(content AS BLOB), 1, 6) = x'006a736f6e3a' THEN content
		ELSE CAST(substr(CAST(content AS BLOB), 1, ?) AS TEXT) END
		FROM messages WHERE id > ? ORDER BY id LIMIT ?`, 4*sessiondb.ChangePreviewChars, afterMessageID, limit)
	if err != nil {
		return nil, nil, 0, db.mapErr("changes", err)
	}
	var msgs []*sessiondb.Message
	var changed sessiondb.ChangedSessions
	add := changed.Add
	for rows.Next() {
		var m sessiondb.Message
		var content sql.NullString
		if err := rows.Scan(&m.ID, &m.SessionID, &m.Role, &m.Timestamp, &m.ToolName, &content); err != nil {
			rows.Close()
			return nil, nil, 0, db.mapErr("changes", err)
		}
		if content.Valid {
			m.Content = sessiondb.ChangePreview(content.String)
		}
		m.Active = true
		msgs = append(msgs, &m)
		add(m.SessionID)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, 0, db.mapErr("changes", err)
	}
	seq := afterSessionSeq
	collect := func(q string, args ...any) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var rowid int64
			if err := rows.Scan(&id, &rowid); err != nil {
				return err
			}
			add(id)
			seq = max(seq, rowid)
		}
		return rows.Err()
	}
	if err := collect(`SELECT id, rowid FROM sessions WHERE rowid > ? ORDER BY rowid LIMIT ?`, afterSessionSeq, limit); err != nil {
		return nil, nil, 0, db.mapErr("changes", err)
	}
	if err := collect(`SELECT id, 0 FROM sessions
		ORDER BY COALESCE(last_activity_at, started_at) DESC, started_at DESC LIMIT ?`, RecentWindow); err != nil {
		return nil, nil, 0, db.mapErr("changes", err)
	}
	out := make([]*sessiondb.Session, 0, len(changed.IDs))
	for _, id := range changed.IDs {
		s, err := scanSession(tx.QueryRowContext(ctx, "SELECT "+sessionColumns+" FROM sessions s WHERE s.id = ?", id))
		if err == sql.ErrNoRows {
			continue // deleted since its message was written
		}
		if err != nil {
			return nil, nil, 0, db.mapErr("changes", err)
		}
		out = append(out, s)
	}
	return msgs, out, seq, nil
}

// ChangeHead returns the newest message id and the session cursor
// (sessions' largest rowid): Changes from there reports only what is
// written afterwards. Both are read from the end of a rowid b-tree.
func (db *DB) ChangeHead(ctx context.Context) (lastMessageID, sessionSeq int64, err error) {
	err = db.read.QueryRowContext(ctx, `SELECT COALESCE((SELECT MAX(id) FROM messages), 0),
		COALESCE((SELECT MAX(rowid) FROM sessions), 0)`).Scan(&lastMessageID, &sessionSeq)
	return lastMessageID, sessionSeq, db.mapErr("change head", err)
}
