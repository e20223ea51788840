//go:build sqlite_fts5 || fts5

package fts5cjk_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// topInst is the JSON of sessiondb_bm25's 'top' with the kept rows'
// instances.
type topInst struct {
	Size int
	IDs  []int64
	Inst []string
}

func topInstOf(t *testing.T, db *sql.DB, stmt string, args ...any) topInst {
	t.Helper()
	var x string
	if err := db.QueryRow(stmt, args...).Scan(&x); err != nil {
		t.Fatalf("%s %v: %v", stmt, args, err)
	}
	var res topInst
	if err := json.Unmarshal([]byte(x), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// checkSnippetsAt compares, for each row res names, sessiondb_snippet_at
// given the row's instances and texts with FTS5's snippet() of the row as
// a match of q, for several columns and fragment sizes; it returns how
// many it compared.
func checkSnippetsAt(t *testing.T, db *sql.DB, table, cols, q string, res topInst) int {
	t.Helper()
	if len(res.Inst) != len(res.IDs) {
		t.Fatalf("%s: %d ids, %d instance lists", q, len(res.IDs), len(res.Inst))
	}
	n := 0
	for i, id := range res.IDs {
		for _, p := range []struct{ col, tokens int }{{-1, 40}, {-1, 5}, {0, 64}, {1, 0}, {2, 200}} {
			if p.col >= strings.Count(cols, ",")+1 {
				continue
			}
			var want, got sql.NullString
			if err := db.QueryRow(fmt.Sprintf(`SELECT snippet(%[1]s, ?, '>>>', '<<<', '...', ?) FROM %[1]s WHERE %[1]s MATCH ? AND rowid = ?`, table),
				p.col, p.tokens, q, id).Scan(&want); err != nil {
				t.Fatalf("%s row %d: %v", q, id, err)
			}
			if err := db.QueryRow(fmt.Sprintf(`SELECT sessiondb_snippet_at(%[1]s, ?, '>>>', '<<<', '...', ?, ?, ?, %[2]s) FROM %[1]s WHERE rowid = ?`, table, cols),
				p.col, p.tokens, res.Inst[i], res.Size, id).Scan(&got); err != nil {
				t.Fatalf("%s row %d: sessiondb_snippet_at(%q): %v", q, id, res.Inst[i], err)
			}
			if got != want {
				t.Fatalf("%s row %d column %d, %d tokens, instances %q:\n got %q\nwant %q", q, id, p.col, p.tokens, res.Inst[i], got.String, want.String)
			}
			n++
		}
	}
	return n
}

// TestRankTopInstances: 'top' lists each kept row's instances of the
// phrase, from a pass over every row and from a term's range summary, and
// sessiondb_snippet_at makes from them, with the row's texts and no lookup
// in the index, what snippet() makes for the row as a match, for each
// tokenizer the store uses. With no memory for them, the JSON lists none
// (the caller then looks the rows up), and the same rows rank.
func TestRankTopInstances(t *testing.T) {
	for _, tok := range []string{"cjk_unicode61", "unicode61 remove_diacritics 2"} {
		t.Run(tok, func(t *testing.T) {
			db := snippetDB(t, tok, 300, 11)
			compared := 0
			for _, q := range []string{"alpha", "juliet", "项目", "数据库", `"alpha bravo"`, `"alpha alpha"`, "ecole", "東京", "서울", "ind*"} {
				var n int
				if err := db.QueryRow(`SELECT count(*) FROM t WHERE t MATCH ?`, q).Scan(&n); err != nil || n == 0 {
					continue // not a word of this tokenizer's
				}
				for _, k := range []int{1, 5, 1000} {
					stmt := fmt.Sprintf(`SELECT sessiondb_bm25(t, %d, 't', 'top') FROM t WHERE t MATCH ? LIMIT 1`, k)
					res := topInstOf(t, db, stmt, q)
					compared += checkSnippetsAt(t, db, "t", "a, b, c", q, res)
					old := fts5cjk.SetInstMax(0)
					none := topInstOf(t, db, stmt, q)
					fts5cjk.SetInstMax(old)
					if none.Inst != nil || fmt.Sprint(none.IDs) != fmt.Sprint(res.IDs) {
						t.Fatalf("%s K=%d with no memory for instances: ids %v, inst %v; want ids %v and no inst", q, k, none.IDs, none.Inst, res.IDs)
					}
				}
			}
			if compared < 2000 {
				t.Fatalf("only %d snippets compared: the data no longer exercises the instances", compared)
			}
		})
	}

	// From range summaries: the rows read range by range list theirs too.
	defer fts5cjk.SetRangeReadCost(fts5cjk.SetRangeReadCost(0))
	db := summaryDB(t)
	for i := 1; i <= 200; i++ {
		text := strings.Repeat("c d ", 1+i%3) + strings.Repeat("e ", i%7) + fmt.Sprintf("f%d. c", i%5)
		if _, err := db.Exec(`INSERT INTO t(rowid, x) VALUES (?, ?)`, i, text); err != nil {
			t.Fatal(err)
		}
	}
	summarize(t, db, 200, 8, "c", "d")
	seeks := 0
	for _, q := range []string{"c", `"c d"`, "d"} {
		for _, k := range []int{1, 5} {
			stmt := fmt.Sprintf(`SELECT sessiondb_bm25(t, %d, 't', 'topterm') FROM t WHERE t MATCH ? LIMIT 1`, k)
			res := topInstOf(t, db, stmt, q)
			var seek int
			if err := db.QueryRow(`SELECT json_extract((`+stmt+`), '$.seek')`, q).Scan(&seek); err != nil {
				t.Fatal(err)
			}
			seeks += seek
			checkSnippetsAt(t, db, "t", "x", q, res)
		}
	}
	if seeks == 0 {
		t.Fatal("no query read from a summary (the test's premise)")
	}
}

// TestSnippetAtRejectsBadInstances: instances that are not "c o ..." pairs
// of a column of the table, or no phrase size, are an error, not a guess.
func TestSnippetAtRejectsBadInstances(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "t.db"))
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(a, b, tokenize='cjk_unicode61');
		INSERT INTO t(rowid, a, b) VALUES (1, 'alpha bravo charlie', 'delta alpha')`); err != nil {
		t.Fatal(err)
	}
	at := func(inst any, size any) (string, error) {
		var s sql.NullString
		err := db.QueryRow(`SELECT sessiondb_snippet_at(t, -1, '[', ']', '~', 8, ?, ?, a, b) FROM t WHERE rowid = 1`, inst, size).Scan(&s)
		return s.String, err
	}
	if got, err := at("0 0 1 1", 1); err != nil || got != "[alpha] bravo charlie" {
		t.Fatalf("good instances: %q, %v", got, err)
	}
	for _, c := range []struct {
		inst, size any
	}{{"", 1}, {nil, 1}, {"0", 1}, {"0 0 1", 1}, {"0 x", 1}, {"2 0", 1}, {"-1 0", 1}, {" 0 0", 1}, {"0 0,", 1},
		{"0 99999999999", 1}, {"0 0", 0}, {"0 0", nil}, {"0 9", 1}} {
		if got, err := at(c.inst, c.size); err == nil {
			t.Errorf("instances %q, size %v: %q, want an error", c.inst, c.size, got)
		}
	}
	var s sql.NullString
	if err := db.QueryRow(`SELECT sessiondb_snippet_at(t, -1, '[', ']', '~', 8, '0 0', 1, a) FROM t WHERE rowid = 1`).Scan(&s); err == nil {
		t.Errorf("one text for two columns: %q, want an error", s.String)
	}
}
