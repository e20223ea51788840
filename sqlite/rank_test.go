package sqlite_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// TestSearchRankEqualsBM25 checks that a rank-ordered search page is the
// page ORDER BY rank (FTS5's bm25) gives, row for row, although search only
// scores the matches that can reach the page: frequent and rare terms,
// phrases, OR, NOT, prefixes, ties, offsets, source filters, and filtered
// rows among the best matches (inactive, hidden), few and many.
func TestSearchRankEqualsBM25(t *testing.T) {
	checkRankEqualsBM25(t, "messages_fts", " ", []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
		"india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"},
		[]string{"alpha", "bravo", "papa", "golf", "alpha bravo", `"alpha bravo"`,
			"oscar OR papa", "alpha NOT bravo", "jul*", "delta echo foxtrot", "kilo", "mike"})
}

// TestSearchRankEqualsBM25CJK is the same on the bigram index, with CJK
// words written together (runs of many bigrams) or apart: one-bigram
// queries, phrases of several bigrams, and two words.
func TestSearchRankEqualsBM25CJK(t *testing.T) {
	checkRankEqualsBM25(t, "messages_fts_cjk", "", []string{"项目", "数据", "日志", "部署", "服务", "测试", "迁移", "配置",
		"网络", "存储", "监控", "告警", "缓存", "队列", "权限", "备份"},
		[]string{"项目", "数据", "备份", "部署", "项目数据", "数据日志部署", "项目 数据", "监控", "缓存"})
}

// checkRankEqualsBM25 fills a store with 1,500 messages of words (joined by
// sep, or by a space one time in three), some of them filtered out (the 40
// best rows of the fourth query among them), and compares each query's
// search pages with ORDER BY rank on table.
func checkRankEqualsBM25(t *testing.T, table, sep string, words, queries []string) {
	s := sbOpen(t)
	rng := rand.New(rand.NewSource(7))
	sources := []string{"cli", "telegram", "discord"}
	for i := range sources {
		s.session(fmt.Sprintf("s%d", i), sources[i])
	}
	for i := 0; i < 1500; i++ {
		var text []string
		if i%10 == 0 {
			text = []string{words[0], words[1]} // many identical rows: ties
		} else {
			for n := 1 + rng.Intn(60); n > 0; n-- {
				// Zipf-like: low indexes are frequent.
				text = append(text, words[int(float64(len(words))*rng.Float64()*rng.Float64())])
			}
		}
		role := []string{"user", "assistant"}[i%2]
		join := sep
		if i%3 == 0 {
			join = " "
		}
		s.msg(fmt.Sprintf("s%d", i%3), role, strings.Join(text, join))
	}
	// Scattered filtered rows, and the 40 best rows of the fourth query
	// inactive: more than a page's worth of filtered rows ahead of the
	// answer.
	s.exec(t, `UPDATE messages SET active = 0, compacted = 0 WHERE id % 17 = 3`)
	s.exec(t, `UPDATE messages SET display_kind = 'hidden' WHERE id % 23 = 5`)
	s.exec(t, `UPDATE messages SET active = 0, compacted = 0 WHERE id IN (
		SELECT rowid FROM `+table+` WHERE `+table+` MATCH ? ORDER BY rank LIMIT 40)`, sessiondb.QuoteTokens(queries[3]))

	// want returns the page FTS5 ranks and snippets itself: id, then snippet.
	want := func(q string, o sessiondb.SearchOptions) []string {
		t.Helper()
		if table != "messages_fts" {
			q = sessiondb.QuoteTokens(q) // as the CJK route quotes it
		}
		cond, args := "", []any{q}
		if o.Sources != nil {
			cond = " AND s.source = ?"
			args = append(args, o.Sources[0])
		}
		rows, err := s.raw.Query(`SELECT m.id, snippet(`+table+`, -1, '>>>', '<<<', '...', 40) FROM `+table+` JOIN messages m ON m.id = `+table+`.rowid
			JOIN sessions s ON s.id = m.session_id
			WHERE `+table+` MATCH ? AND (m.active = 1 OR m.compacted = 1)
			AND COALESCE(m.display_kind, '') <> 'hidden'`+cond+` ORDER BY rank LIMIT ? OFFSET ?`,
			append(args, o.Limit, o.Offset)...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		page := []string{}
		for rows.Next() {
			var id int64
			var snippet string
			if err := rows.Scan(&id, &snippet); err != nil {
				t.Fatal(err)
			}
			page = append(page, fmt.Sprint(id), snippet)
		}
		return page
	}
	options := []sessiondb.SearchOptions{
		{Limit: 20},
		{Limit: 5, Offset: 7},
		{Limit: 60},
		{Limit: 10, Sources: []string{"telegram"}},
	}
	compare := func(stage string) {
		t.Helper()
		for _, q := range queries {
			for _, o := range options {
				got := []string{}
				for _, h := range s.search(t, q, o) {
					got = append(got, fmt.Sprint(h.ID), sbSnippet(h))
				}
				if w := want(q, o); !reflect.DeepEqual(got, w) {
					t.Errorf("%sSearch(%q, limit %d offset %d sources %v)\n got %v\nwant %v", stage, q, o.Limit, o.Offset, o.Sources, got, w)
				}
			}
		}
	}
	compare("")
	// The same with range summaries of the index's terms (ranges of 8
	// rows); some one-word query must be answered from one.
	sqlite.SetRankSummaryScale(t, 100, 8)
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	used := 0
	for _, q := range queries {
		if strings.ContainsAny(q, ` *"`) {
			continue // not one phrase, or a prefix
		}
		if _, _, u := topIDsOf(t, s, table, sessiondb.QuoteTokens(q), 20, true); u {
			used++
		}
	}
	if used == 0 {
		t.Errorf("no query of %v answered from a summary", queries)
	}
	compare("with summaries: ")
}
