package sqlite_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// fixedUnix is fixedNow as the Unix seconds the store writes.
var fixedUnix = float64(fixedNow.Unix())

// sessCreate creates a session and fails the test on error.
func sessCreate(tb testing.TB, db *sqlite.DB, ns sessiondb.NewSession) string {
	tb.Helper()
	id, err := db.CreateSession(ctx, ns)
	if err != nil {
		tb.Fatalf("CreateSession(%q): %v", ns.ID, err)
	}
	return id
}

// sessGet reads a session and fails the test on error.
func sessGet(tb testing.TB, db *sqlite.DB, id string) *sessiondb.Session {
	tb.Helper()
	s, err := db.Session(ctx, id)
	if err != nil {
		tb.Fatalf("Session(%q): %v", id, err)
	}
	return s
}

// sessWantCode fails unless err carries the error code want.
func sessWantCode(tb testing.TB, err error, want string) {
	tb.Helper()
	if got := sessiondb.ErrorCode(err); got != want {
		tb.Fatalf("error code = %q (err %v), want %q", got, err, want)
	}
}

// sessStr dereferences a nullable column for messages ("<nil>" for NULL).
func sessStr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// sessOpenAt opens a second store on path whose clock reads now.
func sessOpenAt(tb testing.TB, path string, now time.Time) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return now }})
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestCreateSession(t *testing.T) {
	t.Run("returns the id and the row reads back", func(t *testing.T) {
		db := MustOpen(t)
		id, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli", Model: "gpt-5"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := id, "s1"; got != want {
			t.Fatalf("id = %q, want %q", got, want)
		}
		s := sessGet(t, db, "s1")
		if got, want := s.ID, "s1"; got != want {
			t.Fatalf("ID = %q, want %q", got, want)
		}
		if got, want := s.Source, "cli"; got != want {
			t.Fatalf("Source = %q, want %q", got, want)
		}
		if got, want := sessStr(s.Model), "gpt-5"; got != want {
			t.Fatalf("Model = %q, want %q", got, want)
		}
		if s.EndedAt != nil {
			t.Fatalf("EndedAt = %v, want nil", *s.EndedAt)
		}
		if s.EndReason != nil {
			t.Fatalf("EndReason = %q, want nil", *s.EndReason)
		}
		if got, want := s.StartedAt, fixedUnix; got != want {
			t.Fatalf("StartedAt = %v, want %v", got, want)
		}
		if got, want := s.MessageCount, int64(0); got != want {
			t.Fatalf("MessageCount = %d, want %d", got, want)
		}
	})

	t.Run("generates a Hermes-style id when none is given", func(t *testing.T) {
		db := MustOpen(t)
		id := sessCreate(t, db, sessiondb.NewSession{Source: "cli"})
		if !regexp.MustCompile(`^\d{8}_\d{6}_[0-9a-f]{6}$`).MatchString(id) {
			t.Fatalf("id = %q, want YYYYMMDD_HHMMSS_xxxxxx", id)
		}
		if got, want := sessGet(t, db, id).ID, id; got != want {
			t.Fatalf("ID = %q, want %q", got, want)
		}
	})

	t.Run("a source is required", func(t *testing.T) {
		db := MustOpen(t)
		_, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "nosrc"})
		sessWantCode(t, err, sessiondb.EINVALID)
		_, err = db.Session(ctx, "nosrc")
		sessWantCode(t, err, sessiondb.ENOTFOUND)
	})

	t.Run("unknown id is not found", func(t *testing.T) {
		db := MustOpen(t)
		s, err := db.Session(ctx, "does-not-exist")
		sessWantCode(t, err, sessiondb.ENOTFOUND)
		if s != nil {
			t.Fatalf("Session = %+v, want nil", s)
		}
	})

	t.Run("parent_session_id is stored", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "parent", Source: "cli"})
		sessCreate(t, db, sessiondb.NewSession{ID: "child", Source: "cli", ParentSessionID: "parent"})
		if got, want := sessStr(sessGet(t, db, "child").ParentSessionID), "parent"; got != want {
			t.Fatalf("ParentSessionID = %q, want %q", got, want)
		}
		if p := sessGet(t, db, "parent").ParentSessionID; p != nil {
			t.Fatalf("parent's ParentSessionID = %q, want nil", *p)
		}
	})

	t.Run("unknown parent is not found and nothing is written", func(t *testing.T) {
		db := MustOpen(t)
		_, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "orphan", Source: "cli", ParentSessionID: "ghost"})
		sessWantCode(t, err, sessiondb.ENOTFOUND)
		_, err = db.Session(ctx, "orphan")
		sessWantCode(t, err, sessiondb.ENOTFOUND)
	})

	t.Run("duplicate create keeps the first writer", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "dup-1", Source: "cli", Model: "m1"})
		id, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "dup-1", Source: "gateway", Model: "m2", UserID: "u2"})
		if err != nil {
			t.Fatalf("second create: %v", err)
		}
		if got, want := id, "dup-1"; got != want {
			t.Fatalf("id = %q, want %q", got, want)
		}
		s := sessGet(t, db, "dup-1")
		if got, want := s.Source, "cli"; got != want {
			t.Fatalf("Source = %q, want %q", got, want)
		}
		if got, want := sessStr(s.Model), "m1"; got != want {
			t.Fatalf("Model = %q, want %q", got, want)
		}
		// A column the first writer left NULL is filled by the second.
		if got, want := sessStr(s.UserID), "u2"; got != want {
			t.Fatalf("UserID = %q, want %q", got, want)
		}
		if got, want := count(t, rawDB(t, db.Path()), "SELECT COUNT(*) FROM sessions WHERE id = 'dup-1'"), 1; got != want {
			t.Fatalf("rows = %d, want %d", got, want)
		}
	})

	t.Run("duplicate create replaces an unknown source", func(t *testing.T) {
		db := MustOpen(t)
		if _, err := db.EnsureSession(ctx, "u-1", "", ""); err != nil {
			t.Fatal(err)
		}
		if got, want := sessGet(t, db, "u-1").Source, "unknown"; got != want {
			t.Fatalf("Source after ensure = %q, want %q", got, want)
		}
		sessCreate(t, db, sessiondb.NewSession{ID: "u-1", Source: "telegram", Model: "m1"})
		s := sessGet(t, db, "u-1")
		if got, want := s.Source, "telegram"; got != want {
			t.Fatalf("Source = %q, want %q", got, want)
		}
		if got, want := sessStr(s.Model), "m1"; got != want {
			t.Fatalf("Model = %q, want %q", got, want)
		}
	})

	t.Run("system prompt given at create is stored by hash", func(t *testing.T) {
		db := MustOpen(t)
		const prompt = "You are a careful assistant."
		sessCreate(t, db, sessiondb.NewSession{ID: "sp", Source: "cli", SystemPrompt: prompt})
		s := sessGet(t, db, "sp")
		if got, want := sessStr(s.SystemPrompt), prompt; got != want {
			t.Fatalf("SystemPrompt = %q, want %q", got, want)
		}
		if got, want := sessStr(s.SystemPromptHash), sha256Hex(prompt); got != want {
			t.Fatalf("SystemPromptHash = %q, want %q", got, want)
		}
		raw := rawDB(t, db.Path())
		if got, want := count(t, raw, "SELECT COUNT(*) FROM sessions WHERE id = 'sp' AND system_prompt IS NULL"), 1; got != want {
			t.Fatalf("sessions.system_prompt is not NULL")
		}
		if got, want := count(t, raw, "SELECT COUNT(*) FROM system_prompts WHERE hash = ? AND prompt = ?", sha256Hex(prompt), prompt), 1; got != want {
			t.Fatalf("system_prompts rows = %d, want %d", got, want)
		}
	})
}

