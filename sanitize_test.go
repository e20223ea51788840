package sessiondb_test

import (
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

func TestSanitizeQuery(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		// API.md §5 examples.
		{`hello world`, `hello world`},
		{`hello AND`, `hello`},
		{`OR world`, `world`},
		{`***`, ``},
		{`deploy*`, `deploy*`},
		{`C++`, `C`},
		{`"unterminated`, `unterminated`},
		{`(problem`, `problem`},
		{`{test}`, `test`},
		{`"exact phrase"`, `"exact phrase"`},
		{`"docker networking" setup`, `"docker networking" setup`},
		{`"hello world" OR "foo bar"`, `"hello world" OR "foo bar"`},
		{`chat-send`, `"chat-send"`},
		{`docker-compose-up`, `"docker-compose-up"`},
		{`chat-send OR deploy-prod`, `"chat-send" OR "deploy-prod"`},
		{`"chat-send"`, `"chat-send"`},
		{`"my chat-send thing"`, `"my chat-send thing"`},
		{`P2.2`, `"P2.2"`},
		{`simulate.p2.test.ts`, `"simulate.p2.test.ts"`},
		{`my-app.config`, `"my-app.config"`},
		{`my-app.config.ts`, `"my-app.config.ts"`},
		{`OR hello`, `hello`},
		{`FUNCNAMEMARKER_UNIQUE`, `"FUNCNAMEMARKER_UNIQUE"`},
		// Hermes' own results for other inputs.
		{`NOT NOT x`, ``}, // Hermes: `NOT x`, an FTS5 syntax error
		{`100%完成`, `100%完成`},
		{`100% done`, `100  done`},
		{`TODO: fix`, `TODO  fix`},
		{`a-b "c-d" e-f`, `"a-b" "c-d" "e-f"`},
		{`v1.2-beta_3`, `"v1.2-beta_3"`},
		{`x or`, `x`},
		{`and`, ``},
		{`大别山项目`, `大别山项目`},
		{`ANDROID phone`, `ANDROID phone`},
		// Where Hermes hands FTS5 a syntax error, sessiondb repairs the query.
		{`a AND OR b`, `a AND b`},
		{`AND OR`, ``},
		{`foo. bar`, `"foo." bar`},
		{`-x`, `"-x"`},
	} {
		if got := sessiondb.SanitizeQuery(tt.in); got != tt.want {
			t.Errorf("SanitizeQuery(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSanitizeQueryCapsLength(t *testing.T) {
	got := sessiondb.SanitizeQuery(strings.Repeat("a", 5000))
	if len(got) != sessiondb.MaxQueryChars {
		t.Fatalf("len = %d, want %d", len(got), sessiondb.MaxQueryChars)
	}
}

func TestCJKHelpers(t *testing.T) {
	for _, s := range []string{"记忆", "ひらがな", "カタカナ", "안녕하세요", "기억", "mixed 中文"} {
		if !sessiondb.ContainsCJK(s) {
			t.Errorf("ContainsCJK(%q) = false", s)
		}
	}
	for _, s := range []string{"", "hello", "café", "🚀"} {
		if sessiondb.ContainsCJK(s) {
			t.Errorf("ContainsCJK(%q) = true", s)
		}
	}
	for s, want := range map[string]bool{"山": true, "山 docker": true, "a山b": true, "大山": false, "大山 项目": false, "": false} {
		if got := sessiondb.HasLoneCJKRun(s); got != want {
			t.Errorf("HasLoneCJKRun(%q) = %v, want %v", s, got, want)
		}
	}
	if got, want := sessiondb.QuoteTokens(`记忆系统 or 断裂"连接`), `"记忆系统" OR "断裂""连接"`; got != want {
		t.Errorf("QuoteTokens = %q, want %q", got, want)
	}
}
