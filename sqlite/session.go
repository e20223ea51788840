package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// sessionColumns is the explicit column list every session read uses; a
// newer Hermes may have added columns, which are left alone.
const sessionColumns = `s.id, s.source, s.created_source, s.user_id, s.session_key, s.chat_id, s.chat_type,
	s.thread_id, s.display_name, s.origin_json, s.expiry_finalized, s.model, s.model_config,
	COALESCE((SELECT p.prompt FROM system_prompts p WHERE p.hash = s.system_prompt_hash), s.system_prompt),
	s.system_prompt_hash, s.parent_session_id, s.started_at, s.ended_at, s.end_reason,
	COALESCE(s.message_count, 0), COALESCE(s.tool_call_count, 0), COALESCE(s.api_call_count, 0),
	COALESCE(s.input_tokens, 0), COALESCE(s.output_tokens, 0), COALESCE(s.cache_read_tokens, 0),
	COALESCE(s.cache_write_tokens, 0), COALESCE(s.reasoning_tokens, 0),
	s.billing_provider, s.billing_base_url, s.billing_mode, s.estimated_cost_usd, s.actual_cost_usd,
	s.cost_status, s.cost_source, s.pricing_version, s.cwd, s.git_branch, s.git_repo_root,
	COALESCE(s.git_metadata_generation, 0), s.title, s.title_source, s.last_activity_at,
	s.last_activity_description, s.last_activity_provenance, s.handoff_state, s.handoff_platform,
	s.handoff_error, s.compression_failure_cooldown_until, s.compression_failure_error,
	COALESCE(s.compression_fallback_streak, 0), COALESCE(s.compression_ineffective_count, 0),
	s.compression_recovery_deadline, COALESCE(s.compression_overload_streak, 0), s.profile_name,
	s.transport_profile, COALESCE(s.rewind_count, 0), COALESCE(s.archived, 0), COALESCE(s.auto_archived, 0),
	COALESCE(s.pinned, 0), COALESCE(s.hidden, 0), s.last_read_at, s.tool_names`

type scanner interface{ Scan(dest ...any) error }

func scanSession(row scanner) (*sessiondb.Session, error) {
	var s sessiondb.Session
	err := row.Scan(s.ScanTargets()...)
	if err != nil {
		return nil, err
	}
	s.ResetFrom, s.BranchedFrom = sessiondb.ModelConfigMarkers(s.ModelConfig)
	return &s, nil
}

// Session returns one session, its system prompt resolved from
// system_prompts (or the legacy inline column).
func (db *DB) Session(ctx context.Context, id string) (*sessiondb.Session, error) {
	s, err := scanSession(db.read.QueryRowContext(ctx, "SELECT "+sessionColumns+" FROM sessions s WHERE s.id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, db.mapErr(fmt.Sprintf("get session %q", id), err)
	}
	return s, nil
}

func notFound(id string) error {
	return sessiondb.Errorf(sessiondb.ENOTFOUND, "session %q not found", id)
}

// nullString maps "" to NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return sessiondb.ScrubText(s)
}

// CreateSession inserts a session or merges into an existing row: existing
// non-NULL values win, and source is replaced only while it is 'unknown'.
// A child NULL-fills its workspace columns from its parent, and inherits the
// gateway routing columns only when the parent ended with 'compression'.
func (db *DB) CreateSession(ctx context.Context, ns sessiondb.NewSession) (string, error) {
	if ns.ID == "" {
		ns.ID = sessiondb.NewSessionID(db.now())
	}
	if err := sessiondb.CheckNewSession(ns); err != nil {
		return "", err
	}
	started := ns.StartedAt
	if started == 0 {
		started = unixSeconds(db.now())
	}
	err := db.writeTx(ctx, 0, fmt.Sprintf("create session %q", ns.ID), func(tx *sql.Tx) error {
		return createSession(ctx, tx, ns, started)
	})
	if err != nil {
		return "", err
	}
	return ns.ID, nil
}

