//go:build sqlite_fts5 || fts5

package postgres

import (
	"database/sql"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSnippetOfSubstringMatchesSQLite: the snippet of the substring
// routes (likeSnippet) is what the SQLite backend's
// substr(content, max(1, instr(content, term) - 40), 120) gives, without
// PostgreSQL: on texts of one- to four-byte characters with the term
// before, at and after the 41st character, near the end, absent, after a
// NUL byte, and on texts longer than 120 characters from the start, valid
// UTF-8 or not.
func TestSnippetOfSubstringMatchesSQLite(t *testing.T) {
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmt, err := db.Prepare(`SELECT substr(?1, max(1, instr(?1, ?2) - 40), 120)`)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	pieces := []string{"a", "b", " ", "é", "项", "🚀", "ü", "."}
	type tcase struct{ content, term string }
	var cases []tcase
	for _, before := range []int{0, 1, 39, 40, 41, 42, 80, 200} {
		for _, p := range []string{"a", "é", "项", "🚀"} {
			text := strings.Repeat(p, before) + "needle" + strings.Repeat(p, 150)
			cases = append(cases, tcase{text, "needle"}, tcase{text, "needlx"}, tcase{text[:len(text)-len(p)*140], "needle"})
		}
	}
	cases = append(cases, tcase{"", "x"}, tcase{"\x00json:[needle]", "needle"}, tcase{"abc\x00def needle", "needle"},
		tcase{strings.Repeat("项", 50) + "\x00" + strings.Repeat("项", 200) + "needle", "needle"},
		tcase{strings.Repeat("é", 60) + "needle" + strings.Repeat("é", 30) + "\x00tail", "needle"})
	// Stored text may hold any bytes (text.go): a lead byte and the
	// continuation bytes after it are a character, valid or not. Only the
	// term is valid text; no text starts with a continuation byte (there
	// instr counts otherwise, and Go's index is byte-exact), and none has
	// two in a row after an ASCII byte (SQLite 3.54's substr counts them
	// as one character, likeSnippet as two).
	invalid := []string{"\xc0\x80", "\xc1\xbf", "\xff", "\xe9", ".\x80", "\xf0\x9f"}
	rng := rand.New(rand.NewSource(7))
	for i := range 600 {
		var ps []string
		for range rng.Intn(300) {
			if i%2 == 1 && rng.Intn(8) == 0 {
				ps = append(ps, invalid[rng.Intn(len(invalid))])
			} else {
				ps = append(ps, pieces[rng.Intn(len(pieces))])
			}
		}
		text := "a" + strings.Join(ps, "")
		term := "a"
		if len(ps) > 0 {
			j := rng.Intn(len(ps))
			term = strings.Join(ps[j:min(len(ps), j+1+rng.Intn(3))], "")
		}
		if !utf8.ValidString(term) {
			term = "项"
		}
		cases = append(cases, tcase{text, term})
	}
	failed := 0
	for _, c := range cases {
		if failed == 5 {
			t.Fatalf("and more")
		}
		var want string
		if err := stmt.QueryRow(c.content, c.term).Scan(&want); err != nil {
			t.Fatal(err)
		}
		got := likeSnippet(&c.content, c.term)
		if got == nil || *got != want {
			g := "<nil>"
			if got != nil {
				g = fmt.Sprintf("%q", *got)
			}
			t.Errorf("likeSnippet(%q, %q) = %s, SQLite %q", c.content, c.term, g, want)
			failed++
		}
	}
	if got := likeSnippet(nil, "x"); got != nil {
		t.Errorf("likeSnippet(nil) = %q, want nil", *got)
	}
}
