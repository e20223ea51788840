package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func testCreateSession(t *testing.T, s *suite) {
	t.Run("returns the id and every given field reads back", func(t *testing.T) {
		h := s.store(t)
		ns := sessiondb.NewSession{ID: "s1", Source: "telegram", Model: "gpt-5", ModelConfig: `{"temperature":0.5}`,
			SystemPrompt: "You are careful.", UserID: "u1", SessionKey: "agent:main:telegram:dm:42", ChatID: "chat-1",
			ChatType: "dm", ThreadID: "th-9", Cwd: "/work/proj", ProfileName: "work", GitRepoRoot: "/work/proj",
			OriginJSON: `{"platform":"telegram"}`, DisplayName: "Ada", StartedAt: base + 0.25}
		if got := h.create(ns); got != "s1" {
			t.Fatalf("id = %q, want s1", got)
		}
		got := h.get("s1")
		fields(t, "session",
			field{"ID", got.ID, "s1"},
			field{"Source", got.Source, "telegram"},
			field{"Model", str(got.Model), "gpt-5"},
			field{"SystemPrompt", str(got.SystemPrompt), "You are careful."},
			field{"SystemPromptHash", str(got.SystemPromptHash), sha256Hex("You are careful.")},
			field{"UserID", str(got.UserID), "u1"},
			field{"SessionKey", str(got.SessionKey), "agent:main:telegram:dm:42"},
			field{"ChatID", str(got.ChatID), "chat-1"},
			field{"ChatType", str(got.ChatType), "dm"},
			field{"ThreadID", str(got.ThreadID), "th-9"},
			field{"Cwd", str(got.Cwd), "/work/proj"},
			field{"ProfileName", str(got.ProfileName), "work"},
			field{"GitRepoRoot", str(got.GitRepoRoot), "/work/proj"},
			field{"DisplayName", str(got.DisplayName), "Ada"},
		)
		if got.ModelConfig == nil {
			t.Errorf("ModelConfig = nil")
		} else {
			equal(t, "ModelConfig", decode(t, []byte(*got.ModelConfig)), decode(t, []byte(ns.ModelConfig)))
		}
		if got.OriginJSON == nil {
			t.Errorf("OriginJSON = nil")
		} else {
			equal(t, "OriginJSON", decode(t, []byte(*got.OriginJSON)), decode(t, []byte(ns.OriginJSON)))
		}
		if got, want := got.StartedAt, base+0.25; got != want {
			t.Errorf("StartedAt = %v, want %v", got, want)
		}
		if got.EndedAt != nil || got.EndReason != nil || got.ParentSessionID != nil || got.Title != nil {
			t.Errorf("EndedAt %v, EndReason %s, ParentSessionID %s, Title %s; want all NULL",
				got.EndedAt, str(got.EndReason), str(got.ParentSessionID), str(got.Title))
		}
		if got.MessageCount != 0 || got.ToolCallCount != 0 || got.APICallCount != 0 || got.InputTokens != 0 {
			t.Errorf("counters = %d/%d/%d/%d, want 0", got.MessageCount, got.ToolCallCount, got.APICallCount, got.InputTokens)
		}
		if got.Archived != 0 || got.Pinned != 0 || got.Hidden != 0 {
			t.Errorf("flags archived %d pinned %d hidden %d, want 0", got.Archived, got.Pinned, got.Hidden)
		}
	})

	t.Run("unset fields are NULL", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "bare", Source: "cli", StartedAt: base})
		got := h.get("bare")
		for name, p := range map[string]*string{"Model": got.Model, "ModelConfig": got.ModelConfig, "SystemPrompt": got.SystemPrompt,
			"SystemPromptHash": got.SystemPromptHash, "UserID": got.UserID, "SessionKey": got.SessionKey, "ChatID": got.ChatID,
			"Cwd": got.Cwd, "OriginJSON": got.OriginJSON, "DisplayName": got.DisplayName} {
			if p != nil {
				t.Errorf("%s = %q, want NULL", name, *p)
			}
		}
	})

	t.Run("generates a Hermes-style id when none is given", func(t *testing.T) {
		h := s.store(t)
		id := h.create(sessiondb.NewSession{Source: "cli"})
		if !regexp.MustCompile(`^\d{8}_\d{6}_[0-9a-f]{6}$`).MatchString(id) {
			t.Fatalf("id = %q, want YYYYMMDD_HHMMSS_xxxxxx", id)
		}
		if got := h.get(id).ID; got != id {
			t.Fatalf("ID = %q, want %q", got, id)
		}
	})

	t.Run("a source is required", func(t *testing.T) {
		h := s.store(t)
		_, err := h.CreateSession(t.Context(), sessiondb.NewSession{ID: "nosrc"})
		wantCode(t, err, sessiondb.EINVALID)
		if h.exists("nosrc") {
			t.Fatal("the refused session was written")
		}
	})

	t.Run("invalid model_config is refused", func(t *testing.T) {
		h := s.store(t)
		_, err := h.CreateSession(t.Context(), sessiondb.NewSession{ID: "bad", Source: "cli", ModelConfig: `{"a":`})
		wantCode(t, err, sessiondb.EINVALID)
		if h.exists("bad") {
			t.Fatal("the refused session was written")
		}
	})

	t.Run("an unknown parent is not found and nothing is written", func(t *testing.T) {
		h := s.store(t)
		_, err := h.CreateSession(t.Context(), sessiondb.NewSession{ID: "orphan", Source: "cli", ParentSessionID: "ghost"})
		wantCode(t, err, sessiondb.ENOTFOUND)
		if h.exists("orphan") {
			t.Fatal("the refused session was written")
		}
	})

	t.Run("a second create merges and the first writer wins", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "dup", Source: "cli", Model: "m1", StartedAt: base})
		id, err := h.CreateSession(t.Context(), sessiondb.NewSession{ID: "dup", Source: "gateway", Model: "m2", UserID: "u2", StartedAt: base + 99})
		if err != nil {
			t.Fatalf("second create: %v", err)
		}
		if id != "dup" {
			t.Fatalf("id = %q, want dup", id)
		}
		got := h.get("dup")
		if got.Source != "cli" || str(got.Model) != "m1" || got.StartedAt != base {
			t.Errorf("source %q, model %s, started %v; want the first writer's cli, m1, %v", got.Source, str(got.Model), got.StartedAt, base)
		}
		// a column the first writer left NULL is filled by the second
		if got, want := str(got.UserID), "u2"; got != want {
			t.Errorf("UserID = %q, want %q", got, want)
		}
		if rows, total := h.list(sessiondb.ListOptions{}); total != 1 || len(rows) != 1 {
			t.Errorf("%d rows listed (total %d), want 1", len(rows), total)
		}
	})

	t.Run("a second create replaces the source unknown", func(t *testing.T) {
		h := s.store(t)
		if _, err := h.EnsureSession(t.Context(), "u", "", ""); err != nil {
			t.Fatal(err)
		}
		h.create(sessiondb.NewSession{ID: "u", Source: "telegram", Model: "m1"})
		got := h.get("u")
		if got.Source != "telegram" || str(got.Model) != "m1" {
			t.Errorf("source %q, model %s; want telegram, m1", got.Source, str(got.Model))
		}
	})

	t.Run("a child of a compression inherits routing and workspace", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "p", Source: "telegram", UserID: "u1", SessionKey: "k", ChatID: "c1",
			ChatType: "dm", Cwd: "/w", GitRepoRoot: "/w", StartedAt: base})
		h.end("p", sessiondb.EndReasonCompression)
		h.create(sessiondb.NewSession{ID: "c", Source: "telegram", ParentSessionID: "p", ChatID: "own", StartedAt: base + 1})
		got := h.get("c")
		fields(t, "session",
			field{"ParentSessionID", str(got.ParentSessionID), "p"},
			field{"UserID", str(got.UserID), "u1"},
			field{"SessionKey", str(got.SessionKey), "k"},
			field{"ChatID", str(got.ChatID), "own"}, // the child's own value wins
			field{"ChatType", str(got.ChatType), "dm"},
			field{"Cwd", str(got.Cwd), "/w"},
			field{"GitRepoRoot", str(got.GitRepoRoot), "/w"},
		)
	})

	t.Run("a child of a parent ended otherwise inherits only the workspace", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "p", Source: "telegram", UserID: "u1", SessionKey: "k", Cwd: "/w", StartedAt: base})
		h.end("p", "user_exit")
		h.create(sessiondb.NewSession{ID: "c", Source: "telegram", ParentSessionID: "p", StartedAt: base + 1})
		got := h.get("c")
		if got.UserID != nil || got.SessionKey != nil {
			t.Errorf("UserID %s, SessionKey %s; want NULL (routing is inherited only across a compression)", str(got.UserID), str(got.SessionKey))
		}
		if got, want := str(got.Cwd), "/w"; got != want {
			t.Errorf("Cwd = %q, want %q", got, want)
		}
	})

	t.Run("markers of model_config are lifted", func(t *testing.T) {
		h := s.store(t)
		h.at("p", base)
		h.create(sessiondb.NewSession{ID: "b", Source: "cli", ParentSessionID: "p", ModelConfig: `{"_branched_from":"p"}`, StartedAt: base + 1})
		h.create(sessiondb.NewSession{ID: "r", Source: "cli", ParentSessionID: "p", ModelConfig: `{"_reset_from":"p"}`, StartedAt: base + 2})
		if b := h.get("b"); str(b.BranchedFrom) != "p" || b.ResetFrom != nil {
			t.Errorf("branch: _branched_from %s, _reset_from %s; want p, NULL", str(b.BranchedFrom), str(b.ResetFrom))
		}
		if r := h.get("r"); str(r.ResetFrom) != "p" || r.BranchedFrom != nil {
			t.Errorf("reset: _reset_from %s, _branched_from %s; want p, NULL", str(r.ResetFrom), str(r.BranchedFrom))
		}
	})
}

