package sqlite_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// rankScaleStore holds 9,000 messages shaped like a large history, small:
// a frequent word ("zulu") in thousands of rows, many of them identical
// (ties), rows of one or two tokens and rows of thousands, the best-ranked
// rows mostly filtered out (inactive, hidden, or in a source the search
// excludes). More rows match than the read-ahead buffers before its first
// threshold pass (4,096), so the passes run.
func rankScaleStore(t *testing.T) *sbStore {
	s := sbOpen(t)
	sources := []string{"cli", "telegram", "discord", "whatsapp"}
	for i, src := range sources {
		s.session(fmt.Sprintf("s%d", i), src)
	}
	rng := rand.New(rand.NewSource(17))
	words := strings.Fields("zulu yankee xray whiskey victor uniform tango sierra romeo quebec")
	tx, err := s.raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 9000; i++ {
		var text string
		switch {
		case i%7 == 0:
			text = "zulu" // identical one-token rows: a long run of ties
		case i%13 == 0:
			text = "zulu zulu"
		case i%29 == 0:
			// very long rows, some with the word often
			text = strings.Repeat("zulu filler ", rng.Intn(60)) + strings.Repeat("padding ", 1000+rng.Intn(3000))
		default:
			var w []string
			for n := 1 + rng.Intn(80); n > 0; n-- {
				w = append(w, words[int(float64(len(words))*rng.Float64()*rng.Float64())])
			}
			text = strings.Join(w, " ")
		}
		session := fmt.Sprintf("s%d", i%3)
		if i%50 == 49 {
			session = "s3" // a rare source: 2 % of the rows
		}
		if _, err := tx.Exec(`INSERT INTO messages(session_id, role, content, timestamp) VALUES (?, ?, ?, ?)`,
			session, []string{"user", "assistant"}[i%2], text, 1700000000+float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	s.exec(t, `UPDATE sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE session_id = sessions.id)`)
	// The 600 best "zulu" rows and the 300 best "yankee" rows are inactive:
	// a first page needs to look far past the K best.
	s.exec(t, `UPDATE messages SET active = 0 WHERE id IN (
		SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'zulu' ORDER BY rank LIMIT 600)`)
	s.exec(t, `UPDATE messages SET active = 0 WHERE id IN (
		SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'yankee' ORDER BY rank LIMIT 300)`)
	s.exec(t, `UPDATE messages SET display_kind = 'hidden' WHERE id % 19 = 4`)
	return s
}

// rankWant is the page plain bm25 gives (ties in id order): id, snippet.
func rankWant(t *testing.T, s *sbStore, q string, o sessiondb.SearchOptions) []string {
	t.Helper()
	return rankWantIn(t, s, "messages_fts", q, o)
}

// rankWantIn is rankWant for the query q of index table.
func rankWantIn(t *testing.T, s *sbStore, table, q string, o sessiondb.SearchOptions) []string {
	t.Helper()
	cond, args := "", []any{q}
	if o.Sources != nil {
		cond += " AND s.source IN (" + placeholderList(len(o.Sources)) + ")"
		for _, v := range o.Sources {
			args = append(args, v)
		}
	}
	if o.ExcludeSources != nil {
		cond += " AND s.source NOT IN (" + placeholderList(len(o.ExcludeSources)) + ")"
		for _, v := range o.ExcludeSources {
			args = append(args, v)
		}
	}
	rows, err := s.raw.Query(strings.ReplaceAll(`SELECT m.id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
		JOIN sessions s ON s.id = m.session_id
		WHERE messages_fts MATCH ? AND (m.active = 1 OR m.compacted = 1)
		AND COALESCE(m.display_kind, '') <> 'hidden'`+cond+` ORDER BY bm25(messages_fts), m.id LIMIT ? OFFSET ?`, "messages_fts", table),
		append(args, o.Limit, o.Offset)...)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	page := []string{}
	for _, id := range ids {
		var snippet string
		if err := s.raw.QueryRow(strings.ReplaceAll(`SELECT snippet(messages_fts, -1, '>>>', '<<<', '...', 40) FROM messages_fts
			WHERE messages_fts MATCH ? AND rowid = ?`, "messages_fts", table), q, id).Scan(&snippet); err != nil {
			t.Fatal(err)
		}
		page = append(page, fmt.Sprint(id), snippet)
	}
	return page
}

func placeholderList(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

func rankGot(t *testing.T, s *sbStore, q string, o sessiondb.SearchOptions) []string {
	t.Helper()
	got := []string{}
	for _, h := range s.search(t, q, o) {
		got = append(got, fmt.Sprint(h.ID), sbSnippet(h))
	}
	return got
}

// TestSearchRankAtScaleShapes compares search pages row by row, snippets
// included, with ORDER BY bm25: frequent words with long runs of ties,
// very long and very short rows, a phrase, a prefix, NOT, filters that reject
// the best rows (inactive, hidden, sources), and offsets deep into the
// results.
func TestSearchRankAtScaleShapes(t *testing.T) {
	s := rankScaleStore(t)
	queries := []string{"zulu", "yankee", "quebec", `"zulu yankee"`, `"zulu filler"`, "zul*", "padding", "zulu OR quebec",
		"zulu NOT yankee", `"zulu filler" NOT quebec`, "zulu NOT yan*"}
	options := []sessiondb.SearchOptions{
		{Limit: 20},
		{Limit: 20, Offset: 500},
		{Limit: 7, Offset: 1900},
		{Limit: 3, Offset: 4000},
		{Limit: 10, Sources: []string{"telegram"}},
		{Limit: 10, Sources: []string{"whatsapp"}},
		{Limit: 4, Offset: 30, Sources: []string{"whatsapp", "discord"}},
		{Limit: 5, Offset: 150, Sources: []string{"whatsapp"}},
		{Limit: 20, Offset: 40, ExcludeSources: []string{"cli", "discord"}},
		{Limit: 1},
	}
	compare := func(stage string) {
		// Snippets come from the instances the ranking kept, or, with
		// none kept, from one pass over the matches or from looking the
		// page's rows up in the index.
		for _, c := range []struct {
			inst bool
			seek int
		}{{true, 1 << 20}, {false, 1 << 20}, {false, 0}} {
			if !c.inst {
				defer fts5cjk.SetInstMax(fts5cjk.SetInstMax(0))
			}
			defer sqlite.SetRankSeekMicros(sqlite.SetRankSeekMicros(c.seek))
			for _, q := range queries {
				for _, o := range options {
					if got, want := rankGot(t, s, q, o), rankWant(t, s, q, o); !reflect.DeepEqual(got, want) {
						t.Errorf("%sinstances kept %v, seek cost %d: Search(%q, limit %d offset %d sources %v exclude %v)\n got %.300v\nwant %.300v",
							stage, c.inst, c.seek, q, o.Limit, o.Offset, o.Sources, o.ExcludeSources, got, want)
					}
				}
			}
		}
	}
	compare("")
	// The same from range summaries of 8 rows: "zulu"'s identical rows tie
	// across hundreds of its ranges.
	sqlite.SetRankSummaryScale(t, 100, 8)
	if _, err := s.db.SummarizeTerms(ctx, nil); err != nil {
		t.Fatal(err)
	}
	compare("with summaries: ")
}

// TestSearchNarrowsToRareSources: a search limited to sources whose
// sessions hold at most an eighth of the messages ranks only their rows
// (TestSearchRankAtScaleShapes checks that both ways give bm25's page);
// one limited to a larger share, or to no source, ranks every row.
func TestSearchNarrowsToRareSources(t *testing.T) {
	s := rankScaleStore(t)
	for _, c := range []struct {
		sources []string
		want    bool
	}{
		{nil, false},
		{[]string{"whatsapp"}, true},             // 2 % of the rows
		{[]string{"nowhere"}, true},              // none
		{[]string{"telegram"}, false},            // a third
		{[]string{"whatsapp", "discord"}, false}, // 2 % and a third
	} {
		got, err := sqlite.FewSourceRows(s.db, sessiondb.SearchOptions{Sources: c.sources})
		if err != nil || got != c.want {
			t.Errorf("sources %v: narrow %v, %v; want %v", c.sources, got, err, c.want)
		}
	}
	// An eighth exactly still narrows; a row more does not.
	s.exec(t, `UPDATE sessions SET message_count = (SELECT MAX(id) FROM messages) / 8 WHERE id = 's3'`)
	if got, err := sqlite.FewSourceRows(s.db, sessiondb.SearchOptions{Sources: []string{"whatsapp"}}); err != nil || !got {
		t.Errorf("an eighth of the rows: narrow %v, %v; want true", got, err)
	}
	s.exec(t, `UPDATE sessions SET message_count = message_count + 1 WHERE id = 's3'`)
	if got, err := sqlite.FewSourceRows(s.db, sessiondb.SearchOptions{Sources: []string{"whatsapp"}}); err != nil || got {
		t.Errorf("past an eighth of the rows: narrow %v, %v; want false", got, err)
	}
}

// TestSearchRankDuringWrites: pages asked for while other connections
// append rows that rank first are each read from one snapshot (no
// duplicate, every hit a match), and once the writes stop the page is
// bm25's again.
func TestSearchRankDuringWrites(t *testing.T) {
	s := rankScaleStore(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user",
				Content: strings.Repeat("zulu ", 1+i%4), Timestamp: 1800000000 + float64(i)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 30 {
		hits := s.search(t, "zulu", sessiondb.SearchOptions{Limit: 20, Offset: 5})
		seen := map[int64]bool{}
		if len(hits) != 20 {
			t.Errorf("%d hits, want 20", len(hits))
		}
		for _, h := range hits {
			if seen[h.ID] || h.Snippet == nil || !strings.Contains(*h.Snippet, ">>>zulu<<<") {
				t.Errorf("hit %d: duplicate or not a match: %v", h.ID, sbSnippet(h))
			}
			seen[h.ID] = true
		}
	}
	close(stop)
	wg.Wait()
	o := sessiondb.SearchOptions{Limit: 20, Offset: 5}
	if got, want := rankGot(t, s, "zulu", o), rankWant(t, s, "zulu", o); !reflect.DeepEqual(got, want) {
		t.Errorf("after the writes:\n got %v\nwant %v", got, want)
	}
}
