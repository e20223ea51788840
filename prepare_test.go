package sessiondb_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

func TestPrepareMessage(t *testing.T) {
	now := func() time.Time { return time.Unix(1000, 500_000_000) }
	prep := func(m sessiondb.NewMessage) (*sessiondb.PreparedMessage, error) {
		return sessiondb.PrepareMessage(m, sessiondb.PrepareOptions{MaxBytes: 100, Now: now})
	}
	t.Run("a missing or out-of-range timestamp is the clock's", func(t *testing.T) {
		for _, ts := range []float64{0, -1, sessiondb.MaxTimestamp + 1} {
			p, err := prep(sessiondb.NewMessage{Role: "user", Content: "hi", Timestamp: ts})
			if err != nil || p.Timestamp != 1000.5 {
				t.Fatalf("timestamp %v: got %v, %v; want 1000.5", ts, p.Timestamp, err)
			}
		}
	})
	t.Run("tool calls are counted on the caller's row only", func(t *testing.T) {
		calls := json.RawMessage(`[{"id":"a"},{"id":"b"}]`)
		p, err := prep(sessiondb.NewMessage{Role: "assistant", ToolCalls: calls})
		if err != nil || p.Calls != 2 || p.CountedCalls() != 2 || *p.ToolCalls != string(calls) {
			t.Fatalf("assistant: %+v, %v", p, err)
		}
		p, _ = prep(sessiondb.NewMessage{Role: "tool", ToolCalls: calls})
		if p.CountedCalls() != 0 {
			t.Fatalf("a tool row adds %d calls, want 0", p.CountedCalls())
		}
	})
	t.Run("empty JSON values are NULL, a JSON string is unwrapped", func(t *testing.T) {
		p, err := prep(sessiondb.NewMessage{Role: "assistant", ToolCalls: json.RawMessage(`[]`),
			DisplayMetadata: json.RawMessage(`null`), ReasoningDetails: json.RawMessage(`"plain"`)})
		if err != nil || p.ToolCalls != nil || p.DisplayMetadata != nil || *p.ReasoningDetails != "plain" {
			t.Fatalf("%+v, %v", p, err)
		}
	})
	t.Run("text is scrubbed and structured content encoded", func(t *testing.T) {
		p, err := prep(sessiondb.NewMessage{Role: "user", Content: []any{map[string]any{"type": "text", "text": "x"}}, ToolName: "a\xffb"})
		if err != nil || !strings.HasPrefix(*p.Content, sessiondb.ContentJSONPrefix) || *p.ToolName != "a\uFFFDb" {
			t.Fatalf("%+v, %v", p, err)
		}
	})
	for name, m := range map[string]sessiondb.NewMessage{
		"no role":            {Content: "x"},
		"too large":          {Role: "user", Content: strings.Repeat("x", 101)},
		"invalid tool_calls": {Role: "assistant", ToolCalls: json.RawMessage(`[`)},
		"too deep":           {Role: "assistant", DisplayMetadata: json.RawMessage(strings.Repeat("[", 300) + strings.Repeat("]", 300))},
	} {
		t.Run("refused: "+name, func(t *testing.T) {
			_, err := prep(m)
			if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.HasPrefix(err.Error(), "append message") {
				t.Fatalf("err = %v, want EINVALID starting with append message", err)
			}
		})
	}
}

func TestBatchMessageKeepsReasoningOnAssistantRows(t *testing.T) {
	r := "thinking"
	if m := sessiondb.BatchMessage(sessiondb.NewMessage{Role: "user", Reasoning: &r}); m.Reasoning != nil {
		t.Fatal("a user row kept its reasoning")
	}
	if m := sessiondb.BatchMessage(sessiondb.NewMessage{Role: "assistant", Reasoning: &r}); m.Reasoning == nil {
		t.Fatal("an assistant row lost its reasoning")
	}
}

