package postgres

import (
	"context"
	"fmt"
	"iter"

	"github.com/sessiondb/sessiondb"
)

// Export reads, as the SQLite backend's does: sessions in id order a page
// at a time, each session's active messages a page at a time, so memory
// stays bounded whatever the size of the database.
const (
	exportSessionPageSize = 100
	exportMessagePageSize = 500
)

// ExportSessions implements sessiondb.Exporter: it calls fn for every
// selected session, in id order (byte order, as SQLite compares), and stops
// at the first error fn returns. A SessionID that does not exist is
// ENOTFOUND; a Source without sessions exports nothing.
func (db *DB) ExportSessions(ctx context.Context, sel sessiondb.ExportSelection, fn func(*sessiondb.ExportedSession) error) error {
	if err := sel.Check(); err != nil {
		return err
	}
	if sel.SessionID != "" {
		if sel.Lineage {
			x, err := db.exportLineage(ctx, sel.SessionID)
			if err != nil {
				return err
			}
			return fn(x)
		}
		s, err := db.Session(ctx, sel.SessionID)
		if err != nil {
			return err
		}
		return fn(&sessiondb.ExportedSession{Session: s, Messages: db.exportMessages(ctx, s.ID)})
	}
	after := ""
	for first := true; ; first = false {
		page, err := db.exportSessionPage(ctx, sel.Source, after, first)
		if err != nil {
			return err
		}
		for _, s := range page {
			if err := fn(&sessiondb.ExportedSession{Session: s, Messages: db.exportMessages(ctx, s.ID)}); err != nil {
				return err
			}
		}
		if len(page) < exportSessionPageSize {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// exportSessionPage reads the sessions after id after (keyset paging on
// the primary key in byte order), optionally of one source.
func (db *DB) exportSessionPage(ctx context.Context, source, after string, first bool) ([]*sessiondb.Session, error) {
	q := "SELECT " + sessionColumns + " FROM sessions s WHERE ($1 = '' OR s.source = $1) AND ($2 OR s.id COLLATE \"C\" > $3) ORDER BY s.id COLLATE \"C\" LIMIT $4"
	rows, err := db.pool.Query(ctx, q, toPG(source), first, toPG(after), exportSessionPageSize)
	if err != nil {
		return nil, db.mapErr("export sessions", err)
	}
	defer rows.Close()
	var page []*sessiondb.Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, db.mapErr("export sessions", err)
		}
		page = append(page, s)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr("export sessions", err)
	}
	return page, nil
}

// exportMessages returns a session's active messages, read a page at a
// time (sessiondb.MessagePages).
func (db *DB) exportMessages(ctx context.Context, sessionID string) iter.Seq2[*sessiondb.Message, error] {
	return sessiondb.MessagePages(ctx, db.Messages, sessionID, exportMessagePageSize)
}

// exportLineage builds Hermes' export_session_lineage object for the
// compression lineage id belongs to: every segment with its own messages,
// and the tip's row counting the messages of all.
func (db *DB) exportLineage(ctx context.Context, id string) (*sessiondb.ExportedSession, error) {
	chain, err := db.CompressionChain(ctx, id)
	if err != nil {
		return nil, err
	}
	segs := make([]sessiondb.ExportedSession, 0, len(chain))
	var total int64
	for _, sid := range chain {
		s, err := db.Session(ctx, sid)
		if err != nil {
			return nil, err
		}
		var n int64
		if err := db.pool.QueryRow(ctx, "SELECT COUNT(*) FROM messages WHERE session_id = $1 AND active = 1", toPG(sid)).Scan(&n); err != nil {
			return nil, db.mapErr(fmt.Sprintf("export lineage of %q", id), err)
		}
		total += n
		segs = append(segs, sessiondb.ExportedSession{Session: s, Messages: db.exportMessages(ctx, sid)})
	}
	return sessiondb.LineageExport(segs, total), nil
}
