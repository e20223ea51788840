package sessiondb_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
)

func TestScrubText(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"valid text is kept", "héllo 你好 🚀", "héllo 你好 🚀"},
		{"NUL is valid UTF-8 and kept", "a\x00b", "a\x00b"},
		{"lone high surrogate becomes one U+FFFD", "a\xed\xa0\x80b", "a\uFFFDb"},
		{"lone low surrogate becomes one U+FFFD", "a\xed\xbf\xbfb", "a\uFFFDb"},
		{"two surrogates become two U+FFFD", "\xed\xa0\x80\xed\xb0\x80", "\uFFFD\uFFFD"},
		{"stray bytes each become U+FFFD", "a\xff\xfeb", "a\uFFFD\uFFFDb"},
		{"truncated sequence", "ab\xe4\xbd", "ab\uFFFD\uFFFD"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := sessiondb.ScrubText(tt.in); got != tt.want {
				t.Fatalf("ScrubText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzScrubText(f *testing.F) {
	f.Add("a\xed\xa0\x80b")
	f.Add("héllo")
	f.Fuzz(func(t *testing.T, s string) {
		got := sessiondb.ScrubText(s)
		if !utf8.ValidString(got) {
			t.Fatalf("ScrubText(%q) = %q is not valid UTF-8", s, got)
		}
		if utf8.ValidString(s) && got != s {
			t.Fatalf("valid input changed: %q -> %q", s, got)
		}
	})
}

func TestContentRoundTrip(t *testing.T) {
	parts := []any{map[string]any{"type": "text", "text": "look"}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:"}}}
	for _, tt := range []struct {
		name string
		in   any
	}{
		{"nil", nil},
		{"string", "plain text"},
		{"string that looks like JSON stays a string", `[1,2]`},
		{"parts list", parts},
		{"raw JSON", json.RawMessage(`{"a":1}`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			enc, err := sessiondb.EncodeContent(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got := sessiondb.DecodeContent(enc)
			want := tt.in
			if raw, ok := tt.in.(json.RawMessage); ok {
				json.Unmarshal(raw, &want)
			}
			if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
				t.Fatalf("round trip = %s, want %s", g, w)
			}
		})
	}
	t.Run("structured content carries the Hermes prefix", func(t *testing.T) {
		enc, _ := sessiondb.EncodeContent(parts)
		if got, want := (*enc)[:len(sessiondb.ContentJSONPrefix)], "\x00json:"; got != want {
			t.Fatalf("prefix = %q, want %q", got, want)
		}
	})
	t.Run("invalid raw JSON is refused", func(t *testing.T) {
		_, err := sessiondb.EncodeContent(json.RawMessage(`{`))
		if got, want := sessiondb.ErrorCode(err), sessiondb.EINVALID; got != want {
			t.Fatalf("code = %q, want %q", got, want)
		}
	})
	t.Run("prefixed text that is not JSON decodes as text", func(t *testing.T) {
		s := "\x00json:{broken"
		if got := sessiondb.DecodeContent(&s); got != s {
			t.Fatalf("got %v", got)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestContentText(t *testing.T) {
	for _, tt := range []struct {
		in   any
		want string
	}{
		{nil, ""},
		{"x", "x"},
		{[]any{map[string]any{"type": "text", "text": "a"}, "b", map[string]any{"type": "text", "text": "c"}}, "a c"},
		{[]any{map[string]any{"type": "image_url"}}, "[multimodal content]"},
		{map[string]any{"k": 1}, ""},
	} {
		if got := sessiondb.ContentText(tt.in); got != tt.want {
			t.Errorf("ContentText(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestToolCallCount(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{``, 0}, {`null`, 0}, {`[]`, 0}, {`""`, 0}, {`{}`, 0},
		{`[{"id":"a"}]`, 1}, {`[{"id":"a"},{"id":"b"}]`, 2},
		{`{"id":"a"}`, 1}, {`"call"`, 1}, {`not json`, 1},
		// Any other JSON value counts when Python would call it true.
		{`0`, 0}, {`2.5`, 1}, {`false`, 0}, {`true`, 1},
	} {
		if got := sessiondb.ToolCallCount(json.RawMessage(tt.in)); got != tt.want {
			t.Errorf("ToolCallCount(%s) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestNewSessionID(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 30, 45, 0, time.Local)
	id := sessiondb.NewSessionID(at)
	if !regexp.MustCompile(`^20260501_123045_[0-9a-f]{6}$`).MatchString(id) {
		t.Fatalf("id = %q, want YYYYMMDD_HHMMSS_xxxxxx", id)
	}
	if id == sessiondb.NewSessionID(at) {
		t.Fatal("two ids for the same second are equal")
	}
}

func TestErrorCode(t *testing.T) {
	if got := sessiondb.ErrorCode(nil); got != "" {
		t.Errorf("nil: %q", got)
	}
	err := sessiondb.Errorf(sessiondb.ENOTFOUND, "session %q not found", "x")
	if got, want := err.Error(), `session "x" not found`; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	wrapped := &json.SyntaxError{}
	if got := sessiondb.ErrorCode(wrapped); got != sessiondb.EINTERNAL {
		t.Errorf("foreign error: %q", got)
	}
}

func TestScrubTextTruncatedSurrogate(t *testing.T) {
	// An encoded surrogate (ED A0..BF 80..BF) is one U+FFFD; cut short at
	// the end of the text, each byte is one.
	for _, tt := range []struct{ in, want string }{
		{"a\xed\xa0\x80b", "a\ufffdb"},
		{"a\xed\xa0", "a\ufffd\ufffd"},
		{"\xed\xa0", "\ufffd\ufffd"},
		{"a\xed", "a\ufffd"},
	} {
		if got := sessiondb.ScrubText(tt.in); got != tt.want {
			t.Errorf("ScrubText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEncodeContentUnencodable(t *testing.T) {
	_, err := sessiondb.EncodeContent(map[string]any{"f": func() {}})
	if sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Errorf("EncodeContent of a value JSON cannot hold: %v, want EINVALID", err)
	}
}
