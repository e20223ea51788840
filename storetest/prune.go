package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// now is the reference time of the prune cases: sessions are aged in days
// before it and Prune's cutoff is 90 days before it. It is not the
// store's clock: Prune compares last activity (the newest message, else
// the start), which the suite gives explicitly.
const now = base + 400*day

const cutoff = now - 90*day

// aged creates a session of source whose start and two messages lie age
// days before now, ended with reason unless reason is "".
func (h *harness) aged(id, parent, source string, age float64, reason string) {
	h.t.Helper()
	at := now - age*day
	h.create(sessiondb.NewSession{ID: id, Source: source, ParentSessionID: parent, StartedAt: at})
	h.add(id, user("question of "+id, at+1), assistant("answer", at+2))
	if reason != "" {
		h.end(id, reason)
	}
}

// prune runs Prune and returns the candidate ids.
func (h *harness) prune(o sessiondb.PruneOptions) []string {
	h.t.Helper()
	cands, err := h.Prune(h.t.Context(), o)
	if err != nil {
		h.t.Fatalf("Prune(%+v): %v", o, err)
	}
	ids := []string{}
	for _, c := range cands {
		ids = append(ids, c.ID)
	}
	return ids
}

// search runs a search and returns the hits.
func (h *harness) search(q string, o sessiondb.SearchOptions) []sessiondb.SearchHit {
	h.t.Helper()
	hits, err := h.Search(h.t.Context(), q, o)
	if err != nil {
		h.t.Fatalf("Search(%q, %+v): %v", q, o, err)
	}
	if hits == nil {
		h.t.Fatalf("Search(%q, %+v) = nil, want a list", q, o)
	}
	return hits
}

// hitSessions returns the session ids of hits in order.
func hitSessions(hits []sessiondb.SearchHit) []string {
	ids := []string{}
	for _, x := range hits {
		ids = append(ids, x.SessionID)
	}
	return ids
}

// parentOf returns a session's parent id ("" for none).
func (h *harness) parentOf(id string) string {
	h.t.Helper()
	if p := h.get(id).ParentSessionID; p != nil {
		return *p
	}
	return ""
}

func testDeleteSession(t *testing.T, s *suite) {
	t.Run("removes the session and its messages and returns its id", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "d", Source: "cli", SystemPrompt: "prompt only d uses", StartedAt: base})
		h.add("d", user("deleteme zebra", base+1), assistant("zebra answer", base+2))
		h.create(sessiondb.NewSession{ID: "keep", Source: "cli", SystemPrompt: "prompt only d uses", StartedAt: base + 10})
		h.add("keep", user("zebra kept", base+11))
		ids, err := h.DeleteSession(t.Context(), "d")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "deleted", ids, []string{"d"})
		if h.exists("d") {
			t.Error("the session is still there")
		}
		_, err = h.Messages(t.Context(), "d", sessiondb.MessageFilter{})
		wantCode(t, err, sessiondb.ENOTFOUND)
		equal(t, "zebra hits", hitSessions(h.search("zebra", sessiondb.SearchOptions{})), []string{"keep"})
		if got := str(h.get("keep").SystemPrompt); got != "prompt only d uses" {
			t.Errorf("keep's shared prompt = %q after the delete", got)
		}
		h.wantCounters("keep", 1, 0)
	})

	t.Run("delegate children go with it, other children are orphaned", func(t *testing.T) {
		h := s.store(t)
		h.at("p", base)
		for _, c := range []struct{ id, parent, config string }{
			{"d1", "p", `{"_delegate_from":"p"}`},
			{"d2", "d1", `{"_delegate_from":"d1"}`},
			{"d1-plain", "d1", ""},
			{"br", "p", `{"_branched_from":"p"}`},
			{"c", "p", ""},
			{"gc", "c", ""},
		} {
			h.create(sessiondb.NewSession{ID: c.id, Source: "cli", ParentSessionID: c.parent, ModelConfig: c.config, StartedAt: base + 1})
		}
		for _, id := range []string{"p", "d1", "d2", "c"} {
			h.add(id, user("delegatemark of "+id, base+2))
		}
		ids, err := h.DeleteSession(t.Context(), "p")
		if err != nil {
			t.Fatal(err)
		}
		sameSet(t, "deleted", ids, []string{"p", "d1", "d2"})
		if len(ids) == 0 || ids[0] != "p" {
			t.Errorf("deleted = %v, want the session first", ids)
		}
		for _, id := range []string{"p", "d1", "d2"} {
			if h.exists(id) {
				t.Errorf("%s kept", id)
			}
		}
		for _, id := range []string{"br", "c", "d1-plain"} {
			if p := h.parentOf(id); p != "" {
				t.Errorf("%s parent = %q, want none (orphaned)", id, p)
			}
		}
		if p := h.parentOf("gc"); p != "c" {
			t.Errorf("grandchild parent = %q, want c (untouched)", p)
		}
		equal(t, "hits", hitSessions(h.search("delegatemark", sessiondb.SearchOptions{})), []string{"c"})
	})

	t.Run("an unknown id is not found", func(t *testing.T) {
		h := s.store(t)
		ids, err := h.DeleteSession(t.Context(), "nope")
		wantCode(t, err, sessiondb.ENOTFOUND)
		if len(ids) != 0 {
			t.Errorf("ids = %v", ids)
		}
	})
}

