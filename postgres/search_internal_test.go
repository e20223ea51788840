//go:build sqlite_fts5 || fts5

package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite"
)

// pair is the same corpus in a SQLite store and a PostgreSQL store.
type pair struct {
	lite *sqlite.DB
	pg   *DB
}

// corpusTexts cover every query class: words, compounds, CJK of every
// length, Korean, kana, mixed, long and repetitive texts.
var corpusTexts = []string{
	"Deploy the docker image to host-1.example.com with docker-compose",
	"The chat-send feature of my-app.config.ts is ready for P2.2",
	"我们在大别山项目里部署服务端",
	"修改youer服务端的配置，项目进展顺利",
	"数据库迁移完成。下一步：测试",
	"東京の天気は晴れ、コーヒーを飲む",
	"서울 날씨가 좋아요. 마이그레이션 완료",
	"Agent通信 works with 通信协议 and 库",
	"库",
	"docker is not kubernetes; docker swarm is older",
	"100%完成 of the 项目",
	"naïve café résumé — diacritics",
	"emoji 🚀 deploy now 👍",
	"Snake_case_name and __init__ plus 3.14159",
	"First sentence here. Second sentence: docker runs. Third one ends the text with more words to push the window beyond forty tokens so that the snippet is cut with an ellipsis at both ends of it, docker again here and there and everywhere in the text",
	strings.Repeat("alpha beta ", 300) + "gamma delta",
	strings.Repeat("filler ", 17000) + "needle haystack",
	"Kubernetes pods and docker containers, docker docker docker",
	"Prefix test: deployment deployed deploys",
	"项目 项目 项目 大别山",
	"大别山项目x库 and the DOCKER image",
}