func TestReplay(t *testing.T) {
	s := func(v string) *string { return &v }
	root := []*sessiondb.Message{
		{ID: 1, Role: "user", Content: "<memory-context>x</memory-context> hello", Timestamp: 1},
		{ID: 2, Role: "assistant", Content: "hi", Timestamp: 2, Reasoning: s("r")},
		{ID: 3, Role: "tool", Content: nil, Timestamp: 3, ToolCallID: s("c1"), Reasoning: s("dropped")},
	}
	tip := []*sessiondb.Message{
		{ID: 4, Role: "user", Content: "<memory-context>x</memory-context> hello", Timestamp: 1}, // a replayed clone
		{ID: 5, Role: "user", Content: "next", Timestamp: 5},
	}
	got := sessiondb.Replay([][]*sessiondb.Message{root, tip}, true)
	if len(got) != 4 {
		t.Fatalf("replay = %v, want 4 messages (the clone kept once)", got)
	}
	if got[0]["content"] != "hello" || got[1]["reasoning"] != "r" || got[2]["content"] != "" || got[2]["reasoning"] != nil || got[3]["_row_id"] != int64(5) {
		t.Fatalf("replay = %v", got)
	}
	if got := sessiondb.Replay(nil, false); got == nil || len(got) != 0 {
		t.Fatalf("empty replay = %#v, want an empty non-nil list", got)
	}
}

func TestChildKind(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tt := range []struct {
		parent, config, parentEnd *string
		want                      string
	}{
		{nil, nil, nil, sessiondb.KindRoot},
		{s("p"), s(`{"_delegate_from":"p"}`), s("compression"), sessiondb.KindDelegate},
		{s("p"), s(`{"_branched_from":"p"}`), nil, sessiondb.KindBranch},
		{s("p"), nil, s("branched"), sessiondb.KindBranch},
		{s("p"), s("not json"), s("idle"), sessiondb.KindReset},
		{s("p"), nil, s("compression"), sessiondb.KindCompression},
		{s("p"), nil, nil, sessiondb.KindChild},
	} {
		if got := sessiondb.ChildKind(tt.parent, tt.config, tt.parentEnd); got != tt.want {
			t.Errorf("ChildKind(%v, %v, %v) = %q, want %q", tt.parent, tt.config, tt.parentEnd, got, tt.want)
		}
	}
}

func TestPreview(t *testing.T) {
	for in, want := range map[string]string{
		"  a\nb\r ":             "a b",
		strings.Repeat("é", 61): strings.Repeat("é", 60) + "...",
		sessiondb.ContentJSONPrefix + `[{"type":"image_url"}]`: "[multimodal content]",
		strings.Repeat("é", 60):                                strings.Repeat("é", 60),
		strings.Repeat("x", 59) + "\xff":                       strings.Repeat("x", 59) + "\xff", // short: kept as it is
		strings.Repeat("x", 59) + "\xffyz":                     strings.Repeat("x", 59) + "\uFFFD...",
		"\xe9\x80" + strings.Repeat("y", 60):                   "\uFFFD\uFFFD" + strings.Repeat("y", 58) + "...",
	} {
		if got := sessiondb.Preview(in); got != want {
			t.Errorf("Preview(%q) = %q, want %q", in, got, want)
		}
	}
	// Cut where string([]rune(text)[:60]) cuts, whatever the bytes: an
	// invalid byte is one character, made U+FFFD when the text is cut.
	rng := rand.New(rand.NewPCG(7, 7))
	alphabet := []string{"a", " ", "é", "项", "😀", "\xff", "\xe9", "\x80", "\n"}
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(90) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := strings.NewReplacer("\n", " ", "\r", " ").Replace(strings.TrimSpace(b.String()))
		want := text
		if r := []rune(text); len(r) > sessiondb.PreviewChars {
			want = string(r[:sessiondb.PreviewChars]) + "..."
		}
		if got := sessiondb.Preview(b.String()); got != want {
			t.Fatalf("Preview(%q) = %q, want %q", b.String(), got, want)
		}
	}
}

func TestStoredJSON(t *testing.T) {
	s := func(v string) *string { return &v }
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	for _, tt := range []struct {
		in             *string
		fallback, want string
	}{
		{nil, "", ""},
		{s(""), "[]", ""},
		{s(`[1]`), "[]", `[1]`},
		{s(`not json`), "[]", `[]`},
		{s(`not json`), "", `"not json"`},
		{s(deep), "[]", `"` + deep + `"`},
	} {
		if got := string(sessiondb.StoredJSON(tt.in, tt.fallback)); got != tt.want {
			t.Errorf("StoredJSON(%v, %q) = %q, want %q", tt.in, tt.fallback, got, tt.want)
		}
	}
}