func testPrune(t *testing.T, s *suite) {
	t.Run("ended sessions inactive before the cutoff, by source", func(t *testing.T) {
		h := s.store(t)
		h.aged("old", "", "cli", 100, "user_exit")
		h.aged("new", "", "cli", 10, "user_exit")
		h.aged("open", "", "cli", 200, "")
		h.aged("old-tg", "", "telegram", 120, "user_exit")
		h.create(sessiondb.NewSession{ID: "bare", Source: "cli", StartedAt: now - 95*day}) // no messages: its start counts
		h.end("bare", "user_exit")
		h.create(sessiondb.NewSession{ID: "back", Source: "cli", StartedAt: now - 100*day}) // came back yesterday
		h.add("back", user("old", now-100*day+1), user("came back yesterday", now-day))
		h.end("back", "user_exit")
		h.create(sessiondb.NewSession{ID: "at-cutoff", Source: "cli", StartedAt: cutoff - 2}) // last active at the cutoff: kept
		h.add("at-cutoff", user("exactly at the cutoff", cutoff))
		h.end("at-cutoff", "user_exit")
		h.create(sessiondb.NewSession{ID: "just-before", Source: "cli", StartedAt: cutoff - 2})
		h.add("just-before", user("a second before the cutoff", cutoff-1))
		h.end("just-before", "user_exit")
		h.title("old", "Old one")

		sameSet(t, "telegram only", h.prune(sessiondb.PruneOptions{Before: cutoff, Sources: []string{"telegram"}}), []string{"old-tg"})
		if h.exists("old-tg") {
			t.Error("old-tg was not deleted")
		}
		cands, err := h.Prune(t.Context(), sessiondb.PruneOptions{Before: cutoff})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range cands {
			ids = append(ids, c.ID)
		}
		sameSet(t, "pruned", ids, []string{"old", "bare", "just-before"})
		for _, id := range []string{"old", "bare", "just-before"} {
			if h.exists(id) {
				t.Errorf("%s was not deleted", id)
			}
		}
		for _, id := range []string{"new", "open", "back", "at-cutoff"} {
			if !h.exists(id) {
				t.Errorf("%s was deleted", id)
			}
		}
		i := slices.IndexFunc(cands, func(c sessiondb.PruneCandidate) bool { return c.ID == "old" })
		if i < 0 {
			return
		}
		c, at := cands[i], now-100*day
		if c.Source != "cli" || str(c.Title) != "Old one" || c.StartedAt != at || c.LastActive != at+2 || c.EndedAt == nil || c.MessageCount != 2 || c.Archived {
			t.Errorf("candidate = %+v", c)
		}
	})

	t.Run("a dry run lists the same and deletes nothing", func(t *testing.T) {
		h := s.store(t)
		h.aged("a", "", "cli", 100, "user_exit")
		h.aged("b", "", "telegram", 150, "user_exit")
		h.aged("c", "", "cli", 5, "user_exit")
		h.aged("x", "", "cli", 300, "compressed") // not "compression": an ordinary end
		h.aged("x-child", "x", "cli", 200, "")
		h.aged("r", "", "cli", 300, sessiondb.EndReasonCompression)
		h.aged("r-tip", "r", "cli", 1, "user_exit")
		before := h.listIDs(sessiondb.ListOptions{IncludeChildren: true, RawChains: true})
		dry := h.prune(sessiondb.PruneOptions{Before: cutoff, DryRun: true})
		sameSet(t, "dry run", dry, []string{"a", "b", "x"})
		sameSet(t, "sessions after the dry run", h.listIDs(sessiondb.ListOptions{IncludeChildren: true, RawChains: true}), before)
		if p := h.parentOf("x-child"); p != "x" {
			t.Errorf("the dry run orphaned x-child (parent %q)", p)
		}
		h.wantCounters("a", 2, 0)
		real := h.prune(sessiondb.PruneOptions{Before: cutoff})
		sameSet(t, "real run", real, dry)
		if p := h.parentOf("x-child"); p != "" {
			t.Errorf("x-child parent = %q after its parent was pruned, want none", p)
		}
		if got := h.search("question", sessiondb.SearchOptions{Limit: 50}); len(got) != 4 {
			t.Errorf("%d messages found after the prune, want 4 (c, x-child, r, r-tip)", len(got))
		}
	})

	t.Run("compression chains go whole or not at all", func(t *testing.T) {
		h := s.store(t)
		// an entirely old chain
		h.aged("o-root", "", "cli", 300, sessiondb.EndReasonCompression)
		h.aged("o-mid", "o-root", "cli", 290, sessiondb.EndReasonCompression)
		h.aged("o-tip", "o-mid", "cli", 280, "user_exit")
		// an old ancestor continued by a recent tip
		h.aged("k-root", "", "cli", 300, sessiondb.EndReasonCompression)
		h.aged("k-mid", "k-root", "cli", 290, sessiondb.EndReasonCompression)
		h.aged("k-tip", "k-mid", "cli", 5, "user_exit")
		// an old ancestor of an open old tip
		h.aged("open-root", "", "cli", 300, sessiondb.EndReasonCompression)
		h.aged("open-tip", "open-root", "cli", 290, "")
		sameSet(t, "pruned", h.prune(sessiondb.PruneOptions{Before: cutoff}), []string{"o-root", "o-mid", "o-tip"})
		if p := h.parentOf("k-mid"); p != "k-root" {
			t.Errorf("k-mid parent = %q, want k-root", p)
		}
	})

	t.Run("pinned sessions and pinned chains stay unless included", func(t *testing.T) {
		build := func(t *testing.T) *harness {
			h := s.store(t)
			h.aged("pinned", "", "cli", 200, "user_exit")
			h.aged("r", "", "cli", 300, sessiondb.EndReasonCompression)
			h.aged("m", "r", "cli", 295, sessiondb.EndReasonCompression)
			h.aged("tip", "m", "cli", 290, "user_exit")
			h.aged("loose", "", "cli", 300, "user_exit")
			for _, id := range []string{"pinned", "m"} {
				if err := h.SetPinned(t.Context(), id, true); err != nil {
					t.Fatal(err)
				}
			}
			return h
		}
		sameSet(t, "kept", build(t).prune(sessiondb.PruneOptions{Before: cutoff}), []string{"loose"})
		sameSet(t, "included", build(t).prune(sessiondb.PruneOptions{Before: cutoff, IncludePinned: true}), []string{"pinned", "r", "m", "tip", "loose"})
	})

	t.Run("a prune of most of the history leaves the rest whole and searchable", func(t *testing.T) {
		h := s.store(t)
		const sessions, each = 4, 600 // 2,400 messages: a bulk delete
		var old []string
		for i := 0; i < sessions; i++ {
			id := fmt.Sprintf("old-%d", i)
			at := now - 200*day + float64(i)
			h.create(sessiondb.NewSession{ID: id, Source: "cli", StartedAt: at})
			ms := make([]sessiondb.NewMessage, each)
			for j := range ms {
				ms[j] = user(fmt.Sprintf("bulkword note %d 项目 %d", i, j), at+float64(j)/1000)
			}
			if _, err := h.AppendMessages(t.Context(), id, ms); err != nil {
				t.Fatal(err)
			}
			h.end(id, "user_exit")
			old = append(old, id)
		}
		h.create(sessiondb.NewSession{ID: "keep", Source: "cli", StartedAt: now - day})
		h.add("keep", user("recent bulkword 项目 question", now-day+1))
		sameSet(t, "pruned", h.prune(sessiondb.PruneOptions{Before: cutoff}), old)
		for _, q := range []string{"bulkword", "项目", "项"} {
			equal(t, q+" hits", hitSessions(h.search(q, sessiondb.SearchOptions{Limit: 100})), []string{"keep"})
		}
		equal(t, "sessions left", h.listIDs(sessiondb.ListOptions{}), []string{"keep"})
		h.add("keep", user("zebrafter the prune", now))
		equal(t, "a new message's hits", hitSessions(h.search("zebrafter", sessiondb.SearchOptions{})), []string{"keep"})
		if n, err := h.ClearMessages(t.Context(), "keep"); err != nil || n != 2 {
			t.Fatalf("ClearMessages = %d, %v; want 2", n, err)
		}
		if hits := h.search("zebrafter", sessiondb.SearchOptions{}); len(hits) != 0 {
			t.Errorf("a cleared message is still found: %v", hitSessions(hits))
		}
	})

	t.Run("a cutoff is required", func(t *testing.T) {
		h := s.store(t)
		h.aged("old", "", "cli", 100, "user_exit")
		_, err := h.Prune(t.Context(), sessiondb.PruneOptions{})
		wantCode(t, err, sessiondb.EINVALID)
		if !h.exists("old") {
			t.Error("a refused prune deleted old")
		}
	})
}