func createSession(ctx context.Context, tx *sql.Tx, ns sessiondb.NewSession, started float64) error {
	var gitBranch string
	if ns.ParentSessionID != "" {
		var p struct {
			cwd, repo, branch, profile, endReason                                   sql.NullString
			userID, sessionKey, chatID, chatType, threadID, displayName, originJSON sql.NullString
		}
		err := tx.QueryRowContext(ctx, `SELECT cwd, git_repo_root, git_branch, profile_name, end_reason,
			user_id, session_key, chat_id, chat_type, thread_id, display_name, origin_json
			FROM sessions WHERE id = ?`, ns.ParentSessionID).Scan(&p.cwd, &p.repo, &p.branch, &p.profile, &p.endReason,
			&p.userID, &p.sessionKey, &p.chatID, &p.chatType, &p.threadID, &p.displayName, &p.originJSON)
		if errors.Is(err, sql.ErrNoRows) {
			return sessiondb.Errorf(sessiondb.ENOTFOUND, "parent session %q not found", ns.ParentSessionID)
		}
		if err != nil {
			return err
		}
		fill := func(dst *string, src sql.NullString) {
			if *dst == "" && src.Valid {
				*dst = src.String
			}
		}
		fill(&ns.Cwd, p.cwd)
		fill(&ns.GitRepoRoot, p.repo)
		fill(&gitBranch, p.branch)
		if sessiondb.SameAgentNamespace(ns.SessionKey, p.sessionKey.String) {
			fill(&ns.ProfileName, p.profile)
		}
		if p.endReason.String == sessiondb.EndReasonCompression {
			fill(&ns.UserID, p.userID)
			fill(&ns.SessionKey, p.sessionKey)
			fill(&ns.ChatID, p.chatID)
			fill(&ns.ChatType, p.chatType)
			fill(&ns.ThreadID, p.threadID)
			fill(&ns.DisplayName, p.displayName)
			fill(&ns.OriginJSON, p.originJSON)
		}
	}
	var promptHash any
	if ns.SystemPrompt != "" {
		h, err := storePrompt(ctx, tx, ns.SystemPrompt)
		if err != nil {
			return err
		}
		promptHash = h
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, source, user_id, model, model_config,
		system_prompt_hash, parent_session_id, started_at, session_key, chat_id, chat_type, thread_id,
		display_name, origin_json, cwd, profile_name, git_repo_root, git_branch)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT(id) DO UPDATE SET
		source = CASE WHEN sessions.source = 'unknown' THEN excluded.source ELSE sessions.source END,
		user_id = COALESCE(sessions.user_id, excluded.user_id),
		model = COALESCE(sessions.model, excluded.model),
		model_config = COALESCE(sessions.model_config, excluded.model_config),
		system_prompt_hash = COALESCE(sessions.system_prompt_hash, excluded.system_prompt_hash),
		parent_session_id = COALESCE(sessions.parent_session_id, excluded.parent_session_id),
		session_key = COALESCE(sessions.session_key, excluded.session_key),
		chat_id = COALESCE(sessions.chat_id, excluded.chat_id),
		chat_type = COALESCE(sessions.chat_type, excluded.chat_type),
		thread_id = COALESCE(sessions.thread_id, excluded.thread_id),
		display_name = COALESCE(sessions.display_name, excluded.display_name),
		origin_json = COALESCE(sessions.origin_json, excluded.origin_json),
		cwd = COALESCE(sessions.cwd, excluded.cwd),
		profile_name = COALESCE(sessions.profile_name, excluded.profile_name),
		git_repo_root = COALESCE(sessions.git_repo_root, excluded.git_repo_root),
		git_branch = COALESCE(sessions.git_branch, excluded.git_branch)`,
		sessiondb.ScrubText(ns.ID), sessiondb.ScrubText(ns.Source), nullString(ns.UserID), nullString(ns.Model),
		nullString(ns.ModelConfig), promptHash, nullString(ns.ParentSessionID), started,
		nullString(ns.SessionKey), nullString(ns.ChatID), nullString(ns.ChatType), nullString(ns.ThreadID),
		nullString(ns.DisplayName), nullString(ns.OriginJSON), nullString(ns.Cwd), nullString(ns.ProfileName),
		nullString(ns.GitRepoRoot), nullString(gitBranch))
	return err
}

// storePrompt stores prompt once in system_prompts and returns its hash.
func storePrompt(ctx context.Context, tx *sql.Tx, prompt string) (string, error) {
	prompt = sessiondb.ScrubText(prompt)
	h := sessiondb.PromptHash(prompt)
	_, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO system_prompts (hash, prompt) VALUES (?, ?)", h, prompt)
	return h, err
}

// EnsureSession creates the session when it does not exist; an existing row
// is left untouched.
func (db *DB) EnsureSession(ctx context.Context, id, source, model string) (string, error) {
	if id == "" {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "ensure session: an id is required")
	}
	if source == "" {
		source = "unknown"
	}
	err := db.writeTx(ctx, 0, fmt.Sprintf("ensure session %q", id), func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO sessions (id, source, model, started_at) VALUES (?, ?, ?, ?)",
			sessiondb.ScrubText(id), sessiondb.ScrubText(source), nullString(model), unixSeconds(db.now()))
		return err
	})
	return id, err
}

// EndSession stamps ended_at and end_reason. The first reason wins: ending
// an ended session changes nothing.
func (db *DB) EndSession(ctx context.Context, id, reason string) error {
	if reason == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "end session %q: an end reason is required", id)
	}
	return db.writeTx(ctx, 0, fmt.Sprintf("end session %q", id), func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
			unixSeconds(db.now()), sessiondb.ScrubText(reason), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return mustExist(ctx, tx, id)
		}
		if sessiondb.ResetEndReasons[reason] {
			_, err = tx.ExecContext(ctx, `INSERT INTO conversation_generations (source, session_key, generation)
				SELECT source, session_key, 1 FROM sessions WHERE id = ? AND COALESCE(session_key, '') <> ''
				ON CONFLICT(source, session_key) DO UPDATE SET generation = generation + 1`, id)
		}
		return err
	})
}

// ReopenSession clears ended_at and end_reason.
func (db *DB) ReopenSession(ctx context.Context, id string) error {
	return db.writeTx(ctx, 0, fmt.Sprintf("reopen session %q", id), func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound(id)
		}
		return nil
	})
}

func mustExist(ctx context.Context, tx *sql.Tx, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, "SELECT 1 FROM sessions WHERE id = ?", id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(id)
	}
	return err
}

// UpdateSystemPrompt stores prompt once by SHA-256 in system_prompts and
// points the session at it; the legacy inline column is cleared.
func (db *DB) UpdateSystemPrompt(ctx context.Context, id, prompt string) error {
	return db.writeTx(ctx, 0, fmt.Sprintf("update system prompt of %q", id), func(tx *sql.Tx) error {
		if err := mustExist(ctx, tx, id); err != nil {
			return err
		}
		var hash any
		if prompt != "" {
			h, err := storePrompt(ctx, tx, prompt)
			if err != nil {
				return err
			}
			hash = h
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET system_prompt_hash = ?, system_prompt = NULL WHERE id = ?", hash, id); err != nil {
			return err
		}
		return gcPrompts(ctx, tx)
	})
}

// gcPrompts deletes system prompts no session refers to.
func gcPrompts(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM system_prompts WHERE hash NOT IN
		(SELECT system_prompt_hash FROM sessions WHERE system_prompt_hash IS NOT NULL)
		AND hash NOT IN (SELECT tool_names FROM sessions WHERE tool_names IS NOT NULL)`)
	return err
}

