//go:build sqlite_fts5 || fts5

package fts5cjk_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// snippetDB fills table t (columns a, b, c; tokenizer tok) with n random
// rows built to exercise snippet(): sentences ending in '.' or ':' before
// spaces, tabs and newlines, repeated and adjacent terms, CJK runs, NUL
// bytes, empty and NULL columns, texts far longer than a fragment.
func snippetDB(t *testing.T, tok string, n int, seed int64) *sql.DB {
	t.Helper()
	db := openDB(t, filepath.Join(t.TempDir(), "t.db"))
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(a, b, c, tokenize='` + tok + `')`); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima 项目 数据库 大别山项目 東京の天気 서울 Ünïcode ÉCOLE")
	seps := []string{" ", " ", " ", "  ", ". ", ": ", ".\n", ":\t", "\r\n", ".\r", ".", ", ", " - ", "\x00", "。", "!"}
	text := func(n int) string {
		var b strings.Builder
		if rng.Intn(5) == 0 {
			b.WriteString(seps[rng.Intn(len(seps))]) // text before the first token
		}
		for i := range n {
			if i > 0 {
				b.WriteString(seps[rng.Intn(len(seps))])
			}
			b.WriteString(words[int(float64(len(words))*rng.Float64()*rng.Float64())])
		}
		return b.String()
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		cols := make([]any, 3)
		for j := range cols {
			switch r := rng.Intn(10); {
			case r == 0:
				cols[j] = nil
			case r == 1:
				cols[j] = ""
			case r < 4:
				cols[j] = text(1 + rng.Intn(6))
			case r < 9:
				cols[j] = text(1 + rng.Intn(60))
			default:
				cols[j] = text(100 + rng.Intn(400))
			}
		}
		if _, err := tx.Exec(`INSERT INTO t(rowid, a, b, c) VALUES (?, ?, ?, ?)`, i, cols[0], cols[1], cols[2]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return db
}

// snippets returns every matching row's value of call, in rowid order, or
// the error.
func snippets(db *sql.DB, call, q string, args ...any) ([]string, error) {
	rows, err := db.Query(`SELECT rowid, `+call+` FROM t WHERE t MATCH ? ORDER BY rowid`, append(args, q)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id int64
		var s sql.NullString
		if err := rows.Scan(&id, &s); err != nil {
			return nil, err
		}
		v := "NULL"
		if s.Valid {
			v = fmt.Sprintf("%q", s.String)
		}
		out = append(out, fmt.Sprintf("%d:%s", id, v))
	}
	return out, rows.Err()
}

// TestSnippetEqualsFTS5 checks sessiondb_snippet, with and without the
// column texts as arguments, against FTS5's own snippet() on every
// matching row, for each tokenizer the store uses,
// every column choice, fragment sizes from none to past the cap of 64, and
// queries of one or several phrases, prefixes, column filters and NEAR.
func TestSnippetEqualsFTS5(t *testing.T) {
	queries := []string{"alpha", "juliet", "项目", "数据库", `"alpha bravo"`, `"bravo alpha"`, "ind*", "al*",
		"b:golf", "{a c}:hotel", "alpha OR juliet", "alpha NOT bravo", "golf hotel", "NEAR(alpha kilo, 3)",
		"ecole", "东京", "서울", "nomatch", `"alpha alpha"`, "lima AND 项目"}
	type params struct {
		col                   int
		open, close, ellipsis any
		tokens                int
	}
	var ps []params
	for _, col := range []int{-1, 0, 2, 5} {
		for _, n := range []int{-3, 0, 1, 5, 40, 64, 200} {
			ps = append(ps, params{col, ">>>", "<<<", "...", n})
		}
	}
	ps = append(ps, params{-1, nil, "", nil, 7}, params{-1, "[", "]", "…", 3}, params{0, "\x00x", "y", "\x00", 4})
	for _, tok := range []string{"cjk_unicode61", "unicode61 remove_diacritics 2", "trigram"} {
		t.Run(tok, func(t *testing.T) {
			db := snippetDB(t, tok, 300, 5)
			compared := 0
			for _, q := range queries {
				for _, p := range ps {
					args := []any{p.col, p.open, p.close, p.ellipsis, p.tokens}
					want, werr := snippets(db, "snippet(t, ?, ?, ?, ?, ?)", q, args...)
					for _, call := range []string{"sessiondb_snippet(t, ?, ?, ?, ?, ?)", "sessiondb_snippet(t, ?, ?, ?, ?, ?, a, b, c)"} {
						got, gerr := snippets(db, call, q, args...)
						if (werr == nil) != (gerr == nil) {
							t.Fatalf("MATCH %s %v: snippet() error %v, %s error %v", q, p, werr, call, gerr)
						}
						if werr != nil {
							continue // e.g. a column filter the tokenizer cannot take
						}
						if len(want) != len(got) {
							t.Fatalf("MATCH %s %v: %s: %d rows, want %d", q, p, call, len(got), len(want))
						}
						for i := range want {
							if got[i] != want[i] {
								t.Fatalf("MATCH %s %v: %s\n got %s\nwant %s", q, p, call, got[i], want[i])
							}
						}
						compared += len(want)
					}
				}
			}
			if _, err := snippets(db, "sessiondb_snippet(t, -1, '', '', '', 9, a, b)", "alpha"); err == nil {
				t.Fatal("sessiondb_snippet with two texts for three columns: no error")
			}
			if compared < 1000 {
				t.Fatalf("only %d snippets compared: the data no longer exercises the function", compared)
			}
		})
	}
}

// TestSnippetManyInstances: a row holding a phrase thousands of times, in
// sentences, gets the fragment snippet() gives (sessiondb_snippet scores
// each instance from the instances near it, not from every one, so such a
// row costs n log n instead of n squared).
func TestSnippetManyInstances(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "t.db"))
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(a, b, c, tokenize='cjk_unicode61')`); err != nil {
		t.Fatal(err)
	}
	var a, b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&a, "alpha bravo %d. charlie alpha: ", i)
		fmt.Fprintf(&b, "delta %d alpha echo ", i%7)
	}
	if _, err := db.Exec(`INSERT INTO t(rowid, a, b, c) VALUES (1, ?, ?, 'alpha'), (2, 'bravo', ?, NULL)`, a.String(), b.String(), b.String()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"alpha", "alpha OR bravo", `"charlie alpha"`, "echo delta", "alp*"} {
		for _, col := range []int{-1, 1} {
			want, err := snippets(db, "snippet(t, ?, '>>>', '<<<', '...', 40)", q, col)
			if err != nil {
				t.Fatal(err)
			}
			got, err := snippets(db, "sessiondb_snippet(t, ?, '>>>', '<<<', '...', 40)", q, col)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("MATCH %s, column %d:\n got %v\nwant %v", q, col, got, want)
			}
		}
	}
}

