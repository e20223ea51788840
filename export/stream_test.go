package export_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
)

// TestWriteJSONEqualsEncoder: WriteJSON writes what json.Encoder writes,
// byte for byte, for messages and conversation maps whose long strings
// hold every kind of character encoding/json escapes, and invalid UTF-8,
// at and around the places where it cuts them.
func TestWriteJSONEqualsEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"a", "é", "项", "🚀", "\u2028", "\u2029", "<", ">", "&", "\"", "\\", "\n", "\t", "\x00", "\x1f", "\x7f",
		"\xff", "\xe4\xb8", "\xed\xa0\x80", "\x80\x80\x80\x80", "\xf0\x9f\x98"}
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	for i := range 20 {
		n := 64<<10 - 8 + rng.IntN(16)
		if i%4 == 0 {
			n = 200<<10 + rng.IntN(64)
		}
		long := text(n)
		msg := &sessiondb.Message{ID: 3, SessionID: "s", Role: "tool", Content: long, Reasoning: ptr(text(70 << 10)),
			APIContent: ptr("short"), ToolCalls: json.RawMessage(`[{"id":"c1"}]`)}
		conv := map[string]any{"role": "user", "content": long, "reasoning_content": text(65 << 10), "timestamp": 1.5}
		for _, v := range []any{msg, conv} {
			for _, ind := range [][2]string{{"", ""}, {"    ", "  "}} {
				var want bytes.Buffer
				enc := json.NewEncoder(&want)
				enc.SetEscapeHTML(false)
				if ind[1] != "" {
					enc.SetIndent(ind[0], ind[1])
				}
				if err := enc.Encode(v); err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				if err := export.WriteJSON(&got, v, ind[0], ind[1]); err != nil {
					t.Fatal(err)
				}
				if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got.Bytes(), w) {
					at := 0
					for at < min(len(w), got.Len()) && w[at] == got.Bytes()[at] {
						at++
					}
					t.Fatalf("case %d (%T, indent %q): differs at byte %d of %d: got %q, want %q", i, v, ind[1], at, len(w),
						got.Bytes()[max(at-20, 0):min(at+20, got.Len())], w[max(at-20, 0):min(at+20, len(w))])
				}
			}
		}
	}
}
