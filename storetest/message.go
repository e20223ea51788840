package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/sessiondb/sessiondb"
)

const (
	twoCalls = `[{"id":"call_1","type":"function","function":{"name":"web_search","arguments":"{\"q\":\"go\"}"}},` +
		`{"id":"call_2","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"/etc/hosts\"}"}}]`
	oneCall = `[{"id":"call_1","type":"function","function":{"name":"terminal","arguments":"{\"cmd\":\"ls\"}"}}]`
)

// withOne returns a store holding the live session s1.
func withOne(t *testing.T, s *suite) *harness {
	h := s.store(t)
	h.at("s1", base)
	return h
}

func testAppendMessage(t *testing.T, s *suite) {
	t.Run("messages keep order, role, content and timestamp; ids increase", func(t *testing.T) {
		h := withOne(t, s)
		h.at("s2", base)
		want := []sessiondb.NewMessage{user("Hello", base+1), assistant("Hi there", base+2.5), user("Bye", base+3)}
		ids := h.add("s1", want...)
		other := h.add("s2", user("elsewhere", base+4))
		if !(ids[0] < ids[1] && ids[1] < ids[2] && ids[2] < other[0]) {
			t.Fatalf("ids not increasing: %v then %v", ids, other)
		}
		ms := h.messages("s1", sessiondb.MessageFilter{})
		if len(ms) != len(want) {
			t.Fatalf("%d messages, want %d", len(ms), len(want))
		}
		for i, m := range ms {
			if m.ID != ids[i] || m.SessionID != "s1" || m.Role != want[i].Role || m.Content != want[i].Content || m.Timestamp != want[i].Timestamp {
				t.Errorf("message %d = {%d %s %s %#v %v}, want {%d s1 %s %q %v}", i, m.ID, m.SessionID, m.Role, m.Content, m.Timestamp,
					ids[i], want[i].Role, want[i].Content, want[i].Timestamp)
			}
			if !m.Active {
				t.Errorf("message %d is not active", i)
			}
		}
		h.wantCounters("s1", 3, 0)
		h.wantCounters("s2", 1, 0)
	})

	t.Run("an out-of-window timestamp is replaced by the store's clock", func(t *testing.T) {
		h := withOne(t, s)
		given := []float64{4.2e9, 0, -1, 4.2e9 + 1, 5e9}
		for _, ts := range given {
			h.add("s1", user(fmt.Sprint(ts), ts))
		}
		ms := h.messages("s1", sessiondb.MessageFilter{})
		if got := ms[0].Timestamp; got != 4.2e9 {
			t.Errorf("timestamp 4.2e9 (the window's edge) = %v, want kept", got)
		}
		for i, m := range ms[1:] {
			if m.Timestamp == given[i+1] || m.Timestamp <= 0 || m.Timestamp > 4.2e9 {
				t.Errorf("timestamp %v read back as %v, want the store's clock", given[i+1], m.Timestamp)
			}
		}
	})

	t.Run("tool_call_count", func(t *testing.T) {
		for _, tc := range []struct {
			name        string
			msgs        []sessiondb.NewMessage
			msgs1, call int64
		}{
			{"a tool row adds nothing", []sessiondb.NewMessage{{Role: "tool", Content: "result", ToolCallID: "call_1", ToolName: "terminal"}}, 1, 0},
			{"a tool row carrying tool_calls adds nothing", []sessiondb.NewMessage{{Role: "tool", Content: "r", ToolCallID: "call_1", ToolCalls: json.RawMessage(oneCall)}}, 1, 0},
			{"an assistant with one call adds 1", []sessiondb.NewMessage{{Role: "assistant", ToolCalls: json.RawMessage(oneCall)}}, 1, 1},
			{"two parallel calls and two results give 2", []sessiondb.NewMessage{
				{Role: "user", Content: "search and read"},
				{Role: "assistant", ToolCalls: json.RawMessage(twoCalls)},
				{Role: "tool", Content: "r1", ToolCallID: "call_1"},
				{Role: "tool", Content: "r2", ToolCallID: "call_2"},
			}, 4, 2},
			{"a non-list value counts as one call", []sessiondb.NewMessage{{Role: "assistant", ToolCalls: json.RawMessage(`{"id":"call_1","type":"function"}`)}}, 1, 1},
			{"an empty list counts nothing", []sessiondb.NewMessage{{Role: "assistant", Content: "done", ToolCalls: json.RawMessage(`[]`)}}, 1, 0},
			{"a JSON string holding a list counts the list", []sessiondb.NewMessage{{Role: "assistant", ToolCalls: json.RawMessage(strconv.Quote(twoCalls))}}, 1, 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := withOne(t, s)
				h.add("s1", tc.msgs...)
				h.wantCounters("s1", tc.msgs1, tc.call)
			})
		}
	})

	t.Run("tool_calls round-trip, a JSON string holding JSON unwrapped", func(t *testing.T) {
		h := withOne(t, s)
		h.add("s1", sessiondb.NewMessage{Role: "assistant", ToolCalls: json.RawMessage(twoCalls)},
			sessiondb.NewMessage{Role: "assistant", ToolCalls: json.RawMessage(strconv.Quote(oneCall))})
		ms := h.messages("s1", sessiondb.MessageFilter{})
		equal(t, "tool_calls", decode(t, ms[0].ToolCalls), decode(t, []byte(twoCalls)))
		equal(t, "unwrapped tool_calls", decode(t, ms[1].ToolCalls), decode(t, []byte(oneCall)))
	})

	t.Run("content encodings round-trip", func(t *testing.T) {
		parts := []any{
			map[string]any{"type": "text", "text": "what is in this picture?"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo="}},
		}
		for _, tc := range []struct {
			name    string
			in, out any
		}{
			{"plain text", "plain text", "plain text"},
			{"no content", nil, nil},
			{"an empty string", "", ""},
			{"emoji, CJK and Korean", "🚀 项目 안녕하세요 café", "🚀 项目 안녕하세요 café"},
			{"a multimodal parts list", parts, parts},
			{"a structured object", map[string]any{"type": "custom", "n": float64(3)}, map[string]any{"type": "custom", "n": float64(3)}},
			{"raw JSON", json.RawMessage(`{"k":[1,"two"]}`), map[string]any{"k": []any{float64(1), "two"}}},
			{"invalid UTF-8 becomes U+FFFD", "before\xffafter", "before\uFFFDafter"},
			{"a WTF-8 lone surrogate becomes one U+FFFD", "left \xed\xa0\x80 right", "left \uFFFD right"},
			{"NUL bytes are kept", "a\x00b\x00c", "a\x00b\x00c"},
			{"a NUL not followed by json: is text", "\x00jsonish", "\x00jsonish"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := withOne(t, s)
				h.add("s1", sessiondb.NewMessage{Role: "user", Content: tc.in, Timestamp: base + 1})
				m := h.messages("s1", sessiondb.MessageFilter{})[0]
				equal(t, "Content", m.Content, tc.out)
				conv := h.conversation("s1", sessiondb.ConversationOptions{})
				if tc.out != nil {
					equal(t, "conversation content", conv[0]["content"], tc.out)
				}
			})
		}
	})

	t.Run("text starting with the structured-content prefix is refused", func(t *testing.T) {
		h := withOne(t, s)
		_, err := h.AppendMessage(t.Context(), sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: sessiondb.ContentJSONPrefix + `{"a":1}`})
		wantCode(t, err, sessiondb.EINVALID)
		h.wantCounters("s1", 0, 0)
	})

	t.Run("message fields round-trip", func(t *testing.T) {
		h := withOne(t, s)
		h.add("s1",
			sessiondb.NewMessage{Role: "assistant", Content: "done", FinishReason: "stop", TokenCount: ptr(int64(17)),
				Reasoning: ptr("step by step"), ReasoningContent: ptr("raw"), ReasoningDetails: json.RawMessage(`[{"type":"reasoning.text","text":"x"}]`),
				CodexReasoningItems: json.RawMessage(`[{"id":"rs_1"}]`), CodexMessageItems: json.RawMessage(`[{"id":"msg_1"}]`), Timestamp: base + 1},
			sessiondb.NewMessage{Role: "tool", Content: "42 files", ToolCallID: "call_1", ToolName: "terminal", EffectDisposition: "read_only",
				APIContent: "  42 files  ", DisplayKind: "tool_result", DisplayMetadata: json.RawMessage(`{"task_count":2}`),
				PlatformMessageID: "tg-99", Observed: true, Timestamp: base + 2})
		ms := h.messages("s1", sessiondb.MessageFilter{})
		a, tool := ms[0], ms[1]
		if str(a.FinishReason) != "stop" || a.TokenCount == nil || *a.TokenCount != 17 || str(a.Reasoning) != "step by step" || str(a.ReasoningContent) != "raw" {
			t.Errorf("assistant: finish %s, tokens %v, reasoning %s, reasoning_content %s", str(a.FinishReason), a.TokenCount, str(a.Reasoning), str(a.ReasoningContent))
		}
		equal(t, "reasoning_details", decode(t, a.ReasoningDetails), decode(t, []byte(`[{"type":"reasoning.text","text":"x"}]`)))
		equal(t, "codex_reasoning_items", decode(t, a.CodexReasoningItems), decode(t, []byte(`[{"id":"rs_1"}]`)))
		equal(t, "codex_message_items", decode(t, a.CodexMessageItems), decode(t, []byte(`[{"id":"msg_1"}]`)))
		fields(t, "tool",
			field{"ToolCallID", str(tool.ToolCallID), "call_1"},
			field{"ToolName", str(tool.ToolName), "terminal"},
			field{"EffectDisposition", str(tool.EffectDisposition), "read_only"},
			field{"APIContent", str(tool.APIContent), "  42 files  "},
			field{"DisplayKind", str(tool.DisplayKind), "tool_result"},
			field{"PlatformMessageID", str(tool.PlatformMessageID), "tg-99"},
		)
		equal(t, "display_metadata", decode(t, tool.DisplayMetadata), map[string]any{"task_count": float64(2)})
		if !tool.Observed || a.Observed {
			t.Errorf("observed = %v (tool), %v (assistant); want true, false", tool.Observed, a.Observed)
		}
		if tool.FinishReason != nil || tool.TokenCount != nil || tool.Reasoning != nil {
			t.Errorf("tool row: finish %s, tokens %v, reasoning %s; want NULL", str(tool.FinishReason), tool.TokenCount, str(tool.Reasoning))
		}
	})

	t.Run("refused messages write nothing", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			m    sessiondb.NewMessage
			code string
		}{
			{"a role is required", sessiondb.NewMessage{SessionID: "s1", Content: "x"}, sessiondb.EINVALID},
			{"invalid tool_calls JSON", sessiondb.NewMessage{SessionID: "s1", Role: "assistant", ToolCalls: json.RawMessage(`[{"id":`)}, sessiondb.EINVALID},
			{"invalid display_metadata JSON", sessiondb.NewMessage{SessionID: "s1", Role: "tool", DisplayMetadata: json.RawMessage(`{`)}, sessiondb.EINVALID},
			{"an unknown session", sessiondb.NewMessage{SessionID: "ghost", Role: "user", Content: "x"}, sessiondb.ENOTFOUND},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := withOne(t, s)
				id, err := h.AppendMessage(t.Context(), tc.m)
				wantCode(t, err, tc.code)
				if id != 0 {
					t.Errorf("id = %d with an error, want 0", id)
				}
				h.wantCounters("s1", 0, 0)
				if ms := h.messages("s1", sessiondb.MessageFilter{}); len(ms) != 0 {
					t.Errorf("%d messages written", len(ms))
				}
			})
		}
	})

	t.Run("after a compression end appends conflict", func(t *testing.T) {
		h := withOne(t, s)
		h.add("s1", user("before", base+1))
		h.end("s1", sessiondb.EndReasonCompression)
		_, err := h.AppendMessage(t.Context(), sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "after"})
		wantCode(t, err, sessiondb.ECONFLICT)
		_, err = h.AppendMessages(t.Context(), "s1", []sessiondb.NewMessage{user("batch after", base+2)})
		wantCode(t, err, sessiondb.ECONFLICT)
		h.wantCounters("s1", 1, 0)
	})

	t.Run("after another end appends work", func(t *testing.T) {
		h := withOne(t, s)
		h.end("s1", "user_exit")
		h.add("s1", user("after", base+1))
		h.wantCounters("s1", 1, 0)
	})
}