func TestCreateSessionChildInheritance(t *testing.T) {
	const key = "agent:main:telegram:dm:42"
	parent := func(id string) sessiondb.NewSession {
		return sessiondb.NewSession{ID: id, Source: "telegram", UserID: "u1", SessionKey: key,
			ChatID: "chat-1", ChatType: "dm", Cwd: "/work/proj", GitRepoRoot: "/work/proj"}
	}

	t.Run("child of a compression parent inherits routing and workspace", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, parent("p"))
		if err := db.EndSession(ctx, "p", sessiondb.EndReasonCompression); err != nil {
			t.Fatal(err)
		}
		sessCreate(t, db, sessiondb.NewSession{ID: "c", Source: "telegram", ParentSessionID: "p"})
		c := sessGet(t, db, "c")
		for _, f := range []struct{ name, got, want string }{
			{"UserID", sessStr(c.UserID), "u1"},
			{"SessionKey", sessStr(c.SessionKey), key},
			{"ChatID", sessStr(c.ChatID), "chat-1"},
			{"ChatType", sessStr(c.ChatType), "dm"},
			{"Cwd", sessStr(c.Cwd), "/work/proj"},
			{"GitRepoRoot", sessStr(c.GitRepoRoot), "/work/proj"},
		} {
			if f.got != f.want {
				t.Errorf("%s = %q, want %q", f.name, f.got, f.want)
			}
		}
	})

	t.Run("the child's own values win over the parent's", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, parent("p"))
		if err := db.EndSession(ctx, "p", sessiondb.EndReasonCompression); err != nil {
			t.Fatal(err)
		}
		sessCreate(t, db, sessiondb.NewSession{ID: "c", Source: "telegram", ParentSessionID: "p", UserID: "u9", Cwd: "/elsewhere"})
		c := sessGet(t, db, "c")
		if got, want := sessStr(c.UserID), "u9"; got != want {
			t.Errorf("UserID = %q, want %q", got, want)
		}
		if got, want := sessStr(c.Cwd), "/elsewhere"; got != want {
			t.Errorf("Cwd = %q, want %q", got, want)
		}
	})

	for _, tc := range []struct {
		name      string
		endReason string // "" leaves the parent live
	}{
		{"child of a parent ended otherwise inherits only the workspace", "user_exit"},
		{"child of a live parent inherits only the workspace", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := MustOpen(t)
			sessCreate(t, db, parent("p"))
			if tc.endReason != "" {
				if err := db.EndSession(ctx, "p", tc.endReason); err != nil {
					t.Fatal(err)
				}
			}
			sessCreate(t, db, sessiondb.NewSession{ID: "c", Source: "telegram", ParentSessionID: "p"})
			c := sessGet(t, db, "c")
			for name, p := range map[string]*string{"UserID": c.UserID, "SessionKey": c.SessionKey, "ChatID": c.ChatID, "ChatType": c.ChatType} {
				if p != nil {
					t.Errorf("%s = %q, want nil (routing is inherited only across a compression)", name, *p)
				}
			}
			if got, want := sessStr(c.Cwd), "/work/proj"; got != want {
				t.Errorf("Cwd = %q, want %q", got, want)
			}
			if got, want := sessStr(c.GitRepoRoot), "/work/proj"; got != want {
				t.Errorf("GitRepoRoot = %q, want %q", got, want)
			}
		})
	}
}

