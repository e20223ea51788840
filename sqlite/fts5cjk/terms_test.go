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

// TestPrefixTerms checks sessiondb_prefix_terms against fts5vocab on a
// table of many small segments (pages of 64 bytes: doclists spanning
// pages, terms starting mid-page), through inserts, deletes, rewrites,
// incremental merges that trim their input segments, and an optimize: for
// every prefix of the vocabulary (and a few that match nothing) the terms
// it returns are, in order and without repeats, every term fts5vocab
// lists, plus only terms that match no row.
func TestPrefixTerms(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "t.db"))
	db.SetMaxOpenConns(1)
	for _, stmt := range []string{
		`PRAGMA synchronous = OFF`,
		`CREATE VIRTUAL TABLE t USING fts5(a, b)`,
		`INSERT INTO t(t, rank) VALUES ('pgsz', 64)`,
		`INSERT INTO t(t, rank) VALUES ('automerge', 0)`,
		`INSERT INTO t(t, rank) VALUES ('crisismerge', 64)`,
		`CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, t, row)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(stmt, err)
		}
	}
	rng := rand.New(rand.NewSource(5))
	stems := strings.Fields("doc dock docker dockerfile docs do d res result results rest restart résumé " +
		"项目 项 数据 z zz zzz a ab abc abcd abcde")
	word := func() string {
		s := stems[rng.Intn(len(stems))]
		if rng.Intn(3) == 0 {
			s += fmt.Sprint(rng.Intn(40)) // a tail of rare terms
		}
		return s
	}
	text := func() string {
		var w []string
		for range 1 + rng.Intn(12) {
			w = append(w, word())
		}
		return strings.Join(w, " ")
	}
	prefixes := []string{"", "a", "ab", "abcde", "abcdef", "d", "do", "doc", "dock", "docker", "dockerfile",
		"dockerfile0", "r", "re", "res", "rest", "result", "ré", "résumé", "项", "项目", "数", "z", "zz", "zzzz",
		"0", "1", "b", "e", "ÿ"}
	check := func(stage string) {
		t.Helper()
		vocab := vocabTerms(t, db)
		for _, p := range prefixes {
			var got []string
			if js := prefixTerms(t, db, p, 1000); js == nil {
				t.Fatalf("%s: prefix %q: NULL, want the terms", stage, p)
			} else if err := json.Unmarshal([]byte(*js), &got); err != nil {
				t.Fatalf("%s: prefix %q: %v", stage, p, err)
			}
			if !slices.IsSortedFunc(got, strings.Compare) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Errorf("%s: prefix %q: %q not in order without repeats", stage, p, got)
			}
			var want []string
			for _, v := range vocab {
				if strings.HasPrefix(v, p) {
					want = append(want, v)
				}
			}
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Fatalf("%s: prefix %q: %q missing from %q", stage, p, w, got)
				}
			}
			for _, g := range got {
				if !strings.HasPrefix(g, p) {
					t.Fatalf("%s: prefix %q: %q lacks the prefix", stage, p, g)
				}
				if !slices.Contains(want, g) {
					if n := count(t, db, `SELECT count(*) FROM t WHERE t MATCH ?`, `"`+g+`"`); n != 0 {
						t.Fatalf("%s: prefix %q: %q matches %d rows but fts5vocab lacks it", stage, p, g, n)
					}
				}
			}
		}
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(q, err)
		}
	}
	for i := 1; i <= 600; i++ {
		exec(`INSERT INTO t(rowid, a, b) VALUES (?, ?, ?)`, i, text(), text())
	}
	check("inserted")
	segs := count(t, db, `SELECT count(DISTINCT segid) FROM t_idx`)
	if segs < 20 {
		t.Fatalf("%d segments: the test wants many", segs)
	}
	for i := 1; i <= 600; i += 3 {
		exec(`DELETE FROM t WHERE rowid = ?`, i)
	}
	for i := 2; i <= 600; i += 7 {
		exec(`UPDATE t SET a = ? WHERE rowid = ?`, text(), i)
	}
	check("deleted and rewritten")
	// Incremental merges in small steps leave input segments trimmed
	// (their first pages deleted, their %_idx rows kept).
	trimmed := 0
	for i := range 40 {
		exec(`INSERT INTO t(t, rank) VALUES ('merge', 3)`)
		if i%4 == 0 {
			check("merging")
		}
		trimmed = max(trimmed, count(t, db, `SELECT count(*) FROM t_idx WHERE NOT EXISTS (SELECT 1 FROM t_data WHERE id = (segid << 37) + (pgno >> 1))`))
	}
	if trimmed == 0 {
		t.Error("no merge left a trimmed segment: the test misses that case")
	}
	exec(`INSERT INTO t(t) VALUES ('optimize')`)
	check("optimized")
	if n := count(t, db, `SELECT count(DISTINCT segid) FROM t_idx`); n != 1 {
		t.Errorf("%d segments after optimize, want 1", n)
	}
	// More terms than asked for: NULL.
	if js := prefixTerms(t, db, "d", 2); js != nil {
		t.Errorf("prefix d, at most 2: %s, want NULL", *js)
	}
	if js := prefixTerms(t, db, "nothing", 0); js == nil || *js != "[]" {
		t.Errorf("prefix nothing: %v, want []", js)
	}
}

func prefixTerms(t *testing.T, db *sql.DB, prefix string, max int) *string {
	t.Helper()
	var js sql.NullString
	if err := db.QueryRow(`SELECT sessiondb_prefix_terms('t', ?, ?)`, prefix, max).Scan(&js); err != nil {
		t.Fatal(err)
	}
	if !js.Valid {
		return nil
	}
	return &js.String
}

func vocabTerms(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT term FROM temp.v ORDER BY term`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
