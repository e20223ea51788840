package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// marker is the non-throwing lookup of a model_config marker of the
// session aliased alias (migrations/0004_markers.sql).
func marker(alias, key string) string {
	return "sessiondb_marker(" + alias + ".model_config, '" + key + "')"
}

// continuationSQL selects the compression continuation of the session $1:
// a child of a parent that ended with 'compression' that is not a branch,
// delegate, reset or tool session of that parent (the latest one if
// several). Markers are compared with the parent id: a continuation
// inherits model_config verbatim, so a marker naming another session was
// inherited, not set for this fork.
var continuationSQL = `SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
	WHERE c.parent_session_id = $1 AND p.end_reason = 'compression'
	AND COALESCE(` + marker("c", "_branched_from") + `, '') <> p.id
	AND COALESCE(` + marker("c", "_delegate_from") + `, '') <> p.id
	AND COALESCE(` + marker("c", "_reset_from") + `, '') <> p.id
	AND COALESCE(c.source, '') <> 'tool'
	ORDER BY c.started_at DESC, c.id COLLATE "C" DESC LIMIT 1`

// reader is what reads run on: the pool, or a transaction.
type reader interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// continuation returns the compression continuation of id (stored form),
// or "" when it has none.
func continuation(ctx context.Context, q reader, id string) (string, error) {
	var next string
	err := q.QueryRow(ctx, continuationSQL, id).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return next, err
}

// collect runs a query returning one text column and collects it,
// unescaped.
func collect(ctx context.Context, q reader, query string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	for i := range out {
		out[i] = fromPG(out[i])
	}
	return out, err
}

// compressionAncestors returns the session's compression lineage, root
// first: parents are followed while they ended with 'compression'.
func (db *DB) compressionAncestors(ctx context.Context, id string) ([]string, error) {
	chain, err := collect(ctx, db.pool, `WITH RECURSIVE up(id, parent, depth) AS (
			SELECT id, parent_session_id, 0 FROM sessions WHERE id = $1
			UNION ALL
			SELECT p.id, p.parent_session_id, up.depth + 1 FROM sessions p JOIN up ON p.id = up.parent
			WHERE p.end_reason = 'compression' AND up.depth < 1000)
		SELECT id FROM up ORDER BY depth DESC`, toPG(id))
	if err != nil {
		return nil, db.mapErr("get lineage", err)
	}
	if len(chain) == 0 {
		return nil, notFound(id)
	}
	return chain, nil
}

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
	tip := toPG(id)
	for i := 0; i < 1000; i++ {
		next, err := continuation(ctx, db.pool, tip)
		if err != nil {
			return "", db.mapErr("compression tip", err)
		}
		if next == "" {
			break
		}
		tip = next
	}
	return fromPG(tip), nil
}

// CompressionChain returns the logical conversation a session belongs to:
// its compression ancestors, the session and its continuations, root first.
func (db *DB) CompressionChain(ctx context.Context, id string) ([]string, error) {
	chain, err := db.compressionAncestors(ctx, id)
	if err != nil {
		return nil, err
	}
	for cur := toPG(id); len(chain) < 2000; {
		next, err := continuation(ctx, db.pool, cur)
		if err != nil {
			return nil, db.mapErr("compression chain", err)
		}
		if next == "" {
			break
		}
		chain = append(chain, fromPG(next))
		cur = next
	}
	return chain, nil
}

// Lineage returns the tree of sessions linked to id through
// parent_session_id: from its root (the oldest ancestor) down through every
// descendant, each marked with how it continues its parent
// (sessiondb.ChildKind).
func (db *DB) Lineage(ctx context.Context, id string) (*sessiondb.LineageNode, error) {
	if _, err := db.Session(ctx, id); err != nil {
		return nil, err
	}
	var root string
	err := db.pool.QueryRow(ctx, `WITH RECURSIVE up(id, parent, depth) AS (
			SELECT id, parent_session_id, 0 FROM sessions WHERE id = $1
			UNION ALL
			SELECT s.id, s.parent_session_id, up.depth + 1 FROM sessions s JOIN up ON s.id = up.parent WHERE up.depth < 1000)
		SELECT id FROM up ORDER BY depth DESC LIMIT 1`, toPG(id)).Scan(&root)
	if err != nil {
		return nil, db.mapErr("lineage", err)
	}
	rows, err := db.pool.Query(ctx, `WITH RECURSIVE down(id, depth) AS (
			SELECT $1::text, 0
			UNION
			SELECT s.id, down.depth + 1 FROM sessions s JOIN down ON s.parent_session_id = down.id WHERE down.depth < 1000)
		SELECT s.id, s.parent_session_id, s.title, s.source, s.started_at, s.ended_at, s.end_reason,
			COALESCE(s.message_count, 0), s.model_config,
			(SELECT p.end_reason FROM sessions p WHERE p.id = s.parent_session_id)
		FROM down JOIN sessions s ON s.id = down.id ORDER BY s.started_at, s.id COLLATE "C"`, root)
	if err != nil {
		return nil, db.mapErr("lineage", err)
	}
	var lineage []sessiondb.LineageRow
	var r sessiondb.LineageRow
	n := &r.Node
	_, err = pgx.ForEachRow(rows, []any{&n.ID, &r.Parent, &n.Title, &n.Source, &n.StartedAt, &n.EndedAt, &n.EndReason,
		&n.MessageCount, &r.ModelConfig, &r.ParentEndReason}, func() error {
		row := r
		fromPGStruct(&row.Node)
		row.Parent, row.ModelConfig, row.ParentEndReason = fromPGPtr(r.Parent), fromPGPtr(r.ModelConfig), fromPGPtr(r.ParentEndReason)
		lineage = append(lineage, row)
		return nil
	})
	if err != nil {
		return nil, db.mapErr("lineage", err)
	}
	return sessiondb.BuildLineage(fromPG(root), lineage), nil
}