func TestEnsureSession(t *testing.T) {
	t.Run("creates a missing row", func(t *testing.T) {
		db := MustOpen(t)
		id, err := db.EnsureSession(ctx, "e1", "cli", "m1")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := id, "e1"; got != want {
			t.Fatalf("id = %q, want %q", got, want)
		}
		s := sessGet(t, db, "e1")
		if got, want := s.Source, "cli"; got != want {
			t.Fatalf("Source = %q, want %q", got, want)
		}
		if got, want := sessStr(s.Model), "m1"; got != want {
			t.Fatalf("Model = %q, want %q", got, want)
		}
		if got, want := s.StartedAt, fixedUnix; got != want {
			t.Fatalf("StartedAt = %v, want %v", got, want)
		}
	})

	t.Run("source defaults to unknown", func(t *testing.T) {
		db := MustOpen(t)
		if _, err := db.EnsureSession(ctx, "e2", "", ""); err != nil {
			t.Fatal(err)
		}
		s := sessGet(t, db, "e2")
		if got, want := s.Source, "unknown"; got != want {
			t.Fatalf("Source = %q, want %q", got, want)
		}
		if s.Model != nil {
			t.Fatalf("Model = %q, want nil", *s.Model)
		}
	})

	t.Run("is idempotent and does not overwrite", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "e3", Source: "cli", Model: "m1"})
		for i := 0; i < 2; i++ {
			if _, err := db.EnsureSession(ctx, "e3", "gateway", "m2"); err != nil {
				t.Fatalf("ensure #%d: %v", i+1, err)
			}
		}
		s := sessGet(t, db, "e3")
		if got, want := s.Source, "cli"; got != want {
			t.Fatalf("Source = %q, want %q", got, want)
		}
		if got, want := sessStr(s.Model), "m1"; got != want {
			t.Fatalf("Model = %q, want %q", got, want)
		}
		if got, want := count(t, rawDB(t, db.Path()), "SELECT COUNT(*) FROM sessions"), 1; got != want {
			t.Fatalf("sessions = %d, want %d", got, want)
		}
	})

	t.Run("append works after ensure", func(t *testing.T) {
		db := MustOpen(t)
		if _, err := db.EnsureSession(ctx, "e4", "cli", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "e4", Role: "user", Content: "hello"}); err != nil {
			t.Fatal(err)
		}
		if got, want := sessGet(t, db, "e4").MessageCount, int64(1); got != want {
			t.Fatalf("MessageCount = %d, want %d", got, want)
		}
		checkIntegrity(t, rawDB(t, db.Path()))
	})

	t.Run("an id is required", func(t *testing.T) {
		db := MustOpen(t)
		_, err := db.EnsureSession(ctx, "", "cli", "")
		sessWantCode(t, err, sessiondb.EINVALID)
	})
}

