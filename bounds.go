package sessiondb

import (
	"fmt"
	"math"
)

// MaxJSONDepth is the deepest nesting of JSON arrays and objects a stored
// JSON value may have: structured content, tool_calls, reasoning_details,
// codex_reasoning_items, codex_message_items and display_metadata of a
// message, model_config and origin_json of a session. A write with a
// deeper value is refused (EINVALID); a deeper value already in the file
// (written by another program) is read back as its raw text.
//
// Hermes reads these values with Python's json module, whose recursion
// fails near 1,000 levels minus the depth of the calling stack (at 600
// levels from a stack 400 frames deep), and code walking a value with two
// frames per level, such as copy.deepcopy, fails between 400 and 512.
// 256 keeps every such reader working, and is far beyond what real
// messages hold (tool calls nest 3 levels, reasoning items 2, in the Hermes
// fixtures).
const MaxJSONDepth = 256

// DefaultMaxMessageBytes is the default largest message a store accepts:
// the bytes of all its text fields together (content, tool calls,
// reasoning, …). Hermes keeps whole tool outputs and inline images (a
// base64 data URL, 4/3 of the image: 27 MiB for the 20 MB images providers
// take at most). 32 MiB holds those, and far more text than a context
// window (8 million tokens or so against one or two million), while
// bounding what one write costs: Hermes' full-text triggers index user and
// assistant text whole in three indexes, which takes SQLite from 4 to 45
// times the text's size in memory (45 for text of all-distinct words, such
// as base64; BENCHMARKS.md, "Memory").
const DefaultMaxMessageBytes = 32 << 20

// JSONDepth returns the deepest nesting of arrays and objects in the JSON
// text s: 0 for a scalar, 1 for [1,2], 2 for [[1]]. Brackets inside JSON
// strings do not count. s need not be valid JSON: for any text it counts
// the brackets a JSON parser would descend into before failing.
func JSONDepth[T ~string | ~[]byte](s T) int { return jsonDepth(s, math.MaxInt) }

// TooDeep reports whether the JSON text s nests deeper than MaxJSONDepth.
// It stops reading at the first bracket past the limit.
func TooDeep[T ~string | ~[]byte](s T) bool { return jsonDepth(s, MaxJSONDepth) > MaxJSONDepth }

// jsonDepth is JSONDepth, stopping at the first bracket deeper than stop.
func jsonDepth[T ~string | ~[]byte](s T, stop int) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > deepest {
				if deepest = depth; deepest > stop {
					return deepest
				}
			}
		case c == ']' || c == '}':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

// CheckJSONDepth returns an EINVALID error naming field when the JSON text
// s nests deeper than MaxJSONDepth, and nil otherwise.
func CheckJSONDepth[T ~string | ~[]byte](field string, s T) error {
	if !TooDeep(s) {
		return nil
	}
	return Errorf(EINVALID, "%s nests %d levels of JSON arrays and objects; at most %d are accepted (Hermes' Python json cannot read much deeper)",
		field, JSONDepth(s), MaxJSONDepth)
}

// FormatBytes renders a byte count for messages: "512 bytes", "3.5 MiB".
func FormatBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return trimUnit(float64(n)/(1<<10), "KiB")
	case n < 1<<30:
		return trimUnit(float64(n)/(1<<20), "MiB")
	}
	return trimUnit(float64(n)/(1<<30), "GiB")
}

func trimUnit(v float64, unit string) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), unit)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}
