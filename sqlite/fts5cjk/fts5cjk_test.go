//go:build sqlite_fts5 || fts5

package fts5cjk_test

import (
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// The tokenizer is only present on connections opened after Register.
func TestMain(m *testing.M) {
	fts5cjk.Register()
	os.Exit(m.Run())
}

func tok(text string, start, end int) fts5cjk.Token {
	return fts5cjk.Token{Text: text, Start: start, End: end}
}

func TestTokens(t *testing.T) {
	tests := []struct {
		name string
		text string
		args []string
		want []fts5cjk.Token
	}{
		{"chinese bigrams", "大别山项目", nil,
			[]fts5cjk.Token{tok("大别", 0, 6), tok("别山", 3, 9), tok("山项", 6, 12), tok("项目", 9, 15)}},
		{"lone CJK char", "我", nil, []fts5cjk.Token{tok("我", 0, 3)}},
		{"mixed CJK and latin in one unicode61 token", "修改youer服务端", nil,
			[]fts5cjk.Token{tok("修改", 0, 6), tok("youer", 6, 11), tok("服务", 11, 17), tok("务端", 14, 20)}},
		{"lone CJK chars between latin and digits", "2024年3月 a我b", nil,
			[]fts5cjk.Token{tok("2024", 0, 4), tok("年", 4, 7), tok("3", 7, 8), tok("月", 8, 11),
				tok("a", 12, 13), tok("我", 13, 16), tok("b", 16, 17)}},
		{"hiragana", "こんにちは", nil,
			[]fts5cjk.Token{tok("こん", 0, 6), tok("んに", 3, 9), tok("にち", 6, 12), tok("ちは", 9, 15)}},
		{"katakana with prolonged sound mark", "コーヒー", nil,
			[]fts5cjk.Token{tok("コー", 0, 6), tok("ーヒ", 3, 9), tok("ヒー", 6, 12)}},
		{"kanji and kana", "東京の天気", nil,
			[]fts5cjk.Token{tok("東京", 0, 6), tok("京の", 3, 9), tok("の天", 6, 12), tok("天気", 9, 15)}},
		{"hangul", "안녕하세요", nil,
			[]fts5cjk.Token{tok("안녕", 0, 6), tok("녕하", 3, 9), tok("하세", 6, 12), tok("세요", 9, 15)}},
		{"latin passthrough with case folding", "Hello World", nil,
			[]fts5cjk.Token{tok("hello", 0, 5), tok("world", 6, 11)}},
		{"emoji is a separator", "deploy 🚀 now", nil,
			[]fts5cjk.Token{tok("deploy", 0, 6), tok("now", 12, 15)}},
		{"combining acute removed by default", "cafe\u0301", nil,
			[]fts5cjk.Token{tok("cafe", 0, 6)}},
		{"precomposed diacritic removed by default", "café", nil,
			[]fts5cjk.Token{tok("cafe", 0, 5)}},
		{"fullwidth comma separates", "你好，世界", nil,
			[]fts5cjk.Token{tok("你好", 0, 6), tok("世界", 9, 15)}},
		{"ideographic space and wave dash separate", "x\u3000y〜z", nil,
			[]fts5cjk.Token{tok("x", 0, 1), tok("y", 4, 5), tok("z", 8, 9)}},
		// Sub-token offsets are positions in the folded token added to the
		// token start: É (2 bytes) folds to e (1 byte), so 项目 is reported
		// one byte early, exactly as Hermes does it.
		{"folding shortens token", "É项目", nil,
			[]fts5cjk.Token{tok("e", 0, 1), tok("项目", 1, 7)}},
		// Ⱥ (2 bytes) folds to ⱥ (3 bytes): the end is clamped to the
		// parent token's end.
		{"folding lengthens token, end clamped", "Ⱥ项目", nil,
			[]fts5cjk.Token{tok("ⱥ", 0, 3), tok("项目", 3, 8)}},
		{"arguments forwarded: remove_diacritics 0", "café Café", []string{"remove_diacritics", "0"},
			[]fts5cjk.Token{tok("café", 0, 5), tok("café", 6, 11)}},
		{"arguments forwarded: separators", "a项目b", []string{"separators", "b"},
			[]fts5cjk.Token{tok("a", 0, 1), tok("项目", 1, 7)}},
		{"empty text", "", nil, []fts5cjk.Token{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fts5cjk.Tokens(tc.text, tc.args...)
			if err != nil {
				t.Fatalf("Tokens(%q, %q): %v", tc.text, tc.args, err)
			}
			if want := tc.want; !reflect.DeepEqual(got, want) {
				t.Errorf("Tokens(%q, %q)\n got %+v\nwant %+v", tc.text, tc.args, got, want)
			}
		})
	}
}

func TestTokensBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"no_such_option", "1"},
		{"remove_diacritics"},      // missing value
		{"remove_diacritics", "7"}, // invalid value
	} {
		if got, err := fts5cjk.Tokens("x", args...); err == nil {
			t.Errorf("Tokens(x, %q) = %+v, want an error", args, got)
		}
	}
}