func TestEndSession(t *testing.T) {
	later := fixedNow.Add(time.Hour)

	t.Run("sets ended_at and the reason", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "s", Source: "cli"})
		if err := db.EndSession(ctx, "s", "user_exit"); err != nil {
			t.Fatal(err)
		}
		s := sessGet(t, db, "s")
		if s.EndedAt == nil {
			t.Fatal("EndedAt = nil")
		}
		if got, want := *s.EndedAt, fixedUnix; got != want {
			t.Fatalf("EndedAt = %v, want %v", got, want)
		}
		if got, want := sessStr(s.EndReason), "user_exit"; got != want {
			t.Fatalf("EndReason = %q, want %q", got, want)
		}
	})

	t.Run("the first reason and ended_at win", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "s", Source: "cli"})
		if err := db.EndSession(ctx, "s", "user_exit"); err != nil {
			t.Fatal(err)
		}
		db2 := sessOpenAt(t, db.Path(), later)
		if err := db2.EndSession(ctx, "s", "timeout"); err != nil {
			t.Fatalf("second end: %v", err)
		}
		s := sessGet(t, db, "s")
		if got, want := sessStr(s.EndReason), "user_exit"; got != want {
			t.Fatalf("EndReason = %q, want %q", got, want)
		}
		if s.EndedAt == nil || *s.EndedAt != fixedUnix {
			t.Fatalf("EndedAt = %v, want %v", s.EndedAt, fixedUnix)
		}
	})

	t.Run("reopen then end gives the new reason", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "s", Source: "cli"})
		if err := db.EndSession(ctx, "s", "user_exit"); err != nil {
			t.Fatal(err)
		}
		if err := db.ReopenSession(ctx, "s"); err != nil {
			t.Fatal(err)
		}
		s := sessGet(t, db, "s")
		if s.EndedAt != nil || s.EndReason != nil {
			t.Fatalf("after reopen EndedAt = %v, EndReason = %v, want nil, nil", s.EndedAt, s.EndReason)
		}
		db2 := sessOpenAt(t, db.Path(), later)
		if err := db2.EndSession(ctx, "s", sessiondb.EndReasonCompression); err != nil {
			t.Fatal(err)
		}
		s = sessGet(t, db, "s")
		if got, want := sessStr(s.EndReason), sessiondb.EndReasonCompression; got != want {
			t.Fatalf("EndReason = %q, want %q", got, want)
		}
		if want := float64(later.Unix()); s.EndedAt == nil || *s.EndedAt != want {
			t.Fatalf("EndedAt = %v, want %v", s.EndedAt, want)
		}
	})

	t.Run("an end reason is required", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "s", Source: "cli"})
		sessWantCode(t, db.EndSession(ctx, "s", ""), sessiondb.EINVALID)
		if s := sessGet(t, db, "s"); s.EndedAt != nil {
			t.Fatalf("EndedAt = %v, want nil", *s.EndedAt)
		}
	})

	t.Run("unknown id is not found", func(t *testing.T) {
		db := MustOpen(t)
		sessWantCode(t, db.EndSession(ctx, "ghost", "user_exit"), sessiondb.ENOTFOUND)
		sessWantCode(t, db.ReopenSession(ctx, "ghost"), sessiondb.ENOTFOUND)
	})
}

