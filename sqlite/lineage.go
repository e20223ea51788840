package sqlite

import (
	"context"
	"database/sql"

	"github.com/sessiondb/sessiondb"
)

// Lineage returns the tree of sessions linked to id through
// parent_session_id: from its root (the oldest ancestor) down through every
// descendant, each marked with how it continues its parent.
func (db *DB) Lineage(ctx context.Context, id string) (*sessiondb.LineageNode, error) {
	if _, err := db.Session(ctx, id); err != nil {
		return nil, err
	}
	var root string
	err := db.read.QueryRowContext(ctx, `WITH RECURSIVE up(id, parent, depth) AS (
			SELECT id, parent_session_id, 0 FROM sessions WHERE id = ?
			UNION ALL
			SELECT s.id, s.parent_session_id, up.depth + 1 FROM sessions s JOIN up ON s.id = up.parent WHERE up.depth < 1000)
		SELECT id FROM up ORDER BY depth DESC LIMIT 1`, id).Scan(&root)
	if err != nil {
		return nil, db.mapErr("lineage", err)
	}
	rows, err := db.read.QueryContext(ctx, lineageTreeSQL, root)
	if err != nil {
		return nil, db.mapErr("lineage", err)
	}
	defer rows.Close()
	var lineage []sessiondb.LineageRow
	for rows.Next() {
		var r sessiondb.LineageRow
		n := &r.Node
		if err := rows.Scan(&n.ID, &r.Parent, &n.Title, &n.Source, &n.StartedAt, &n.EndedAt, &n.EndReason,
			&n.MessageCount, &r.ModelConfig, &r.ParentEndReason); err != nil {
			return nil, db.mapErr("lineage", err)
		}
		lineage = append(lineage, r)
	}
	if err := rows.Err(); err != nil {
		return nil, db.mapErr("lineage", err)
	}
	return sessiondb.BuildLineage(root, lineage), nil
}

// lineageTreeSQL selects the tree below the root bound to ?, each row with
// its parent's end reason. CROSS JOIN keeps the tree's rows the outer loop:
// without it SQLite may walk every session in started_at order to spare the
// sort, which grows with the history (3–8 ms at 10,000 sessions, against
// 0.2 ms for the tree alone).
const lineageTreeSQL = `WITH RECURSIVE down(id, depth) AS (
		SELECT ?, 0
		UNION
		SELECT s.id, down.depth + 1 FROM sessions s JOIN down ON s.parent_session_id = down.id WHERE down.depth < 1000)
	SELECT s.id, s.parent_session_id, s.title, s.source, s.started_at, s.ended_at, s.end_reason,
		COALESCE(s.message_count, 0), s.model_config,
		(SELECT p.end_reason FROM sessions p WHERE p.id = s.parent_session_id)
	FROM down CROSS JOIN sessions s ON s.id = down.id ORDER BY s.started_at, s.id`

// continuationSQL selects the compression continuation of the session bound
// to ?: a child of a parent that ended with 'compression' that is not a
// branch, delegate, reset or tool session of that parent (the latest one if
// several). Markers are compared with the parent id: a continuation
// inherits model_config verbatim, so a marker naming another session was
// inherited, not set for this fork.
const continuationSQL = `SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
	WHERE c.parent_session_id = ? AND p.end_reason = 'compression'
	AND COALESCE(json_extract(CASE WHEN json_valid(c.model_config) THEN c.model_config ELSE '{}' END, '$._branched_from'), '') != p.id
	AND COALESCE(json_extract(CASE WHEN json_valid(c.model_config) THEN c.model_config ELSE '{}' END, '$._delegate_from'), '') != p.id
	AND COALESCE(json_extract(CASE WHEN json_valid(c.model_config) THEN c.model_config ELSE '{}' END, '$._reset_from'), '') != p.id
	AND COALESCE(c.source, '') <> 'tool'
	ORDER BY c.started_at DESC, c.id DESC LIMIT 1`

// CompressionTip follows a session's compression continuations to the live
// end of its conversation; an uncompressed session is its own tip.
func (db *DB) CompressionTip(ctx context.Context, id string) (string, error) {
	if _, err := db.Session(ctx, id); err != nil {
		return "", err
	}
	return db.compressionTip(ctx, id)
}

// compressionTip is CompressionTip for a session known to exist.
func (db *DB) compressionTip(ctx context.Context, id string) (string, error) {
	tip := id
	for i := 0; i < 1000; i++ {
		var next string
		err := db.read.QueryRowContext(ctx, continuationSQL, tip).Scan(&next)
		if err == sql.ErrNoRows {
			return tip, nil
		}
		if err != nil {
			return "", db.mapErr("compression tip", err)
		}
		tip = next
	}
	return tip, nil
}

// CompressionChain returns the logical conversation a session belongs to:
// its compression ancestors, the session and its continuations, root first.
func (db *DB) CompressionChain(ctx context.Context, id string) ([]string, error) {
	chain, err := db.compressionAncestors(ctx, id)
	if err != nil {
		return nil, err
	}
	for cur := id; len(chain) < 2000; {
		var next string
		err := db.read.QueryRowContext(ctx, continuationSQL, cur).Scan(&next)
		if err == sql.ErrNoRows {
			break
		}
		if err != nil {
			return nil, db.mapErr("compression chain", err)
		}
		chain = append(chain, next)
		cur = next
	}
	return chain, nil
}