func TestTokensConcurrent(t *testing.T) {
	want, err := fts5cjk.Tokens("大别山项目 Hello")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := fts5cjk.Tokens("大别山项目 Hello")
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("concurrent Tokens = %+v, %v; want %+v", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func openDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s %v: %v", query, args, err)
	}
	return n
}

func TestFTS5Table(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "t.db"))
	for _, q := range []string{
		`CREATE VIRTUAL TABLE t USING fts5(c, tokenize='cjk_unicode61')`,
		`INSERT INTO t(rowid, c) VALUES (1, '我们在大别山项目里部署 Docker')`,
		`INSERT INTO t(rowid, c) VALUES (2, '東京の天気は晴れ')`,
		`INSERT INTO t(rowid, c) VALUES (3, '서울 날씨 Hello')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tests := []struct {
		match string
		want  int // matching rowid, 0 for none
	}{
		{`"项目"`, 1},
		{`"别山项"`, 1}, // phrase of the bigrams 别山 山项
		{`"大别山项目"`, 1},
		{`"山别"`, 0},
		{`docker`, 1},
		{`"天気"`, 2},
		{`"東京の天気"`, 2},
		{`"서울"`, 3},
		{`hello`, 3},
	}
	for _, tc := range tests {
		var got int
		err := db.QueryRow(`SELECT rowid FROM t WHERE t MATCH ?`, tc.match).Scan(&got)
		if err == sql.ErrNoRows {
			got, err = 0, nil
		}
		if err != nil {
			t.Errorf("MATCH %s: %v", tc.match, err)
			continue
		}
		if want := tc.want; got != want {
			t.Errorf("MATCH %s: rowid %d, want %d", tc.match, got, want)
		}
	}
	if _, err := db.Exec(`INSERT INTO t(t) VALUES('integrity-check')`); err != nil {
		t.Errorf("integrity-check: %v", err)
	}
}

// hermesFixture copies Hermes' v23 fixture (written by Hermes with its own
// cjk_unicode61 tokenizer) into a temporary directory and returns the copy.
func hermesFixture(t *testing.T) string {
	t.Helper()
	src := testenv.Shared("fixtures", "hermes-v23.db")
	in, err := os.Open(src)
	if err != nil {
		t.Fatalf("Hermes fixture missing (expected at /work/shared/fixtures relative to the package): %v", err)
	}
	defer in.Close()
	dst := filepath.Join(t.TempDir(), "hermes-v23.db")
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestHermesIndexCompatibility proves that our tokens equal Hermes': with
// rank=1, integrity-check re-tokenizes every row of the content view and
// compares the result with the index Hermes wrote.
func TestHermesIndexCompatibility(t *testing.T) {
	db := openDB(t, hermesFixture(t))
	if got, want := count(t, db, `SELECT count(*) FROM messages_fts_cjk`), 518; got != want {
		t.Fatalf("messages_fts_cjk has %d rows, want %d", got, want)
	}
	if _, err := db.Exec(`INSERT INTO messages_fts_cjk(messages_fts_cjk, rank) VALUES('integrity-check', 1)`); err != nil {
		t.Fatalf("integrity-check against Hermes' index: %v", err)
	}
	// A CJK phrase query finds exactly the rows containing the substring.
	for _, q := range []string{"项目", "大别山项目", "東京の天気", "서울", "마이그레이션", "部署"} {
		got := count(t, db, `SELECT count(*) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH ?`, `"`+q+`"`)
		want := count(t, db, `SELECT count(*) FROM messages_fts_cjk_src
			WHERE instr(content, ?1) OR instr(tool_name, ?1) OR instr(tool_calls, ?1)`, q)
		if got != want || got == 0 {
			t.Errorf("MATCH %q: %d rows, want %d (rows containing it, > 0)", q, got, want)
		}
	}
}

// TestHermesIntegrityCheckDetectsDrift is the control for the test above:
// once a row's content no longer matches what was indexed, the same
// integrity-check must fail.
func TestHermesIntegrityCheckDetectsDrift(t *testing.T) {
	db := openDB(t, hermesFixture(t))
	var id int
	var content string
	if err := db.QueryRow(`SELECT id, content FROM messages_fts_cjk_src
		WHERE instr(content, '项目') ORDER BY id LIMIT 1`).Scan(&id, &content); err != nil {
		t.Fatal(err)
	}
	// Change the content behind the index's back (without the trigger that
	// would reindex the row).
	if _, err := db.Exec(`DROP TRIGGER messages_fts_cjk_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE messages SET content = replace(content, '项目', '目项') WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	_, err := db.Exec(`INSERT INTO messages_fts_cjk(messages_fts_cjk, rank) VALUES('integrity-check', 1)`)
	if err == nil {
		t.Fatalf("integrity-check passed after changing message %d (%q) without reindexing", id, content)
	}
}
