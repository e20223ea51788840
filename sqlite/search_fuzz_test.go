package sqlite_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// sfSearchSeeds are the dangerous queries of API.md §5 and inputs that
// reach every route: CJK of each length, emoji, NUL, invalid UTF-8 and the
// WTF-8 encoding of a lone surrogate, FTS5 operators and LIKE wildcards.
var sfSearchSeeds = []string{
	`C++`, `"unterminated`, `(problem`, `hello AND`, `***`, `{test}`, `OR hello`, `a AND OR b`,
	"", "   ", `docker`, `deploy*`, `"docker deployment"`, `chat-send`, `P2.2`, `simulate.p2.test.ts`,
	`NOT NOT x`, `AND OR`, `x OR NOT y`, `NEAR(a b)`, `col:x`, `content:docker`, `-x`, `^x`, `"a" "b`, `""`,
	`%`, `_`, `\`, `'`, `100%`, `a%b_c`, `*`, `*x`, `x*y*`, `"x"*`,
	`记忆断裂`, `通信`, `山`, `안녕`, `こんにちは`, `100%完成`, `项目 docker`, `Agent通信`, `记忆系统 OR 断裂连接`,
	`"大别山项目"`, `"项目`, `项目 NOT 断裂`, `、。`, "\u3000", `youer`, `🚀`, `👨‍👩‍👧`, `🚀docker`,
	"\x00", "a\x00b", "\x00Q0\x00 \"x\"", "\xed\xa0\x80", "\xed\xb0\x80x", "\xff\xfe", "\xc3", "a\xe4\xb8",
	strings.Repeat("a", 3000), strings.Repeat("x-", 1100), strings.Repeat("\"", 101), strings.Repeat("(", 300),
}

