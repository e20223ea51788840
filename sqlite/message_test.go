package sqlite_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// msgStore opens a store holding one live session "s1".
func msgStore(tb testing.TB) *sqlite.DB {
	tb.Helper()
	db := MustOpen(tb)
	sessCreate(tb, db, sessiondb.NewSession{ID: "s1", Source: "cli"})
	return db
}

// msgAppend appends m and fails the test on error.
func msgAppend(tb testing.TB, db *sqlite.DB, m sessiondb.NewMessage) int64 {
	tb.Helper()
	id, err := db.AppendMessage(ctx, m)
	if err != nil {
		tb.Fatalf("AppendMessage(%s %q): %v", m.Role, m.Content, err)
	}
	return id
}

// msgList returns a session's messages and fails the test on error.
func msgList(tb testing.TB, db *sqlite.DB, sid string, f sessiondb.MessageFilter) []*sessiondb.Message {
	tb.Helper()
	ms, err := db.Messages(ctx, sid, f)
	if err != nil {
		tb.Fatalf("Messages(%q, %+v): %v", sid, f, err)
	}
	return ms
}

// msgConv returns a session's conversation and fails the test on error.
func msgConv(tb testing.TB, db *sqlite.DB, sid string, o sessiondb.ConversationOptions) []map[string]any {
	tb.Helper()
	c, err := db.Conversation(ctx, sid, o)
	if err != nil {
		tb.Fatalf("Conversation(%q, %+v): %v", sid, o, err)
	}
	return c
}

// msgIDs returns the ids of ms.
func msgIDs(ms []*sessiondb.Message) []int64 {
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// msgDecode decodes raw JSON, failing the test when it is invalid.
func msgDecode(tb testing.TB, raw []byte) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatalf("decode %q: %v", raw, err)
	}
	return v
}

// msgRawContent reads messages.content of one row straight from the file.
func msgRawContent(tb testing.TB, db *sqlite.DB, id int64) string {
	tb.Helper()
	var s string
	if err := rawDB(tb, db.Path()).QueryRow("SELECT content FROM messages WHERE id = ?", id).Scan(&s); err != nil {
		tb.Fatalf("raw content of %d: %v", id, err)
	}
	return s
}

// msgCounters returns a session's message_count and tool_call_count.
func msgCounters(tb testing.TB, db *sqlite.DB, sid string) (int64, int64) {
	tb.Helper()
	s := sessGet(tb, db, sid)
	return s.MessageCount, s.ToolCallCount
}

func msgPtr[T any](v T) *T { return &v }

// msgKeys returns the sorted keys of a conversation message.
func msgKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

const msgTwoCalls = `[{"id":"call_1","type":"function","function":{"name":"web_search","arguments":"{\"q\":\"go\"}"}},` +
	`{"id":"call_2","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"/etc/hosts\"}"}}]`

const msgOneCall = `[{"id":"call_1","type":"function","function":{"name":"terminal","arguments":"{\"cmd\":\"ls\"}"}}]`

