//go:build sqlite_fts5 || fts5

package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testenv"
)

func ptr(s string) *string { return &s }

func mustIndex(t *testing.T, in indexInput) indexRow {
	t.Helper()
	x, err := indexMessage(in)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestIndexMessageLayout(t *testing.T) {
	x := mustIndex(t, indexInput{Role: "assistant", Content: ptr("Hello world"), ToolName: ptr("read_file"), ToolCalls: ptr("x"), Source: "cli"})
	// Columns start one unused position after the previous one; every
	// lexeme of a short row has an impact marker (tier 32: impact 1.6).
	if got, want := x.TSV, "'\x0332file' '\x0332hello' '\x0332read' '\x0332world' '\x0332x' 'file':5 'hello':1 'read':4 'world':2 'x':7"; got != want {
		t.Errorf("TSV = %s, want %s", got, want)
	}
	if x.DocLen != 5 || x.DocLenCJK != 5 || x.State != stateExact || !x.Trigram || x.TSVCJK == nil {
		t.Errorf("got %+v", x)
	}
	x = mustIndex(t, indexInput{Role: "user", Content: ptr("数据库 Agent通信"), Source: "cli"})
	if got, want := x.TSV, "'\x02库' '\x02据' '\x02数' '\x0333agent通信' '\x0333数据库' 'agent通信':2 '数据库':1"; got != want {
		t.Errorf("markers: TSV = %q, want %q", got, want)
	}
	if got, want := *x.TSVCJK, "'\x0332agent' '\x0332据库' '\x0332数据' '\x0332通信' 'agent':3 '据库':2 '数据':1 '通信':4"; got != want {
		t.Errorf("TSVCJK = %q, want %q", got, want)
	}
}

func TestIndexMessageToolRows(t *testing.T) {
	long := strings.Repeat("ab ", 5000) // 15,000 characters
	x := mustIndex(t, indexInput{Role: "tool", Content: &long, ToolName: ptr("terminal"), Source: "cli"})
	if got, want := x.DocLen, 8192/3+1+1; got != want { // 2731 whole "ab", one "a" cut at 8192, the tool name
		t.Errorf("tool row DocLen = %d, want %d", got, want)
	}
	if x.TSVCJK != nil || x.Trigram || x.DocLenCJK != 0 {
		t.Errorf("tool row in the CJK or trigram index: %+v", x)
	}
	// SQLite's substr ends at a NUL byte: encoded content indexes nothing.
	x = mustIndex(t, indexInput{Role: "tool", Content: ptr("\x00json:[\"words\"]"), Source: "cli"})
	if x.TSV != "" || x.DocLen != 0 {
		t.Errorf("tool row after NUL: %q %d", x.TSV, x.DocLen)
	}
	if got := sqliteSubstr("é中\xffx", 3); got != "é中\xff" {
		t.Errorf("sqliteSubstr = %q", got)
	}
}

func TestIndexMessageTrigram(t *testing.T) {
	for _, tc := range []struct {
		source, config string
		want           bool
	}{
		{"cli", "", true},
		{"telegram", `{"model": "x"}`, true},
		{"cron", "", false},
		{"subagent", "", false},
		{"cli", `{"_delegate_from": "parent"}`, false},
		{"cli", `{"_delegate_from": null}`, true},
		{"cli", `{"_delegate_from": "p", "_delegate_from": null}`, false}, // the first key wins
		{"cli", `not json`, true},
		{"cli", `["_delegate_from"]`, true},
	} {
		in := indexInput{Role: "user", Content: ptr("x"), Source: tc.source}
		if tc.config != "" {
			in.ModelConfig = ptr(tc.config)
		}
		if got := mustIndex(t, in).Trigram; got != tc.want {
			t.Errorf("source %s config %s: trigram %v, want %v", tc.source, tc.config, got, tc.want)
		}
	}
}

// limitTexts each break one of PostgreSQL's tsvector limits.
var limitTexts = map[string]struct {
	text  string
	state int
}{
	"long token":        {strings.Repeat("x", 3000) + " y", statePositions},
	"many repeats":      {strings.Repeat("same ", 300) + "end", statePositions},
	"past 16383":        {strings.Repeat("w ", 17000) + "last word", statePositions},
	"over 1 MiB":        {manyWords(160000), stateIncomplete},
	"invalid UTF-8":     {"caf\xe9 \xff\xfe ok \xf4\x90\x80\x80q", stateExact},
	"quotes and colons": {`it's a:1 b\c 'x':* !y <-> z`, stateExact},
}

func manyWords(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "w%x ", i*7919)
	}
	return b.String()
}

func TestIndexMessageLimits(t *testing.T) {
	for name, tc := range limitTexts {
		x := mustIndex(t, indexInput{Role: "user", Content: ptr(tc.text), Source: "cli"})
		if x.State != tc.state {
			t.Errorf("%s: state %d, want %d", name, x.State, tc.state)
		}
	}
	// unicode61 keeps the bytes of a code point past U+10FFFF in a token.
	x := mustIndex(t, indexInput{Role: "user", Content: ptr("caf\xe9 \xf4\x90\x80\x80q"), Source: "cli"})
	if got, want := x.TSV, "'\x0333\x01f4\x0190\x0180\x0180q' '\x0333caf' '\x01f4\x0190\x0180\x0180q':2 'caf':1"; got != want {
		t.Errorf("invalid UTF-8: TSV %q, want %q", got, want)
	}
}

// TestIndexMessageAccepted: PostgreSQL takes every tsvector indexMessage
// makes, without a notice-and-drop, and keeps every lexeme under the 1 MiB
// cut (only the incomplete row lost some).
func TestIndexMessageAccepted(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, testenv.Postgres(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, tc := range limitTexts {
		x := mustIndex(t, indexInput{Role: "user", Content: ptr(tc.text), Source: "cli"})
		var n, nCJK int
		if err := db.pool.QueryRow(ctx, "SELECT length($1::tsvector), length($2::tsvector)", x.TSV, x.TSVCJK).Scan(&n, &nCJK); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := strings.Count(x.TSV, " '") + 1; n != want && x.TSV != "" {
			t.Errorf("%s: PostgreSQL holds %d lexemes, we wrote %d", name, n, want)
		}
	}
}

func TestImpactTiers(t *testing.T) {
	if got := impactTier(1, 5); got != 32 {
		t.Errorf("tier of a word once in 5 tokens = %d, want 32", got)
	}
	if got := impactTier(1, refAvgDocLen); got != 20 {
		t.Errorf("tier of a word once in an average row = %d, want 20 (impact 1.0)", got)
	}
	if impactTier(1, 200) >= minImpactTier || impactTier(20, 200) < minImpactTier {
		t.Error("a word once in a long row has a marker, or one repeated 20 times has none")
	}
	for tf := 1; tf < 50; tf++ {
		for dl := tf; dl < 500; dl += 7 {
			if impact(tf+1, dl+1) < impact(tf, dl) && impact(tf, dl+1) > impact(tf, dl) {
				t.Fatalf("impact not monotonic at tf=%d dl=%d", tf, dl)
			}
		}
	}
}