func testClearMessages(t *testing.T, s *suite) {
	h := s.store(t)
	h.at("c", base)
	h.title("c", "Keep me")
	h.add("c", user("platypus question", base+1),
		sessiondb.NewMessage{Role: sessiondb.RoleAssistant, Content: "calling", ToolCalls: []byte(twoCalls), Timestamp: base + 2},
		sessiondb.NewMessage{Role: sessiondb.RoleTool, Content: "platypus result", ToolCallID: "call_1", ToolName: "shell", Timestamp: base + 3})
	if err := h.UpdateTokenCounts(t.Context(), "c", sessiondb.TokenUpdate{InputTokens: 100, OutputTokens: 7}); err != nil {
		t.Fatal(err)
	}
	h.at("other", base+10)
	h.add("other", user("platypus elsewhere", base+11))

	t.Run("deletes the messages, resets the counters, keeps the session", func(t *testing.T) {
		h := h.on(t)
		n, err := h.ClearMessages(t.Context(), "c")
		if err != nil || n != 3 {
			t.Fatalf("ClearMessages = %d, %v; want 3", n, err)
		}
		h.wantCounters("c", 0, 0)
		got := h.get("c")
		if str(got.Title) != "Keep me" || got.InputTokens != 100 || got.OutputTokens != 7 {
			t.Errorf("session changed: title %s, tokens %d/%d", str(got.Title), got.InputTokens, got.OutputTokens)
		}
		if ms := h.messages("c", sessiondb.MessageFilter{}); len(ms) != 0 {
			t.Errorf("%d messages left", len(ms))
		}
		equal(t, "platypus hits", hitSessions(h.search("platypus", sessiondb.SearchOptions{})), []string{"other"})
		h.wantCounters("other", 1, 0)
	})
	t.Run("the session takes new messages", func(t *testing.T) {
		h := h.on(t)
		h.add("c", user("fresh start", base+20))
		h.wantCounters("c", 1, 0)
		if n, err := h.ClearMessages(t.Context(), "c"); err != nil || n != 1 {
			t.Errorf("second ClearMessages = %d, %v; want 1", n, err)
		}
	})
	t.Run("an unknown id is not found", func(t *testing.T) {
		_, err := h.ClearMessages(t.Context(), "nope")
		wantCode(t, err, sessiondb.ENOTFOUND)
	})
}