func TestAppendMessage(t *testing.T) {
	t.Run("messages keep order, role and content", func(t *testing.T) {
		db := msgStore(t)
		want := []struct{ role, content string }{
			{"user", "Hello"}, {"assistant", "Hi there"}, {"user", "Bye"},
		}
		var ids []int64
		for _, w := range want {
			ids = append(ids, msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: w.role, Content: w.content}))
		}
		ms := msgList(t, db, "s1", sessiondb.MessageFilter{})
		if got, want := len(ms), len(want); got != want {
			t.Fatalf("len = %d, want %d", got, want)
		}
		for i, m := range ms {
			if m.ID != ids[i] || m.SessionID != "s1" || m.Role != want[i].role || m.Content != want[i].content {
				t.Errorf("message %d = {id %d, %s, %s, %q}, want {id %d, s1, %s, %q}",
					i, m.ID, m.SessionID, m.Role, m.Content, ids[i], want[i].role, want[i].content)
			}
			if got, want := m.Timestamp, fixedUnix; got != want {
				t.Errorf("message %d timestamp = %v, want %v", i, got, want)
			}
			if !m.Active {
				t.Errorf("message %d is not active", i)
			}
		}
		if !(ids[0] < ids[1] && ids[1] < ids[2]) {
			t.Fatalf("ids not increasing: %v", ids)
		}
		if got, _ := msgCounters(t, db, "s1"); got != 3 {
			t.Fatalf("message_count = %d, want 3", got)
		}
		checkIntegrity(t, rawDB(t, db.Path()))
	})

	t.Run("an explicit timestamp is kept and an out-of-range one replaced by now", func(t *testing.T) {
		db := msgStore(t)
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "a", Timestamp: 1700000000.5})
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "b", Timestamp: 5e9}) // past Hermes' window (0, 4.2e9]
		ms := msgList(t, db, "s1", sessiondb.MessageFilter{})
		if got, want := ms[0].Timestamp, 1700000000.5; got != want {
			t.Fatalf("timestamp = %v, want %v", got, want)
		}
		if got, want := ms[1].Timestamp, fixedUnix; got != want {
			t.Fatalf("out-of-range timestamp = %v, want %v", got, want)
		}
	})

	t.Run("the window's edges: 4.2e9 is kept, 0 and below replaced", func(t *testing.T) {
		db := msgStore(t)
		for _, ts := range []float64{4.2e9, 0, -1, 4.2e9 + 1} {
			msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: fmt.Sprint(ts), Timestamp: ts})
		}
		ms := msgList(t, db, "s1", sessiondb.MessageFilter{})
		for i, want := range []float64{4.2e9, fixedUnix, fixedUnix, fixedUnix} {
			if got := ms[i].Timestamp; got != want {
				t.Errorf("message %q: timestamp %v, want %v", ms[i].Content, got, want)
			}
		}
	})

	t.Run("tool_call_count", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			msgs      []sessiondb.NewMessage
			wantMsgs  int64
			wantCalls int64
		}{
			{"a tool-role row adds nothing", []sessiondb.NewMessage{
				{Role: "tool", Content: "result", ToolCallID: "call_1", ToolName: "terminal"},
			}, 1, 0},
			{"a tool-role row carrying tool_calls adds nothing", []sessiondb.NewMessage{
				{Role: "tool", Content: "result", ToolCallID: "call_1", ToolCalls: json.RawMessage(msgOneCall)},
			}, 1, 0},
			{"an assistant with one call adds 1", []sessiondb.NewMessage{
				{Role: "assistant", ToolCalls: json.RawMessage(msgOneCall)},
			}, 1, 1},
			{"two parallel calls and two results give 2", []sessiondb.NewMessage{
				{Role: "user", Content: "search and read"},
				{Role: "assistant", ToolCalls: json.RawMessage(msgTwoCalls)},
				{Role: "tool", Content: "r1", ToolCallID: "call_1"},
				{Role: "tool", Content: "r2", ToolCallID: "call_2"},
			}, 4, 2},
			{"a non-list value counts as one call", []sessiondb.NewMessage{
				{Role: "assistant", ToolCalls: json.RawMessage(`{"id":"call_1","type":"function"}`)},
			}, 1, 1},
			{"an empty list counts nothing", []sessiondb.NewMessage{
				{Role: "assistant", Content: "done", ToolCalls: json.RawMessage(`[]`)},
			}, 1, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				db := msgStore(t)
				for _, m := range tc.msgs {
					m.SessionID = "s1"
					msgAppend(t, db, m)
				}
				gotMsgs, gotCalls := msgCounters(t, db, "s1")
				if gotMsgs != tc.wantMsgs {
					t.Errorf("message_count = %d, want %d", gotMsgs, tc.wantMsgs)
				}
				if gotCalls != tc.wantCalls {
					t.Errorf("tool_call_count = %d, want %d", gotCalls, tc.wantCalls)
				}
			})
		}
	})

	t.Run("tool_calls round-trip", func(t *testing.T) {
		db := msgStore(t)
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "assistant", ToolCalls: json.RawMessage(msgTwoCalls)})
		ms := msgList(t, db, "s1", sessiondb.MessageFilter{})
		if got, want := msgDecode(t, ms[0].ToolCalls), msgDecode(t, []byte(msgTwoCalls)); !reflect.DeepEqual(got, want) {
			t.Fatalf("tool_calls = %s, want %s", ms[0].ToolCalls, msgTwoCalls)
		}
	})

	t.Run("tool_calls given as a JSON string holding JSON is unwrapped", func(t *testing.T) {
		db := msgStore(t)
		id := msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "assistant", ToolCalls: json.RawMessage(strconv.Quote(msgTwoCalls))})
		var stored string
		if err := rawDB(t, db.Path()).QueryRow("SELECT tool_calls FROM messages WHERE id = ?", id).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if got, want := msgDecode(t, []byte(stored)), msgDecode(t, []byte(msgTwoCalls)); !reflect.DeepEqual(got, want) {
			t.Fatalf("stored tool_calls = %s, want the list %s", stored, msgTwoCalls)
		}
		ms := msgList(t, db, "s1", sessiondb.MessageFilter{})
		if got, want := msgDecode(t, ms[0].ToolCalls), msgDecode(t, []byte(msgTwoCalls)); !reflect.DeepEqual(got, want) {
			t.Fatalf("tool_calls = %s, want %s", ms[0].ToolCalls, msgTwoCalls)
		}
		if _, calls := msgCounters(t, db, "s1"); calls != 2 {
			t.Fatalf("tool_call_count = %d, want 2", calls)
		}
	})

	t.Run("invalid tool_calls JSON is refused and nothing is written", func(t *testing.T) {
		db := msgStore(t)
		_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "assistant", ToolCalls: json.RawMessage(`[{"id":`)})
		sessWantCode(t, err, sessiondb.EINVALID)
		if got := count(t, rawDB(t, db.Path()), "SELECT COUNT(*) FROM messages"); got != 0 {
			t.Fatalf("messages = %d, want 0", got)
		}
		if msgs, calls := msgCounters(t, db, "s1"); msgs != 0 || calls != 0 {
			t.Fatalf("counters = %d/%d, want 0/0", msgs, calls)
		}
	})

	t.Run("a role is required", func(t *testing.T) {
		db := msgStore(t)
		_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Content: "x"})
		sessWantCode(t, err, sessiondb.EINVALID)
	})

	t.Run("finish_reason and token_count are stored", func(t *testing.T) {
		db := msgStore(t)
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "assistant", Content: "done", FinishReason: "stop", TokenCount: msgPtr(int64(17))})
		m := msgList(t, db, "s1", sessiondb.MessageFilter{})[0]
		if got, want := sessStr(m.FinishReason), "stop"; got != want {
			t.Fatalf("FinishReason = %q, want %q", got, want)
		}
		if m.TokenCount == nil || *m.TokenCount != 17 {
			t.Fatalf("TokenCount = %v, want 17", m.TokenCount)
		}
	})

	t.Run("structured content is stored behind the JSON prefix and decoded back", func(t *testing.T) {
		db := msgStore(t)
		parts := []any{
			map[string]any{"type": "text", "text": "what is in this picture?"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo="}},
		}
		id := msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: parts})
		raw := msgRawContent(t, db, id)
		rest, ok := strings.CutPrefix(raw, sessiondb.ContentJSONPrefix)
		if !ok {
			t.Fatalf("raw content = %q, want the %q prefix", raw, sessiondb.ContentJSONPrefix)
		}
		if got := msgDecode(t, []byte(rest)); !reflect.DeepEqual(got, parts) {
			t.Fatalf("raw content JSON = %s, want %v", rest, parts)
		}
		m := msgList(t, db, "s1", sessiondb.MessageFilter{})[0]
		if !reflect.DeepEqual(m.Content, parts) {
			t.Fatalf("Content = %#v, want %#v", m.Content, parts)
		}
		conv := msgConv(t, db, "s1", sessiondb.ConversationOptions{})
		if !reflect.DeepEqual(conv[0]["content"], parts) {
			t.Fatalf("conversation content = %#v, want %#v", conv[0]["content"], parts)
		}
	})

	t.Run("invalid text is scrubbed to U+FFFD and the rest kept", func(t *testing.T) {
		for _, tc := range []struct{ name, in, want string }{
			{"invalid UTF-8 byte", "before\xffafter", "before\uFFFDafter"},
			{"WTF-8 lone surrogate", "left \xed\xa0\x80 right", "left \uFFFD right"},
			{"NUL bytes are kept", "a\x00b\x00c", "a\x00b\x00c"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				db := msgStore(t)
				id := msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: tc.in})
				if got := msgRawContent(t, db, id); got != tc.want {
					t.Fatalf("raw content = %q, want %q", got, tc.want)
				}
				m := msgList(t, db, "s1", sessiondb.MessageFilter{})[0]
				if got, ok := m.Content.(string); !ok || got != tc.want {
					t.Fatalf("Content = %#v, want %q", m.Content, tc.want)
				}
				checkIntegrity(t, rawDB(t, db.Path()))
			})
		}
	})

	t.Run("a 5 MB content round-trips", func(t *testing.T) {
		db := msgStore(t)
		big := strings.Repeat("lorem ipsum dolor sit amet ", 5<<20/27+1)
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "tool", Content: big, ToolCallID: "call_1"})
		m := msgList(t, db, "s1", sessiondb.MessageFilter{})[0]
		if got, ok := m.Content.(string); !ok || got != big {
			t.Fatalf("content of %d bytes does not round-trip (got %T of length %d)", len(big), m.Content, len(fmt.Sprint(m.Content)))
		}
	})

	t.Run("unknown session is not found and nothing is written", func(t *testing.T) {
		db := msgStore(t)
		_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "ghost", Role: "user", Content: "x"})
		sessWantCode(t, err, sessiondb.ENOTFOUND)
		if got := count(t, rawDB(t, db.Path()), "SELECT COUNT(*) FROM messages"); got != 0 {
			t.Fatalf("messages = %d, want 0", got)
		}
	})

	t.Run("append after a compression end conflicts", func(t *testing.T) {
		db := msgStore(t)
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "before"})
		if err := db.EndSession(ctx, "s1", sessiondb.EndReasonCompression); err != nil {
			t.Fatal(err)
		}
		_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "after"})
		sessWantCode(t, err, sessiondb.ECONFLICT)
		_, err = db.AppendMessages(ctx, "s1", []sessiondb.NewMessage{{Role: "user", Content: "batch after"}})
		sessWantCode(t, err, sessiondb.ECONFLICT)
		if got := len(msgList(t, db, "s1", sessiondb.MessageFilter{})); got != 1 {
			t.Fatalf("messages = %d, want 1", got)
		}
		if msgs, _ := msgCounters(t, db, "s1"); msgs != 1 {
			t.Fatalf("message_count = %d, want 1", msgs)
		}
	})

	t.Run("append after another end works", func(t *testing.T) {
		db := msgStore(t)
		if err := db.EndSession(ctx, "s1", "user_exit"); err != nil {
			t.Fatal(err)
		}
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "after"})
		if msgs, _ := msgCounters(t, db, "s1"); msgs != 1 {
			t.Fatalf("message_count = %d, want 1", msgs)
		}
	})
}