func TestUpdateSystemPrompt(t *testing.T) {
	t.Run("is visible through Session and stored once by SHA-256", func(t *testing.T) {
		db := MustOpen(t)
		const prompt = "You are Hermes. Be brief."
		sessCreate(t, db, sessiondb.NewSession{ID: "a", Source: "cli"})
		sessCreate(t, db, sessiondb.NewSession{ID: "b", Source: "cli"})
		for _, id := range []string{"a", "b"} {
			if err := db.UpdateSystemPrompt(ctx, id, prompt); err != nil {
				t.Fatalf("UpdateSystemPrompt(%s): %v", id, err)
			}
		}
		for _, id := range []string{"a", "b"} {
			s := sessGet(t, db, id)
			if got, want := sessStr(s.SystemPrompt), prompt; got != want {
				t.Fatalf("%s: SystemPrompt = %q, want %q", id, got, want)
			}
			if got, want := sessStr(s.SystemPromptHash), sha256Hex(prompt); got != want {
				t.Fatalf("%s: SystemPromptHash = %q, want %q", id, got, want)
			}
		}
		raw := rawDB(t, db.Path())
		if got, want := count(t, raw, "SELECT COUNT(*) FROM system_prompts"), 1; got != want {
			t.Fatalf("system_prompts rows = %d, want %d", got, want)
		}
		if got, want := count(t, raw, "SELECT COUNT(*) FROM system_prompts WHERE hash = ? AND prompt = ?", sha256Hex(prompt), prompt), 1; got != want {
			t.Fatalf("system_prompts has no row keyed by the prompt's SHA-256")
		}
		if got, want := count(t, raw, "SELECT COUNT(*) FROM sessions WHERE system_prompt IS NOT NULL"), 0; got != want {
			t.Fatalf("sessions with an inline system_prompt = %d, want %d", got, want)
		}
	})

	t.Run("an orphaned prompt is garbage-collected", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "a", Source: "cli", SystemPrompt: "old prompt"})
		if err := db.UpdateSystemPrompt(ctx, "a", "new prompt"); err != nil {
			t.Fatal(err)
		}
		if got, want := sessStr(sessGet(t, db, "a").SystemPrompt), "new prompt"; got != want {
			t.Fatalf("SystemPrompt = %q, want %q", got, want)
		}
		raw := rawDB(t, db.Path())
		if got, want := count(t, raw, "SELECT COUNT(*) FROM system_prompts WHERE prompt = 'old prompt'"), 0; got != want {
			t.Fatalf("orphaned prompt rows = %d, want %d", got, want)
		}
		if got, want := count(t, raw, "SELECT COUNT(*) FROM system_prompts"), 1; got != want {
			t.Fatalf("system_prompts rows = %d, want %d", got, want)
		}
	})

	t.Run("unknown id is not found", func(t *testing.T) {
		db := MustOpen(t)
		sessWantCode(t, db.UpdateSystemPrompt(ctx, "ghost", "p"), sessiondb.ENOTFOUND)
		if got, want := count(t, rawDB(t, db.Path()), "SELECT COUNT(*) FROM system_prompts"), 0; got != want {
			t.Fatalf("system_prompts rows = %d, want %d", got, want)
		}
	})
}