func testEnsureSession(t *testing.T, s *suite) {
	t.Run("creates a missing row", func(t *testing.T) {
		h := s.store(t)
		id, err := h.EnsureSession(t.Context(), "e", "cli", "m1")
		if err != nil || id != "e" {
			t.Fatalf("EnsureSession = %q, %v; want e", id, err)
		}
		if got := h.get("e"); got.Source != "cli" || str(got.Model) != "m1" {
			t.Errorf("source %q, model %s; want cli, m1", got.Source, str(got.Model))
		}
	})
	t.Run("the source defaults to unknown", func(t *testing.T) {
		h := s.store(t)
		if _, err := h.EnsureSession(t.Context(), "e", "", ""); err != nil {
			t.Fatal(err)
		}
		if got := h.get("e"); got.Source != "unknown" || got.Model != nil {
			t.Errorf("source %q, model %s; want unknown, NULL", got.Source, str(got.Model))
		}
	})
	t.Run("an existing row is left untouched", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "e", Source: "cli", Model: "m1", StartedAt: base})
		for i := 0; i < 2; i++ {
			if id, err := h.EnsureSession(t.Context(), "e", "gateway", "m2"); err != nil || id != "e" {
				t.Fatalf("EnsureSession #%d = %q, %v", i+1, id, err)
			}
		}
		if got := h.get("e"); got.Source != "cli" || str(got.Model) != "m1" || got.StartedAt != base {
			t.Errorf("source %q, model %s, started %v; want cli, m1, %v", got.Source, str(got.Model), got.StartedAt, base)
		}
		if _, total := h.list(sessiondb.ListOptions{}); total != 1 {
			t.Errorf("total = %d, want 1", total)
		}
	})
	t.Run("an id is required", func(t *testing.T) {
		h := s.store(t)
		_, err := h.EnsureSession(t.Context(), "", "cli", "")
		wantCode(t, err, sessiondb.EINVALID)
	})
}