func TestAppendMessages(t *testing.T) {
	t.Run("a batch larger than one statement keeps its order", func(t *testing.T) {
		db := msgStore(t)
		const n = 1201 // three INSERT statements of at most 500 rows
		batch := make([]sessiondb.NewMessage, n)
		for i := range batch {
			batch[i] = sessiondb.NewMessage{Role: "user", Content: fmt.Sprintf("m%04d", i)}
		}
		if got, err := db.AppendMessages(ctx, "s1", batch); err != nil || got != n {
			t.Fatalf("AppendMessages = %d, %v", got, err)
		}
		ms := msgList(t, db, "s1", sessiondb.MessageFilter{})
		if len(ms) != n {
			t.Fatalf("%d messages stored, want %d", len(ms), n)
		}
		for i, m := range ms {
			if want := fmt.Sprintf("m%04d", i); m.Content != want || i > 0 && m.ID != ms[i-1].ID+1 {
				t.Fatalf("message %d: id %d, content %v; want %q, ids in order", i, m.ID, m.Content, want)
			}
		}
		if msgs, _ := msgCounters(t, db, "s1"); msgs != n {
			t.Fatalf("message_count = %d, want %d", msgs, n)
		}
	})
	t.Run("appends every message and updates the counters", func(t *testing.T) {
		db := msgStore(t)
		n, err := db.AppendMessages(ctx, "s1", []sessiondb.NewMessage{
			{Role: "user", Content: "go"},
			{Role: "assistant", ToolCalls: json.RawMessage(msgTwoCalls)},
			{Role: "tool", Content: "r1", ToolCallID: "call_1"},
			{Role: "tool", Content: "r2", ToolCallID: "call_2"},
			{Role: "assistant", Content: "done"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n, 5; got != want {
			t.Fatalf("n = %d, want %d", got, want)
		}
		ms := msgList(t, db, "s1", sessiondb.MessageFilter{})
		var roles []string
		for _, m := range ms {
			roles = append(roles, m.Role)
		}
		if got, want := strings.Join(roles, ","), "user,assistant,tool,tool,assistant"; got != want {
			t.Fatalf("roles = %s, want %s", got, want)
		}
		if msgs, calls := msgCounters(t, db, "s1"); msgs != 5 || calls != 2 {
			t.Fatalf("counters = %d/%d, want 5/2", msgs, calls)
		}
		checkIntegrity(t, rawDB(t, db.Path()))
	})

	t.Run("is all or nothing", func(t *testing.T) {
		db := msgStore(t)
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "existing"})
		_, err := db.AppendMessages(ctx, "s1", []sessiondb.NewMessage{
			{Role: "user", Content: "one"},
			{Role: "assistant", ToolCalls: json.RawMessage(msgOneCall)},
			{Role: "assistant", ToolCalls: json.RawMessage(`{not json`)},
		})
		sessWantCode(t, err, sessiondb.EINVALID)
		if got := count(t, rawDB(t, db.Path()), "SELECT COUNT(*) FROM messages"); got != 1 {
			t.Fatalf("messages = %d, want 1", got)
		}
		if msgs, calls := msgCounters(t, db, "s1"); msgs != 1 || calls != 0 {
			t.Fatalf("counters = %d/%d, want 1/0", msgs, calls)
		}
	})

	t.Run("reasoning is kept for assistant rows only", func(t *testing.T) {
		db := msgStore(t)
		details := json.RawMessage(`[{"type":"reasoning.text","text":"x"}]`)
		withReasoning := func(role string) sessiondb.NewMessage {
			return sessiondb.NewMessage{Role: role, Content: role + " text", Reasoning: msgPtr("thought"),
				ReasoningContent: msgPtr("raw"), ReasoningDetails: details,
				CodexReasoningItems: json.RawMessage(`[{"id":"rs_1"}]`), CodexMessageItems: json.RawMessage(`[{"id":"msg_1"}]`)}
		}
		tool := withReasoning("tool")
		tool.ToolCallID = "call_1"
		if _, err := db.AppendMessages(ctx, "s1", []sessiondb.NewMessage{withReasoning("user"), withReasoning("assistant"), tool}); err != nil {
			t.Fatal(err)
		}
		ms := msgList(t, db, "s1", sessiondb.MessageFilter{})
		for _, m := range ms {
			has := m.Reasoning != nil || m.ReasoningContent != nil || m.ReasoningDetails != nil || m.CodexReasoningItems != nil || m.CodexMessageItems != nil
			if got, want := has, m.Role == "assistant"; got != want {
				t.Errorf("%s row: reasoning stored = %v, want %v (reasoning %q, reasoning_content %q, details %s, codex %s %s)",
					m.Role, got, want, sessStr(m.Reasoning), sessStr(m.ReasoningContent), m.ReasoningDetails, m.CodexReasoningItems, m.CodexMessageItems)
			}
		}
	})

	t.Run("unknown session is not found", func(t *testing.T) {
		db := msgStore(t)
		_, err := db.AppendMessages(ctx, "ghost", []sessiondb.NewMessage{{Role: "user", Content: "x"}})
		sessWantCode(t, err, sessiondb.ENOTFOUND)
		if got := count(t, rawDB(t, db.Path()), "SELECT COUNT(*) FROM messages"); got != 0 {
			t.Fatalf("messages = %d, want 0", got)
		}
	})
}

func TestMessagesFilter(t *testing.T) {
	db := msgStore(t)
	sessCreate(t, db, sessiondb.NewSession{ID: "other", Source: "cli"})
	var ids []int64
	for i := 1; i <= 5; i++ {
		ids = append(ids, msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: fmt.Sprintf("m%d", i)}))
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "other", Role: "user", Content: fmt.Sprintf("o%d", i)})
	}
	// m2 is archived.
	if _, err := rawDB(t, db.Path()).Exec("UPDATE messages SET active = 0 WHERE id = ?", ids[1]); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		f    sessiondb.MessageFilter
		want []int64
	}{
		{"default returns active rows only", sessiondb.MessageFilter{}, []int64{ids[0], ids[2], ids[3], ids[4]}},
		{"include inactive returns every row", sessiondb.MessageFilter{IncludeInactive: true}, ids},
		{"limit takes the oldest", sessiondb.MessageFilter{Limit: 2}, []int64{ids[0], ids[2]}},
		{"latest with limit takes the newest in id order", sessiondb.MessageFilter{Latest: true, Limit: 2}, []int64{ids[3], ids[4]}},
		{"latest with limit and inactive", sessiondb.MessageFilter{Latest: true, Limit: 4, IncludeInactive: true}, []int64{ids[1], ids[2], ids[3], ids[4]}},
		{"offset skips rows", sessiondb.MessageFilter{Offset: 1, Limit: 2}, []int64{ids[2], ids[3]}},
		{"offset without a limit skips rows and keeps the rest", sessiondb.MessageFilter{Offset: 2}, []int64{ids[3], ids[4]}},
		{"after id pages forward", sessiondb.MessageFilter{AfterID: ids[2]}, []int64{ids[3], ids[4]}},
		{"after id with limit", sessiondb.MessageFilter{AfterID: ids[0], Limit: 2}, []int64{ids[2], ids[3]}},
		{"after the last id is empty", sessiondb.MessageFilter{AfterID: ids[4]}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := msgList(t, db, "s1", tc.f)
			if got := msgIDs(ms); !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Fatalf("ids = %v, want %v", got, tc.want)
			}
			for _, m := range ms {
				if got, want := m.Active, m.ID != ids[1]; got != want {
					t.Fatalf("message %d Active = %v, want %v", m.ID, got, want)
				}
			}
		})
	}

	t.Run("after id with latest is invalid", func(t *testing.T) {
		_, err := db.Messages(ctx, "s1", sessiondb.MessageFilter{AfterID: ids[0], Latest: true})
		sessWantCode(t, err, sessiondb.EINVALID)
	})
	t.Run("after id with offset is invalid", func(t *testing.T) {
		_, err := db.Messages(ctx, "s1", sessiondb.MessageFilter{AfterID: ids[0], Offset: 1})
		sessWantCode(t, err, sessiondb.EINVALID)
	})
	t.Run("unknown session is not found", func(t *testing.T) {
		_, err := db.Messages(ctx, "ghost", sessiondb.MessageFilter{})
		sessWantCode(t, err, sessiondb.ENOTFOUND)
	})
	checkIntegrity(t, rawDB(t, db.Path()))
}