func TestUpdateTokenCounts(t *testing.T) {
	t.Run("adds deltas and keeps the per-model usage row in step", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "s", Source: "cli", Model: "m1"})
		for _, u := range []sessiondb.TokenUpdate{
			{InputTokens: 200, OutputTokens: 100, APICallCount: 1},
			{InputTokens: 100, OutputTokens: 50, APICallCount: 1},
			{APICallCount: 1},
		} {
			if err := db.UpdateTokenCounts(ctx, "s", u); err != nil {
				t.Fatal(err)
			}
		}
		s := sessGet(t, db, "s")
		if got, want := s.InputTokens, int64(300); got != want {
			t.Fatalf("InputTokens = %d, want %d", got, want)
		}
		if got, want := s.OutputTokens, int64(150); got != want {
			t.Fatalf("OutputTokens = %d, want %d", got, want)
		}
		if got, want := s.APICallCount, int64(3); got != want {
			t.Fatalf("APICallCount = %d, want %d", got, want)
		}
		raw := rawDB(t, db.Path())
		if got, want := count(t, raw, "SELECT COUNT(*) FROM session_model_usage WHERE session_id = 's'"), 1; got != want {
			t.Fatalf("session_model_usage rows = %d, want %d", got, want)
		}
		var in, out, calls int64
		if err := raw.QueryRow("SELECT input_tokens, output_tokens, api_call_count FROM session_model_usage WHERE session_id = 's' AND model = 'm1'").Scan(&in, &out, &calls); err != nil {
			t.Fatalf("usage row for m1: %v", err)
		}
		if in != 300 || out != 150 || calls != 3 {
			t.Fatalf("usage row = %d/%d/%d calls, want 300/150/3", in, out, calls)
		}
	})

	t.Run("absolute sets the totals", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "s", Source: "cli", Model: "m1"})
		if err := db.UpdateTokenCounts(ctx, "s", sessiondb.TokenUpdate{InputTokens: 1000, OutputTokens: 10, APICallCount: 9}); err != nil {
			t.Fatal(err)
		}
		if err := db.UpdateTokenCounts(ctx, "s", sessiondb.TokenUpdate{InputTokens: 300, APICallCount: 5, Absolute: true}); err != nil {
			t.Fatal(err)
		}
		s := sessGet(t, db, "s")
		if got, want := s.APICallCount, int64(5); got != want {
			t.Fatalf("APICallCount = %d, want %d", got, want)
		}
		if got, want := s.InputTokens, int64(300); got != want {
			t.Fatalf("InputTokens = %d, want %d", got, want)
		}
	})

	t.Run("model is back-filled when NULL", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "s", Source: "cli"})
		if err := db.UpdateTokenCounts(ctx, "s", sessiondb.TokenUpdate{InputTokens: 1, Model: "m2"}); err != nil {
			t.Fatal(err)
		}
		if got, want := sessStr(sessGet(t, db, "s").Model), "m2"; got != want {
			t.Fatalf("Model = %q, want %q", got, want)
		}
	})

	t.Run("an existing model is kept", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "s", Source: "cli", Model: "m1"})
		if err := db.UpdateTokenCounts(ctx, "s", sessiondb.TokenUpdate{InputTokens: 1, Model: "m2"}); err != nil {
			t.Fatal(err)
		}
		if got, want := sessStr(sessGet(t, db, "s").Model), "m1"; got != want {
			t.Fatalf("Model = %q, want %q", got, want)
		}
	})

	t.Run("unknown id is not found", func(t *testing.T) {
		db := MustOpen(t)
		sessWantCode(t, db.UpdateTokenCounts(ctx, "ghost", sessiondb.TokenUpdate{InputTokens: 1}), sessiondb.ENOTFOUND)
		if got, want := count(t, rawDB(t, db.Path()), "SELECT COUNT(*) FROM session_model_usage"), 0; got != want {
			t.Fatalf("session_model_usage rows = %d, want %d", got, want)
		}
	})
}

