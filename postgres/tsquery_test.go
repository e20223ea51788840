//go:build sqlite_fts5 || fts5

package postgres

import (
	"strings"
	"testing"
)

// TestTSQuery pins what each FTS5 query means in tsquery.
func TestTSQuery(t *testing.T) {
	word, cjk, err := tokenizers()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		q, word, relaxed string
		onCJK            string // "" when the same as on the word index
	}{
		{q: "docker", word: "('docker')"},
		{q: "Docker Compose", word: "(('docker') & ('compose'))"},
		{q: `"docker compose"`, word: "('docker' <-> 'compose')", relaxed: "('docker' & 'compose')"},
		{q: "dep*", word: "('dep':*)"},
		{q: `"docker comp"*`, word: "('docker' <-> 'comp':*)", relaxed: "('docker' & 'comp':*)"},
		{q: "a OR b", word: "(('a') | ('b'))"},
		{q: "a b OR c", word: "((('a') & ('b')) | ('c'))"},
		{q: "a NOT b", word: "(('a') & !('b'))"},
		{q: `a NOT "b c"`, word: "(('a') & !('b' <-> 'c'))", relaxed: "('a')"},
		// NOT binds tighter than AND, AND tighter than OR.
		{q: "a AND b NOT c OR d", word: "((('a') & (('b') & !('c'))) | ('d'))"},
		{q: "a b NOT c d", word: "((('a') & ('b')) & !(('c') & ('d')))"},
		{q: `"chat-send"`, word: "('chat' <-> 'send')", relaxed: "('chat' & 'send')"},
		{q: `"my-app.config.ts"`, word: "('my' <-> 'app' <-> 'config' <-> 'ts')", relaxed: "('my' & 'app' & 'config' & 'ts')"},
		{q: "Café", word: "('cafe')"},
		{q: "and", word: "('and')"}, // lower case: a word
		{q: `"it''s"`, word: "('it' <-> 's')", relaxed: "('it' & 's')"},
		{q: `"a\b"`, word: "('a' <-> 'b')", relaxed: "('a' & 'b')"},
		{q: `"项目"`, word: "('项目')", onCJK: "('项目')"},
		{q: `"大别山项目"`, word: "('大别山项目')", onCJK: "('大别' <-> '别山' <-> '山项' <-> '项目')"},
		{q: `"修改youer服务端"`, word: "('修改youer服务端')", onCJK: "('修改' <-> 'youer' <-> '服务' <-> '务端')"},
		// A phrase without tokens matches nothing (FTS5's EOF node).
		{q: `"🚀"`, word: "EOF"},
		{q: `docker "🚀"`, word: "('docker')"}, // adjacent phrases drop an empty one
		{q: `"🚀" docker "-" swarm`, word: "(('docker') & ('swarm'))"},
		{q: `"🚀" "-"`, word: "EOF"},
		{q: `docker AND "🚀"`, word: "EOF"},
		{q: `docker OR "🚀"`, word: "('docker')"},
		{q: `docker NOT "🚀"`, word: "('docker')"},
		{q: `"🚀" NOT docker`, word: "EOF"},
		// What FTS5 rejects finds nothing.
		{q: "OR docker", word: "ERR"},
		{q: "docker NOT", word: "ERR"},
		{q: `"open`, word: "ERR"},
		{q: "a+b", word: "ERR"},
	}
	for _, tc := range tests {
		for _, ix := range []string{"word", "cjk"} {
			tok, want := word, tc.word
			if ix == "cjk" {
				tok = cjk
				if tc.onCJK == "" {
					continue
				}
				want = tc.onCJK
			}
			root, _, ok, err := parseFTS(tc.q, tok)
			if err != nil {
				t.Fatal(err)
			}
			got := "ERR"
			if ok {
				if root = simplify(root); root == eof {
					got = "EOF"
				} else {
					got = tsquery(root, false)
					relaxed := tc.relaxed
					if relaxed == "" || ix == "cjk" {
						relaxed = strings.ReplaceAll(got, "<->", "&")
					}
					if r := tsquery(root, true); r != relaxed {
						t.Errorf("%s %q: relaxed %s, want %s", ix, tc.q, r, relaxed)
					}
				}
			}
			if got != want {
				t.Errorf("%s %q: %s, want %s", ix, tc.q, got, want)
			}
		}
	}
}

// TestTSQueryEscapes: lexemes holding tsquery syntax are quoted, and long
// ones are cut as the documents' are.
func TestTSQueryEscapes(t *testing.T) {
	word, _, err := tokenizers()
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 3000)
	root, _, ok, err := parseFTS(long+"*", word)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got, want := tsquery(root, false), "('"+strings.Repeat("x", maxLexemeBytes)+"':*)"; got != want {
		t.Errorf("long prefix: %.40s…, want %.40s…", got, want)
	}
	if exactOnLossy(root) {
		t.Error("a cut lexeme is exact on lossy rows")
	}
	var b strings.Builder
	writeQuoted(&b, `a'b\c`)
	if got, want := b.String(), `'a''b\\c'`; got != want {
		t.Errorf("writeQuoted = %s, want %s", got, want)
	}
}