func TestConversation(t *testing.T) {
	reasoningKeys := []string{"reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items", "codex_message_items", "finish_reason"}

	t.Run("a plain message has role, content and timestamp only", func(t *testing.T) {
		db := msgStore(t)
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "Hello"})
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "assistant", Content: "Hi"})
		conv := msgConv(t, db, "s1", sessiondb.ConversationOptions{})
		want := []map[string]any{
			{"role": "user", "content": "Hello", "timestamp": fixedUnix},
			{"role": "assistant", "content": "Hi", "timestamp": fixedUnix},
		}
		if !reflect.DeepEqual(conv, want) {
			t.Fatalf("conversation = %#v, want %#v", conv, want)
		}
	})

	t.Run("reasoning is never put on user or tool messages", func(t *testing.T) {
		db := msgStore(t)
		for _, role := range []string{"user", "tool"} {
			m := sessiondb.NewMessage{SessionID: "s1", Role: role, Content: role + " text",
				Reasoning: msgPtr("hidden"), ReasoningContent: msgPtr(""), FinishReason: "stop",
				ReasoningDetails:    json.RawMessage(`[{"type":"reasoning.text","text":"x"}]`),
				CodexReasoningItems: json.RawMessage(`[{"id":"rs_1"}]`),
				CodexMessageItems:   json.RawMessage(`[{"id":"msg_1"}]`)}
			if role == "tool" {
				m.ToolCallID = "call_1"
			}
			msgAppend(t, db, m)
		}
		conv := msgConv(t, db, "s1", sessiondb.ConversationOptions{})
		for _, m := range conv {
			for _, k := range reasoningKeys {
				if v, ok := m[k]; ok {
					t.Errorf("%s message has %s = %#v", m["role"], k, v)
				}
			}
		}
		if got, want := msgKeys(conv[0]), []string{"content", "role", "timestamp"}; !reflect.DeepEqual(got, want) {
			t.Errorf("user keys = %v, want %v", got, want)
		}
		if got, want := msgKeys(conv[1]), []string{"content", "role", "timestamp", "tool_call_id"}; !reflect.DeepEqual(got, want) {
			t.Errorf("tool keys = %v, want %v", got, want)
		}
	})

	t.Run("optional keys appear when they carry information", func(t *testing.T) {
		db := msgStore(t)
		id := msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "tool", Content: "42 files",
			ToolCallID: "call_1", ToolName: "terminal", EffectDisposition: "read_only",
			APIContent: "  42 files  ", DisplayKind: "tool_result", DisplayMetadata: json.RawMessage(`{"task_count":2}`),
			PlatformMessageID: "tg-99", Observed: true})
		conv := msgConv(t, db, "s1", sessiondb.ConversationOptions{IncludeRowIDs: true})
		want := map[string]any{
			"role": "tool", "content": "42 files", "timestamp": fixedUnix,
			"tool_call_id": "call_1", "tool_name": "terminal", "effect_disposition": "read_only",
			"api_content": "  42 files  ", "display_kind": "tool_result", "display_metadata": map[string]any{"task_count": float64(2)},
			"message_id": "tg-99", "observed": true, "_row_id": id,
		}
		if len(conv) != 1 || !reflect.DeepEqual(conv[0], want) {
			t.Fatalf("conversation = %#v, want [%#v]", conv, want)
		}
	})

	t.Run("leaked memory-context is stripped", func(t *testing.T) {
		db := msgStore(t)
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "assistant", Content: "<memory-context>x</memory-context>Visible answer"})
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "<memory-context>\nline 1\nline 2\n</memory-context>\n\nVisible question  "})
		conv := msgConv(t, db, "s1", sessiondb.ConversationOptions{})
		want := []map[string]any{
			{"role": "assistant", "content": "Visible answer", "timestamp": fixedUnix},
			{"role": "user", "content": "Visible question", "timestamp": fixedUnix},
		}
		if !reflect.DeepEqual(conv, want) {
			t.Fatalf("conversation = %#v, want %#v", conv, want)
		}
	})

	t.Run("assistant reasoning fields", func(t *testing.T) {
		details := `[{"type":"reasoning.summary","summary":"thought about it","format":"anthropic-claude-v1","index":0}]`
		codexR := `[{"type":"reasoning","id":"rs_1","encrypted_content":"gAAAA","summary":[]}]`
		codexM := `[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"ok"}]}]`
		for _, tc := range []struct {
			name    string
			m       sessiondb.NewMessage
			want    map[string]any // keys that must be present with these values
			wantNot []string       // keys that must be absent
		}{
			{"reasoning and reasoning_content are restored separately",
				sessiondb.NewMessage{Reasoning: msgPtr("step by step"), ReasoningContent: msgPtr("raw thinking")},
				map[string]any{"reasoning": "step by step", "reasoning_content": "raw thinking"}, nil},
			{"an empty reasoning_content is kept",
				sessiondb.NewMessage{ReasoningContent: msgPtr("")},
				map[string]any{"reasoning_content": ""}, []string{"reasoning"}},
			{"nil reasoning gives no key",
				sessiondb.NewMessage{},
				nil, []string{"reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items", "codex_message_items"}},
			{"empty reasoning gives no key",
				sessiondb.NewMessage{Reasoning: msgPtr("")},
				nil, []string{"reasoning"}},
			{"finish_reason is restored",
				sessiondb.NewMessage{FinishReason: "tool_calls"},
				map[string]any{"finish_reason": "tool_calls"}, nil},
			{"reasoning_details round-trips",
				sessiondb.NewMessage{ReasoningDetails: json.RawMessage(details)},
				map[string]any{"reasoning_details": msgDecode(t, []byte(details))}, nil},
			{"codex_reasoning_items round-trips",
				sessiondb.NewMessage{CodexReasoningItems: json.RawMessage(codexR)},
				map[string]any{"codex_reasoning_items": msgDecode(t, []byte(codexR))}, nil},
			{"codex_message_items round-trips",
				sessiondb.NewMessage{CodexMessageItems: json.RawMessage(codexM)},
				map[string]any{"codex_message_items": msgDecode(t, []byte(codexM))}, nil},
			{"tool_calls are decoded",
				sessiondb.NewMessage{ToolCalls: json.RawMessage(msgOneCall)},
				map[string]any{"tool_calls": msgDecode(t, []byte(msgOneCall))}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				db := msgStore(t)
				m := tc.m
				m.SessionID, m.Role, m.Content = "s1", "assistant", "answer"
				msgAppend(t, db, m)
				conv := msgConv(t, db, "s1", sessiondb.ConversationOptions{})
				if len(conv) != 1 {
					t.Fatalf("conversation has %d messages, want 1", len(conv))
				}
				got := conv[0]
				if got["role"] != "assistant" || got["content"] != "answer" {
					t.Fatalf("message = %#v", got)
				}
				for k, want := range tc.want {
					v, ok := got[k]
					if !ok {
						t.Errorf("key %s missing from %#v", k, got)
						continue
					}
					if !reflect.DeepEqual(v, want) {
						t.Errorf("%s = %#v, want %#v", k, v, want)
					}
				}
				for _, k := range tc.wantNot {
					if v, ok := got[k]; ok {
						t.Errorf("%s = %#v, want no key", k, v)
					}
				}
			})
		}
	})

	// chain creates root → child, root ended with compression.
	chain := func(t *testing.T, root, child []sessiondb.NewMessage) *sqlite.DB {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "root", Source: "cli"})
		for _, m := range root {
			m.SessionID = "root"
			msgAppend(t, db, m)
		}
		if err := db.EndSession(ctx, "root", sessiondb.EndReasonCompression); err != nil {
			t.Fatal(err)
		}
		sessCreate(t, db, sessiondb.NewSession{ID: "child", Source: "cli", ParentSessionID: "root"})
		for _, m := range child {
			m.SessionID = "child"
			msgAppend(t, db, m)
		}
		return db
	}
	contents := func(conv []map[string]any) []any {
		var out []any
		for _, m := range conv {
			out = append(out, m["content"])
		}
		return out
	}
	user := func(c any) sessiondb.NewMessage { return sessiondb.NewMessage{Role: "user", Content: c} }
	asst := func(c any) sessiondb.NewMessage { return sessiondb.NewMessage{Role: "assistant", Content: c} }

	t.Run("include ancestors concatenates the compression chain root first", func(t *testing.T) {
		db := chain(t,
			[]sessiondb.NewMessage{user("first prompt"), asst("first answer")},
			[]sessiondb.NewMessage{user("second prompt"), asst("second answer")})
		conv := msgConv(t, db, "child", sessiondb.ConversationOptions{IncludeAncestors: true})
		if got, want := contents(conv), []any{"first prompt", "first answer", "second prompt", "second answer"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("contents = %q, want %q", got, want)
		}
		var roles []any
		for _, m := range conv {
			roles = append(roles, m["role"])
		}
		if got, want := roles, []any{"user", "assistant", "user", "assistant"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("roles = %v, want %v", got, want)
		}
		// Without the option only the child's own messages come back.
		if got, want := contents(msgConv(t, db, "child", sessiondb.ConversationOptions{})), []any{"second prompt", "second answer"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("contents without ancestors = %q, want %q", got, want)
		}
		checkIntegrity(t, rawDB(t, db.Path()))
	})

	t.Run("include ancestors walks a multi-level chain", func(t *testing.T) {
		db := chain(t,
			[]sessiondb.NewMessage{user("p1"), asst("a1")},
			[]sessiondb.NewMessage{user("p2"), asst("a2")})
		if err := db.EndSession(ctx, "child", sessiondb.EndReasonCompression); err != nil {
			t.Fatal(err)
		}
		sessCreate(t, db, sessiondb.NewSession{ID: "tip", Source: "cli", ParentSessionID: "child"})
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "tip", Role: "user", Content: "p3"})
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "tip", Role: "assistant", Content: "a3"})
		conv := msgConv(t, db, "tip", sessiondb.ConversationOptions{IncludeAncestors: true})
		if got, want := contents(conv), []any{"p1", "a1", "p2", "a2", "p3", "a3"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("contents = %q, want %q", got, want)
		}
	})

	t.Run("include ancestors skips a parent that did not end with compression", func(t *testing.T) {
		db := MustOpen(t)
		sessCreate(t, db, sessiondb.NewSession{ID: "p", Source: "cli"})
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "p", Role: "user", Content: "parent prompt"})
		if err := db.EndSession(ctx, "p", "user_exit"); err != nil {
			t.Fatal(err)
		}
		sessCreate(t, db, sessiondb.NewSession{ID: "branch", Source: "cli", ParentSessionID: "p"})
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "branch", Role: "user", Content: "branch prompt"})
		conv := msgConv(t, db, "branch", sessiondb.ConversationOptions{IncludeAncestors: true})
		if got, want := contents(conv), []any{"branch prompt"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("contents = %q, want %q", got, want)
		}
	})

	t.Run("a replayed prompt at the start of a continuation shows once", func(t *testing.T) {
		db := chain(t,
			[]sessiondb.NewMessage{user("first prompt"), asst("first answer"), user("same prompt")},
			[]sessiondb.NewMessage{user("same prompt"), asst("final answer")})
		conv := msgConv(t, db, "child", sessiondb.ConversationOptions{IncludeAncestors: true})
		if got, want := contents(conv), []any{"first prompt", "first answer", "same prompt", "final answer"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("contents = %q, want %q", got, want)
		}
	})

	// at returns m stamped with an explicit timestamp.
	at := func(m sessiondb.NewMessage, ts float64) sessiondb.NewMessage { m.Timestamp = ts; return m }
	const t0 = 1777500000.0

	t.Run("a replayed prompt with a later timestamp still shows once", func(t *testing.T) {
		db := chain(t,
			[]sessiondb.NewMessage{at(user("first prompt"), t0), at(asst("first answer"), t0+1), at(user("same prompt"), t0+2)},
			[]sessiondb.NewMessage{at(user("same prompt"), t0+10), at(asst("final answer"), t0+11)})
		conv := msgConv(t, db, "child", sessiondb.ConversationOptions{IncludeAncestors: true})
		if got, want := contents(conv), []any{"first prompt", "first answer", "same prompt", "final answer"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("contents = %q, want %q", got, want)
		}
	})

	t.Run("the same text asked again in a new turn is kept", func(t *testing.T) {
		db := chain(t,
			[]sessiondb.NewMessage{at(user("hi"), t0), at(asst("hello"), t0+1)},
			[]sessiondb.NewMessage{at(user("hi"), t0+10), at(asst("hello again"), t0+11)})
		conv := msgConv(t, db, "child", sessiondb.ConversationOptions{IncludeAncestors: true})
		if got, want := contents(conv), []any{"hi", "hello", "hi", "hello again"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("contents = %q, want %q", got, want)
		}
	})

	t.Run("a prompt repeated within one session is kept", func(t *testing.T) {
		db := msgStore(t)
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "retry", Timestamp: t0})
		msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "retry", Timestamp: t0})
		for _, o := range []sessiondb.ConversationOptions{{}, {IncludeAncestors: true}} {
			if got, want := contents(msgConv(t, db, "s1", o)), []any{"retry", "retry"}; !reflect.DeepEqual(got, want) {
				t.Errorf("%+v: contents = %q, want %q", o, got, want)
			}
		}
	})

	t.Run("an empty tool call list is left out", func(t *testing.T) {
		db := msgStore(t)
		id := msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "assistant", Content: "no tools"})
		// as another writer (Hermes) may store it
		if _, err := rawDB(t, db.Path()).Exec("UPDATE messages SET tool_calls = '[]' WHERE id = ?", id); err != nil {
			t.Fatal(err)
		}
		conv := msgConv(t, db, "s1", sessiondb.ConversationOptions{})
		if _, ok := conv[0]["tool_calls"]; ok {
			t.Errorf("conversation message %v carries an empty tool_calls", conv[0])
		}
	})

	t.Run("the current turn is scanned back to its first user message", func(t *testing.T) {
		db := chain(t,
			[]sessiondb.NewMessage{at(user("a"), t0), at(user("b"), t0+1)},
			[]sessiondb.NewMessage{at(user("a"), t0+10), at(asst("done"), t0+11)})
		conv := msgConv(t, db, "child", sessiondb.ConversationOptions{IncludeAncestors: true})
		if got, want := contents(conv), []any{"a", "b", "done"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("contents = %q, want %q", got, want)
		}
	})

	t.Run("an assistant turn of tool calls alone ends the current turn", func(t *testing.T) {
		calls := sessiondb.NewMessage{Role: "assistant", Content: "",
			ToolCalls: json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{}"}}]`)}
		db := chain(t,
			[]sessiondb.NewMessage{at(user("run it"), t0), at(calls, t0+1)},
			[]sessiondb.NewMessage{at(user("run it"), t0+10)})
		conv := msgConv(t, db, "child", sessiondb.ConversationOptions{IncludeAncestors: true})
		if got, want := contents(conv), []any{"run it", "", "run it"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("contents = %q, want %q", got, want)
		}
	})

	t.Run("a cloned structured prompt shows once", func(t *testing.T) {
		// Compression clones the pending prompt into the child column for
		// column (same timestamp, same content); Hermes drops the clone
		// whatever the content type (its clone key is the JSON of the content).
		parts := func() []any {
			return []any{
				map[string]any{"type": "text", "text": "describe this"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/cat.png"}},
			}
		}
		db := chain(t,
			[]sessiondb.NewMessage{at(user("first prompt"), t0), at(asst("first answer"), t0+1), at(user(parts()), t0+2)},
			[]sessiondb.NewMessage{at(user(parts()), t0+2), at(asst("a cat"), t0+3)})
		var conv []map[string]any
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("Conversation panicked: %v", r)
				}
			}()
			conv, err = db.Conversation(ctx, "child", sessiondb.ConversationOptions{IncludeAncestors: true})
		}()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := contents(conv), []any{"first prompt", "first answer", parts(), "a cat"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("contents = %#v, want %#v", got, want)
		}
	})

	t.Run("unknown session is not found", func(t *testing.T) {
		db := msgStore(t)
		for _, o := range []sessiondb.ConversationOptions{{}, {IncludeAncestors: true}} {
			_, err := db.Conversation(ctx, "ghost", o)
			sessWantCode(t, err, sessiondb.ENOTFOUND)
		}
	})

	t.Run("an empty session gives an empty list", func(t *testing.T) {
		db := msgStore(t)
		conv := msgConv(t, db, "s1", sessiondb.ConversationOptions{})
		if conv == nil || len(conv) != 0 {
			t.Fatalf("conversation = %#v, want an empty non-nil list", conv)
		}
	})
}