// TestSnippetOneEqualsPrefix: sessiondb_snippet_one on the terms of a
// prefix, ORed, returns on every row what snippet() returns for the prefix
// itself (every instance of any term counts as one phrase's), where
// sessiondb_snippet, scoring each term as a phrase of its own, differs.
func TestSnippetOneEqualsPrefix(t *testing.T) {
	db := snippetDB(t, "unicode61 remove_diacritics 2", 400, 8)
	compared, differ := 0, 0
	for _, p := range []string{"e", "ec", "a", "l", "i", "u"} {
		var js string
		if err := db.QueryRow(`SELECT sessiondb_prefix_terms('t', ?, 100)`, p).Scan(&js); err != nil {
			t.Fatal(err)
		}
		var terms []string
		if err := json.Unmarshal([]byte(js), &terms); err != nil || len(terms) == 0 {
			t.Fatalf("prefix %s: terms %s (%v)", p, js, err)
		}
		ored := `"` + strings.Join(terms, `" OR "`) + `"`
		for _, n := range []int{3, 10, 40} {
			want, err := snippets(db, "snippet(t, -1, '[', ']', '…', ?)", p+"*", n)
			if err != nil {
				t.Fatal(err)
			}
			got, err := snippets(db, "sessiondb_snippet_one(t, -1, '[', ']', '…', ?)", ored, n)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s* as %s, %d tokens:\n got %.300q\nwant %.300q", p, ored, n, got, want)
			}
			plain, err := snippets(db, "sessiondb_snippet(t, -1, '[', ']', '…', ?)", ored, n)
			if err != nil {
				t.Fatal(err)
			}
			for i := range plain {
				if plain[i] != want[i] {
					differ++
				}
			}
			compared += len(want)
		}
	}
	if compared < 500 || differ == 0 {
		t.Fatalf("%d snippets compared, %d differ as phrases of their own: the data no longer exercises the function", compared, differ)
	}
}
