//go:build sqlite_fts5 || fts5

package fts5cjk_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// tokenizerCorpus is text of every kind the indexes meet: CJK, Korean,
// kana, emoji, diacritics, fullwidth forms, control bytes, invalid UTF-8,
// NUL bytes, and tokens past FTS5's 32768-byte cut.
func tokenizerCorpus() []string {
	corpus := []string{
		"",
		"Hello World, docker-compose up -d; my-app.config.ts P2.2",
		"我们在大别山项目里部署 Docker，服务端修改youer服务端",
		"東京の天気は晴れ コーヒー カタカナ ひらがな",
		"서울 날씨 안녕하세요 마이그레이션 Agent통신",
		"emoji 🚀🔥 deploy👍now 😀😀",
		"café Café CAFÉ naïve résumé cafe\u0301 Ⱥ项目 É项目 ǅungla ß straße",
		"ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３ 你好，世界。第二句：内容",
		"tab\tnew\nline\rcr\x01ctl\x7fdel",
		"nul\x00byte 中\x00文",
		"bad \xff\xfe utf8 \xe4\xb8 trunc 中\xe6\x96 end",
		"2024年3月 a我b 𠀀𠀁𠀂 extension-B ㄱㄴㄷ ᄀᄁ",
		"x" + strings.Repeat("a", 40000) + " tail",
		strings.Repeat("项", 20000) + " 长",
		strings.Repeat("word ", 3000),
		"Ελληνικά Русский текст العربية עברית हिन्दी ไทย",
		"under_score snake_case_name __init__ 3.14159 1e10 0x1F",
	}
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "Zé", "项目", "的", "서울", " ", ".", ": ", "🚀", "\u3000", "x1", "_", "-", "ﾃｽﾄ", "\xe4", "Ⱥ", "\n"}
	for range 200 {
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		corpus = append(corpus, b.String())
	}
	return corpus
}

type instance struct {
	term     string
	col, off int
}

// TestTokenizerMatchesIndex checks Tokenizer against what FTS5 stores:
// every (term, column, offset) of fts5vocab's instance table, and each
// row's column sizes in %_docsize, for both tokenizers.
func TestTokenizerMatchesIndex(t *testing.T) {
	corpus := tokenizerCorpus()
	for _, name := range []string{"unicode61", "cjk_unicode61"} {
		t.Run(name, func(t *testing.T) {
			tk, err := fts5cjk.NewTokenizer(name)
			if err != nil {
				t.Fatal(err)
			}
			defer tk.Close()
			db := openDB(t, filepath.Join(t.TempDir(), "t.db"))
			for _, q := range []string{
				`CREATE VIRTUAL TABLE t USING fts5(a, b, c, tokenize='` + name + `')`,
				`CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)`,
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			want := map[int][]instance{}
			sizes := map[int][3]int{}
			for i, text := range corpus {
				id := i + 1
				cols := [3]string{text, corpus[(i+1)%len(corpus)], corpus[(i+2)%len(corpus)]}
				if _, err := db.Exec(`INSERT INTO t(rowid, a, b, c) VALUES (?, ?, ?, ?)`, id, cols[0], cols[1], cols[2]); err != nil {
					t.Fatal(err)
				}
				var size [3]int
				for c, s := range cols {
					toks, err := tk.Tokens(s)
					if err != nil {
						t.Fatal(err)
					}
					pos := -1
					for _, tok := range toks {
						if !tok.Colocated || pos < 0 {
							pos++
						}
						want[id] = append(want[id], instance{tok.Text, c, pos})
					}
					size[c] = pos + 1
				}
				sizes[id] = size
			}
			got := map[int][]instance{}
			rows, err := db.Query(`SELECT term, doc, col, offset FROM v`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var in instance
				var doc int
				var col string
				if err := rows.Scan(&in.term, &doc, &col, &in.off); err != nil {
					t.Fatal(err)
				}
				in.col = int(col[0] - 'a')
				got[doc] = append(got[doc], in)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			for id := 1; id <= len(corpus); id++ {
				g, w := sortInstances(got[id]), sortInstances(want[id])
				if !reflect.DeepEqual(g, w) {
					t.Errorf("row %d (%.60q): index holds %d instances, Tokenizer gives %d; first difference %s",
						id, corpus[id-1], len(g), len(w), firstDiff(g, w))
				}
				var sz string
				if err := db.QueryRow(`SELECT hex(sz) FROM t_docsize WHERE id = ?`, id).Scan(&sz); err != nil {
					t.Fatal(err)
				}
				size := sizes[id]
				if w := fmt.Sprintf("%X", varints(size[:])); sz != w {
					t.Errorf("row %d: docsize %s, Tokenizer gives %s (%v)", id, sz, w, sizes[id])
				}
			}
		})
	}
}

func sortInstances(a []instance) []instance {
	sort.Slice(a, func(i, j int) bool {
		if a[i].col != a[j].col {
			return a[i].col < a[j].col
		}
		if a[i].off != a[j].off {
			return a[i].off < a[j].off
		}
		return a[i].term < a[j].term
	})
	return a
}

func firstDiff(a, b []instance) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("at %d: index %.40q, Tokenizer %.40q", i, fmt.Sprint(a[i]), fmt.Sprint(b[i]))
		}
	}
	return "one is a prefix of the other"
}