func TestAppendMessageConcurrent(t *testing.T) {
	const workers, each = 8, 50
	db := msgStore(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: fmt.Sprintf("w%d-%03d", w, i)}); err != nil {
					errs <- fmt.Errorf("worker %d message %d: %w", w, i, err)
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	ms := msgList(t, db, "s1", sessiondb.MessageFilter{})
	if got, want := len(ms), workers*each; got != want {
		t.Fatalf("messages = %d, want %d", got, want)
	}
	seen := map[string]bool{}
	last := map[int]int{}
	for _, m := range ms {
		s, _ := m.Content.(string)
		if seen[s] {
			t.Fatalf("duplicate message %q", s)
		}
		seen[s] = true
		var w, i int
		if _, err := fmt.Sscanf(s, "w%d-%d", &w, &i); err != nil {
			t.Fatalf("unexpected content %q", s)
		}
		// Each worker's messages appear in the order it wrote them.
		if prev, ok := last[w]; ok && i <= prev {
			t.Fatalf("worker %d: message %d after %d", w, i, prev)
		}
		last[w] = i
	}
	if got, want := sessGet(t, db, "s1").MessageCount, int64(workers*each); got != want {
		t.Fatalf("message_count = %d, want %d", got, want)
	}
	checkIntegrity(t, rawDB(t, db.Path()))
}

