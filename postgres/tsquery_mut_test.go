//go:build sqlite_fts5 || fts5

package postgres

import (
	"reflect"
	"testing"
)

// TestTSQueryMatches pins the Go evaluation of a query tree on a row's
// tokens (what rows with lossy positions are checked with), as FTS5
// matches: phrases within one column at consecutive positions, a prefix
// on the last token only, AND, OR and NOT, and the phrases whose instances
// a matching row reports (live).
func TestTSQueryMatches(t *testing.T) {
	word, _, err := tokenizers()
	if err != nil {
		t.Fatal(err)
	}
	parse := func(q string) *qnode {
		t.Helper()
		root, _, ok, err := parseFTS(q, word)
		if err != nil || !ok {
			t.Fatalf("parse %q: %v %v", q, ok, err)
		}
		return simplify(root)
	}
	for _, tc := range []struct {
		q    string
		d    doc
		want bool
		live []string // the phrases reported, when it matches
	}{
		{"docker", doc{{"x", "docker"}}, true, []string{"docker"}},
		{"docker", doc{{"dockers"}}, false, nil},
		{"docker", doc{{"x"}, {"docker"}}, true, []string{"docker"}}, // any column
		{`"docker swarm"`, doc{{"docker", "swarm"}}, true, []string{"docker swarm"}},
		{`"docker swarm"`, doc{{"x", "docker", "swarm"}}, true, []string{"docker swarm"}}, // at the end
		{`"docker swarm"`, doc{{"swarm", "docker"}}, false, nil},
		{`"docker swarm"`, doc{{"docker", "x", "swarm"}}, false, nil},
		{`"docker swarm"`, doc{{"docker"}, {"swarm"}}, false, nil}, // not across columns
		{`"docker swarm"`, doc{{"docker"}}, false, nil},
		{"dock*", doc{{"docker"}}, true, []string{"dock"}},
		{"dock*", doc{{"xdock"}}, false, nil},
		{`"docker sw"*`, doc{{"docker", "swarm"}}, true, []string{"docker sw"}},
		{`"dock swarm"*`, doc{{"docker", "swarm"}}, false, nil}, // only the last token is a prefix
		{"a b", doc{{"b"}, {"a"}}, true, []string{"a", "b"}},
		{"a b", doc{{"a"}}, false, nil},
		{"a b", doc{{"b"}}, false, nil},
		{"a OR b", doc{{"b"}}, true, []string{"b"}},
		{"a OR b", doc{{"a", "b"}}, true, []string{"a", "b"}},
		{"a OR b", doc{{"c"}}, false, nil},
		{"a NOT b", doc{{"a"}}, true, []string{"a"}},
		{"a NOT b", doc{{"a", "b"}}, false, nil},
		{"a NOT b", doc{{"b"}}, false, nil},
		{"a b OR c", doc{{"c", "a"}}, true, []string{"c"}}, // the AND does not match: its phrases are not live
		{"a b OR c", doc{{"c", "a", "b"}}, true, []string{"a", "b", "c"}},
	} {
		root := parse(tc.q)
		if got := root.matches(tc.d); got != tc.want {
			t.Errorf("%q on %v: matches %v, want %v", tc.q, tc.d, got, tc.want)
			continue
		}
		if !tc.want {
			continue
		}
		var live []string
		for _, p := range root.live(tc.d, nil) {
			live = append(live, p.text)
		}
		if !reflect.DeepEqual(live, tc.live) {
			t.Errorf("%q on %v: live phrases %q, want %q", tc.q, tc.d, live, tc.live)
		}
	}
	for _, tc := range []struct {
		q    string
		col  []string
		want []int
	}{
		{"docker", []string{"docker", "x", "docker"}, []int{0, 2}},
		{`"a b"`, []string{"a", "b", "a", "b"}, []int{0, 2}},
		{`"a b"`, []string{"a", "a", "b"}, []int{1}},
		{`"a b"*`, []string{"a", "bc", "a"}, []int{0}},
		{"a", nil, nil},
	} {
		if got := parse(tc.q).at(tc.col); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q at %q: %v, want %v", tc.q, tc.col, got, tc.want)
		}
	}
}

// TestTSQueryQuotes: a doubled quote inside a phrase is one quote
// character (which the tokenizer then drops), not the end of the phrase.
func TestTSQueryQuotes(t *testing.T) {
	word, _, err := tokenizers()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ q, want string }{
		{`"a""b"`, "('a' <-> 'b')"},
		{`"a"""`, "('a')"},
		{`"""a"`, "('a')"},
		{`"a" "b"`, "(('a') & ('b'))"},
	} {
		root, phrases, ok, err := parseFTS(tc.q, word)
		if err != nil || !ok {
			t.Errorf("%q: %v %v", tc.q, ok, err)
			continue
		}
		if got := tsquery(simplify(root), false); got != tc.want {
			t.Errorf("%q: %s, want %s (%d phrases)", tc.q, got, tc.want, len(phrases))
		}
	}
}

// TestTSQueryBarewords: every character from U+0080 up is a bareword
// character, as in FTS5 (sqlite3Fts5IsBareword: any byte from 0x80), even
// one the tokenizer then drops as a separator.
func TestTSQueryBarewords(t *testing.T) {
	word, _, err := tokenizers()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ q, want string }{
		{"a\u0080b", "('a' <-> 'b')"},
		{"\u0080a", "('a')"},
		{"a\u007fb", "ERR"}, // DEL is not a bareword character
		{"a\x1ab", "('a' <-> 'b')"},
		{"a_b", "('a' <-> 'b')"},
		// each ASCII range at both ends, and the character outside each end
		{"09", "('09')"}, {"a/", "ERR"}, {"a:", "ERR"},
		{"az", "('az')"}, {"a`", "ERR"}, {"a{", "ERR"},
		{"AZ", "('az')"}, {"a@", "ERR"}, {"a[", "ERR"},
		{"0a9z", "('0a9z')"}, {"9", "('9')"}, {"Z", "('z')"}, {"z", "('z')"}, {"A", "('a')"}, {"0", "('0')"},
	} {
		root, _, ok, err := parseFTS(tc.q, word)
		if err != nil {
			t.Fatal(err)
		}
		got := "ERR"
		if ok {
			got = tsquery(simplify(root), false)
		}
		if got != tc.want {
			t.Errorf("%+q: %s, want %s", tc.q, got, tc.want)
		}
	}
}
