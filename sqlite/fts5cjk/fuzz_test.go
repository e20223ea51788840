//go:build sqlite_fts5 || fts5

package fts5cjk_test

import (
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzTokensShortcut: on any text, cjk_unicode61 without arguments (which
// takes the plain-CJK shortcut) emits exactly the tokens, offsets included,
// that unicode61 and the bigram splitter give ('remove_diacritics 1' spells
// out the default and turns the shortcut off).
func FuzzTokensShortcut(f *testing.F) {
	for _, s := range []string{"项目", "大别山项目。东京の天気", "a项目b", "项目\xe9\xa1\xb9\x80", "，项目，", "\xef\xbc\x8c\x80项目", "ＡＢ项目ａ", "서울 데이터베이스"} {
		f.Add(s)
	}
	f.Fuzz(checkShortcut)
}

// FuzzSnippet: for any row and query, sessiondb_snippet returns what FTS5's
// snippet() returns, or fails when it fails.
func FuzzSnippet(f *testing.F) {
	f.Add("alpha bravo. Charlie: alpha\tdelta", "", "alpha", 5)
	f.Add("项目数据库。项目\x00管理", "项目 bravo", `"项目"`, 3)
	f.Add(" lead: 東京の天気は晴れ. 東京", "x", "東京 OR 天気", 40)
	db := openDB(f, filepath.Join(f.TempDir(), "f.db"))
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(a, b, tokenize='cjk_unicode61')`); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b, q string, n int) {
		if _, err := db.Exec(`DELETE FROM t`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO t(a, b) VALUES (?, ?)`, a, b); err != nil {
			t.Skip() // text SQLite refuses to bind
		}
		for _, col := range []int{-1, 1} {
			args := []any{col, ">", "<", "…", n}
			want, werr := snippets(db, "snippet(t, ?, ?, ?, ?, ?)", q, args...)
			for _, call := range []string{"sessiondb_snippet(t, ?, ?, ?, ?, ?)", "sessiondb_snippet(t, ?, ?, ?, ?, ?, a, b)"} {
				got, gerr := snippets(db, call, q, args...)
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("MATCH %q col %d n %d: snippet() error %v, %s error %v", q, col, n, werr, call, gerr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("MATCH %q col %d n %d: %s\n got %q\nwant %q", q, col, n, call, got, want)
				}
			}
		}
	})
}
