package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
)

// sessionColumns is the explicit column list every session read uses.
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

// scanSession reads one row of sessionColumns.
func scanSession(row pgx.Row) (*sessiondb.Session, error) {
	var s sessiondb.Session
	err := row.Scan(s.ScanTargets()...)
	if err != nil {
		return nil, err
	}
	fromPGStruct(&s)
	s.ResetFrom, s.BranchedFrom = sessiondb.ModelConfigMarkers(s.ModelConfig)
	return &s, nil
}

// Session returns one session with its system prompt resolved.
func (db *DB) Session(ctx context.Context, id string) (*sessiondb.Session, error) {
	s, err := scanSession(db.pool.QueryRow(ctx, "SELECT "+sessionColumns+" FROM sessions s WHERE s.id = $1", toPG(id)))
	if errors.Is(err, pgx.ErrNoRows) {
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

func unixSeconds(db *DB) float64 { return float64(db.now().UnixNano()) / 1e9 }

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
		started = unixSeconds(db)
	}
	err := db.write(ctx, fmt.Sprintf("create session %q", ns.ID), func(tx pgx.Tx) error {
		return db.createSession(ctx, tx, ns, started)
	})
	if err != nil {
		return "", err
	}
	return ns.ID, nil
}

func (db *DB) createSession(ctx context.Context, tx pgx.Tx, ns sessiondb.NewSession, started float64) error {
	var gitBranch string
	if ns.ParentSessionID != "" {
		var p struct {
			cwd, repo, branch, profile, endReason                                   *string
			userID, sessionKey, chatID, chatType, threadID, displayName, originJSON *string
		}
		err := tx.QueryRow(ctx, `SELECT cwd, git_repo_root, git_branch, profile_name, end_reason,
			user_id, session_key, chat_id, chat_type, thread_id, display_name, origin_json
			FROM sessions WHERE id = $1`, toPG(ns.ParentSessionID)).Scan(&p.cwd, &p.repo, &p.branch, &p.profile, &p.endReason,
			&p.userID, &p.sessionKey, &p.chatID, &p.chatType, &p.threadID, &p.displayName, &p.originJSON)
		if errors.Is(err, pgx.ErrNoRows) {
			return sessiondb.Errorf(sessiondb.ENOTFOUND, "parent session %q not found", ns.ParentSessionID)
		}
		if err != nil {
			return err
		}
		fill := func(dst *string, src *string) {
			if *dst == "" && src != nil {
				*dst = fromPG(*src)
			}
		}
		fill(&ns.Cwd, p.cwd)
		fill(&ns.GitRepoRoot, p.repo)
		fill(&gitBranch, p.branch)
		parentKey := ""
		if p.sessionKey != nil {
			parentKey = fromPG(*p.sessionKey)
		}
		if sessiondb.SameAgentNamespace(ns.SessionKey, parentKey) {
			fill(&ns.ProfileName, p.profile)
		}
		if p.endReason != nil && *p.endReason == sessiondb.EndReasonCompression {
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
	_, err := tx.Exec(ctx, `INSERT INTO sessions (id, source, user_id, model, model_config,
		system_prompt_hash, parent_session_id, started_at, session_key, chat_id, chat_type, thread_id,
		display_name, origin_json, cwd, profile_name, git_repo_root, git_branch, origin)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
	ON CONFLICT (id) DO UPDATE SET
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
		text(ns.ID), text(ns.Source), textArg(ns.UserID), textArg(ns.Model),
		textArg(ns.ModelConfig), promptHash, textArg(ns.ParentSessionID), started,
		textArg(ns.SessionKey), textArg(ns.ChatID), textArg(ns.ChatType), textArg(ns.ThreadID),
		textArg(ns.DisplayName), textArg(ns.OriginJSON), textArg(ns.Cwd), textArg(ns.ProfileName),
		textArg(ns.GitRepoRoot), textArg(gitBranch), db.origin)
	return err
}

// storePrompt stores prompt once in system_prompts and returns its hash.
func storePrompt(ctx context.Context, tx pgx.Tx, prompt string) (string, error) {
	prompt = sessiondb.ScrubText(prompt)
	h := sessiondb.PromptHash(prompt)
	_, err := tx.Exec(ctx, "INSERT INTO system_prompts (hash, prompt) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING", h, toPG(prompt))
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
	err := db.write(ctx, fmt.Sprintf("ensure session %q", id), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO sessions (id, source, model, started_at, origin) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO NOTHING`, text(id), text(source), textArg(model), unixSeconds(db), db.origin)
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
	return db.write(ctx, fmt.Sprintf("end session %q", id), func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE sessions SET ended_at = $1, end_reason = $2 WHERE id = $3 AND ended_at IS NULL",
			unixSeconds(db), text(reason), toPG(id))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return mustExist(ctx, tx, id)
		}
		return nil
	})
}

// ReopenSession clears ended_at and end_reason.
func (db *DB) ReopenSession(ctx context.Context, id string) error {
	return db.write(ctx, fmt.Sprintf("reopen session %q", id), func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = $1", toPG(id))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound(id)
		}
		return nil
	})
}

// mustExist returns ENOTFOUND when session id does not exist.
func mustExist(ctx context.Context, tx pgx.Tx, id string) error {
	var one int
	err := tx.QueryRow(ctx, "SELECT 1 FROM sessions WHERE id = $1", toPG(id)).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(id)
	}
	return err
}

