package postgres

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
)

// COPY in PostgreSQL's text format, for the bulk paths of a first copy:
// pgx's CopyFrom sends the binary format, for which it parses every
// tsvector's text form back into lexemes and positions on the client; the
// text format hands the server that text as it is (its tsvector input is
// C), and costs the client little more than the escaping below.

// appendCopyRow appends one row of values, as the bulk paths hold them
// (nil, string, *string, int64, int, float64, bool, []byte; text already
// escaped by toPG), in COPY's text format: tab-separated, \N for NULL,
// ending with a newline.
func appendCopyRow(buf []byte, row []any) ([]byte, error) {
	for i, v := range row {
		if i > 0 {
			buf = append(buf, '\t')
		}
		switch x := v.(type) {
		case nil:
			buf = append(buf, `\N`...)
		case string:
			buf = appendCopyText(buf, x)
		case *string:
			if x == nil {
				buf = append(buf, `\N`...)
			} else {
				buf = appendCopyText(buf, *x)
			}
		case int64:
			buf = strconv.AppendInt(buf, x, 10)
		case int:
			buf = strconv.AppendInt(buf, int64(x), 10)
		case float64:
			switch {
			case math.IsNaN(x):
				buf = append(buf, "NaN"...)
			case math.IsInf(x, 1):
				buf = append(buf, "Infinity"...)
			case math.IsInf(x, -1):
				buf = append(buf, "-Infinity"...)
			default:
				buf = strconv.AppendFloat(buf, x, 'g', -1, 64)
			}
		case bool:
			if x {
				buf = append(buf, 't')
			} else {
				buf = append(buf, 'f')
			}
		case []byte:
			if x == nil {
				buf = append(buf, `\N`...)
				break
			}
			// bytea's hex form, its backslash escaped for COPY.
			buf = append(buf, `\\x`...)
			buf = hex.AppendEncode(buf, x)
		default:
			return nil, fmt.Errorf("copy: a value of type %T", v)
		}
	}
	return append(buf, '\n'), nil
}

// appendCopyText appends s escaped for COPY's text format: backslash,
// newline, carriage return and tab. (NUL never occurs: toPG escaped it.)
func appendCopyText(buf []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		var esc byte
		switch s[i] {
		case '\\':
			esc = '\\'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		case '\t':
			esc = 't'
		default:
			continue
		}
		buf = append(buf, s[start:i]...)
		buf = append(buf, '\\', esc)
		start = i + 1
	}
	return append(buf, s[start:]...)
}