// UpdateTokenCounts adds the counts to the session's totals (or sets them
// with Absolute), back-fills the model when the session has none, and keeps
// the per-route row of session_model_usage in step.
func (db *DB) UpdateTokenCounts(ctx context.Context, id string, u sessiondb.TokenUpdate) error {
	now := unixSeconds(db.now())
	return db.writeTx(ctx, 0, fmt.Sprintf("update token counts of %q", id), func(tx *sql.Tx) error {
		var model sql.NullString
		err := tx.QueryRowContext(ctx, "SELECT model FROM sessions WHERE id = ?", id).Scan(&model)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return err
		}
		set := func(col string) string {
			if u.Absolute {
				return col + " = ?"
			}
			return col + " = COALESCE(" + col + ", 0) + ?"
		}
		cost := func(col string, v *float64) (string, []any) {
			if v == nil {
				return "", nil
			}
			return ", " + set(col), []any{*v}
		}
		estSQL, estArgs := cost("estimated_cost_usd", u.EstimatedCostUSD)
		actSQL, actArgs := cost("actual_cost_usd", u.ActualCostUSD)
		q := "UPDATE sessions SET " + strings.Join([]string{set("input_tokens"), set("output_tokens"),
			set("cache_read_tokens"), set("cache_write_tokens"), set("reasoning_tokens"), set("api_call_count")}, ", ") +
			estSQL + actSQL + `,
			model = COALESCE(model, ?),
			billing_provider = COALESCE(?, billing_provider),
			billing_base_url = COALESCE(?, billing_base_url),
			billing_mode = COALESCE(?, billing_mode),
			cost_status = COALESCE(?, cost_status),
			cost_source = COALESCE(?, cost_source),
			pricing_version = COALESCE(?, pricing_version)
			WHERE id = ?`
		args := []any{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.APICallCount}
		args = append(args, estArgs...)
		args = append(args, actArgs...)
		args = append(args, nullString(u.Model), nullString(u.BillingProvider), nullString(u.BillingBaseURL),
			nullString(u.BillingMode), nullString(u.CostStatus), nullString(u.CostSource), nullString(u.PricingVersion), id)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}

		route := u.Model
		if route == "" {
			route = model.String
		}
		if route == "" {
			route = "unknown"
		}
		uset := func(col string) string {
			if u.Absolute {
				return col + " = excluded." + col
			}
			return col + " = session_model_usage." + col + " + excluded." + col
		}
		var est, act float64
		if u.EstimatedCostUSD != nil {
			est = *u.EstimatedCostUSD
		}
		if u.ActualCostUSD != nil {
			act = *u.ActualCostUSD
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO session_model_usage (session_id, model, billing_provider,
			billing_base_url, billing_mode, task, api_call_count, input_tokens, output_tokens,
			cache_read_tokens, cache_write_tokens, reasoning_tokens, estimated_cost_usd, actual_cost_usd,
			cost_status, cost_source, first_seen, last_seen)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(session_id, model, billing_provider, billing_base_url, billing_mode, task) DO UPDATE SET `+
			strings.Join([]string{uset("api_call_count"), uset("input_tokens"), uset("output_tokens"),
				uset("cache_read_tokens"), uset("cache_write_tokens"), uset("reasoning_tokens"),
				uset("estimated_cost_usd"), uset("actual_cost_usd")}, ", ")+`,
				cost_status = COALESCE(excluded.cost_status, session_model_usage.cost_status),
				cost_source = COALESCE(excluded.cost_source, session_model_usage.cost_source),
				first_seen = COALESCE(session_model_usage.first_seen, excluded.first_seen),
				last_seen = excluded.last_seen`,
			id, sessiondb.ScrubText(route), sessiondb.ScrubText(u.BillingProvider), sessiondb.ScrubText(u.BillingBaseURL),
			sessiondb.ScrubText(u.BillingMode), sessiondb.ScrubText(u.Task), u.APICallCount, u.InputTokens, u.OutputTokens,
			u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, est, act,
			nullString(u.CostStatus), nullString(u.CostSource), now, now)
		return err
	})
}

// ResolveSessionID returns the session whose id is idOrPrefix, or else the
// only session whose id starts with it (% and _ are literal).
func (db *DB) ResolveSessionID(ctx context.Context, idOrPrefix string) (string, error) {
	if idOrPrefix == "" {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "an empty session id matches nothing")
	}
	rows, err := db.read.QueryContext(ctx, `SELECT id FROM sessions WHERE id = ?1
		UNION ALL SELECT id FROM (SELECT id FROM sessions WHERE id LIKE ?2 ESCAPE '\' AND id <> ?1 LIMIT 2)`,
		idOrPrefix, escapeLike(idOrPrefix)+"%")
	if err != nil {
		return "", db.mapErr("resolve session id", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", db.mapErr("resolve session id", err)
		}
		if id == idOrPrefix {
			return id, nil
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return "", db.mapErr("resolve session id", err)
	}
	switch len(ids) {
	case 0:
		return "", notFound(idOrPrefix)
	case 1:
		return ids[0], nil
	}
	return "", sessiondb.Errorf(sessiondb.EINVALID, "session id prefix %q is ambiguous: it matches %s, %s and maybe more; give more characters", idOrPrefix, ids[0], ids[1])
}

// escapeLike escapes \, % and _ for LIKE … ESCAPE '\'.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s)
}

// Meta returns a state_meta value. It reads on the writer connection, so it
// sees this process's latest committed writes.
func (db *DB) Meta(ctx context.Context, key string) (string, bool, error) {
	var v sql.NullString
	err := db.write.QueryRowContext(ctx, "SELECT value FROM state_meta WHERE key = ?", key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, db.mapErr("get meta "+key, err)
	}
	return v.String, true, nil
}

// SetMeta upserts a state_meta value.
func (db *DB) SetMeta(ctx context.Context, key, value string) error {
	return db.writeTx(ctx, 0, "set meta "+key, func(tx *sql.Tx) error {
		return setMeta(ctx, tx, key, value)
	})
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func setMeta(ctx context.Context, tx execer, key, value string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO state_meta (key, value) VALUES (?, ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}