// FuzzSearch: no query makes Search fail or panic, on the rank, tool-role,
// newest and reasoning routes, except that a query of more than
// MaxQueryTerms terms is refused (EINVALID) on every route. One store per
// fuzzing process.
func FuzzSearch(f *testing.F) {
	for _, q := range sfSearchSeeds {
		f.Add(q)
	}
	db := MustOpen(f)
	for _, s := range []sessiondb.NewSession{{ID: "en", Source: "cli"}, {ID: "zh", Source: "telegram"}, {ID: "cron", Source: "cron"}} {
		if _, err := db.CreateSession(ctx, s); err != nil {
			f.Fatal(err)
		}
	}
	str := func(s string) *string { return &s }
	for _, m := range []sessiondb.NewMessage{
		{SessionID: "en", Role: "user", Content: "How do I use docker for deployment? Run the chat-send command, P2.2 and simulate.p2.test.ts"},
		{SessionID: "en", Role: "assistant", Content: "docker is a container platform 100% of the time",
			ToolCalls: json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"web_search","arguments":"{\"q\":\"docker\"}"}}]`),
			Reasoning: str("thinking about docker and 记忆")},
		{SessionID: "en", Role: "tool", Content: strings.Repeat("tool output ", 1000) + "deep 通信", ToolName: "web_search", ToolCallID: "c1"},
		{SessionID: "zh", Role: "user", Content: "我们之前讨论了聊天记录，记忆断裂问题很严重，达成100%完成率"},
		{SessionID: "zh", Role: "assistant", Content: "讨论Agent通信协议，修改youer服务端 안녕하세요 こんにちは 世界 大别山项目 🚀"},
		{SessionID: "zh", Role: "user", Content: []any{map[string]any{"type": "text", "text": "multimodal 山 docker"}}},
		{SessionID: "cron", Role: "user", Content: "cron job docker 部署"},
	} {
		if _, err := db.AppendMessage(ctx, m); err != nil {
			f.Fatal(err)
		}
	}
	hidden, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "en", Role: "user", Content: "hidden docker 记忆 山 a b c x y", DisplayKind: "hidden"})
	if err != nil {
		f.Fatal(err)
	}

	routes := []sessiondb.SearchOptions{{}, {Roles: []string{"tool"}}, {Sort: "newest"}, {IncludeReasoning: true}}
	f.Fuzz(func(t *testing.T, q string) {
		tooComplex := sessiondb.CheckQueryTerms(sessiondb.SanitizeQuery(q)) != nil
		for _, o := range routes {
			hits, err := db.Search(ctx, q, o)
			if tooComplex && sessiondb.ErrorCode(err) == sessiondb.EINVALID {
				continue
			}
			if err != nil {
				t.Fatalf("Search(%q, %+v): %v (code %s)", q, o, err, sessiondb.ErrorCode(err))
			}
			if tooComplex {
				t.Fatalf("Search(%q, %+v) answered a query CheckQueryTerms refuses", q, o)
			}
			if hits == nil {
				t.Fatalf("Search(%q, %+v) = nil, want a list", q, o)
			}
			if len(hits) > sessiondb.DefaultSearchLimit {
				t.Errorf("Search(%q, %+v): %d hits, more than the default limit", q, o, len(hits))
			}
			seen := map[int64]bool{}
			for _, h := range hits {
				if seen[h.ID] {
					t.Errorf("Search(%q, %+v): id %d twice", q, o, h.ID)
				}
				seen[h.ID] = true
				if h.ID == hidden {
					t.Errorf("Search(%q, %+v): hidden row found", q, o)
				}
				if len(o.Roles) > 0 && h.Role != "tool" {
					t.Errorf("Search(%q, %+v): role %q despite the role filter", q, o, h.Role)
				}
				if len(h.Context) == 0 || len(h.Context) > 3 {
					t.Errorf("Search(%q, %+v): hit %d has %d context entries", q, o, h.ID, len(h.Context))
				}
			}
		}
	})
}

// FuzzAppendMessage: any input is either stored (and read back scrubbed) or
// refused with EINVALID; never another code and never a raw driver error.
func FuzzAppendMessage(f *testing.F) {
	for _, s := range []struct {
		content, role, toolName string
		toolCalls               []byte
		reasoning               string
	}{
		{"hello", "user", "", nil, ""},
		{"docker is great", "assistant", "", []byte(`[{"id":"c","type":"function","function":{"name":"x","arguments":"{}"}}]`), "thinking"},
		{"result", "tool", "web_search", nil, ""},
		{"", "user", "", nil, ""},
		{"no role", "", "", nil, ""},
		{"bad calls", "assistant", "", []byte(`[{"id":`), ""},
		{"string calls", "assistant", "", []byte(`"[{\"id\":\"c\"}]"`), ""},
		{"string not json", "assistant", "", []byte(`"not json"`), ""},
		{"empty calls", "assistant", "", []byte(`[]`), ""},
		{"null calls", "assistant", "", []byte(`null`), ""},
		{"object call", "assistant", "", []byte(`{"id":"c"}`), ""},
		{"number call", "assistant", "", []byte(`0`), ""},
		{"\xff\xfe invalid", "user\xff", "tool\xed\xa0\x80", []byte("[\"\xff\"]"), "\xed\xb0\x80"},
		{"nul\x00inside", "assistant", "t\x00n", []byte(`["a\u0000b"]`), "r\x00"},
		{"记忆断裂 \xed\xa0\x80 lone surrogate", "user", "搜索", nil, "思考"},
		{"<memory-context>x</memory-context>", "assistant", "", nil, ""},
		// A string that starts with the structured-content prefix is read
		// back as JSON (the format cannot tell them apart).
		{"\x00json:1", "user", "", nil, ""},
		{"\x00json:[{\"type\":\"text\",\"text\":\"x\"}]", "user", "", nil, ""},
		{"\x00json:not json", "user", "", nil, ""},
		{strings.Repeat("é", 9000), "tool", "shell", nil, ""},
	} {
		f.Add(s.content, s.role, s.toolName, s.toolCalls, s.reasoning)
	}
	db := MustOpen(f)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "fz", Source: "cli"}); err != nil {
		f.Fatal(err)
	}
	codes := map[string]bool{sessiondb.ECONFLICT: true, sessiondb.EINVALID: true, sessiondb.ENOTFOUND: true,
		sessiondb.EBUSY: true, sessiondb.ECORRUPT: true, sessiondb.EINTERNAL: true}

	f.Fuzz(func(t *testing.T, content, role, toolName string, toolCalls []byte, reasoning string) {
		m := sessiondb.NewMessage{SessionID: "fz", Role: role, Content: content, ToolName: toolName,
			ToolCalls: json.RawMessage(toolCalls), Reasoning: &reasoning}
		id, err := db.AppendMessage(ctx, m)
		if err != nil {
			var de *sessiondb.Error
			if !errors.As(err, &de) || !codes[de.Code] {
				t.Fatalf("AppendMessage: %v (%T), want a *sessiondb.Error", err, err)
			}
			if de.Code != sessiondb.EINVALID {
				t.Fatalf("AppendMessage: code %q (%v), want EINVALID or success", de.Code, err)
			}
			return
		}
		if role == "" {
			t.Fatalf("AppendMessage with an empty role succeeded, want EINVALID")
		}
		if len(toolCalls) > 0 && !json.Valid(toolCalls) {
			t.Fatalf("AppendMessage with tool_calls %q (invalid JSON) succeeded, want EINVALID", toolCalls)
		}
		ms, err := db.Messages(ctx, "fz", sessiondb.MessageFilter{AfterID: id - 1, Limit: 1})
		if err != nil {
			t.Fatalf("Messages: %v", err)
		}
		if len(ms) != 1 || ms[0].ID != id {
			t.Fatalf("Messages after %d: %d rows, want the appended row %d", id-1, len(ms), id)
		}
		got := ms[0]
		if want := sessiondb.ScrubText(content); got.Content != want {
			t.Errorf("content = %#v, want %q", got.Content, want)
		}
		if want := sessiondb.ScrubText(role); got.Role != want {
			t.Errorf("role = %q, want %q", got.Role, want)
		}
		if toolName != "" && (got.ToolName == nil || *got.ToolName != sessiondb.ScrubText(toolName)) {
			t.Errorf("tool_name = %v, want %q", got.ToolName, sessiondb.ScrubText(toolName))
		}
		if len(got.ToolCalls) > 0 && !json.Valid(got.ToolCalls) {
			t.Errorf("tool_calls read back as invalid JSON %q", got.ToolCalls)
		}
		// Any stored text is a valid query, unless it has more terms than
		// a search takes: then the refusal is EINVALID, never a failure.
		_, err = db.Search(ctx, content, sessiondb.SearchOptions{Limit: 1})
		tooComplex := sessiondb.CheckQueryTerms(sessiondb.SanitizeQuery(content)) != nil
		if err != nil && !(tooComplex && sessiondb.ErrorCode(err) == sessiondb.EINVALID) {
			t.Errorf("Search(content %q): %v", content, err)
		}
	})
}