func testSession(t *testing.T, s *suite) {
	t.Run("an unknown id is not found", func(t *testing.T) {
		h := s.store(t)
		h.at("s1", base)
		got, err := h.Session(t.Context(), "s")
		wantCode(t, err, sessiondb.ENOTFOUND)
		if got != nil {
			t.Errorf("Session = %+v, want nil", got)
		}
	})
	t.Run("the system prompt is resolved", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "a", Source: "cli", SystemPrompt: "shared prompt"})
		h.create(sessiondb.NewSession{ID: "b", Source: "cli", SystemPrompt: "shared prompt"})
		h.create(sessiondb.NewSession{ID: "c", Source: "cli", SystemPrompt: "own prompt"})
		for id, want := range map[string]string{"a": "shared prompt", "b": "shared prompt", "c": "own prompt"} {
			got := h.get(id)
			if str(got.SystemPrompt) != want || str(got.SystemPromptHash) != sha256Hex(want) {
				t.Errorf("%s: prompt %q hash %s; want %q, %s", id, str(got.SystemPrompt), str(got.SystemPromptHash), want, sha256Hex(want))
			}
		}
	})
}

func testOddSessionIDs(t *testing.T, s *suite) {
	for _, id := range []string{`it's "quoted"`, "项目 100%_x", `back\slash;--`, "  spaced  ", "🚀rocket"} {
		t.Run(id, func(t *testing.T) {
			h := s.store(t)
			h.at("plain", base)
			if got := h.create(sessiondb.NewSession{ID: id, Source: "cli", StartedAt: base + 1}); got != id {
				t.Fatalf("CreateSession = %q, want %q", got, id)
			}
			h.add(id, user("oddidmarker text", base+2))
			title := "odd " + strings.TrimSpace(id)
			h.title(id, title)
			if got := h.get(id); got.ID != id || got.MessageCount != 1 || str(got.Title) != title {
				t.Errorf("Session = {%q, %d messages, title %s}", got.ID, got.MessageCount, str(got.Title))
			}
			if got, err := h.ResolveSessionID(t.Context(), string([]rune(id)[:3])); err != nil || got != id {
				t.Errorf("ResolveSessionID(prefix) = %q, %v; want %q", got, err, id)
			}
			if got, err := h.ResolveTitle(t.Context(), title); err != nil || got != id {
				t.Errorf("ResolveTitle = %q, %v; want %q", got, err, id)
			}
			equal(t, "list", h.listIDs(sessiondb.ListOptions{}), []string{id, "plain"})
			equal(t, "hits", hitSessions(h.search("oddidmarker", sessiondb.SearchOptions{})), []string{id})
			if tree, err := h.Lineage(t.Context(), id); err != nil || tree.ID != id {
				t.Errorf("Lineage = %+v, %v", tree, err)
			}
			if ids, err := h.DeleteSession(t.Context(), id); err != nil || !slices.Equal(ids, []string{id}) {
				t.Errorf("DeleteSession = %q, %v", ids, err)
			}
			equal(t, "list after delete", h.listIDs(sessiondb.ListOptions{}), []string{"plain"})
		})
	}
}

