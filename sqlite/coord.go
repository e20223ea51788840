package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Holder returns this process's lease-holder string in Hermes' format,
// "pid=<pid>:pidns=<pid namespace inode>" (the namespace on Linux only),
// followed by ":"+tag when tag is given.
func Holder(tag string) string {
	h := "pid=" + strconv.Itoa(os.Getpid())
	if ns := pidNamespace(); ns != "" {
		h += ":pidns=" + ns
	}
	if tag != "" {
		h += ":" + tag
	}
	return h
}

// pidNamespace returns the inode of this process's pid namespace, or "".
func pidNamespace() string {
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	m := nsInodeRE.FindStringSubmatch(link)
	if m == nil {
		return ""
	}
	return m[1]
}

var (
	nsInodeRE     = regexp.MustCompile(`\[(\d+)\]`)
	holderPIDRE   = regexp.MustCompile(`(?:^|:)pid=(\d+)(?::|$)`)
	holderPIDNSRE = regexp.MustCompile(`(?:^|:)pidns=(\d+)(?::|$)`)
)

// holderDead reports whether a lease holder's process provably no longer
// exists: the holder names a pid in this process's pid namespace, not this
// process, and signal 0 to it fails with ESRCH. Anything else is alive
// until its lease expires.
func holderDead(holder string) bool {
	m := holderPIDRE.FindStringSubmatch(holder)
	if m == nil {
		return false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	if ns := pidNamespace(); ns != "" {
		hm := holderPIDNSRE.FindStringSubmatch(holder)
		if hm == nil || hm[1] != ns {
			return false // another namespace (or unstamped): not checkable
		}
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// lease is one of Hermes' lease tables: compression_locks (keyed by
// session) and session_turn_leases (keyed by conversation).
type lease struct{ table, key string }

var (
	compressionLocks = lease{"compression_locks", "session_id"}
	turnLeases       = lease{"session_turn_leases", "conversation_id"}
)

// acquire takes the lease for holder unless a live holder has it: an
// expired row, or one whose holder is provably dead, is reclaimed.
func (db *DB) acquire(ctx context.Context, l lease, key, holder string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	got := false
	err := db.writeTx(ctx, 0, "acquire "+l.table+" "+key, func(tx *sql.Tx) error {
		got = false
		now := unixSeconds(db.now())
		if l == turnLeases {
			if _, err := tx.ExecContext(ctx, "DELETE FROM session_turn_leases WHERE expires_at < ?", now-86400); err != nil {
				return err
			}
		}
		var cur string
		var expires float64
		err := tx.QueryRowContext(ctx, "SELECT holder, expires_at FROM "+l.table+" WHERE "+l.key+" = ?", key).Scan(&cur, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case cur != holder && (expires < now || holderDead(cur)):
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+l.table+" WHERE "+l.key+" = ? AND holder = ?", key, cur); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO "+l.table+" ("+l.key+", holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)",
			key, holder, now, now+ttl.Seconds()); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "SELECT holder FROM "+l.table+" WHERE "+l.key+" = ?", key).Scan(&cur); err != nil {
			return err
		}
		if cur == holder {
			// our own (possibly expired) row: extend it
			if _, err := tx.ExecContext(ctx, "UPDATE "+l.table+" SET expires_at = ? WHERE "+l.key+" = ? AND holder = ?", now+ttl.Seconds(), key, holder); err != nil {
				return err
			}
			got = true
		}
		return nil
	})
	return got, err
}

func (db *DB) refresh(ctx context.Context, l lease, key, holder string, ttl time.Duration) (bool, error) {
	var n int64
	err := db.writeTx(ctx, 0, "refresh "+l.table+" "+key, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE "+l.table+" SET expires_at = ? WHERE "+l.key+" = ? AND holder = ?",
			unixSeconds(db.now())+ttl.Seconds(), key, holder)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n > 0, err
}

func (db *DB) release(ctx context.Context, l lease, key, holder string) error {
	return db.writeTx(ctx, 0, "release "+l.table+" "+key, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM "+l.table+" WHERE "+l.key+" = ? AND holder = ?", key, holder)
		return err
	})
}

// AcquireCompressionLock takes the per-session compression lease (TTL
// default 5 minutes) so two processes never compress one conversation at
// once. It reports whether holder now holds it.
func (db *DB) AcquireCompressionLock(ctx context.Context, sessionID, holder string, ttl time.Duration) (bool, error) {
	return db.acquire(ctx, compressionLocks, sessionID, holder, ttl)
}

