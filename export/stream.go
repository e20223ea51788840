package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
)

// longString is the length from which WriteJSON writes a string in pieces.
const longString = 64 << 10

// WriteJSON writes v exactly as a json.Encoder with SetEscapeHTML(false)
// and SetIndent(prefix, indent) writes it, without the final newline (no
// indentation when indent is ""). The long text fields of a
// *sessiondb.Message (content, reasoning, reasoning_content, api_content)
// and the long string values of a map[string]any (a conversation message)
// are escaped piece by piece straight to w: encoding/json would hold the
// escaped text twice (encoded, then indented), three copies of a large
// message in all.
func WriteJSON(w io.Writer, v any, prefix, indent string) error {
	small, long := withoutLongStrings(v)
	var buf bytes.Buffer
	if err := encodeTo(&buf, small, prefix, indent); err != nil {
		return err
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(long) == 0 {
		_, err := w.Write(out)
		return err
	}
	type cut struct {
		at, n int
		text  string
	}
	var cuts []cut
	for ph, text := range long {
		quoted, _ := json.Marshal(ph)
		at := bytes.Index(out, quoted)
		if at < 0 || bytes.Count(out, quoted) != 1 {
			// Cannot happen (the marker holds a NUL and a random number);
			// encode the value whole.
			buf.Reset()
			if err := encodeTo(&buf, v, prefix, indent); err != nil {
				return err
			}
			_, err := w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
			return err
		}
		cuts = append(cuts, cut{at, len(quoted), text})
	}
	slices.SortFunc(cuts, func(a, b cut) int { return a.at - b.at })
	pos := 0
	var piece bytes.Buffer // not buf: out is buf's bytes
	for _, c := range cuts {
		if _, err := w.Write(out[pos:c.at]); err != nil {
			return err
		}
		if err := writeJSONString(w, c.text, &piece); err != nil {
			return err
		}
		pos = c.at + c.n
	}
	_, err := w.Write(out[pos:])
	return err
}

func encodeTo(buf *bytes.Buffer, v any, prefix, indent string) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent(prefix, indent)
	}
	return enc.Encode(v)
}

// withoutLongStrings returns v with each long string replaced by a marker
// and the strings by marker.
func withoutLongStrings(v any) (any, map[string]string) {
	long := map[string]string{}
	nonce := rand.Uint64()
	take := func(s string) string {
		ph := fmt.Sprintf("\x00sessiondb-long-string-%x-%d\x00", nonce, len(long))
		long[ph] = s
		return ph
	}
	switch x := v.(type) {
	case *sessiondb.Message:
		c := *x
		if s, ok := c.Content.(string); ok && len(s) >= longString {
			c.Content = take(s)
		}
		for _, p := range []**string{&c.Reasoning, &c.ReasoningContent, &c.APIContent} {
			if *p != nil && len(**p) >= longString {
				ph := take(**p)
				*p = &ph
			}
		}
		return &c, long
	case map[string]any:
		var c map[string]any
		for k, val := range x {
			if s, ok := val.(string); ok && len(s) >= longString {
				if c == nil {
					c = make(map[string]any, len(x))
					for k2, v2 := range x {
						c[k2] = v2
					}
				}
				c[k] = take(s)
			}
		}
		if c != nil {
			return c, long
		}
	}
	return v, nil
}

// writeJSONString writes s as a JSON string, as encoding/json escapes it
// (without HTML escaping), a piece at a time. A piece never ends inside a
// UTF-8 sequence: it ends before a byte that starts one, or after three
// continuation bytes in a row (no sequence spans them), so each piece is
// escaped as it is within the whole, invalid bytes included.
func writeJSONString(w io.Writer, s string, buf *bytes.Buffer) error {
	if _, err := io.WriteString(w, `"`); err != nil {
		return err
	}
	for len(s) > 0 {
		n := min(len(s), longString)
		for i := 0; i < 3 && n < len(s) && !utf8.RuneStart(s[n]); i++ {
			n++
		}
		buf.Reset()
		if err := encodeTo(buf, s[:n], "", ""); err != nil {
			return err
		}
		b := buf.Bytes()
		if _, err := w.Write(b[1 : len(b)-2]); err != nil { // without the quotes and the newline
			return err
		}
		s = s[n:]
	}
	_, err := io.WriteString(w, `"`)
	return err
}