func testEndSession(t *testing.T, s *suite) {
	t.Run("sets ended_at and the reason", func(t *testing.T) {
		h := s.store(t)
		h.at("s", base)
		h.end("s", "user_exit")
		got := h.get("s")
		if got.EndedAt == nil || *got.EndedAt <= 0 {
			t.Fatalf("EndedAt = %v, want a time", got.EndedAt)
		}
		if str(got.EndReason) != "user_exit" {
			t.Errorf("EndReason = %s, want user_exit", str(got.EndReason))
		}
	})
	t.Run("the first reason and ended_at win", func(t *testing.T) {
		h := s.store(t)
		h.at("s", base)
		h.end("s", "user_exit")
		first := *h.get("s").EndedAt
		h.end("s", "timeout")
		got := h.get("s")
		if str(got.EndReason) != "user_exit" || got.EndedAt == nil || *got.EndedAt != first {
			t.Errorf("after a second end: reason %s at %v; want user_exit at %v", str(got.EndReason), got.EndedAt, first)
		}
	})
	t.Run("a reason is required", func(t *testing.T) {
		h := s.store(t)
		h.at("s", base)
		wantCode(t, h.EndSession(t.Context(), "s", ""), sessiondb.EINVALID)
		if got := h.get("s"); got.EndedAt != nil {
			t.Errorf("EndedAt = %v, want NULL", *got.EndedAt)
		}
	})
	t.Run("an unknown id is not found", func(t *testing.T) {
		h := s.store(t)
		wantCode(t, h.EndSession(t.Context(), "ghost", "user_exit"), sessiondb.ENOTFOUND)
	})
}

func testReopenSession(t *testing.T, s *suite) {
	t.Run("clears ended_at and the reason, and a new end takes its reason", func(t *testing.T) {
		h := s.store(t)
		h.at("s", base)
		h.at("other", base+1)
		h.end("s", "user_exit")
		h.end("other", "user_exit")
		if err := h.ReopenSession(t.Context(), "s"); err != nil {
			t.Fatal(err)
		}
		if got := h.get("s"); got.EndedAt != nil || got.EndReason != nil {
			t.Fatalf("after reopen: EndedAt %v, EndReason %s; want NULL", got.EndedAt, str(got.EndReason))
		}
		if got := h.get("other"); got.EndedAt == nil {
			t.Error("reopening s reopened other")
		}
		h.end("s", sessiondb.EndReasonCompression)
		if got := h.get("s"); str(got.EndReason) != sessiondb.EndReasonCompression || got.EndedAt == nil {
			t.Errorf("after a new end: reason %s at %v; want compression", str(got.EndReason), got.EndedAt)
		}
	})
	t.Run("an open session stays open", func(t *testing.T) {
		h := s.store(t)
		h.at("s", base)
		if err := h.ReopenSession(t.Context(), "s"); err != nil {
			t.Fatal(err)
		}
		if got := h.get("s"); got.EndedAt != nil {
			t.Errorf("EndedAt = %v", *got.EndedAt)
		}
	})
	t.Run("an unknown id is not found", func(t *testing.T) {
		h := s.store(t)
		wantCode(t, h.ReopenSession(t.Context(), "ghost"), sessiondb.ENOTFOUND)
	})
}

