package postgres_test

import (
	"context"
	"testing"

	"github.com/sessiondb/sessiondb"
)

func TestSessionLifecycle(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	id, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s1\x00x", Source: "cli", Model: "m1", SystemPrompt: "be \x00 kind", StartedAt: 100})
	if err != nil {
		t.Fatal(err)
	}
	// A second create merges: existing values win, empty ones fill.
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "telegram", Model: "m2", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	s, err := db.Session(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "s1\x00x" || s.Source != "cli" || *s.Model != "m1" || *s.Cwd != "/w" || *s.SystemPrompt != "be \x00 kind" || s.StartedAt != 100 {
		t.Fatalf("session = id %q source %q model %q cwd %q prompt %q started %v", s.ID, s.Source, *s.Model, *s.Cwd, *s.SystemPrompt, s.StartedAt)
	}
	if err := db.EndSession(ctx, id, "user_exit"); err != nil {
		t.Fatal(err)
	}
	if err := db.EndSession(ctx, id, "idle"); err != nil {
		t.Fatal(err)
	}
	if s, _ = db.Session(ctx, id); s.EndReason == nil || *s.EndReason != "user_exit" {
		t.Fatalf("end reason = %v, want the first one, user_exit", s.EndReason)
	}
	if err := db.ReopenSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if s, _ = db.Session(ctx, id); s.EndedAt != nil || s.EndReason != nil {
		t.Fatalf("reopened session still ended: %v %v", s.EndedAt, s.EndReason)
	}
	cost := 0.5
	for range 2 {
		if err := db.UpdateTokenCounts(ctx, id, sessiondb.TokenUpdate{InputTokens: 10, OutputTokens: 3, APICallCount: 1, EstimatedCostUSD: &cost}); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ = db.Session(ctx, id); s.InputTokens != 20 || s.OutputTokens != 6 || s.APICallCount != 2 || *s.EstimatedCostUSD != 1 {
		t.Fatalf("totals = in %d out %d calls %d cost %v", s.InputTokens, s.OutputTokens, s.APICallCount, *s.EstimatedCostUSD)
	}
	if err := db.UpdateTokenCounts(ctx, id, sessiondb.TokenUpdate{InputTokens: 7, Absolute: true}); err != nil {
		t.Fatal(err)
	}
	if s, _ = db.Session(ctx, id); s.InputTokens != 7 || s.OutputTokens != 0 {
		t.Fatalf("absolute totals = in %d out %d, want 7 0", s.InputTokens, s.OutputTokens)
	}
	for _, op := range []func() error{
		func() error { _, err := db.Session(ctx, "nope"); return err },
		func() error { return db.EndSession(ctx, "nope", "x") },
		func() error { return db.ReopenSession(ctx, "nope") },
		func() error { return db.UpdateSystemPrompt(ctx, "nope", "p") },
		func() error { return db.UpdateTokenCounts(ctx, "nope", sessiondb.TokenUpdate{}) },
	} {
		if got := sessiondb.ErrorCode(op()); got != sessiondb.ENOTFOUND {
			t.Errorf("unknown session: code %q, want %q", got, sessiondb.ENOTFOUND)
		}
	}
}

func TestResolveSessionIDAndMeta(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	for _, id := range []string{"abc_1", "abc_2", "abd", "a%c"} {
		if _, err := db.EnsureSession(ctx, id, "cli", ""); err != nil {
			t.Fatal(err)
		}
	}
	for prefix, want := range map[string]string{"abd": "abd", "abc_1": "abc_1", "ab": "", "abc": "", "a%": "a%c", "zz": ""} {
		got, err := db.ResolveSessionID(ctx, prefix)
		switch {
		case want != "" && (err != nil || got != want):
			t.Errorf("resolve %q = %q, %v; want %q", prefix, got, err, want)
		case want == "" && prefix == "zz" && sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND:
			t.Errorf("resolve %q: %v, want not found", prefix, err)
		case want == "" && prefix != "zz" && sessiondb.ErrorCode(err) != sessiondb.EINVALID:
			t.Errorf("resolve %q: %v, want ambiguous (invalid)", prefix, err)
		}
	}
	if _, ok, err := db.Meta(ctx, "k"); ok || err != nil {
		t.Fatalf("meta of a missing key: ok %v err %v", ok, err)
	}
	for _, v := range []string{"one", "two\x00"} {
		if err := db.SetMeta(ctx, "k", v); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := db.Meta(ctx, "k"); got != v || !ok || err != nil {
			t.Fatalf("meta = %q %v %v, want %q", got, ok, err, v)
		}
	}
}
