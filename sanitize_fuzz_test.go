package sessiondb_test

import (
	"database/sql"
	"strings"
	"testing"
	"unicode/utf8"

	_ "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb"
)

// FuzzSanitizeQuery: SanitizeQuery never panics, returns valid UTF-8 of at
// most MaxQueryChars*4 bytes with no repeat left to collapse, and what it
// returns is a query FTS5 parses (for CJK input, after QuoteTokens as the
// CJK routes use it).
func FuzzSanitizeQuery(f *testing.F) {
	for _, q := range []string{
		`hello world`, `hello AND`, `OR world`, `***`, `deploy*`, `C++`, `"unterminated`, `(problem`, `{test}`,
		`"exact phrase"`, `"docker networking" setup`, `"hello world" OR "foo bar"`, `chat-send`, `docker-compose-up`,
		`chat-send OR deploy-prod`, `"chat-send"`, `"my chat-send thing"`, `P2.2`, `simulate.p2.test.ts`,
		`my-app.config.ts`, `a AND OR b`, `AND OR`, `NOT NOT x`, `x OR NOT y`, `NOT`, `FUNCNAMEMARKER_UNIQUE`,
		`100%完成`, `100% done`, `TODO: fix`, `"a" "b`, `"" x`, `a-b "c-d" e-f`, `v1.2-beta_3`, `NEAR(a b)`,
		`col:x`, `-x`, `^x`, `x*y`, `"x"*`, `a "b""c" d`, `'`, `\`, `%`, `_`, `"%"`, `记忆断裂`, `项目 docker`,
		`"大别山项目"`, `"项目`, `项目 AND`, `OR 项目 NOT`, `안녕`, `こんにちは 世界`, `🚀`, `👨‍👩‍👧 docker`,
		// FTS5 stops reading a query at NUL and separates words only at
		// space, tab, CR and LF; Go's side treats \v, \f and \x1c-\x1f as
		// spaces too. A NUL also collides with the phrase placeholders.
		"\x00", "a\x00b", "\x00Q0\x00 \"x\"", "\x00Q1\x00", "\xed\xa0\x80", "\xff\xfe", "a\x1cb", "a\vb", "a\fb", "a\x1fb OR c", "\u00a0NOT x",
		"x\u2028OR", "\u3000项目", "a\u0301-b", strings.Repeat("a-", 1100), strings.Repeat("\xff", 3000),
		strings.Repeat("𝐀-𝐀 ", 600), strings.Repeat(`"a`, 1500),
		// Found by fuzzing: FTS5 reads an uppercase operator before * as the
		// operator, so a prefix search for it is a syntax error.
		`0 OR*`, `a AND* b`, `a NOT* b`,
		// Repeats collapse (CollapseRepeats).
		strings.Repeat("a* OR ", 340) + "a*", `x NOT b NOT b c c`, `a b OR a b`, `项目 or 项目`, `"a" "a"* a`,
	} {
		f.Add(q)
	}
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		f.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one connection: every :memory: connection is its own database
	f.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(content)`); err != nil {
		f.Logf("no FTS5 (build with -tags sqlite_fts5): only the string checks run: %v", err)
		db = nil
	} else if _, err := db.Exec(`INSERT INTO t(content) VALUES ('hello world'), ('chat send'), ('项目 docker')`); err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, in string) {
		out := sessiondb.SanitizeQuery(in)
		if !utf8.ValidString(out) {
			t.Fatalf("SanitizeQuery(%q) = %q: not valid UTF-8", in, out)
		}
		if n := len(out); n > sessiondb.MaxQueryChars*4 {
			t.Fatalf("SanitizeQuery(%q): %d bytes, want at most %d", in, n, sessiondb.MaxQueryChars*4)
		}
		if again := sessiondb.CollapseRepeats(out); again != out {
			t.Fatalf("SanitizeQuery(%q) = %q still holds repeats: %q", in, out, again)
		}
		if db == nil || out == "" {
			return
		}
		match := out
		if sessiondb.ContainsCJK(out) {
			match = sessiondb.QuoteTokens(strings.Trim(out, `"`))
			if match == "" {
				return
			}
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM t WHERE t MATCH ?`, match).Scan(&n); err != nil {
			t.Fatalf("SanitizeQuery(%q) = %q: MATCH %q: %v", in, out, match, err)
		}
	})
}
