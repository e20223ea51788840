//go:build sqlite_fts5 || fts5

package postgres

import (
	"database/sql"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// TestSnippetMatchesFTS5 checks the Go evaluation of a query on a row's
// tokens (qnode.matches) and the Go snippet (makeSnippet) against FTS5
// itself, without PostgreSQL: random rows of three columns, built to reach
// every fragment rule (sentences ending in '.' or ':' before white space,
// repeated and adjacent terms, CJK runs, empty and NULL columns, texts far
// longer than a fragment), go into an FTS5 table with the same tokenizer,
// and for each query every row must match in Go exactly when FTS5 matches
// it, with snippet(t, -1, '>>>', '<<<', '...', 40) as its snippet.
func TestSnippetMatchesFTS5(t *testing.T) {
	word, cjk, err := tokenizers()
	if err != nil {
		t.Fatal(err)
	}
	queries := []string{"alpha", "juliet", "项目", "数据库", `"alpha bravo"`, `"bravo alpha"`, "ind*", "al*", `"alpha b"*`,
		"alpha OR juliet", "alpha NOT bravo", "golf hotel", "ecole", "东京", "서울", "nomatch", `"alpha alpha"`,
		"lima AND 项目", "bravo charlie OR kilo", "delta NOT echo NOT golf", `"alpha bravo charlie"`, "大别山项目",
		// phrases of different lengths starting on one token
		`"alpha bravo charlie" OR alpha`, `alpha OR "alpha bravo charlie"`, `"alpha bravo charlie delta" OR "alpha bravo" OR alpha`}
	for _, ix := range []struct {
		name string
		tok  *fts5cjk.Tokenizer
	}{{"unicode61", word}, {"cjk_unicode61", cjk}} {
		t.Run(ix.name, func(t *testing.T) {
			db, texts := snippetTable(t, ix.name, 300, 7)
			compared, matched := compareSnippets(t, db, ix.tok, texts, queries)
			if compared < 500 || matched < 500 {
				t.Fatalf("only %d snippets compared: the data no longer exercises the code", compared)
			}
		})
	}
}

// compareSnippets compares, for each query, the Go match and snippet of
// every row of texts (by rowid) with FTS5's on table t of db, and returns
// how many snippets it compared and how many rows matched.
func compareSnippets(t *testing.T, db *sql.DB, tok *fts5cjk.Tokenizer, texts map[int][]*string, queries []string) (compared, matched int) {
	t.Helper()
	compared, matched = 0, 0
	for _, q := range queries {
		want := map[int]string{}
		rows, err := db.Query(`SELECT rowid, snippet(t, -1, '>>>', '<<<', '...', 40) FROM t WHERE t MATCH ?`, q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int
			var s sql.NullString
			if err := rows.Scan(&id, &s); err != nil {
				t.Fatal(err)
			}
			want[id] = "NULL"
			if s.Valid {
				want[id] = fmt.Sprintf("%q", s.String)
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		root, phrases, ok, err := parseFTS(q, tok)
		if err != nil || !ok {
			t.Fatalf("%s: parse: %v %v", q, ok, err)
		}
		root = simplify(root)
		for id, cols := range texts {
			rd, err := tokenizeRow(tok, cols)
			if err != nil {
				t.Fatal(err)
			}
			d := rd.doc()
			w, found := want[id]
			if got := root != eof && root.matches(d); got != found {
				t.Errorf("%s row %d: matches %v, FTS5 %v", q, id, got, found)
				continue
			}
			if !found {
				continue
			}
			matched++
			got := "NULL"
			if s := makeSnippet(rd, instances(root, d), len(phrases)); s != nil {
				got = fmt.Sprintf("%q", *s)
			}
			if got != w {
				t.Errorf("%s row %d:\n got %s\nwant %s", q, id, got, w)
			}
			compared++
		}
	}
	return compared, matched
}

// snippetTable fills FTS5 table t (columns a, b, c; tokenizer tok) with n
// random rows and returns them by rowid (nil for NULL).
func snippetTable(t *testing.T, tok string, n int, seed int64) (*sql.DB, map[int][]*string) {
	t.Helper()
	db := fts5Table(t, tok)
	rng := rand.New(rand.NewSource(seed))
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima 项目 数据库 大别山项目 東京の天気 서울 Ünïcode ÉCOLE")
	seps := []string{" ", " ", " ", "  ", ". ", ": ", ".\n", ":\t", "\r\n", ".\r", ".", ", ", " - ", "。", "!", ":", "\x00", ""}
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
		if rng.Intn(4) == 0 {
			b.WriteString(seps[rng.Intn(len(seps))]) // text after the last token
		}
		return b.String()
	}
	out := map[int][]*string{}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		cols := make([]*string, 3)
		args := []any{i, nil, nil, nil}
		for j := range cols {
			var s string
			switch r := rng.Intn(10); {
			case r == 0:
				continue // NULL
			case r == 1:
				s = ""
			case r < 4:
				s = text(1 + rng.Intn(6))
			case r < 9:
				s = text(1 + rng.Intn(60))
			default:
				s = text(100 + rng.Intn(400))
			}
			cols[j] = &s
			args[j+1] = s
		}
		out[i] = cols
		if _, err := tx.Exec(`INSERT INTO t(rowid, a, b, c) VALUES (?, ?, ?, ?)`, args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return db, out
}

// fts5Table opens a new database holding FTS5 table t (columns a, b, c;
// tokenizer tok).
func fts5Table(t *testing.T, tok string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(a, b, c, tokenize='` + tok + `')`); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSnippetSameStart: phrases of different lengths starting on the same
// token are taken in the query's phrase order, which decides where FTS5
// centres the fragment of a long column without sentences (the end of the
// last instance counts).
func TestSnippetSameStart(t *testing.T) {
	word, _, err := tokenizers()
	if err != nil {
		t.Fatal(err)
	}
	db := fts5Table(t, "unicode61")
	texts := map[int][]*string{}
	for id, at := range []int{20, 30, 45, 60} {
		var ws []string
		for i := range 90 {
			ws = append(ws, fmt.Sprintf("w%d", i))
		}
		copy(ws[at:], []string{"alpha", "bravo", "charlie", "delta", "echo"})
		a := strings.Join(ws, " ")
		texts[id+1] = []*string{&a, nil, nil}
		if _, err := db.Exec(`INSERT INTO t(rowid, a) VALUES (?, ?)`, id+1, a); err != nil {
			t.Fatal(err)
		}
	}
	// Overlapping instances joined into one run longer than a fragment,
	// from the first token or from inside the column.
	for id, text := range []string{strings.Repeat("alpha ", 60), "x y " + strings.Repeat("alpha ", 60)} {
		texts[id+5] = []*string{&text, nil, nil}
		if _, err := db.Exec(`INSERT INTO t(rowid, a) VALUES (?, ?)`, id+5, text); err != nil {
			t.Fatal(err)
		}
	}
	queries := []string{`"alpha bravo charlie delta echo" OR alpha`, `alpha OR "alpha bravo charlie delta echo"`,
		`"alpha bravo charlie delta" OR "alpha bravo" OR alpha`, `alpha OR "alpha bravo" OR "alpha bravo charlie delta"`,
		`"alpha alpha"`, `"alpha alpha alpha"`}
	if compared, _ := compareSnippets(t, db, word, texts, queries); compared != 28 {
		t.Fatalf("%d snippets compared, want 28", compared)
	}
}