// TestBeginIOErrorRetriedOnce: a disk I/O error of BEGIN IMMEDIATE itself
// (nothing ran yet) is retried once, as Hermes does; a second one fails
// the write with an error that names the file and what to do, and nothing
// is stored.
func TestBeginIOErrorRetriedOnce(t *testing.T) {
	db := msgStore(t)
	ioErr := sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrSHMLock}
	calls, fail := 0, 1
	sqlite.SetBeginFault(t, func() error {
		if calls++; calls <= fail {
			return ioErr
		}
		return nil
	})
	id := msgAppend(t, db, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "after one I/O error"})
	if calls != 2 {
		t.Errorf("BEGIN tried %d times, want 2", calls)
	}

	calls, fail = 0, 2
	_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "after two I/O errors"})
	if err == nil || calls != 2 {
		t.Fatalf("append after two BEGIN I/O errors: %v after %d tries; want an error after 2", err, calls)
	}
	if !strings.Contains(err.Error(), db.Path()) || !strings.Contains(err.Error(), "I/O error") || !strings.Contains(err.Error(), "doctor") {
		t.Errorf("error %q does not name the file, the cause and the next step", err)
	}
	calls, fail = 0, 0
	msgs, err := db.Messages(ctx, "s1", sessiondb.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].ID != id {
		t.Errorf("stored %d messages, want only %d", len(msgs), id)
	}
}