// UpdateSystemPrompt stores prompt once by SHA-256 in system_prompts and
// points the session at it; the legacy inline column is cleared.
func (db *DB) UpdateSystemPrompt(ctx context.Context, id, prompt string) error {
	return db.write(ctx, fmt.Sprintf("update system prompt of %q", id), func(tx pgx.Tx) error {
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
		if _, err := tx.Exec(ctx, "UPDATE sessions SET system_prompt_hash = $1, system_prompt = NULL WHERE id = $2", hash, toPG(id)); err != nil {
			return err
		}
		return gcPrompts(ctx, tx)
	})
}

// UpdateTokenCounts adds the counts to the session's totals (or sets them
// with Absolute), back-fills the model when the session has none, and keeps
// the per-route row of session_model_usage in step.
func (db *DB) UpdateTokenCounts(ctx context.Context, id string, u sessiondb.TokenUpdate) error {
	now := unixSeconds(db)
	return db.write(ctx, fmt.Sprintf("update token counts of %q", id), func(tx pgx.Tx) error {
		var model *string
		err := tx.QueryRow(ctx, "SELECT model FROM sessions WHERE id = $1 FOR UPDATE", toPG(id)).Scan(&model)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return err
		}
		var args []any
		arg := func(v any) string {
			args = append(args, v)
			return fmt.Sprintf("$%d", len(args))
		}
		set := func(col string, v any) string {
			if u.Absolute {
				return col + " = " + arg(v)
			}
			return col + " = COALESCE(" + col + ", 0) + " + arg(v)
		}
		sets := []string{set("input_tokens", u.InputTokens), set("output_tokens", u.OutputTokens),
			set("cache_read_tokens", u.CacheReadTokens), set("cache_write_tokens", u.CacheWriteTokens),
			set("reasoning_tokens", u.ReasoningTokens), set("api_call_count", u.APICallCount)}
		if u.EstimatedCostUSD != nil {
			sets = append(sets, set("estimated_cost_usd", *u.EstimatedCostUSD))
		}
		if u.ActualCostUSD != nil {
			sets = append(sets, set("actual_cost_usd", *u.ActualCostUSD))
		}
		sets = append(sets, "model = COALESCE(model, "+arg(textArg(u.Model))+")")
		for _, c := range []struct{ col, v string }{{"billing_provider", u.BillingProvider}, {"billing_base_url", u.BillingBaseURL},
			{"billing_mode", u.BillingMode}, {"cost_status", u.CostStatus}, {"cost_source", u.CostSource}, {"pricing_version", u.PricingVersion}} {
			sets = append(sets, c.col+" = COALESCE("+arg(textArg(c.v))+", "+c.col+")")
		}
		q := "UPDATE sessions SET " + strings.Join(sets, ", ") + " WHERE id = " + arg(toPG(id))
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			return err
		}

		route := u.Model
		if route == "" && model != nil {
			route = fromPG(*model)
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
		_, err = tx.Exec(ctx, `INSERT INTO session_model_usage (session_id, model, billing_provider,
			billing_base_url, billing_mode, task, api_call_count, input_tokens, output_tokens,
			cache_read_tokens, cache_write_tokens, reasoning_tokens, estimated_cost_usd, actual_cost_usd,
			cost_status, cost_source, first_seen, last_seen)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
			ON CONFLICT (session_id, model, billing_provider, billing_base_url, billing_mode, task) DO UPDATE SET `+
			strings.Join([]string{uset("api_call_count"), uset("input_tokens"), uset("output_tokens"),
				uset("cache_read_tokens"), uset("cache_write_tokens"), uset("reasoning_tokens"),
				uset("estimated_cost_usd"), uset("actual_cost_usd")}, ", ")+`,
				cost_status = COALESCE(excluded.cost_status, session_model_usage.cost_status),
				cost_source = COALESCE(excluded.cost_source, session_model_usage.cost_source),
				first_seen = COALESCE(session_model_usage.first_seen, excluded.first_seen),
				last_seen = excluded.last_seen`,
			toPG(id), text(route), text(u.BillingProvider), text(u.BillingBaseURL),
			text(u.BillingMode), text(u.Task), u.APICallCount, u.InputTokens, u.OutputTokens,
			u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, est, act,
			textArg(u.CostStatus), textArg(u.CostSource), now, now)
		return err
	})
}

// ResolveSessionID returns the session whose id is idOrPrefix, or else the
// only session whose id starts with it (% and _ are literal).
func (db *DB) ResolveSessionID(ctx context.Context, idOrPrefix string) (string, error) {
	if idOrPrefix == "" {
		return "", sessiondb.Errorf(sessiondb.EINVALID, "an empty session id matches nothing")
	}
	key := toPG(idOrPrefix)
	rows, err := db.pool.Query(ctx, `SELECT id FROM sessions WHERE id = $1
		UNION ALL (SELECT id FROM sessions WHERE id LIKE $2 ESCAPE '\' AND id <> $1 ORDER BY id LIMIT 2)`,
		key, escapeLike(key)+"%")
	if err != nil {
		return "", db.mapErr("resolve session id", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", db.mapErr("resolve session id", err)
	}
	for i := range ids {
		ids[i] = fromPG(ids[i])
		if ids[i] == idOrPrefix {
			return ids[i], nil
		}
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

// Meta returns a state_meta value and whether the key exists.
func (db *DB) Meta(ctx context.Context, key string) (string, bool, error) {
	var v *string
	err := db.pool.QueryRow(ctx, "SELECT value FROM state_meta WHERE key = $1", toPG(key)).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, db.mapErr("get meta "+key, err)
	}
	if v == nil {
		return "", true, nil
	}
	return fromPG(*v), true, nil
}

// SetMeta upserts a state_meta value.
func (db *DB) SetMeta(ctx context.Context, key, value string) error {
	return db.write(ctx, "set meta "+key, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO state_meta (key, value) VALUES ($1, $2)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, toPG(key), toPG(value))
		return err
	})
}