func testUpdateSystemPrompt(t *testing.T, s *suite) {
	t.Run("replaces the prompt and its hash", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "a", Source: "cli", SystemPrompt: "old prompt"})
		h.create(sessiondb.NewSession{ID: "b", Source: "cli", SystemPrompt: "old prompt"})
		if err := h.UpdateSystemPrompt(t.Context(), "a", "new prompt"); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]string{"a": "new prompt", "b": "old prompt"} {
			got := h.get(id)
			if str(got.SystemPrompt) != want || str(got.SystemPromptHash) != sha256Hex(want) {
				t.Errorf("%s: prompt %q hash %s; want %q", id, str(got.SystemPrompt), str(got.SystemPromptHash), want)
			}
		}
	})
	t.Run("an unknown id is not found", func(t *testing.T) {
		h := s.store(t)
		wantCode(t, h.UpdateSystemPrompt(t.Context(), "ghost", "p"), sessiondb.ENOTFOUND)
	})
}

func testUpdateTokenCounts(t *testing.T, s *suite) {
	update := func(h *harness, id string, u sessiondb.TokenUpdate) {
		h.t.Helper()
		if err := h.UpdateTokenCounts(h.t.Context(), id, u); err != nil {
			h.t.Fatalf("UpdateTokenCounts(%q, %+v): %v", id, u, err)
		}
	}
	type totals struct{ in, out, cacheR, cacheW, reason, calls int64 }
	read := func(ss *sessiondb.Session) totals {
		return totals{ss.InputTokens, ss.OutputTokens, ss.CacheReadTokens, ss.CacheWriteTokens, ss.ReasoningTokens, ss.APICallCount}
	}
	t.Run("counts are added", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "s", Source: "cli", Model: "m1"})
		h.create(sessiondb.NewSession{ID: "other", Source: "cli"})
		update(h, "s", sessiondb.TokenUpdate{InputTokens: 200, OutputTokens: 100, CacheReadTokens: 7, CacheWriteTokens: 3, ReasoningTokens: 11, APICallCount: 1,
			EstimatedCostUSD: ptr(0.25), ActualCostUSD: ptr(0.5)})
		update(h, "s", sessiondb.TokenUpdate{InputTokens: 100, OutputTokens: 50, CacheReadTokens: 1, CacheWriteTokens: 2, ReasoningTokens: 4, APICallCount: 1,
			EstimatedCostUSD: ptr(0.5)})
		update(h, "s", sessiondb.TokenUpdate{APICallCount: 1})
		got := h.get("s")
		if got, want := read(got), (totals{300, 150, 8, 5, 15, 3}); got != want {
			t.Errorf("totals = %+v, want %+v", got, want)
		}
		if got.EstimatedCostUSD == nil || *got.EstimatedCostUSD != 0.75 {
			t.Errorf("EstimatedCostUSD = %v, want 0.75", got.EstimatedCostUSD)
		}
		if got.ActualCostUSD == nil || *got.ActualCostUSD != 0.5 {
			t.Errorf("ActualCostUSD = %v, want 0.5 (an update without a cost leaves it)", got.ActualCostUSD)
		}
		if got, want := read(h.get("other")), (totals{}); got != want {
			t.Errorf("other session totals = %+v, want zero", got)
		}
	})
	t.Run("absolute replaces every count", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "s", Source: "cli", Model: "m1"})
		update(h, "s", sessiondb.TokenUpdate{InputTokens: 1000, OutputTokens: 10, ReasoningTokens: 6, APICallCount: 9, EstimatedCostUSD: ptr(2.0)})
		update(h, "s", sessiondb.TokenUpdate{InputTokens: 300, APICallCount: 5, EstimatedCostUSD: ptr(0.125), Absolute: true})
		got := h.get("s")
		if got, want := read(got), (totals{in: 300, calls: 5}); got != want {
			t.Errorf("totals = %+v, want %+v", got, want)
		}
		if got.EstimatedCostUSD == nil || *got.EstimatedCostUSD != 0.125 {
			t.Errorf("EstimatedCostUSD = %v, want 0.125", got.EstimatedCostUSD)
		}
	})
	t.Run("the model is back-filled only when NULL", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "none", Source: "cli"})
		h.create(sessiondb.NewSession{ID: "has", Source: "cli", Model: "m1"})
		for _, id := range []string{"none", "has"} {
			update(h, id, sessiondb.TokenUpdate{InputTokens: 1, Model: "m2"})
		}
		if got := str(h.get("none").Model); got != "m2" {
			t.Errorf("back-filled model = %s, want m2", got)
		}
		if got := str(h.get("has").Model); got != "m1" {
			t.Errorf("existing model = %s, want m1 kept", got)
		}
	})
	t.Run("billing and cost labels are stored, and kept when not given", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "s", Source: "cli"})
		update(h, "s", sessiondb.TokenUpdate{InputTokens: 1, BillingProvider: "openrouter", BillingMode: "metered", CostStatus: "estimated", CostSource: "table", PricingVersion: "v3"})
		update(h, "s", sessiondb.TokenUpdate{InputTokens: 1})
		got := h.get("s")
		fields(t, "session",
			field{"BillingProvider", str(got.BillingProvider), "openrouter"},
			field{"BillingMode", str(got.BillingMode), "metered"},
			field{"CostStatus", str(got.CostStatus), "estimated"},
			field{"CostSource", str(got.CostSource), "table"},
			field{"PricingVersion", str(got.PricingVersion), "v3"},
		)
		if got.InputTokens != 2 {
			t.Errorf("InputTokens = %d, want 2", got.InputTokens)
		}
	})
	t.Run("an unknown id is not found", func(t *testing.T) {
		h := s.store(t)
		wantCode(t, h.UpdateTokenCounts(t.Context(), "ghost", sessiondb.TokenUpdate{InputTokens: 1}), sessiondb.ENOTFOUND)
	})
}