func testAppendMessages(t *testing.T, s *suite) {
	t.Run("appends every message in order and updates the counters", func(t *testing.T) {
		h := withOne(t, s)
		h.add("s1", user("existing", base+1))
		batch := []sessiondb.NewMessage{
			user("go", base+2),
			{Role: "assistant", ToolCalls: json.RawMessage(twoCalls), Timestamp: base + 3},
			{Role: "tool", Content: "r1", ToolCallID: "call_1", Timestamp: base + 4},
			{Role: "tool", Content: "r2", ToolCallID: "call_2", Timestamp: base + 5},
			{Role: "assistant", Content: "done", ToolCalls: json.RawMessage(oneCall), Timestamp: base + 6},
		}
		n, err := h.AppendMessages(t.Context(), "s1", batch)
		if err != nil || n != len(batch) {
			t.Fatalf("AppendMessages = %d, %v; want %d", n, err, len(batch))
		}
		ms := h.messages("s1", sessiondb.MessageFilter{})
		if len(ms) != 1+len(batch) {
			t.Fatalf("%d messages, want %d", len(ms), 1+len(batch))
		}
		for i, m := range ms[1:] {
			if m.Role != batch[i].Role || m.Timestamp != batch[i].Timestamp || m.ID <= ms[i].ID {
				t.Errorf("message %d = {%d %s %v}, want {>%d %s %v}", i, m.ID, m.Role, m.Timestamp, ms[i].ID, batch[i].Role, batch[i].Timestamp)
			}
		}
		h.wantCounters("s1", 6, 3)
	})

	t.Run("a large batch keeps its order", func(t *testing.T) {
		h := withOne(t, s)
		const n = 1201
		batch := make([]sessiondb.NewMessage, n)
		for i := range batch {
			batch[i] = user(fmt.Sprintf("m%04d", i), base+float64(i))
		}
		if got, err := h.AppendMessages(t.Context(), "s1", batch); err != nil || got != n {
			t.Fatalf("AppendMessages = %d, %v", got, err)
		}
		ms := h.messages("s1", sessiondb.MessageFilter{})
		if len(ms) != n {
			t.Fatalf("%d messages, want %d", len(ms), n)
		}
		for i, m := range ms {
			if want := fmt.Sprintf("m%04d", i); m.Content != want || i > 0 && m.ID <= ms[i-1].ID {
				t.Fatalf("message %d: id %d, content %v; want %q, ids increasing", i, m.ID, m.Content, want)
			}
		}
		h.wantCounters("s1", n, 0)
	})

	t.Run("an empty batch appends nothing", func(t *testing.T) {
		h := withOne(t, s)
		if n, err := h.AppendMessages(t.Context(), "s1", nil); err != nil || n != 0 {
			t.Fatalf("AppendMessages(nil) = %d, %v", n, err)
		}
		h.wantCounters("s1", 0, 0)
	})

	t.Run("is all or nothing", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			bad  sessiondb.NewMessage
		}{
			{"invalid tool_calls", sessiondb.NewMessage{Role: "assistant", ToolCalls: json.RawMessage(`{not json`)}},
			{"no role", sessiondb.NewMessage{Content: "no role"}},
			{"the structured-content prefix", sessiondb.NewMessage{Role: "user", Content: sessiondb.ContentJSONPrefix + "[]"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := withOne(t, s)
				h.add("s1", user("existing", base+1))
				n, err := h.AppendMessages(t.Context(), "s1", []sessiondb.NewMessage{
					user("one", base+2),
					{Role: "assistant", ToolCalls: json.RawMessage(oneCall), Timestamp: base + 3},
					tc.bad,
					user("after the bad one", base+4),
				})
				wantCode(t, err, sessiondb.EINVALID)
				if n != 0 {
					t.Errorf("n = %d with an error, want 0", n)
				}
				h.wantCounters("s1", 1, 0)
				if got := len(h.messages("s1", sessiondb.MessageFilter{})); got != 1 {
					t.Errorf("%d messages, want 1", got)
				}
			})
		}
	})

	t.Run("reasoning is kept for assistant rows only", func(t *testing.T) {
		h := withOne(t, s)
		with := func(role string) sessiondb.NewMessage {
			m := sessiondb.NewMessage{Role: role, Content: role + " text", Reasoning: ptr("thought"), ReasoningContent: ptr("raw"),
				ReasoningDetails:    json.RawMessage(`[{"type":"reasoning.text","text":"x"}]`),
				CodexReasoningItems: json.RawMessage(`[{"id":"rs_1"}]`), CodexMessageItems: json.RawMessage(`[{"id":"msg_1"}]`)}
			if role == "tool" {
				m.ToolCallID = "call_1"
			}
			return m
		}
		if _, err := h.AppendMessages(t.Context(), "s1", []sessiondb.NewMessage{with("user"), with("assistant"), with("tool")}); err != nil {
			t.Fatal(err)
		}
		for _, m := range h.messages("s1", sessiondb.MessageFilter{}) {
			has := m.Reasoning != nil || m.ReasoningContent != nil || m.ReasoningDetails != nil || m.CodexReasoningItems != nil || m.CodexMessageItems != nil
			if want := m.Role == "assistant"; has != want {
				t.Errorf("%s row: reasoning stored = %v, want %v", m.Role, has, want)
			}
		}
	})

	t.Run("concurrent appends keep every message and exact counters", func(t *testing.T) {
		h := withOne(t, s)
		const writers, each = 8, 25
		errs := make(chan error, writers)
		for w := 0; w < writers; w++ {
			go func() {
				for i := 0; i < each; i++ {
					m := sessiondb.NewMessage{SessionID: "s1", Role: "assistant", Content: fmt.Sprintf("w%d-%d", w, i),
						ToolCalls: json.RawMessage(oneCall), Timestamp: base + float64(i)}
					var err error
					if i%2 == 0 {
						_, err = h.AppendMessage(t.Context(), m)
					} else {
						_, err = h.AppendMessages(t.Context(), "s1", []sessiondb.NewMessage{m})
					}
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for w := 0; w < writers; w++ {
			if err := <-errs; err != nil {
				t.Fatalf("a writer failed: %v", err)
			}
		}
		h.wantCounters("s1", writers*each, writers*each)
		ms := h.messages("s1", sessiondb.MessageFilter{})
		seen := map[string]bool{}
		for _, m := range ms {
			seen[fmt.Sprint(m.Content)] = true
		}
		if len(ms) != writers*each || len(seen) != writers*each {
			t.Errorf("%d messages, %d distinct; want %d", len(ms), len(seen), writers*each)
		}
	})

	t.Run("an unknown session is not found", func(t *testing.T) {
		h := withOne(t, s)
		_, err := h.AppendMessages(t.Context(), "ghost", []sessiondb.NewMessage{user("x", base)})
		wantCode(t, err, sessiondb.ENOTFOUND)
		if h.exists("ghost") {
			t.Error("the append created the session")
		}
	})
}

func testMessages(t *testing.T, s *suite) {
	h := withOne(t, s)
	h.at("other", base)
	var ids []int64
	for i := 1; i <= 5; i++ {
		ids = append(ids, h.add("s1", user(fmt.Sprintf("m%d", i), base+float64(i)))...)
		h.add("other", user(fmt.Sprintf("o%d", i), base+float64(i)))
	}
	for _, tc := range []struct {
		name string
		f    sessiondb.MessageFilter
		want []int64
	}{
		{"all in id order", sessiondb.MessageFilter{}, ids},
		{"include inactive when every row is active", sessiondb.MessageFilter{IncludeInactive: true}, ids},
		{"limit takes the oldest", sessiondb.MessageFilter{Limit: 2}, ids[:2]},
		{"latest with limit takes the newest in id order", sessiondb.MessageFilter{Latest: true, Limit: 2}, ids[3:]},
		{"latest with an offset pages back from the newest", sessiondb.MessageFilter{Latest: true, Offset: 1, Limit: 2}, ids[2:4]},
		{"latest with a limit past the end takes all", sessiondb.MessageFilter{Latest: true, Limit: 9}, ids},
		{"offset skips rows", sessiondb.MessageFilter{Offset: 1, Limit: 2}, ids[1:3]},
		{"offset without a limit keeps the rest", sessiondb.MessageFilter{Offset: 2}, ids[2:]},
		{"offset past the end is empty", sessiondb.MessageFilter{Offset: 5}, []int64{}},
		{"after id pages forward", sessiondb.MessageFilter{AfterID: ids[2]}, ids[3:]},
		{"after id with limit", sessiondb.MessageFilter{AfterID: ids[0], Limit: 2}, ids[1:3]},
		{"after the last id is empty", sessiondb.MessageFilter{AfterID: ids[4]}, []int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			equal(t, "ids", messageIDs(h.on(t).messages("s1", tc.f)), tc.want)
		})
	}
	t.Run("an empty session gives no rows", func(t *testing.T) {
		h := h.on(t)
		h.at("empty", base)
		if ms := h.messages("empty", sessiondb.MessageFilter{}); len(ms) != 0 {
			t.Errorf("%d messages", len(ms))
		}
	})
	t.Run("after id with latest or offset is invalid", func(t *testing.T) {
		_, err := h.Messages(t.Context(), "s1", sessiondb.MessageFilter{AfterID: ids[0], Latest: true})
		wantCode(t, err, sessiondb.EINVALID)
		_, err = h.Messages(t.Context(), "s1", sessiondb.MessageFilter{AfterID: ids[0], Offset: 1})
		wantCode(t, err, sessiondb.EINVALID)
	})
	t.Run("an unknown session is not found", func(t *testing.T) {
		_, err := h.Messages(t.Context(), "ghost", sessiondb.MessageFilter{})
		wantCode(t, err, sessiondb.ENOTFOUND)
	})
}

func testConversation(t *testing.T, s *suite) {
	contents := func(conv []map[string]any) []any {
		out := []any{}
		for _, m := range conv {
			out = append(out, m["content"])
		}
		return out
	}
	// chain builds root → child, root ended with compression.
	chain := func(t *testing.T, root, child []sessiondb.NewMessage) *harness {
		h := s.store(t)
		h.at("root", base)
		h.add("root", root...)
		h.end("root", sessiondb.EndReasonCompression)
		h.create(sessiondb.NewSession{ID: "child", Source: "cli", ParentSessionID: "root", StartedAt: base + 100})
		h.add("child", child...)
		return h
	}

	t.Run("a plain message has role, content and timestamp only", func(t *testing.T) {
		h := withOne(t, s)
		h.add("s1", user("Hello", base+1), assistant("Hi", base+2))
		equal(t, "conversation", h.conversation("s1", sessiondb.ConversationOptions{}), []map[string]any{
			{"role": "user", "content": "Hello", "timestamp": base + 1},
			{"role": "assistant", "content": "Hi", "timestamp": base + 2},
		})
	})

	t.Run("optional keys appear when they carry information, row ids when asked", func(t *testing.T) {
		h := withOne(t, s)
		ids := h.add("s1", sessiondb.NewMessage{Role: "tool", Content: "42 files", ToolCallID: "call_1", ToolName: "terminal",
			EffectDisposition: "read_only", APIContent: "  42 files  ", DisplayKind: "tool_result",
			DisplayMetadata: json.RawMessage(`{"task_count":2}`), PlatformMessageID: "tg-99", Observed: true, Timestamp: base + 1},
			sessiondb.NewMessage{Role: "assistant", Content: "answer", ToolCalls: json.RawMessage(oneCall), FinishReason: "tool_calls",
				Reasoning: ptr("step by step"), ReasoningContent: ptr(""), Timestamp: base + 2})
		want := []map[string]any{{
			"role": "tool", "content": "42 files", "timestamp": base + 1,
			"tool_call_id": "call_1", "tool_name": "terminal", "effect_disposition": "read_only",
			"api_content": "  42 files  ", "display_kind": "tool_result", "display_metadata": map[string]any{"task_count": float64(2)},
			"message_id": "tg-99", "observed": true, "_row_id": ids[0],
		}, {
			"role": "assistant", "content": "answer", "timestamp": base + 2, "tool_calls": decode(t, []byte(oneCall)),
			"finish_reason": "tool_calls", "reasoning": "step by step", "reasoning_content": "", "_row_id": ids[1],
		}}
		equal(t, "conversation", h.conversation("s1", sessiondb.ConversationOptions{IncludeRowIDs: true}), want)
		for _, m := range h.conversation("s1", sessiondb.ConversationOptions{}) {
			if v, ok := m["_row_id"]; ok {
				t.Errorf("_row_id = %v without IncludeRowIDs", v)
			}
		}
	})

	t.Run("reasoning is never put on user or tool messages", func(t *testing.T) {
		h := withOne(t, s)
		for _, role := range []string{"user", "tool"} {
			h.add("s1", sessiondb.NewMessage{Role: role, Content: role + " text", Reasoning: ptr("hidden"), FinishReason: "stop",
				ReasoningDetails: json.RawMessage(`[{"type":"reasoning.text","text":"x"}]`), ToolCallID: map[string]string{"tool": "call_1"}[role], Timestamp: base + 1})
		}
		for _, m := range h.conversation("s1", sessiondb.ConversationOptions{}) {
			for _, k := range []string{"reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items", "codex_message_items", "finish_reason"} {
				if v, ok := m[k]; ok {
					t.Errorf("%s message has %s = %#v", m["role"], k, v)
				}
			}
		}
	})

	t.Run("leaked memory-context is stripped", func(t *testing.T) {
		h := withOne(t, s)
		h.add("s1", assistant("<memory-context>x</memory-context>Visible answer", base+1),
			user("<memory-context>\nline 1\n</memory-context>\n\nVisible question  ", base+2))
		equal(t, "contents", contents(h.conversation("s1", sessiondb.ConversationOptions{})), []any{"Visible answer", "Visible question"})
	})

	t.Run("ancestors prepend the compression chain root first", func(t *testing.T) {
		h := chain(t, []sessiondb.NewMessage{user("p1", base+1), assistant("a1", base+2)},
			[]sessiondb.NewMessage{user("p2", base+101), assistant("a2", base+102)})
		h.end("child", sessiondb.EndReasonCompression)
		h.create(sessiondb.NewSession{ID: "tip", Source: "cli", ParentSessionID: "child", StartedAt: base + 200})
		h.add("tip", user("p3", base+201))
		equal(t, "tip with ancestors", contents(h.conversation("tip", sessiondb.ConversationOptions{IncludeAncestors: true})),
			[]any{"p1", "a1", "p2", "a2", "p3"})
		equal(t, "child with ancestors", contents(h.conversation("child", sessiondb.ConversationOptions{IncludeAncestors: true})),
			[]any{"p1", "a1", "p2", "a2"})
		equal(t, "tip alone", contents(h.conversation("tip", sessiondb.ConversationOptions{})), []any{"p3"})
	})

	t.Run("ancestors skip a parent that did not end with compression", func(t *testing.T) {
		h := s.store(t)
		h.at("p", base)
		h.add("p", user("parent prompt", base+1))
		h.end("p", "user_exit")
		h.create(sessiondb.NewSession{ID: "b", Source: "cli", ParentSessionID: "p", StartedAt: base + 2})
		h.add("b", user("branch prompt", base+3))
		equal(t, "contents", contents(h.conversation("b", sessiondb.ConversationOptions{IncludeAncestors: true})), []any{"branch prompt"})
	})

	t.Run("a prompt replayed at the start of a continuation shows once", func(t *testing.T) {
		h := chain(t, []sessiondb.NewMessage{user("first", base+1), assistant("answer", base+2), user("same prompt", base+3)},
			[]sessiondb.NewMessage{user("same prompt", base+110), assistant("final", base+111)})
		equal(t, "contents", contents(h.conversation("child", sessiondb.ConversationOptions{IncludeAncestors: true})),
			[]any{"first", "answer", "same prompt", "final"})
	})

	t.Run("the same text asked again in a new turn is kept", func(t *testing.T) {
		h := chain(t, []sessiondb.NewMessage{user("hi", base+1), assistant("hello", base+2)},
			[]sessiondb.NewMessage{user("hi", base+110), assistant("hello again", base+111)})
		equal(t, "contents", contents(h.conversation("child", sessiondb.ConversationOptions{IncludeAncestors: true})),
			[]any{"hi", "hello", "hi", "hello again"})
	})

	t.Run("an unknown session is not found", func(t *testing.T) {
		h := withOne(t, s)
		for _, o := range []sessiondb.ConversationOptions{{}, {IncludeAncestors: true}} {
			_, err := h.Conversation(t.Context(), "ghost", o)
			wantCode(t, err, sessiondb.ENOTFOUND)
		}
	})

	t.Run("an empty session gives an empty list", func(t *testing.T) {
		h := withOne(t, s)
		if conv := h.conversation("s1", sessiondb.ConversationOptions{}); conv == nil || len(conv) != 0 {
			t.Fatalf("conversation = %#v, want an empty non-nil list", conv)
		}
	})

	t.Run("include inactive keeps every row when all are active", func(t *testing.T) {
		h := withOne(t, s)
		h.add("s1", user("a", base+1), assistant("b", base+2))
		if got := contents(h.conversation("s1", sessiondb.ConversationOptions{IncludeInactive: true})); !slices.Equal(got, []any{"a", "b"}) {
			t.Errorf("contents = %v, want [a b]", got)
		}
	})
}