// TestDamagedFileHaltsWrites: once a write finds the file damaged (not one
// of its search indexes, which search repairs), the handle writes nothing
// more to it and every later write says why and what to do.
func TestDamagedFileHaltsWrites(t *testing.T) {
	db := msgStore(t)
	fault := error(sqlite3.Error{Code: sqlite3.ErrCorrupt})
	sqlite.SetBeginFault(t, func() error { return fault })
	_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "first"})
	if sessiondb.ErrorCode(err) != sessiondb.ECORRUPT {
		t.Fatalf("append on a damaged file: %v (code %s), want corrupt", err, sessiondb.ErrorCode(err))
	}
	fault = nil // the file reads fine again: the handle still refuses
	for _, write := range []func() error{
		func() error {
			_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "second"})
			return err
		},
		func() error { return db.SetTitle(ctx, "s1", "renamed") },
	} {
		err := write()
		if sessiondb.ErrorCode(err) != sessiondb.ECORRUPT || !strings.Contains(err.Error(), "earlier write") || !strings.Contains(err.Error(), "sessiondb recover") {
			t.Errorf("write after the damage: %v; want the sticky corrupt error pointing at recover", err)
		}
	}
	if msgs, err := db.Messages(ctx, "s1", sessiondb.MessageFilter{}); err != nil || len(msgs) != 0 {
		t.Errorf("stored %d messages (%v), want 0", len(msgs), err)
	}
}