// RefreshCompressionLock extends holder's compression lease; false when
// holder no longer has it.
func (db *DB) RefreshCompressionLock(ctx context.Context, sessionID, holder string, ttl time.Duration) (bool, error) {
	return db.refresh(ctx, compressionLocks, sessionID, holder, ttl)
}

// ReleaseCompressionLock releases holder's compression lease.
func (db *DB) ReleaseCompressionLock(ctx context.Context, sessionID, holder string) error {
	return db.release(ctx, compressionLocks, sessionID, holder)
}

// AcquireTurnLease takes the per-conversation turn lease.
func (db *DB) AcquireTurnLease(ctx context.Context, conversationID, holder string, ttl time.Duration) (bool, error) {
	return db.acquire(ctx, turnLeases, conversationID, holder, ttl)
}

// RefreshTurnLease extends holder's turn lease; false when it was lost.
func (db *DB) RefreshTurnLease(ctx context.Context, conversationID, holder string, ttl time.Duration) (bool, error) {
	return db.refresh(ctx, turnLeases, conversationID, holder, ttl)
}

// ReleaseTurnLease releases holder's turn lease.
func (db *DB) ReleaseTurnLease(ctx context.Context, conversationID, holder string) error {
	return db.release(ctx, turnLeases, conversationID, holder)
}

// Route is a gateway routing entry.
type Route struct {
	Scope      string  `json:"scope"`
	SessionKey string  `json:"session_key"`
	EntryJSON  string  `json:"entry_json"`
	UpdatedAt  float64 `json:"updated_at"`
}

// PutRoute upserts a gateway routing entry (scope "" is the default).
func (db *DB) PutRoute(ctx context.Context, scope, sessionKey, entryJSON string) error {
	if !jsonValid(entryJSON) {
		return sessiondb.Errorf(sessiondb.EINVALID, "routing entry for %q is not valid JSON", sessionKey)
	}
	return db.writeTx(ctx, 0, "put route "+sessionKey, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO gateway_routing (scope, session_key, entry_json, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT(scope, session_key) DO UPDATE SET entry_json = excluded.entry_json, updated_at = excluded.updated_at`,
			scope, sessionKey, entryJSON, unixSeconds(db.now()))
		return err
	})
}

// Routes lists a scope's routing entries, or one entry when sessionKey is
// given.
func (db *DB) Routes(ctx context.Context, scope, sessionKey string) ([]Route, error) {
	q := "SELECT scope, session_key, entry_json, updated_at FROM gateway_routing WHERE scope = ?"
	args := []any{scope}
	if sessionKey != "" {
		q += " AND session_key = ?"
		args = append(args, sessionKey)
	}
	rows, err := db.read.QueryContext(ctx, q+" ORDER BY session_key", args...)
	if err != nil {
		return nil, db.mapErr("routes", err)
	}
	defer rows.Close()
	var out []Route
	for rows.Next() {
		var r Route
		if err := rows.Scan(&r.Scope, &r.SessionKey, &r.EntryJSON, &r.UpdatedAt); err != nil {
			return nil, db.mapErr("routes", err)
		}
		out = append(out, r)
	}
	return out, db.mapErr("routes", rows.Err())
}

// DeleteRoute removes a routing entry.
func (db *DB) DeleteRoute(ctx context.Context, scope, sessionKey string) error {
	return db.writeTx(ctx, 0, "delete route "+sessionKey, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM gateway_routing WHERE scope = ? AND session_key = ?", scope, sessionKey)
		return err
	})
}

// Delegation is an asynchronous subagent delegation record.
type Delegation struct {
	ID            string   `json:"delegation_id"`
	OriginSession string   `json:"origin_session"`
	ParentSession *string  `json:"parent_session_id"`
	State         string   `json:"state"`
	DispatchedAt  float64  `json:"dispatched_at"`
	CompletedAt   *float64 `json:"completed_at"`
	UpdatedAt     float64  `json:"updated_at"`
	TaskJSON      *string  `json:"task_json"`
	ResultJSON    *string  `json:"result_json"`
	DeliveryState string   `json:"delivery_state"`
	Attempts      int64    `json:"delivery_attempts"`
}

// RecordDelegation records a dispatched delegation (state "running").
func (db *DB) RecordDelegation(ctx context.Context, id, originSession, parentSession, taskJSON string) error {
	now := unixSeconds(db.now())
	return db.writeTx(ctx, 0, "record delegation "+id, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO async_delegations (delegation_id, origin_session, origin_session_id,
			parent_session_id, state, dispatched_at, updated_at, task_json, owner_pid)
			VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)`, id, originSession, originSession, nullString(parentSession),
			now, now, nullString(taskJSON), os.Getpid())
		return err
	})
}