func TestResolveSessionID(t *testing.T) {
	db := MustOpen(t)
	for _, id := range []string{
		"20260501_120000_abc123", "20260501_120000_abd456",
		"a_b1", "axb2", "100%a", "100xb", "dup", "dup2",
	} {
		sessCreate(t, db, sessiondb.NewSession{ID: id, Source: "cli"})
	}
	for _, tc := range []struct {
		name, in, want, code string
		ambiguous            bool
	}{
		{name: "exact id", in: "a_b1", want: "a_b1"},
		{name: "exact id that also prefixes another", in: "dup", want: "dup"},
		{name: "unique prefix", in: "20260501_120000_abc", want: "20260501_120000_abc123"},
		{name: "ambiguous prefix is an error, not a pick", in: "20260501_120000_ab", ambiguous: true},
		{name: "underscore is literal", in: "a_", want: "a_b1"},
		{name: "percent is literal", in: "100%", want: "100%a"},
		{name: "unknown id is not found", in: "zzz", code: sessiondb.ENOTFOUND},
		{name: "unknown prefix is not found", in: "2027", code: sessiondb.ENOTFOUND},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := db.ResolveSessionID(ctx, tc.in)
			switch {
			case tc.ambiguous:
				if err == nil {
					t.Fatalf("ResolveSessionID(%q) = %q, want an error", tc.in, got)
				}
				if got != "" {
					t.Fatalf("ResolveSessionID(%q) = %q with error, want \"\"", tc.in, got)
				}
				if code := sessiondb.ErrorCode(err); code == sessiondb.EINTERNAL || code == sessiondb.ENOTFOUND {
					t.Fatalf("ambiguous prefix error code = %q (%v)", code, err)
				}
			case tc.code != "":
				sessWantCode(t, err, tc.code)
				if got != "" {
					t.Fatalf("ResolveSessionID(%q) = %q, want \"\"", tc.in, got)
				}
			default:
				if err != nil {
					t.Fatalf("ResolveSessionID(%q): %v", tc.in, err)
				}
				if got != tc.want {
					t.Fatalf("ResolveSessionID(%q) = %q, want %q", tc.in, got, tc.want)
				}
			}
		})
	}
}

func TestMeta(t *testing.T) {
	db := MustOpen(t)
	t.Run("unknown key is absent", func(t *testing.T) {
		v, ok, err := db.Meta(ctx, "no_such_key")
		if err != nil {
			t.Fatal(err)
		}
		if ok || v != "" {
			t.Fatalf("Meta = %q, %v, want \"\", false", v, ok)
		}
	})
	t.Run("set then get", func(t *testing.T) {
		if err := db.SetMeta(ctx, "test_key", "v1"); err != nil {
			t.Fatal(err)
		}
		v, ok, err := db.Meta(ctx, "test_key")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := v, "v1"; !ok || got != want {
			t.Fatalf("Meta = %q, %v, want %q, true", got, ok, want)
		}
	})
	t.Run("set upserts", func(t *testing.T) {
		if err := db.SetMeta(ctx, "test_key", "v2"); err != nil {
			t.Fatal(err)
		}
		v, ok, err := db.Meta(ctx, "test_key")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := v, "v2"; !ok || got != want {
			t.Fatalf("Meta = %q, %v, want %q, true", got, ok, want)
		}
		if got, want := count(t, rawDB(t, db.Path()), "SELECT COUNT(*) FROM state_meta WHERE key = 'test_key'"), 1; got != want {
			t.Fatalf("state_meta rows = %d, want %d", got, want)
		}
	})
	t.Run("empty value is present", func(t *testing.T) {
		if err := db.SetMeta(ctx, "empty_key", ""); err != nil {
			t.Fatal(err)
		}
		v, ok, err := db.Meta(ctx, "empty_key")
		if err != nil {
			t.Fatal(err)
		}
		if !ok || v != "" {
			t.Fatalf("Meta = %q, %v, want \"\", true", v, ok)
		}
	})
	checkIntegrity(t, rawDB(t, db.Path()))
}

