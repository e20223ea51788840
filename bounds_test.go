package sessiondb_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestJSONDepth(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{``, 0},
		{`"text"`, 0},
		{`[1,2]`, 1},
		{`{"a":[{"b":1}]}`, 3},
		{`["[[[[", "\"[[["]`, 1},
		{`[[]] [[[ ]]]`, 3},
		{`]]] [`, 1},
		{`not json [[ at all`, 2},
		{nested(10000), 10000},
	} {
		if got := sessiondb.JSONDepth(tt.in); got != tt.want {
			t.Errorf("JSONDepth(%.40q) = %d, want %d", tt.in, got, tt.want)
		}
		if got, want := sessiondb.TooDeep([]byte(tt.in)), tt.want > sessiondb.MaxJSONDepth; got != want {
			t.Errorf("TooDeep(%.40q) = %v, want %v", tt.in, got, want)
		}
	}
}

func TestCheckJSONDepth(t *testing.T) {
	if err := sessiondb.CheckJSONDepth("tool_calls", nested(sessiondb.MaxJSONDepth)); err != nil {
		t.Fatalf("depth %d: %v", sessiondb.MaxJSONDepth, err)
	}
	err := sessiondb.CheckJSONDepth("tool_calls", nested(sessiondb.MaxJSONDepth+1))
	if sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Fatalf("depth %d: %v, want EINVALID", sessiondb.MaxJSONDepth+1, err)
	}
	for _, want := range []string{"tool_calls", "257 levels", "at most 256"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestEncodeContentRefusesDeepJSON(t *testing.T) {
	var deep any = "leaf"
	for range sessiondb.MaxJSONDepth + 1 {
		deep = []any{deep}
	}
	for _, in := range []any{json.RawMessage(nested(10000)), deep} {
		_, err := sessiondb.EncodeContent(in)
		if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "structured message content") {
			t.Errorf("EncodeContent(%T nested past the limit) = %v, want EINVALID naming the content", in, err)
		}
	}
	if _, err := sessiondb.EncodeContent(json.RawMessage(nested(sessiondb.MaxJSONDepth))); err != nil {
		t.Errorf("EncodeContent at the limit: %v", err)
	}
}

func TestDecodeContentDeepIsRawText(t *testing.T) {
	stored := sessiondb.ContentJSONPrefix + nested(5000)
	if got, ok := sessiondb.DecodeContent(&stored).(string); !ok || got != stored {
		t.Fatalf("DecodeContent(deep) = %.40q, want the stored text", got)
	}
	shallow := sessiondb.ContentJSONPrefix + `[{"type":"text","text":"hi"}]`
	if _, ok := sessiondb.DecodeContent(&shallow).([]any); !ok {
		t.Fatal("DecodeContent(parts list) is not decoded")
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{10: "10 bytes", 1536: "1.5 KiB", 64 << 20: "64 MiB", 3 << 30: "3 GiB"} {
		if got := sessiondb.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