// CompleteDelegation stores a delegation's final state and result; its
// delivery to the origin session is then pending.
func (db *DB) CompleteDelegation(ctx context.Context, id, state, resultJSON string) error {
	now := unixSeconds(db.now())
	return db.writeTx(ctx, 0, "complete delegation "+id, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE async_delegations SET state = ?, result_json = ?, completed_at = ?,
			updated_at = ? WHERE delegation_id = ?`, state, nullString(resultJSON), now, now, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return sessiondb.Errorf(sessiondb.ENOTFOUND, "delegation %q not found", id)
		}
		return nil
	})
}

// MarkDelivered records a delegation result as delivered to its origin.
func (db *DB) MarkDelivered(ctx context.Context, id string) error {
	now := unixSeconds(db.now())
	return db.writeTx(ctx, 0, "deliver delegation "+id, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE async_delegations SET delivery_state = 'delivered', delivered_at = ?,
			delivery_attempts = delivery_attempts + 1, updated_at = ? WHERE delegation_id = ?`, now, now, id)
		return err
	})
}

// PendingDeliveries lists completed delegations whose result has not been
// delivered yet, oldest first.
func (db *DB) PendingDeliveries(ctx context.Context) ([]Delegation, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT delegation_id, origin_session, parent_session_id, state, dispatched_at,
		completed_at, updated_at, task_json, result_json, delivery_state, delivery_attempts
		FROM async_delegations WHERE delivery_state = 'pending' AND completed_at IS NOT NULL ORDER BY completed_at`)
	if err != nil {
		return nil, db.mapErr("pending deliveries", err)
	}
	defer rows.Close()
	var out []Delegation
	for rows.Next() {
		var d Delegation
		if err := rows.Scan(&d.ID, &d.OriginSession, &d.ParentSession, &d.State, &d.DispatchedAt, &d.CompletedAt,
			&d.UpdatedAt, &d.TaskJSON, &d.ResultJSON, &d.DeliveryState, &d.Attempts); err != nil {
			return nil, db.mapErr("pending deliveries", err)
		}
		out = append(out, d)
	}
	return out, db.mapErr("pending deliveries", rows.Err())
}

// automaticEndReasons are end stamps written by automatic cleanup, which a
// compression continuation may clear.
var automaticEndReasons = map[string]bool{
	"agent_close": true, "ws_orphan_reap": true, "superseded_by_resume": true, "startup_orphan_reap": true,
	"tui_shutdown": true, "ws_disconnect": true, "idle_timeout": true, "lru_evict": true,
}

// ContinueSession ends parentID with 'compression' and creates its
// continuation in one transaction, as Hermes' compression does: the child
// carries the parent's routing, profile, workspace, archive and pin columns
// (CreateSession's inheritance rules). An automatic end stamp on the parent
// is cleared first; any other end refuses the continuation.
func (db *DB) ContinueSession(ctx context.Context, parentID string, child sessiondb.NewSession) (string, error) {
	if child.ID == "" {
		child.ID = sessiondb.NewSessionID(db.now())
	}
	child.ParentSessionID = parentID
	now := unixSeconds(db.now())
	err := db.writeTx(ctx, 0, fmt.Sprintf("continue session %q", parentID), func(tx *sql.Tx) error {
		var endReason sql.NullString
		var source string
		err := tx.QueryRowContext(ctx, "SELECT source, end_reason FROM sessions WHERE id = ?", parentID).Scan(&source, &endReason)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(parentID)
		}
		if err != nil {
			return err
		}
		if endReason.Valid && !automaticEndReasons[endReason.String] {
			return sessiondb.Errorf(sessiondb.ECONFLICT, "session %q already ended (%s); it cannot be continued", parentID, endReason.String)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET ended_at = ?, end_reason = 'compression' WHERE id = ?", now, parentID); err != nil {
			return err
		}
		if child.Source == "" {
			child.Source = source
		}
		if err := createSession(ctx, tx, child, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET
			archived = (SELECT COALESCE(archived, 0) FROM sessions WHERE id = ?),
			pinned = (SELECT COALESCE(pinned, 0) FROM sessions WHERE id = ?)
			WHERE id = ?`, parentID, parentID, child.ID)
		return err
	})
	return child.ID, err
}

func jsonValid(s string) bool { return json.Valid([]byte(s)) }