func testResolveSessionID(t *testing.T, s *suite) {
	h := s.store(t)
	for _, id := range []string{"20260501_120000_abc123", "20260501_120000_abd456", "a_b1", "axb2", "100%a", "100xb", "dup", "dup2"} {
		h.create(sessiondb.NewSession{ID: id, Source: "cli"})
	}
	for _, tc := range []struct {
		name, in, want, code string
	}{
		{name: "an exact id", in: "a_b1", want: "a_b1"},
		{name: "an exact id that also prefixes another", in: "dup", want: "dup"},
		{name: "a unique prefix", in: "20260501_120000_abc", want: "20260501_120000_abc123"},
		{name: "an ambiguous prefix is invalid, not a pick", in: "20260501_120000_ab", code: sessiondb.EINVALID},
		{name: "underscore is literal", in: "a_", want: "a_b1"},
		{name: "percent is literal", in: "100%", want: "100%a"},
		{name: "an unknown id is not found", in: "zzz", code: sessiondb.ENOTFOUND},
		{name: "an unknown prefix is not found", in: "2027", code: sessiondb.ENOTFOUND},
		{name: "an empty id is invalid", in: "", code: sessiondb.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := h.ResolveSessionID(t.Context(), tc.in)
			if tc.code != "" {
				wantCode(t, err, tc.code)
				if got != "" {
					t.Fatalf("ResolveSessionID(%q) = %q with an error, want \"\"", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResolveSessionID(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func testMeta(t *testing.T, s *suite) {
	h := s.store(t)
	want := func(t *testing.T, key, value string, present bool) {
		t.Helper()
		v, ok, err := h.Meta(t.Context(), key)
		if err != nil || v != value || ok != present {
			t.Fatalf("Meta(%q) = %q, %v, %v; want %q, %v", key, v, ok, err, value, present)
		}
	}
	set := func(t *testing.T, key, value string) {
		t.Helper()
		if err := h.SetMeta(t.Context(), key, value); err != nil {
			t.Fatalf("SetMeta(%q, %q): %v", key, value, err)
		}
	}
	t.Run("an unknown key is absent", func(t *testing.T) {
		want(t, "storetest_none", "", false)
	})
	t.Run("set then get, keys apart", func(t *testing.T) {
		set(t, "storetest_a", "v1")
		set(t, "storetest_b", "other")
		want(t, "storetest_a", "v1", true)
	})
	t.Run("set upserts", func(t *testing.T) {
		set(t, "storetest_a", "v2")
		want(t, "storetest_a", "v2", true)
		want(t, "storetest_b", "other", true)
	})
	t.Run("an empty value is present", func(t *testing.T) {
		set(t, "storetest_empty", "")
		want(t, "storetest_empty", "", true)
	})
}