func newPair(t *testing.T) *pair {
	t.Helper()
	ctx := context.Background()
	lite, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	pg, err := Open(ctx, testenv.Postgres(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	sessions := []sessiondb.NewSession{
		{ID: "cli1", Source: "cli", Model: "m1"},
		{ID: "tg1", Source: "telegram", Model: "m2"},
		{ID: "cron1", Source: "cron"},
		{ID: "sub1", Source: "subagent"},
		{ID: "child1", Source: "cli", ModelConfig: `{"_delegate_from": "cli1"}`},
	}
	for _, s := range sessions {
		if _, err := lite.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	ts := 1700000000.0
	for i, text := range corpusTexts {
		for j, s := range sessions {
			if (i+j)%2 == 1 && j > 1 {
				continue
			}
			ts++
			m := sessiondb.NewMessage{SessionID: s.ID, Role: []string{"user", "assistant"}[(i+j)%2], Content: text, Timestamp: ts}
			if (i+j)%5 == 0 {
				m.Role, m.ToolName = "tool", "read_file"
			}
			if (i+j)%7 == 3 {
				m.ToolCalls = []byte(`[{"function": {"name": "docker_run", "arguments": "{\"image\": \"项目\"}"}}]`)
			}
			if _, err := lite.AppendMessage(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Structured content is stored encoded ("\x00json:…"), NUL first.
	for _, role := range []string{"user", "tool"} {
		if _, err := lite.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "cli1", Role: role, ToolName: "read_file", Timestamp: ts + 1,
			Content: []any{map[string]any{"type": "text", "text": "structured 项目 docker 库 content"}}}); err != nil {
			t.Fatal(err)
		}
		ts++
	}
	copyToPG(t, lite, pg)
	return &pair{lite, pg}
}

// copyToPG copies the SQLite store's sessions and messages, ids kept, into
// the PostgreSQL store with their search columns (what the insert path and
// sync will do).
func copyToPG(t *testing.T, lite *sqlite.DB, pg *DB) {
	t.Helper()
	ctx := context.Background()
	src, err := sql.Open("sqlite3", "file:"+lite.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rows, err := src.Query(`SELECT id, source, model, model_config, started_at FROM sessions`)
	if err != nil {
		t.Fatal(err)
	}
	type sess struct {
		source string
		config *string
	}
	ss := map[string]sess{}
	for rows.Next() {
		var id, source string
		var model, config *string
		var started float64
		if err := rows.Scan(&id, &source, &model, &config, &started); err != nil {
			t.Fatal(err)
		}
		ss[id] = sess{source, config}
		if _, err := pg.pool.Exec(ctx, `INSERT INTO sessions (id, source, model, model_config, started_at) VALUES ($1, $2, $3, $4, $5)`,
			id, source, model, config, started); err != nil {
			t.Fatal(err)
		}
	}
	rows.Close()
	rows, err = src.Query(`SELECT id, session_id, role, content, tool_name, tool_calls, timestamp, active, compacted, display_kind FROM messages`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, active, compacted int64
		var sid, role string
		var content, toolName, toolCalls, kind *string
		var ts float64
		if err := rows.Scan(&id, &sid, &role, &content, &toolName, &toolCalls, &ts, &active, &compacted, &kind); err != nil {
			t.Fatal(err)
		}
		x, err := indexMessage(indexInput{Role: role, Content: content, ToolName: toolName, ToolCalls: toolCalls,
			Source: ss[sid].source, ModelConfig: ss[sid].config})
		if err != nil {
			t.Fatal(err)
		}
		pgText := func(s *string) *string {
			if s == nil {
				return nil
			}
			v := toPG(*s)
			return &v
		}
		args := append([]any{id, sid, role, pgText(content), pgText(toolName), pgText(toolCalls), ts, active, compacted, kind}, x.args()...)
		if _, err := pg.pool.Exec(ctx, `INSERT INTO messages (id, session_id, role, content, tool_name, tool_calls, timestamp, active, compacted, display_kind, `+
			searchColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, `+searchPlaceholders(11)+`)`, args...); err != nil {
			t.Fatalf("insert message %d: %v", id, err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func ids(hits []sessiondb.SearchHit) []int64 {
	out := make([]int64, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func sorted(a []int64) []int64 {
	b := append([]int64(nil), a...)
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	return b
}

// TestSearchMatchesSQLite compares the hits of both backends on the same
// corpus: the match set of every query class, the order where both promise
// the same (time sorts, the substring routes), snippets and context.
func TestSearchMatchesSQLite(t *testing.T) {
	p := newPair(t)
	ctx := context.Background()
	queries := []string{
		"docker", "Docker", "docker kubernetes", "docker OR kubernetes", "docker NOT swarm", "docker NOT kubernetes",
		`"docker swarm"`, `"swarm docker"`, "deploy*", "dep*", "chat-send", "my-app.config.ts", "P2.2", "host-1.example.com",
		"cafe", "naïve", "snake_case_name", "__init__", "3.14159", "🚀", "needle", `"filler needle"`, `"needle haystack"`,
		`"gamma delta"`, `"beta alpha"`, "alpha NOT gamma", "youer", "项目", "大别山项目", "大别山", "服务端", "库", "通", "信",
		"東京の天気", "天気", "서울", "마이그레이션", "서", "Agent通信", "通信", "100%完成", "项目 docker", "docker 项目",
		"项目 OR 서울", "项目 NOT 大别山", "sentence docker", "nothingmatches", "the", "a", "image", "read_file", "docker_run",
		"kubern*", "\"kubernetes pods\"", "pods AND containers", "docker AND NOT", "NOT docker", "完成", "下一步", "测试",
		"structured", "structured 项目", "ocker", "ompose", "ocker NOT swarm", "ubernete OR ontainer", "大别山项目x库", "别山项目 里部署", "Ocker",
	}
	opts := []sessiondb.SearchOptions{
		{Limit: 1000},
		{Limit: 1000, Sources: []string{"cli"}},
		{Limit: 1000, ExcludeSources: []string{"cli"}},
		{Limit: 1000, Sources: []string{"cron", "subagent"}},
		{Limit: 1000, Roles: []string{"assistant"}},
		{Limit: 1000, Roles: []string{"tool"}},
		{Limit: 1000, Sort: "newest"},
		{Limit: 1000, Sort: "oldest"},
		{Limit: 3, Offset: 2, Sort: "newest"},
		{Limit: 1000, IncludeReasoning: true},
	}
	total, empty := 0, 0
	defer func() {
		if total < 1000 || empty > len(queries)*len(opts)/2 {
			t.Errorf("the corpus proves little: %d hits in all, %d empty answers", total, empty)
		}
	}()
	var lossy int
	if err := p.pg.pool.QueryRow(ctx, "SELECT count(*) FROM messages WHERE tsv_state = 1").Scan(&lossy); err != nil || lossy == 0 {
		t.Errorf("no row with lossy positions (%v)", err)
	}
	for _, q := range queries {
		for oi, o := range opts {
			name := fmt.Sprintf("%s/%d", q, oi)
			want, werr := p.lite.Search(ctx, q, o)
			got, gerr := p.pg.Search(ctx, q, o)
			if (werr == nil) != (gerr == nil) {
				t.Errorf("%s: SQLite error %v, PostgreSQL error %v", name, werr, gerr)
				continue
			}
			w, g := ids(want), ids(got)
			total += len(w)
			if len(w) == 0 {
				empty++
			}
			if o.Sort == "" && o.Offset == 0 {
				w, g = sorted(w), sorted(g)
			}
			if !reflect.DeepEqual(w, g) {
				t.Errorf("%s: SQLite finds %d %v, PostgreSQL %d %v", name, len(w), w, len(g), g)
				continue
			}
			snip := map[int64]string{}
			for _, h := range want {
				if h.Snippet != nil {
					snip[h.ID] = *h.Snippet
				}
			}
			for _, h := range got {
				s := ""
				if h.Snippet != nil {
					s = *h.Snippet
				}
				if s != snip[h.ID] {
					t.Errorf("%s: hit %d snippet\n SQLite     %q\n PostgreSQL %q", name, h.ID, snip[h.ID], s)
				}
			}
			for i := range got {
				if !reflect.DeepEqual(got[i].Context, want[i].Context) && o.Sort != "" {
					t.Errorf("%s: hit %d context differs", name, got[i].ID)
				}
			}
		}
	}
}

// TestSearchHostileQueries: input that is tsquery or SQL syntax, broken
// text and extremes never make PostgreSQL fail, and find what SQLite finds.
func TestSearchHostileQueries(t *testing.T) {
	p := newPair(t)
	ctx := context.Background()
	queries := []string{
		`'`, `\`, `docker:*`, `!docker`, `docker & kubernetes`, `docker | swarm`, `docker <-> swarm`, `docker <2> swarm`,
		`"" ""`, `""`, `NEAR(docker swarm)`, `docker:1`, `'docker'`, `'; DROP TABLE messages; --`, `$1`, `项'目`, `项\目`,
		"docker\x00swarm", "dock\xffer", `%`, `_`, `%_%`, `docker%`, `项目%`, `*`, `**docker`, `docker**`, `"docker`,
		`AND`, `OR OR OR`, `NOT NOT docker`, `docker AND AND swarm`, `(docker OR swarm) AND NOT kubernetes`,
		strings.Repeat("docker ", 40), strings.Repeat("项目", 3000), strings.Repeat("x", 5000), "\u200b\ufeff", "e\u0301",
	}
	for _, q := range queries {
		for _, o := range []sessiondb.SearchOptions{{Limit: 1000}, {Limit: 1000, Roles: []string{"tool"}}, {Limit: 1000, Sort: "newest"}} {
			want, werr := p.lite.Search(ctx, q, o)
			got, gerr := p.pg.Search(ctx, q, o)
			if gerr != nil && !(sessiondb.ErrorCode(gerr) == sessiondb.EINVALID) {
				t.Errorf("%.40q %+v: %v", q, o, gerr)
				continue
			}
			if (werr == nil) != (gerr == nil) {
				t.Errorf("%.40q: SQLite error %v, PostgreSQL error %v", q, werr, gerr)
				continue
			}
			if w, g := sorted(ids(want)), sorted(ids(got)); !reflect.DeepEqual(w, g) {
				t.Errorf("%.40q %+v: SQLite finds %v, PostgreSQL %v", q, o, w, g)
			}
		}
	}
}

func TestSearchLimits(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, testenv.Postgres(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	many := make([]string, sessiondb.MaxQueryTerms+1)
	for i := range many {
		many[i] = fmt.Sprintf("w%d", i)
	}
	if _, err := db.Search(ctx, strings.Join(many, " OR "), sessiondb.SearchOptions{}); !(sessiondb.ErrorCode(err) == sessiondb.EINVALID) {
		t.Errorf("%d terms: %v, want EINVALID", len(many), err)
	}
	if _, err := db.Search(ctx, "docker", sessiondb.SearchOptions{Fields: []string{"nope"}}); !(sessiondb.ErrorCode(err) == sessiondb.EINVALID) {
		t.Errorf("unknown field: %v, want EINVALID", err)
	}
	past, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	if _, err := db.Search(past, "docker", sessiondb.SearchOptions{}); !(sessiondb.ErrorCode(err) == sessiondb.ETIMEOUT) {
		t.Errorf("past the deadline: %v, want ETIMEOUT", err)
	}
	hits, err := db.Search(ctx, "   ", sessiondb.SearchOptions{})
	if err != nil || hits == nil || len(hits) != 0 {
		t.Errorf("blank query: %v, %v; want an empty list", hits, err)
	}
}

// TestSearchRankPages: a frequent word's rank order is the same whether
// the page is read tier by tier (small pages) or all matches are ranked at
// once (a page as large as the match set), and it puts the rows where the
// word weighs most first.
func TestSearchRankPages(t *testing.T) {
	ctx := context.Background()
	lite, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg, err := Open(ctx, testenv.Postgres(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if _, err := lite.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		text := strings.Repeat("docker ", 1+i%4) + strings.Repeat("filler words here ", i%37) + []string{"", "dockers", "dockyard dockyard"}[i%3]
		if i%3 == 0 {
			text = "项目 " + text
		}
		if _, err := lite.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: text, Timestamp: 1.7e9 + float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	copyToPG(t, lite, pg)
	for _, q := range []string{"docker", "项目", "dock*", "filler"} {
		all, err := pg.Search(ctx, q, sessiondb.SearchOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		want, err := lite.Search(ctx, q, sessiondb.SearchOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(want) || len(all) < 100 {
			t.Fatalf("%s: %d hits, SQLite %d", q, len(all), len(want))
		}
		for off := 0; off < len(all); off += 7 {
			page, err := pg.Search(ctx, q, sessiondb.SearchOptions{Limit: 7, Offset: off})
			if err != nil {
				t.Fatal(err)
			}
			if got, w := ids(page), ids(all[off:min(off+7, len(all))]); !reflect.DeepEqual(got, w) {
				t.Fatalf("%s: page at %d is %v, the whole ranking has %v", q, off, got, w)
			}
		}
		// The best rows hold the word most often in the fewest tokens, as
		// in SQLite's bm25 order: the first hits agree.
		if q != "dock*" && q != "filler" && all[0].ID != want[0].ID {
			t.Errorf("%s: best hit %d, SQLite's %d", q, all[0].ID, want[0].ID)
		}
	}
}

// TestSearchConcurrent: searches at once share the tokenizers and find
// what one search alone finds.
func TestSearchConcurrent(t *testing.T) {
	p := newPair(t)
	ctx := context.Background()
	queries := []string{"docker", "项目", `"docker swarm"`, "dep*", "库", "ocker", "서울"}
	want := map[string][]int64{}
	for _, q := range queries {
		hits, err := p.pg.Search(ctx, q, sessiondb.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want[q] = ids(hits)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				q := queries[(g+i)%len(queries)]
				hits, err := p.pg.Search(ctx, q, sessiondb.SearchOptions{})
				if err != nil || !reflect.DeepEqual(ids(hits), want[q]) {
					t.Errorf("%s: %v, %v; alone %v", q, ids(hits), err, want[q])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestSearchPagePastTheEnd: a page past a query's last hit is empty; the
// Latin retry runs only when the word index finds nothing at all (as in
// the SQLite store's test of the same name).
func TestSearchPagePastTheEnd(t *testing.T) {
	ctx := context.Background()
	db := openInternal(t, Options{})
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, text := range []string{"we deploy with docker today", "修改deploy服务", "修改youer服务"} {
		id, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: text})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	for _, c := range []struct {
		q      string
		offset int
		want   []int64
	}{
		{"deploy", 0, want[:1]},
		{"deploy", 1, nil},
		{"youer", 0, want[2:]}, // the retry
		{"youer", 1, nil},
		{"deploy OR youer", 1, nil},
	} {
		hits, err := db.Search(ctx, c.q, sessiondb.SearchOptions{Offset: c.offset})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(hits); !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
			t.Errorf("Search(%q, offset %d) = %v, want %v", c.q, c.offset, got, c.want)
		}
	}
}