// TestNoWALAcrossVMs: on a filesystem shared between a VM and its host
// (virtiofs, 9p) a new file stays in DELETE mode, as Hermes keeps it, and a
// file that is already WAL stays WAL (never downgraded).
func TestNoWALAcrossVMs(t *testing.T) {
	var probed []string
	sqlite.SetFSType(t, func(path string) string {
		probed = append(probed, path)
		return "virtiofs"
	})
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.db")
	db, err := sqlite.Open(fresh, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := db.JournalMode(); got != "delete" {
		t.Errorf("new file on virtiofs: journal mode %q, want delete", got)
	}
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if len(probed) == 0 || probed[0] != fresh {
		t.Errorf("probed %v, want %s", probed, fresh)
	}
	var mode string
	rawDB(t, fresh).QueryRow("PRAGMA journal_mode").Scan(&mode)
	if mode != "delete" {
		t.Errorf("file journal_mode = %q, want delete", mode)
	}

	wal := filepath.Join(dir, "wal.db")
	raw := rawDB(t, wal)
	if err := raw.QueryRow("PRAGMA journal_mode=WAL").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("PRAGMA journal_mode=WAL: %q, %v", mode, err)
	}
	db, err = sqlite.Open(wal, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.JournalMode(); got != "wal" {
		t.Errorf("WAL file on virtiofs: journal mode %q, want wal (never downgraded)", got)
	}
}

// TestReplacedFileStopsWrites: once another file is at the database's path
// (moved there, or copied over it), the handle refuses every write with an
// error that says so, writes nothing into either file, and keeps refusing.
func TestReplacedFileStopsWrites(t *testing.T) {
	for _, tc := range []struct {
		name, journal string
		replace       func(t *testing.T, path, other string)
	}{
		{"moved", "wal", func(t *testing.T, path, other string) {
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"copied", "delete", func(t *testing.T, path, other string) {
			b, err := os.ReadFile(other)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, other := filepath.Join(dir, "state.db"), filepath.Join(dir, "other.db")
			for _, p := range []string{other, path} {
				db, err := sqlite.Open(p, sqlite.Options{JournalMode: tc.journal})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
					t.Fatal(err)
				}
				if p == other {
					// One more write: a copy with the same change counter
					// would leave SQLite reading its cached header.
					if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "t", Source: "cli"}); err != nil {
						t.Fatal(err)
					}
					db.Close()
				} else {
					defer db.Close()
					tc.replace(t, path, other)
					for i := 0; i < 2; i++ {
						_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "lost?"})
						if err == nil || !strings.Contains(err.Error(), "replaced") || !strings.Contains(err.Error(), path) {
							t.Fatalf("append %d after the file was %s: %v; want an error naming the replaced file", i, tc.name, err)
						}
					}
				}
			}
			if n := count(t, rawDB(t, path), "SELECT COUNT(*) FROM messages"); n != 0 {
				t.Errorf("%d messages in the file now at the path, want 0", n)
			}
		})
	}
}

// API.md: a child NULL-fills profile_name from its parent only when the
// two session keys agree on their "agent:<ns>:" namespace; a key without a
// namespace agrees with any.
func TestCreateSessionProfileFollowsAgentNamespace(t *testing.T) {
	for _, tc := range []struct {
		name, parentKey, childKey string
		inherits                  bool
	}{
		{"same namespace", "agent:main:telegram:dm:42", "agent:main:cli", true},
		{"other namespace", "agent:main:telegram:dm:42", "agent:work:cli", false},
		{"child without a key", "agent:main:telegram:dm:42", "", true},
		{"child key without a namespace", "agent:main:telegram:dm:42", "telegram:dm:42", true},
		{"parent key without a namespace", "telegram:dm:42", "agent:work:cli", true},
		{"parent without a key", "", "agent:work:cli", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := MustOpen(t)
			sessCreate(t, db, sessiondb.NewSession{ID: "p", Source: "telegram", SessionKey: tc.parentKey, ProfileName: "coder"})
			sessCreate(t, db, sessiondb.NewSession{ID: "c", Source: "cli", ParentSessionID: "p", SessionKey: tc.childKey})
			want := "<nil>"
			if tc.inherits {
				want = "coder"
			}
			if got := sessStr(sessGet(t, db, "c").ProfileName); got != want {
				t.Errorf("child ProfileName = %q, want %q", got, want)
			}
		})
	}
}