// TestAppendMessagesChunkEdges: a batch is inserted in statements of at
// most 500 rows; batches of exactly one and of two full statements and one
// past them land whole, in order. A bad message is named by its place.
func TestAppendMessagesChunkEdges(t *testing.T) {
	for _, n := range []int{500, 1000, 1001} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			db := msgStore(t)
			ms := make([]sessiondb.NewMessage, n)
			for i := range ms {
				ms[i] = sessiondb.NewMessage{Role: "user", Content: fmt.Sprintf("m%d", i)}
			}
			if _, err := db.AppendMessages(ctx, "s1", ms); err != nil {
				t.Fatal(err)
			}
			got := msgList(t, db, "s1", sessiondb.MessageFilter{})
			if len(got) != n || got[0].Content != "m0" || got[n-1].Content != fmt.Sprintf("m%d", n-1) {
				t.Fatalf("%d messages stored, want %d in order", len(got), n)
			}
		})
	}
	db := msgStore(t)
	_, err := db.AppendMessages(ctx, "s1", []sessiondb.NewMessage{
		{Role: "user", Content: "fine"},
		{Role: "user", Content: sessiondb.ContentJSONPrefix + "{}"},
	})
	if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "message 2:") {
		t.Errorf("batch with a bad second message: %v, want EINVALID naming message 2", err)
	}
}