// varints is SQLite's varint encoding of each value (FTS5's docsize blob).
func varints(vals []int) []byte {
	var out []byte
	for _, v := range vals {
		var tmp []byte
		tmp = append(tmp, byte(v&0x7f))
		for v >>= 7; v > 0; v >>= 7 {
			tmp = append(tmp, byte(v&0x7f)|0x80)
		}
		for i := len(tmp) - 1; i >= 0; i-- {
			out = append(out, tmp[i])
		}
	}
	return out
}

func TestTokenizerEqualsTokens(t *testing.T) {
	tk, err := fts5cjk.NewTokenizer("cjk_unicode61")
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	for _, text := range tokenizerCorpus()[:17] {
		want, err := fts5cjk.Tokens(text)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			want[i].Text = want[i].Text[:min(len(want[i].Text), fts5cjk.MaxTokenSize)]
		}
		got, err := tk.Tokens(text)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			want = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Tokens(%.40q): Tokenizer differs from Tokens", text)
		}
	}
}

func TestTokenizerErrors(t *testing.T) {
	if _, err := fts5cjk.NewTokenizer("no_such_tokenizer"); err == nil {
		t.Error("NewTokenizer(no_such_tokenizer): no error")
	}
	if _, err := fts5cjk.NewTokenizer("unicode61", "remove_diacritics", "7"); err == nil {
		t.Error("NewTokenizer(unicode61 remove_diacritics 7): no error")
	}
	tk, err := fts5cjk.NewTokenizer("unicode61", "remove_diacritics", "0")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tk.Tokens("Café")
	if err != nil || len(got) != 1 || got[0].Text != "café" {
		t.Errorf("remove_diacritics 0: Tokens(Café) = %+v, %v", got, err)
	}
	if err := tk.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tk.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := tk.Tokens("x"); err != fts5cjk.ErrClosed {
		t.Errorf("Tokens after Close: %v, want ErrClosed", err)
	}
}

func TestTokenizerConcurrent(t *testing.T) {
	tk, err := fts5cjk.NewTokenizer("cjk_unicode61")
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	corpus := tokenizerCorpus()
	want := make([][]fts5cjk.Token, len(corpus))
	for i, text := range corpus {
		if want[i], err = tk.Tokens(text); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range corpus {
				j := (i + g) % len(corpus)
				got, err := tk.Tokens(corpus[j])
				if err != nil || !reflect.DeepEqual(got, want[j]) {
					t.Errorf("concurrent Tokens(%.40q) differs: %v", corpus[j], err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkTokenizer tokenizes a mix of English, code and CJK messages;
// it reports tokens/s and messages/s (a message is one text here).
func BenchmarkTokenizer(b *testing.B) {
	msgs := []string{
		strings.Repeat("The deploy of docker-compose on host-1.example.com failed: see /var/log/app.log line 42. ", 6),
		strings.Repeat("我们在大别山项目里部署服务端，修改了配置文件并重启。", 8),
		strings.Repeat(`{"name": "read_file", "arguments": {"path": "src/main.go", "limit": 200}} `, 4),
		"서울 날씨는 어때요? 東京の天気は晴れ。 ok thanks!",
	}
	for _, name := range []string{"unicode61", "cjk_unicode61"} {
		b.Run(name, func(b *testing.B) {
			tk, err := fts5cjk.NewTokenizer(name)
			if err != nil {
				b.Fatal(err)
			}
			defer tk.Close()
			var toks []fts5cjk.Token
			n := 0
			bytes := 0
			for _, m := range msgs {
				bytes += len(m)
			}
			b.SetBytes(int64(bytes / len(msgs)))
			b.RunParallel(func(pb *testing.PB) {
				var buf []fts5cjk.Token
				i := 0
				for pb.Next() {
					var err error
					buf, err = tk.AppendTokens(buf[:0], msgs[i%len(msgs)])
					if err != nil {
						b.Error(err)
						return
					}
					i++
				}
				toks = buf
			})
			_ = toks
			for _, m := range msgs {
				t, _ := tk.Tokens(m)
				n += len(t)
			}
			b.ReportMetric(float64(n)/float64(len(msgs))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
