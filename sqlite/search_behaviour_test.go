package sqlite_test

// Behaviour of Store.Search against API.md §5 and the acceptance checklist
// §9 items 32–70, following Hermes' algorithm (search research notes §2–§6).
// Every test builds its data through the public API; rawDB is used only to
// flip row and state_meta flags the API does not expose.
//
// Which route answered is observable: the FTS routes (word, bigram,
// trigram) mark matches with >>> <<< and order by rank; the LIKE routes cut
// the snippet out of the content without markers and order newest first.

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// sbStore is a store under test with a raw connection to its file and a
// clock that gives every appended message the next timestamp.
type sbStore struct {
	t   *testing.T
	db  *sqlite.DB
	raw *sql.DB
	ts  *float64 // shared with the copies made by on
}

func sbOpen(t *testing.T) *sbStore {
	t.Helper()
	db := MustOpen(t)
	ts := 1700000000.0
	return &sbStore{t: t, db: db, raw: rawDB(t, db.Path()), ts: &ts}
}

func (s *sbStore) session(id, source string) {
	s.t.Helper()
	if _, err := s.db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: source, Model: "model-" + source}); err != nil {
		s.t.Fatalf("CreateSession(%q, %q): %v", id, source, err)
	}
}

// add appends m, with the next timestamp unless m has its own.
func (s *sbStore) add(m sessiondb.NewMessage) int64 {
	s.t.Helper()
	if m.Timestamp == 0 {
		*s.ts++
		m.Timestamp = *s.ts
	}
	id, err := s.db.AppendMessage(ctx, m)
	if err != nil {
		s.t.Fatalf("AppendMessage(%s %q): %v", m.Role, m.Content, err)
	}
	return id
}

func (s *sbStore) msg(session, role string, content any) int64 {
	s.t.Helper()
	return s.add(sessiondb.NewMessage{SessionID: session, Role: role, Content: content})
}

// on returns s reporting to t (a subtest).
func (s *sbStore) on(t *testing.T) *sbStore {
	c := *s
	c.t = t
	return &c
}

func (s *sbStore) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := s.raw.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func (s *sbStore) search(t *testing.T, q string, o sessiondb.SearchOptions) []sessiondb.SearchHit {
	t.Helper()
	hits, err := s.db.Search(ctx, q, o)
	if err != nil {
		t.Fatalf("Search(%q, %+v): %v", q, o, err)
	}
	if hits == nil {
		t.Fatalf("Search(%q, %+v) returned a nil slice, want a list", q, o)
	}
	return hits
}

func sbIDs(hits []sessiondb.SearchHit) []int64 {
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return ids
}

// sbSet returns the hit ids sorted, for comparisons that ignore order.
func sbSet(hits []sessiondb.SearchHit) []int64 {
	ids := sbIDs(hits)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func sbSorted(ids ...int64) []int64 {
	out := append([]int64{}, ids...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func sbSnippet(h sessiondb.SearchHit) string {
	if h.Snippet == nil {
		return ""
	}
	return *h.Snippet
}

func sbContext(h sessiondb.SearchHit) (roles, contents []string) {
	for _, c := range h.Context {
		roles = append(roles, c.Role)
		contents = append(contents, c.Content)
	}
	return roles, contents
}

func sbHas(hits []sessiondb.SearchHit, id int64) bool {
	for _, h := range hits {
		if h.ID == id {
			return true
		}
	}
	return false
}

// sbFTSCorpus is the data of the word-index items (32–53).
type sbFTSCorpus struct {
	*sbStore
	docker1, docker2                 int64
	plat                             map[string]int64 // source → message
	roleUser, roleAssistant          int64
	chatSend, chatDecoy              int64
	p22, simulate                    int64
	phrase, phraseDecoy              int64
	toolCallRow, toolRow, contentRow int64
}

func sbNewFTSCorpus(t *testing.T) *sbFTSCorpus {
	s := &sbFTSCorpus{sbStore: sbOpen(t), plat: map[string]int64{}}
	for _, src := range []string{"cli", "telegram", "acp", "discord"} {
		s.session("s-"+src, src)
	}
	s.docker1 = s.msg("s-cli", "user", "how do i use docker for my project")
	s.docker2 = s.msg("s-cli", "assistant", "docker is a container platform for shipping software")
	for _, src := range []string{"cli", "telegram", "acp", "discord"} {
		s.plat[src] = s.msg("s-"+src, "user", "platformword sent from "+src)
	}
	s.roleUser = s.msg("s-cli", "user", "roleword asked by the user")
	s.roleAssistant = s.msg("s-cli", "assistant", "roleword answered by the assistant")
	s.chatSend = s.msg("s-cli", "user", "Run the chat-send command")
	s.chatDecoy = s.msg("s-cli", "user", "chat first and send later")
	s.p22 = s.msg("s-cli", "user", "Working on milestone P2.2 today")
	s.simulate = s.msg("s-cli", "assistant", "then run simulate.p2.test.ts to check")
	s.phrase = s.msg("s-cli", "user", "configure bridge networking quickly")
	s.phraseDecoy = s.msg("s-cli", "user", "networking across a bridge is slow")
	s.toolCallRow = s.add(sessiondb.NewMessage{SessionID: "s-cli", Role: "assistant", Content: "let me look that up",
		ToolCalls: json.RawMessage(`[{"id":"call_1","type":"function","function":{"name":"funcnamemarker_unique","arguments":"{\"query\":\"argmarkerzz\"}"}}]`)})
	s.toolRow = s.add(sessiondb.NewMessage{SessionID: "s-cli", Role: "tool", Content: "lookup done", ToolName: "toolnamemarker", ToolCallID: "call_1"})
	s.contentRow = s.msg("s-cli", "user", "contentonlymarker appears in plain text")
	return s
}

// TestSearchBehaviourFTS covers checklist items 32–52 on the word index.
func TestSearchBehaviourFTS(t *testing.T) {
	s := sbNewFTSCorpus(t)

	t.Run("docker finds both messages with the match marked", func(t *testing.T) {
		hits := s.search(t, "docker", sessiondb.SearchOptions{})
		if got, want := sbSet(hits), sbSorted(s.docker1, s.docker2); !reflect.DeepEqual(got, want) {
			t.Fatalf("ids = %v, want %v", got, want)
		}
		for _, h := range hits {
			if got := sbSnippet(h); !strings.Contains(got, ">>>docker<<<") {
				t.Errorf("hit %d snippet = %q, want >>>docker<<<", h.ID, got)
			}
			if got, want := h.Source, "cli"; got != want {
				t.Errorf("hit %d source = %q, want %q", h.ID, got, want)
			}
			if h.Model == nil || *h.Model != "model-cli" {
				t.Errorf("hit %d model = %v, want model-cli", h.ID, h.Model)
			}
			if h.SessionStarted == 0 || h.Timestamp == 0 {
				t.Errorf("hit %d session_started = %v, timestamp = %v, want both set", h.ID, h.SessionStarted, h.Timestamp)
			}
		}
	})

	t.Run("empty and blank queries give an empty list", func(t *testing.T) {
		for _, q := range []string{"", "   ", "\t\n", "***", `""`} {
			hits, err := s.db.Search(ctx, q, sessiondb.SearchOptions{})
			if err != nil {
				t.Errorf("Search(%q) error = %v, want none", q, err)
			}
			if hits == nil || len(hits) != 0 {
				t.Errorf("Search(%q) = %#v, want an empty non-nil list", q, hits)
			}
		}
	})

	t.Run("source filter and exclusion", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			o    sessiondb.SearchOptions
			want []string
		}{
			{"default includes acp and every platform", sessiondb.SearchOptions{}, []string{"cli", "telegram", "acp", "discord"}},
			{"only telegram", sessiondb.SearchOptions{Sources: []string{"telegram"}}, []string{"telegram"}},
			{"exclude cli", sessiondb.SearchOptions{ExcludeSources: []string{"cli"}}, []string{"telegram", "acp", "discord"}},
			{"both together", sessiondb.SearchOptions{Sources: []string{"cli", "acp"}, ExcludeSources: []string{"acp"}}, []string{"cli"}},
			{"empty source list matches nothing", sessiondb.SearchOptions{Sources: []string{}}, nil},
		} {
			hits := s.search(t, "platformword", tt.o)
			var want []int64
			for _, src := range tt.want {
				want = append(want, s.plat[src])
			}
			if got, want := sbSet(hits), sbSorted(want...); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: ids = %v, want %v", tt.name, got, want)
			}
			for _, h := range hits {
				if got, want := h.Source, strings.TrimPrefix(h.SessionID, "s-"); got != want {
					t.Errorf("%s: hit %d source = %q, want %q", tt.name, h.ID, got, want)
				}
			}
		}
	})

	t.Run("role filter", func(t *testing.T) {
		if got, want := sbIDs(s.search(t, "roleword", sessiondb.SearchOptions{Roles: []string{"user"}})), []int64{s.roleUser}; !reflect.DeepEqual(got, want) {
			t.Errorf("user: ids = %v, want %v", got, want)
		}
		if got, want := sbIDs(s.search(t, "roleword", sessiondb.SearchOptions{Roles: []string{"assistant"}})), []int64{s.roleAssistant}; !reflect.DeepEqual(got, want) {
			t.Errorf("assistant: ids = %v, want %v", got, want)
		}
		if got, want := sbSet(s.search(t, "roleword", sessiondb.SearchOptions{Roles: []string{}})), sbSorted(s.roleUser, s.roleAssistant); !reflect.DeepEqual(got, want) {
			t.Errorf("empty role list (no filter): ids = %v, want %v", got, want)
		}
	})

	t.Run("context is a non-empty list around the hit", func(t *testing.T) {
		hits := s.search(t, "contentonlymarker", sessiondb.SearchOptions{})
		if len(hits) != 1 {
			t.Fatalf("got %d hits, want 1", len(hits))
		}
		roles, contents := sbContext(hits[0])
		if got, want := roles, []string{"tool", "user"}; !reflect.DeepEqual(got, want) {
			t.Errorf("context roles = %q, want %q (previous message, the hit; it is the last one)", got, want)
		}
		if got, want := contents, []string{"lookup done", "contentonlymarker appears in plain text"}; !reflect.DeepEqual(got, want) {
			t.Errorf("context contents = %q, want %q", got, want)
		}
	})

	t.Run("C++ finds the C token", func(t *testing.T) {
		id := s.on(t).msg("s-cli", "user", "written in C and C++ mostly")
		if got := s.search(t, "C++", sessiondb.SearchOptions{}); !sbHas(got, id) {
			t.Errorf("C++: ids = %v, want to include %d", sbIDs(got), id)
		}
	})

	t.Run("chat-send finds the hyphenated command only", func(t *testing.T) {
		if got, want := sbIDs(s.search(t, "chat-send", sessiondb.SearchOptions{})), []int64{s.chatSend}; !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %v, want %v (not the decoy %d)", got, want, s.chatDecoy)
		}
	})

	t.Run("dotted terms P2.2 and simulate.p2.test.ts", func(t *testing.T) {
		if got := s.search(t, "P2.2", sessiondb.SearchOptions{}); !sbHas(got, s.p22) {
			t.Errorf("P2.2: ids = %v, want to include %d", sbIDs(got), s.p22)
		}
		if got := s.search(t, "simulate.p2.test.ts", sessiondb.SearchOptions{}); !sbHas(got, s.simulate) {
			t.Errorf("simulate.p2.test.ts: ids = %v, want to include %d", sbIDs(got), s.simulate)
		}
	})

	t.Run("quoted phrase matches the words in order", func(t *testing.T) {
		if got, want := sbIDs(s.search(t, `"bridge networking"`, sessiondb.SearchOptions{})), []int64{s.phrase}; !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %v, want %v", got, want)
		}
		if got, want := sbSet(s.search(t, `bridge networking`, sessiondb.SearchOptions{})), sbSorted(s.phrase, s.phraseDecoy); !reflect.DeepEqual(got, want) {
			t.Errorf("unquoted: ids = %v, want %v", got, want)
		}
	})

	t.Run("tool_call function name, arguments and tool_name are searchable", func(t *testing.T) {
		for _, tt := range []struct {
			q    string
			want int64
		}{
			{"FUNCNAMEMARKER_UNIQUE", s.toolCallRow},
			{"funcnamemarker_unique", s.toolCallRow},
			{"argmarkerzz", s.toolCallRow},
			{"toolnamemarker", s.toolRow},
		} {
			hits := s.search(t, tt.q, sessiondb.SearchOptions{})
			if got, want := sbIDs(hits), []int64{tt.want}; !reflect.DeepEqual(got, want) {
				t.Errorf("%q: ids = %v, want %v", tt.q, got, want)
				continue
			}
			if got := sbSnippet(hits[0]); !strings.Contains(got, ">>>") {
				t.Errorf("%q: snippet = %q, want a marked match", tt.q, got)
			}
		}
		hits := s.search(t, "toolnamemarker", sessiondb.SearchOptions{})
		if len(hits) == 1 && (hits[0].ToolName == nil || *hits[0].ToolName != "toolnamemarker") {
			t.Errorf("tool_name of the hit = %v, want toolnamemarker", hits[0].ToolName)
		}
	})

	t.Run("content-only match has the marker in the snippet", func(t *testing.T) {
		hits := s.search(t, "contentonlymarker", sessiondb.SearchOptions{})
		if len(hits) != 1 {
			t.Fatalf("got %d hits, want 1", len(hits))
		}
		if got, want := sbSnippet(hits[0]), ">>>contentonlymarker<<< appears in plain text"; got != want {
			t.Errorf("snippet = %q, want %q", got, want)
		}
	})

	t.Run("role filter user excludes an assistant matched through tool_calls", func(t *testing.T) {
		if got := s.search(t, "argmarkerzz", sessiondb.SearchOptions{Roles: []string{"user"}}); len(got) != 0 {
			t.Errorf("ids = %v, want none", sbIDs(got))
		}
		if got, want := sbIDs(s.search(t, "argmarkerzz", sessiondb.SearchOptions{Roles: []string{"assistant"}})), []int64{s.toolCallRow}; !reflect.DeepEqual(got, want) {
			t.Errorf("assistant: ids = %v, want %v", got, want)
		}
	})
}

// sbDangerous are queries that must never make Search fail (items 39, 40
// and more): FTS5 syntax, LIKE wildcards, bytes that are not UTF-8, and
// queries long enough to build deep SQL expressions on the scan routes.
var sbDangerous = []string{`C++`, `"unterminated`, `(problem`, `hello AND`, `***`, `{test}`, `OR hello`, `a AND OR b`,
	`AND OR`, `NOT NOT x`, `NOT`, `"`, `""`, `" "`, `*`, `-x`, `^x`, `col:docker`, `content:docker`, `NEAR(a b)`,
	`docker NEAR/2 platform`, `a:b:c`, `'`, `\`, `%`, `_`, `100%`, `"a" "b`, `x OR`, `(a OR b) AND (c`, `docker*`,
	`*docker`, `"docker"*`, "\x00", "a\x00b", "\x00Q0\x00 \"x\"", "\xff\xfe", "\xed\xa0\x80", `🚀`, `"项目`, `项目 AND`,
	`OR 项目`, `项目 NOT`, `%项目%`, `_项目_`, `项目"`, strings.Repeat("(", 5000),
	strings.Repeat("a ", 3000), strings.Repeat("ab OR ", 500), strings.Repeat("山 ", 1500), strings.Repeat("项目 ", 800),
	sbDistinctCJK(1024, " "), sbDistinctCJK(700, " OR "), "x " + sbDistinctCJK(1000, " NOT ")}

// sbDistinctCJK returns n different CJK characters joined by sep.
func sbDistinctCJK(n int, sep string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = string(rune(0x4E00 + i))
	}
	return strings.Join(parts, sep)
}

// sbShort abbreviates long queries in failure messages.
func sbShort(q string) string {
	if len(q) > 60 {
		return fmt.Sprintf("%.60q… (%d bytes)", q, len(q))
	}
	return fmt.Sprintf("%q", q)
}

// TestSearchBehaviourDangerousQueries: no query makes Search fail, on any
// route and in any index state, except that a query of more than
// MaxQueryTerms distinct terms is refused with EINVALID on every route.
func TestSearchBehaviourDangerousQueries(t *testing.T) {
	s := sbOpen(t)
	s.session("a", "cli")
	s.msg("a", "user", "hello docker world a b ab 项目 山")
	s.add(sessiondb.NewMessage{SessionID: "a", Role: "tool", Content: "tool output a", ToolName: "shell", ToolCallID: "c"})
	routes := []sessiondb.SearchOptions{{}, {Roles: []string{"tool"}}, {Sort: "newest"}, {Sort: "oldest"},
		{IncludeReasoning: true}, {IncludeInactive: true}, {Sources: []string{"cron"}}}
	run := func(t *testing.T) {
		for _, q := range sbDangerous {
			var failed []string
			var first error
			tooComplex := sessiondb.CheckQueryTerms(sessiondb.SanitizeQuery(q)) != nil
			for _, o := range routes {
				hits, err := s.db.Search(ctx, q, o)
				if tooComplex {
					if sessiondb.ErrorCode(err) != sessiondb.EINVALID || !strings.Contains(err.Error(), "too complex") {
						t.Errorf("Search(%s, %+v) = %v, want a too complex EINVALID", sbShort(q), o, err)
					}
					continue
				}
				if err != nil || hits == nil {
					failed = append(failed, fmt.Sprintf("%+v", o))
					if first == nil {
						first = fmt.Errorf("hits %v, error %v (code %q)", hits, err, sessiondb.ErrorCode(err))
					}
				}
			}
			if failed != nil {
				t.Errorf("Search(%s) fails on %d of %d routes: first: %v; routes: %s", sbShort(q), len(failed), len(routes), first, strings.Join(failed, " "))
			}
		}
	}
	t.Run("live indexes", run)
	t.Run("stale word index", func(t *testing.T) {
		s.exec(t, "INSERT INTO state_meta(key, value) VALUES('fts_stale', '1')")
		defer s.exec(t, "DELETE FROM state_meta WHERE key = 'fts_stale'")
		run(t)
	})
	t.Run("CJK index not live", func(t *testing.T) {
		s.exec(t, "INSERT INTO state_meta(key, value) VALUES('fts_cjk_stale', '1')")
		defer s.exec(t, "DELETE FROM state_meta WHERE key = 'fts_cjk_stale'")
		run(t)
	})
	t.Run("pending backfill", func(t *testing.T) {
		s.exec(t, "INSERT INTO state_meta(key, value) VALUES('fts_rebuild_high_water', '100'), ('fts_rebuild_progress', '0')")
		defer s.exec(t, "DELETE FROM state_meta WHERE key IN ('fts_rebuild_high_water', 'fts_rebuild_progress')")
		run(t)
	})
}

// TestSearchBehaviourContext: the context is the previous message, the hit
// and the next message of the same session by (timestamp, id), flattened
// and cut to 200 characters (items 37, 38).
func TestSearchBehaviourContext(t *testing.T) {
	interleaved := func(t *testing.T, ts func(i int) float64) {
		s := sbOpen(t)
		s.session("a", "cli")
		s.session("b", "cli")
		steps := []struct{ session, role, content string }{
			{"a", "user", "before needle"},
			{"b", "user", "other session one"},
			{"a", "assistant", "needle match"},
			{"b", "assistant", "other session two"},
			{"a", "user", "after needle"},
			{"b", "user", "other session three"},
		}
		for i, st := range steps {
			s.add(sessiondb.NewMessage{SessionID: st.session, Role: st.role, Content: st.content, Timestamp: ts(i)})
		}
		hits := s.search(t, "match", sessiondb.SearchOptions{})
		if len(hits) != 1 {
			t.Fatalf("got %d hits, want 1", len(hits))
		}
		roles, contents := sbContext(hits[0])
		if got, want := contents, []string{"before needle", "needle match", "after needle"}; !reflect.DeepEqual(got, want) {
			t.Errorf("context = %q, want %q", got, want)
		}
		if got, want := roles, []string{"user", "assistant", "user"}; !reflect.DeepEqual(got, want) {
			t.Errorf("context roles = %q, want %q", got, want)
		}
	}
	t.Run("interleaved sessions with increasing timestamps", func(t *testing.T) {
		interleaved(t, func(i int) float64 { return 1700000000 + float64(i) })
	})
	t.Run("interleaved sessions with equal timestamps order by id", func(t *testing.T) {
		interleaved(t, func(int) float64 { return 1700000000 })
	})

	t.Run("neighbours by timestamp, not by id", func(t *testing.T) {
		s := sbOpen(t)
		s.session("a", "cli")
		s.add(sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "first words", Timestamp: 1700000100})
		s.add(sessiondb.NewMessage{SessionID: "a", Role: "assistant", Content: "needle match", Timestamp: 1700000300})
		s.add(sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "written later but older", Timestamp: 1700000200})
		hits := s.search(t, "match", sessiondb.SearchOptions{})
		if len(hits) != 1 {
			t.Fatalf("got %d hits, want 1", len(hits))
		}
		if _, got := sbContext(hits[0]); !reflect.DeepEqual(got, []string{"written later but older", "needle match"}) {
			t.Errorf("context = %q, want [written later but older, needle match]", got)
		}
	})

	t.Run("first message has no previous entry", func(t *testing.T) {
		s := sbOpen(t)
		s.session("a", "cli")
		s.msg("a", "user", "opening needle")
		s.msg("a", "assistant", "reply")
		hits := s.search(t, "opening", sessiondb.SearchOptions{})
		if len(hits) != 1 {
			t.Fatalf("got %d hits, want 1", len(hits))
		}
		if _, got := sbContext(hits[0]); !reflect.DeepEqual(got, []string{"opening needle", "reply"}) {
			t.Errorf("context = %q, want [opening needle, reply]", got)
		}
	})

	t.Run("multimodal content is found and flattened", func(t *testing.T) {
		s := sbOpen(t)
		s.session("a", "cli")
		s.msg("a", "user", []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/cat.png"}}})
		hit := s.msg("a", "user", []any{
			map[string]any{"type": "text", "text": "zebra words"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/zebra.png"}},
			map[string]any{"type": "text", "text": "and stripes"},
		})
		s.msg("a", "assistant", nil)
		hits := s.search(t, "zebra", sessiondb.SearchOptions{})
		if got, want := sbIDs(hits), []int64{hit}; !reflect.DeepEqual(got, want) {
			t.Fatalf("ids = %v, want %v", got, want)
		}
		if _, got := sbContext(hits[0]); !reflect.DeepEqual(got, []string{"[multimodal content]", "zebra words and stripes", ""}) {
			t.Errorf("context = %q, want [[multimodal content], zebra words and stripes, \"\"]", got)
		}
	})

	t.Run("context content is cut to 200 characters", func(t *testing.T) {
		s := sbOpen(t)
		s.session("a", "cli")
		long := func(word string) string { return word + " " + strings.Repeat("é", 300) + " tail" }
		s.msg("a", "user", long("previous"))
		s.msg("a", "assistant", long("cutmarker"))
		s.msg("a", "user", "short next")
		hits := s.search(t, "cutmarker", sessiondb.SearchOptions{})
		if len(hits) != 1 {
			t.Fatalf("got %d hits, want 1", len(hits))
		}
		_, got := sbContext(hits[0])
		want := []string{
			string([]rune(long("previous"))[:sessiondb.ContextChars]),
			string([]rune(long("cutmarker"))[:sessiondb.ContextChars]),
			"short next",
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("context = %q, want %q", got, want)
		}
		for _, c := range got {
			if n := utf8.RuneCountInString(c); n > 200 || !utf8.ValidString(c) {
				t.Errorf("context entry has %d characters (valid UTF-8: %v), want ≤ 200", n, utf8.ValidString(c))
			}
		}
	})

	t.Run("context only when asked for", func(t *testing.T) {
		s := sbOpen(t)
		s.session("a", "cli")
		s.msg("a", "user", "fieldword here")
		if h := s.search(t, "fieldword", sessiondb.SearchOptions{Fields: []string{"id", "snippet"}}); len(h) != 1 || h[0].Context != nil {
			t.Errorf("fields without context: %+v, want one hit without context", h)
		}
		if h := s.search(t, "fieldword", sessiondb.SearchOptions{Fields: []string{"context"}}); len(h) != 1 || len(h[0].Context) != 1 {
			t.Errorf("fields with context: %+v, want one hit with context", h)
		}
	})
}

// TestSearchBehaviourFields: Fields is validated before anything else and
// selects hit fields in canonical order.
func TestSearchBehaviourFields(t *testing.T) {
	t.Run("CheckSearchFields", func(t *testing.T) {
		got, err := sessiondb.CheckSearchFields(nil)
		if err != nil || got != nil {
			t.Errorf("nil: %v, %v; want nil, nil (every field)", got, err)
		}
		got, err = sessiondb.CheckSearchFields([]string{"context", "snippet", "id", "id"})
		if want := []string{"id", "snippet", "context"}; err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("canonical order: %v, %v; want %v", got, err, want)
		}
		got, err = sessiondb.CheckSearchFields(sessiondb.SearchFields)
		if err != nil || !reflect.DeepEqual(got, sessiondb.SearchFields) {
			t.Errorf("all fields: %v, %v", got, err)
		}
		_, err = sessiondb.CheckSearchFields([]string{"zzz", "id", "bogus"})
		if got, want := sessiondb.ErrorCode(err), sessiondb.EINVALID; got != want {
			t.Fatalf("unknown fields: code %q (%v), want %q", got, err, want)
		}
		if !strings.Contains(err.Error(), "bogus, zzz") {
			t.Errorf("error %q should name the unknown fields sorted", err)
		}
	})

	s := sbOpen(t)
	s.session("a", "cli")
	s.msg("a", "user", "selectword in a message")

	t.Run("unknown field is EINVALID, even for an empty query", func(t *testing.T) {
		for _, q := range []string{"selectword", "", "   "} {
			hits, err := s.db.Search(ctx, q, sessiondb.SearchOptions{Fields: []string{"id", "content"}})
			if got, want := sessiondb.ErrorCode(err), sessiondb.EINVALID; got != want {
				t.Errorf("%q: code %q (%v), want %q", q, got, err, want)
			}
			if hits != nil {
				t.Errorf("%q: hits %v with an error", q, hits)
			}
		}
	})

	t.Run("Select keeps only the requested fields", func(t *testing.T) {
		fields, err := sessiondb.CheckSearchFields([]string{"snippet", "id"})
		if err != nil {
			t.Fatal(err)
		}
		hits := s.search(t, "selectword", sessiondb.SearchOptions{Fields: fields})
		if len(hits) != 1 {
			t.Fatalf("got %d hits, want 1", len(hits))
		}
		m := hits[0].Select(fields)
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if got, want := keys, []string{"id", "snippet"}; !reflect.DeepEqual(got, want) {
			t.Errorf("keys = %v, want %v", got, want)
		}
		if got, want := m["id"], hits[0].ID; got != want {
			t.Errorf("id = %v, want %v", got, want)
		}
		if got := hits[0].Select(nil); len(got) != len(sessiondb.SearchFields) {
			t.Errorf("Select(nil) has %d keys, want %d", len(got), len(sessiondb.SearchFields))
		}
	})
}

// TestSearchBehaviourOrderAndPaging: sort newest/oldest, rank by default,
// limit and offset.
func TestSearchBehaviourOrderAndPaging(t *testing.T) {
	s := sbOpen(t)
	s.session("a", "cli")
	best := s.add(sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "sortword sortword sortword", Timestamp: 1700000100})
	newest := s.add(sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "sortword with many other filler words around it in a long message", Timestamp: 1700000300})
	middle := s.add(sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "sortword and some more words", Timestamp: 1700000200})
	for i := 0; i < 8; i++ {
		s.msg("a", "user", fmt.Sprintf("filler message %d without the term", i))
	}

	for _, tt := range []struct {
		sort string
		want []int64
	}{
		{"", []int64{best, middle, newest}},
		{"rank", []int64{best, middle, newest}},
		{"bogus", []int64{best, middle, newest}},
		{"newest", []int64{newest, middle, best}},
		{" NEWEST ", []int64{newest, middle, best}},
		{"oldest", []int64{best, middle, newest}},
		{"Oldest", []int64{best, middle, newest}},
	} {
		t.Run("sort "+tt.sort, func(t *testing.T) {
			if got := sbIDs(s.search(t, "sortword", sessiondb.SearchOptions{Sort: tt.sort})); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ids = %v, want %v", got, tt.want)
			}
		})
	}

	var pageIDs []int64
	for i := 0; i < 25; i++ {
		pageIDs = append(pageIDs, s.msg("a", "assistant", fmt.Sprintf("pageword number %d", i)))
	}
	t.Run("limit 0 means 20", func(t *testing.T) {
		if got, want := len(s.search(t, "pageword", sessiondb.SearchOptions{})), sessiondb.DefaultSearchLimit; got != want {
			t.Errorf("got %d hits, want %d", got, want)
		}
		if got, want := len(s.search(t, "pageword", sessiondb.SearchOptions{Limit: 1000})), 25; got != want {
			t.Errorf("limit 1000: got %d hits, want %d", got, want)
		}
	})
	for _, sortBy := range []string{"", "oldest", "newest"} {
		t.Run("pages are disjoint, sort "+sortBy, func(t *testing.T) {
			all := sbIDs(s.search(t, "pageword", sessiondb.SearchOptions{Limit: 100, Sort: sortBy}))
			var pages []int64
			seen := map[int64]bool{}
			for off := 0; off < 30; off += 7 {
				page := sbIDs(s.search(t, "pageword", sessiondb.SearchOptions{Limit: 7, Offset: off, Sort: sortBy}))
				if got, want := len(page), min(7, max(25-off, 0)); got != want {
					t.Errorf("offset %d: %d hits, want %d", off, got, want)
				}
				for _, id := range page {
					if seen[id] {
						t.Errorf("offset %d: id %d already on an earlier page", off, id)
					}
					seen[id] = true
				}
				pages = append(pages, page...)
			}
			if !reflect.DeepEqual(pages, all) {
				t.Errorf("pages concatenated = %v, want the one-page result %v", pages, all)
			}
			if got, want := sbSorted(pages...), sbSorted(pageIDs...); !reflect.DeepEqual(got, want) {
				t.Errorf("pages cover %v, want %v", got, want)
			}
		})
	}
	t.Run("offset past the end and negative offset", func(t *testing.T) {
		if got := s.search(t, "pageword", sessiondb.SearchOptions{Offset: 100}); len(got) != 0 {
			t.Errorf("offset 100: %v, want none", sbIDs(got))
		}
		if got, want := sbIDs(s.search(t, "pageword", sessiondb.SearchOptions{Offset: -5, Limit: 3})), sbIDs(s.search(t, "pageword", sessiondb.SearchOptions{Limit: 3})); !reflect.DeepEqual(got, want) {
			t.Errorf("offset -5: %v, want the first page %v", got, want)
		}
	})
}

// TestSearchBehaviourVisibility: hidden rows never appear; rewound rows
// (active=0, compacted=0) only with IncludeInactive; compaction-archived
// rows (active=0, compacted=1) by default. Checked on every route.
func TestSearchBehaviourVisibility(t *testing.T) {
	s := sbOpen(t)
	s.session("a", "cli")
	visible := s.msg("a", "user", "visword shown 隐藏词")
	hiddenNew := s.add(sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "visword concealed 隐藏词", DisplayKind: "hidden"})
	hiddenLater := s.msg("a", "assistant", "visword concealed later 隐藏词")
	hiddenTool := s.add(sessiondb.NewMessage{SessionID: "a", Role: "tool", Content: "visword tool output 隐藏词", ToolName: "vistool"})
	current := s.msg("a", "user", "actword current 回退词")
	rewound := s.msg("a", "assistant", "actword rewound 回退词")
	archived := s.msg("a", "user", "actword archived 回退词")
	s.exec(t, "UPDATE messages SET display_kind = 'hidden' WHERE id IN (?, ?)", hiddenLater, hiddenTool)
	s.exec(t, "UPDATE messages SET active = 0, compacted = 0 WHERE id = ?", rewound)
	s.exec(t, "UPDATE messages SET active = 0, compacted = 1 WHERE id = ?", archived)

	hidden := []int64{hiddenNew, hiddenLater, hiddenTool}
	routes := []struct {
		name string
		o    sessiondb.SearchOptions
	}{
		{"rank", sessiondb.SearchOptions{}},
		{"newest", sessiondb.SearchOptions{Sort: "newest"}},
		{"include inactive", sessiondb.SearchOptions{IncludeInactive: true}},
		{"tool role scan", sessiondb.SearchOptions{Roles: []string{"tool", "user", "assistant"}}},
		{"reasoning scan", sessiondb.SearchOptions{IncludeReasoning: true}},
	}
	check := func(t *testing.T, route string) {
		for _, r := range routes {
			for _, q := range []string{"visword", "隐藏词", "隐"} {
				hits := s.search(t, q, r.o)
				if !sbHas(hits, visible) {
					t.Errorf("%s, %s %q: ids %v, want the visible row %d", route, r.name, q, sbIDs(hits), visible)
				}
				for _, id := range hidden {
					if sbHas(hits, id) {
						t.Errorf("%s, %s %q: hidden row %d found", route, r.name, q, id)
					}
				}
			}
			for _, q := range []string{"actword", "回退词", "回"} {
				want := sbSorted(current, archived)
				if r.o.IncludeInactive {
					want = sbSorted(current, rewound, archived)
				}
				if got := sbSet(s.search(t, q, r.o)); !reflect.DeepEqual(got, want) {
					t.Errorf("%s, %s %q: ids %v, want %v", route, r.name, q, got, want)
				}
			}
		}
	}
	t.Run("live indexes", func(t *testing.T) { check(t, "live") })
	t.Run("stale word index", func(t *testing.T) {
		s.exec(t, "INSERT INTO state_meta(key, value) VALUES('fts_stale', '1')")
		defer s.exec(t, "DELETE FROM state_meta WHERE key = 'fts_stale'")
		check(t, "stale")
	})
	t.Run("CJK index not live", func(t *testing.T) {
		s.exec(t, "INSERT INTO state_meta(key, value) VALUES('fts_cjk_stale', '1')")
		defer s.exec(t, "DELETE FROM state_meta WHERE key = 'fts_cjk_stale'")
		check(t, "cjk stale")
	})
}

// sbCJKCorpus holds the data of the CJK items 55–70.
type sbCJKCorpus struct {
	*sbStore
	memory, agent, korean, japanese, lastNight1, lastNight2, test, percent, noPercent int64
	memSystem, breakLink, youer, english, toolSearch, assistantSearch, mountain       int64
	deployCLI, deployTG, deployTool, deployCron                                       int64
}

func sbNewCJKCorpus(t *testing.T) *sbCJKCorpus {
	s := &sbCJKCorpus{sbStore: sbOpen(t)}
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10", "c11", "c12", "c13", "c14", "c15"} {
		s.session(id, "cli")
	}
	s.session("tg", "telegram")
	s.session("cron1", "cron")
	s.memory = s.msg("c1", "user", "我们之前讨论了聊天记录，记忆断裂问题很严重")
	s.agent = s.msg("c2", "user", "讨论Agent通信协议")
	s.korean = s.msg("c3", "user", "안녕하세요 반갑습니다")
	s.japanese = s.msg("c4", "assistant", "こんにちは 世界です")
	s.lastNight1 = s.msg("c5", "user", "昨晚我们开会了")
	s.lastNight2 = s.msg("c6", "assistant", "昨晚下雨了")
	s.test = s.add(sessiondb.NewMessage{SessionID: "c7", Role: "assistant", Content: "这是测试，再测试一次",
		ToolCalls: json.RawMessage(`[{"id":"c","type":"function","function":{"name":"run","arguments":"{\"q\":\"测试\"}"}}]`)})
	s.percent = s.msg("c8", "user", "达成100%完成率")
	s.noPercent = s.msg("c9", "user", "达成100完成率")
	s.memSystem = s.msg("c10", "user", "新的记忆系统上线了")
	s.breakLink = s.msg("c11", "user", "断裂连接需要修复")
	s.youer = s.msg("c12", "user", "请修改youer服务端配置")
	s.english = s.msg("c13", "user", "we deploy with docker today")
	s.toolSearch = s.add(sessiondb.NewMessage{SessionID: "c14", Role: "tool", Content: "", ToolName: "搜索工具", ToolCallID: "x"})
	s.assistantSearch = s.add(sessiondb.NewMessage{SessionID: "c14", Role: "assistant", Content: "", ToolName: "网页搜索"})
	s.mountain = s.msg("c15", "user", strings.Repeat("前", 60)+"山"+strings.Repeat("后", 100))
	s.deployCLI = s.msg("c1", "user", "开始部署服务")
	s.deployTG = s.msg("tg", "assistant", "部署完成了")
	s.deployTool = s.add(sessiondb.NewMessage{SessionID: "c1", Role: "tool", Content: "部署日志", ToolName: "shell", ToolCallID: "y"})
	s.deployCron = s.msg("cron1", "user", "部署定时任务")
	return s
}

// TestSearchBehaviourCJK covers checklist items 54–70 with the bigram
// index live (a fresh store).
func TestSearchBehaviourCJK(t *testing.T) {
	t.Run("ContainsCJK", func(t *testing.T) {
		for in, want := range map[string]bool{"记忆": true, "안녕하세요": true, "기억": true, "ひらがな": true, "カタカナ": true,
			"hello世界": true, "": false, "hello": false, "🚀": false, "、": true, "\u3400": true} {
			if got := sessiondb.ContainsCJK(in); got != want {
				t.Errorf("ContainsCJK(%q) = %v, want %v", in, got, want)
			}
		}
	})

	s := sbNewCJKCorpus(t)
	exact := func(t *testing.T, q string, o sessiondb.SearchOptions, want ...int64) []sessiondb.SearchHit {
		t.Helper()
		hits := s.search(t, q, o)
		if got := sbSet(hits); !reflect.DeepEqual(got, sbSorted(want...)) {
			t.Errorf("%q %+v: ids = %v, want %v", q, o, got, sbSorted(want...))
		}
		return hits
	}
	marked := func(t *testing.T, hits []sessiondb.SearchHit, term string) {
		t.Helper()
		for _, h := range hits {
			if got := sbSnippet(h); !strings.Contains(got, ">>>") || !strings.Contains(got, term) {
				t.Errorf("hit %d snippet = %q, want an index snippet marking %q", h.ID, got, term)
			}
		}
	}

	t.Run("记忆断裂 finds the sentence", func(t *testing.T) {
		marked(t, exact(t, "记忆断裂", sessiondb.SearchOptions{}, s.memory), "记忆")
	})
	t.Run("two-character 通信", func(t *testing.T) {
		marked(t, exact(t, "通信", sessiondb.SearchOptions{}, s.agent), "通信")
	})
	t.Run("Korean 안녕", func(t *testing.T) {
		exact(t, "안녕", sessiondb.SearchOptions{}, s.korean)
	})
	t.Run("Japanese こんにちは and 世界", func(t *testing.T) {
		exact(t, "こんにちは", sessiondb.SearchOptions{}, s.japanese)
		exact(t, "世界", sessiondb.SearchOptions{}, s.japanese)
	})
	t.Run("filters apply on the bigram route", func(t *testing.T) {
		exact(t, "部署", sessiondb.SearchOptions{}, s.deployCLI, s.deployTG, s.deployCron) // tool rows are not in the CJK index
		exact(t, "部署", sessiondb.SearchOptions{Sources: []string{"telegram"}}, s.deployTG)
		exact(t, "部署", sessiondb.SearchOptions{ExcludeSources: []string{"telegram"}}, s.deployCLI, s.deployCron)
		exact(t, "部署", sessiondb.SearchOptions{Roles: []string{"assistant"}}, s.deployTG)
		marked(t, exact(t, "部署", sessiondb.SearchOptions{Roles: []string{"user"}, ExcludeSources: []string{"cron"}}, s.deployCLI), "部署")
	})
	t.Run("filters apply on the LIKE route", func(t *testing.T) {
		exact(t, "署", sessiondb.SearchOptions{}, s.deployCLI, s.deployTG, s.deployTool, s.deployCron)
		exact(t, "署", sessiondb.SearchOptions{Sources: []string{"telegram"}}, s.deployTG)
		exact(t, "署", sessiondb.SearchOptions{ExcludeSources: []string{"telegram"}}, s.deployCLI, s.deployTool, s.deployCron)
		exact(t, "署", sessiondb.SearchOptions{Roles: []string{"user"}}, s.deployCLI, s.deployCron)
	})
	t.Run("tool role and cron source take the scan", func(t *testing.T) {
		exact(t, "部署", sessiondb.SearchOptions{Roles: []string{"tool"}}, s.deployTool)
		hits := exact(t, "部署", sessiondb.SearchOptions{Sources: []string{"cron"}}, s.deployCron)
		for _, h := range hits {
			if got := sbSnippet(h); strings.Contains(got, ">>>") {
				t.Errorf("cron source: snippet %q comes from an index, want the scan", got)
			}
		}
	})
	t.Run("LIKE route snippet is centred on the term", func(t *testing.T) {
		hits := exact(t, "山", sessiondb.SearchOptions{}, s.mountain)
		if len(hits) != 1 {
			return
		}
		snip := []rune(sbSnippet(hits[0]))
		if got, want := len(snip), 120; got != want {
			t.Errorf("snippet has %d characters, want %d", got, want)
		}
		if got, want := strings.Index(string(snip), "山"), len(strings.Repeat("前", 40)); got != want {
			t.Errorf("山 at byte %d of the snippet, want %d (40 characters of context before it): %q", got, want, string(snip))
		}
		if strings.Contains(string(snip), ">>>") {
			t.Errorf("LIKE snippet %q carries markers", string(snip))
		}
	})
	t.Run("English fast path next to CJK data", func(t *testing.T) {
		marked(t, exact(t, "docker", sessiondb.SearchOptions{}, s.english), "docker")
	})
	t.Run("no match gives an empty list", func(t *testing.T) {
		exact(t, "不存在", sessiondb.SearchOptions{})
		exact(t, "鑫", sessiondb.SearchOptions{})
	})
	t.Run("Agent通信", func(t *testing.T) {
		exact(t, "Agent通信", sessiondb.SearchOptions{}, s.agent)
	})
	t.Run("昨晚 finds every message", func(t *testing.T) {
		hits := exact(t, "昨晚", sessiondb.SearchOptions{}, s.lastNight1, s.lastNight2)
		if got, want := sessionSet(hits), []string{"c5", "c6"}; !reflect.DeepEqual(got, want) {
			t.Errorf("sessions = %v, want %v", got, want)
		}
	})
	t.Run("no duplicates", func(t *testing.T) {
		exact(t, "测试", sessiondb.SearchOptions{}, s.test)
		exact(t, "测", sessiondb.SearchOptions{}, s.test)
	})
	t.Run("percent is literal", func(t *testing.T) {
		exact(t, "100%完成", sessiondb.SearchOptions{}, s.percent)
	})
	t.Run("OR across sessions", func(t *testing.T) {
		exact(t, "记忆系统 OR 断裂连接", sessiondb.SearchOptions{}, s.memSystem, s.breakLink)
	})
	t.Run("a match in tool_name with empty content is found", func(t *testing.T) {
		// API.md says the snippet comes from tool_name; Hermes takes the LIKE
		// snippet from content only (research §3), so only the row is checked.
		exact(t, "搜", sessiondb.SearchOptions{}, s.toolSearch, s.assistantSearch)
		exact(t, "搜索", sessiondb.SearchOptions{}, s.assistantSearch) // bigram: tool rows are not in the CJK index
	})
	t.Run("Latin retry finds youer inside CJK text", func(t *testing.T) {
		marked(t, exact(t, "youer", sessiondb.SearchOptions{}, s.youer), "youer")
	})
}

// TestSearchBehaviourCJKWithoutBigram: while the bigram index is not live,
// 3+ character CJK queries use the trigram index, shorter ones the scan.
func TestSearchBehaviourCJKWithoutBigram(t *testing.T) {
	s := sbNewCJKCorpus(t)
	s.exec(t, "INSERT INTO state_meta(key, value) VALUES('fts_cjk_stale', '1')")
	route := func(t *testing.T, q string, o sessiondb.SearchOptions, index bool, want ...int64) {
		t.Helper()
		hits := s.search(t, q, o)
		if got := sbSet(hits); !reflect.DeepEqual(got, sbSorted(want...)) {
			t.Errorf("%q %+v: ids = %v, want %v", q, o, got, sbSorted(want...))
		}
		for _, h := range hits {
			if got := strings.Contains(sbSnippet(h), ">>>"); got != index {
				t.Errorf("%q: snippet %q: from an index = %v, want %v", q, sbSnippet(h), got, index)
			}
		}
	}
	t.Run("trigram route", func(t *testing.T) {
		route(t, "记忆断裂", sessiondb.SearchOptions{}, true, s.memory)
		route(t, "こんにちは", sessiondb.SearchOptions{}, true, s.japanese)
		route(t, "部署服务", sessiondb.SearchOptions{}, true, s.deployCLI)
		route(t, "记忆系统 OR 断裂连接", sessiondb.SearchOptions{}, true, s.memSystem, s.breakLink)
	})
	t.Run("trigram route keeps the filters", func(t *testing.T) {
		route(t, "部署完成", sessiondb.SearchOptions{Sources: []string{"telegram"}}, true, s.deployTG)
		route(t, "部署完成", sessiondb.SearchOptions{ExcludeSources: []string{"telegram"}}, true)
		route(t, "部署完成", sessiondb.SearchOptions{Roles: []string{"user"}}, true)
	})
	t.Run("short CJK tokens take the scan", func(t *testing.T) {
		route(t, "通信", sessiondb.SearchOptions{}, false, s.agent)
		route(t, "안녕", sessiondb.SearchOptions{}, false, s.korean)
		route(t, "Agent通信", sessiondb.SearchOptions{}, false, s.agent)
		route(t, "昨晚", sessiondb.SearchOptions{}, false, s.lastNight1, s.lastNight2)
		route(t, "100%完成", sessiondb.SearchOptions{}, false, s.percent)
		route(t, "部署", sessiondb.SearchOptions{}, false, s.deployCLI, s.deployTG, s.deployTool, s.deployCron)
		route(t, "部署", sessiondb.SearchOptions{Sources: []string{"telegram"}}, false, s.deployTG)
	})
	t.Run("the scan ORs tokens", func(t *testing.T) {
		route(t, "昨晚 通信", sessiondb.SearchOptions{}, false, s.lastNight1, s.lastNight2, s.agent)
	})
	t.Run("the scan orders newest first", func(t *testing.T) {
		if got, want := sbIDs(s.search(t, "昨晚", sessiondb.SearchOptions{Sort: "oldest"})), []int64{s.lastNight2, s.lastNight1}; !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %v, want %v (sort is ignored by the CJK scan)", got, want)
		}
	})
	t.Run("Latin retry uses the trigram index", func(t *testing.T) {
		route(t, "youer", sessiondb.SearchOptions{}, true, s.youer)
		route(t, "you", sessiondb.SearchOptions{}, true, s.youer) // three characters: the least it takes
	})
	t.Run("three CJK characters are the trigram route's least", func(t *testing.T) {
		route(t, "记忆断", sessiondb.SearchOptions{}, true, s.memory)
		route(t, "部署服", sessiondb.SearchOptions{}, true, s.deployCLI)
		route(t, "记忆断 OR 部署服", sessiondb.SearchOptions{}, true, s.memory, s.deployCLI)
		// a Latin token beside them does not count as a short CJK token
		route(t, "通信协议 Agent", sessiondb.SearchOptions{}, true, s.agent)
		// one token of two CJK characters sends the whole query to the scan
		route(t, "记忆断 部署", sessiondb.SearchOptions{}, false, s.memory, s.deployCLI, s.deployTG, s.deployTool, s.deployCron)
	})
}

// TestSearchBehaviourBigramIndexUsage: a 2-character CJK query on a live
// bigram index is answered by messages_fts_cjk in rank order, not by a scan
// (which would order newest first).
func TestSearchBehaviourBigramIndexUsage(t *testing.T) {
	s := sbOpen(t)
	s.session("a", "cli")
	dense := s.add(sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "通信 通信 通信", Timestamp: 1700000100})
	sparse := s.add(sessiondb.NewMessage{SessionID: "a", Role: "user",
		Content: "今天我们在会议上讨论了很多事情，其中包括通信的问题以及别的安排和计划，还有预算", Timestamp: 1700000200})
	for i := 0; i < 10; i++ {
		s.add(sessiondb.NewMessage{SessionID: "a", Role: "assistant", Content: fmt.Sprintf("无关的回复第%d条", i), Timestamp: 1700000300 + float64(i)})
	}

	t.Run("query plan uses the virtual table index", func(t *testing.T) {
		rows, err := s.raw.Query(`EXPLAIN QUERY PLAN SELECT rowid FROM messages_fts_cjk WHERE messages_fts_cjk MATCH '"通信"'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		if got := strings.Join(plan, "; "); !strings.Contains(got, "VIRTUAL TABLE INDEX") {
			t.Errorf("plan = %q, want a VIRTUAL TABLE INDEX lookup", got)
		}
	})
	t.Run("rank order, not newest first", func(t *testing.T) {
		hits := s.search(t, "通信", sessiondb.SearchOptions{})
		if got, want := sbIDs(hits), []int64{dense, sparse}; !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %v, want %v (the older message holds the term three times)", got, want)
		}
		for _, h := range hits {
			if got := sbSnippet(h); !strings.Contains(got, ">>>通信<<<") {
				t.Errorf("hit %d snippet = %q, want >>>通信<<<", h.ID, got)
			}
		}
	})
	t.Run("sort newest still applies", func(t *testing.T) {
		if got, want := sbIDs(s.search(t, "通信", sessiondb.SearchOptions{Sort: "newest"})), []int64{sparse, dense}; !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %v, want %v", got, want)
		}
	})
	t.Run("a lone character takes the scan, newest first", func(t *testing.T) {
		if got, want := sbIDs(s.search(t, "通", sessiondb.SearchOptions{})), []int64{sparse, dense}; !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %v, want %v", got, want)
		}
	})
}

// TestSearchBehaviourStale: with fts_stale set the search scans with LIKE,
// keeping the boolean shape: OR groups, AND within, NOT negates.
func TestSearchBehaviourStale(t *testing.T) {
	s := sbOpen(t)
	s.session("a", "cli")
	m1 := s.msg("a", "user", "alpha beta")
	m2 := s.msg("a", "user", "alpha gamma")
	m3 := s.msg("a", "user", "charlie delta")
	m4 := s.msg("a", "user", "charlie echo")
	m5 := s.msg("a", "assistant", "ALPHA BETA in capitals")
	m6 := s.add(sessiondb.NewMessage{SessionID: "a", Role: "tool", Content: strings.Repeat("x ", 5000) + "deepstale", ToolName: "t", ToolCallID: "c"})
	m7 := s.msg("a", "user", "记忆断裂 alpha")
	s.exec(t, "INSERT INTO state_meta(key, value) VALUES('fts_stale', '1')")

	for _, tt := range []struct {
		q    string
		o    sessiondb.SearchOptions
		want []int64
	}{
		{"alpha beta OR charlie NOT delta", sessiondb.SearchOptions{}, []int64{m5, m4, m1}},
		{"NOT NOT alpha", sessiondb.SearchOptions{}, []int64{}},           // "NOT alpha" reaches the scan: all terms negated
		{"NOT alpha", sessiondb.SearchOptions{}, []int64{m7, m5, m2, m1}}, // the sanitiser drops a leading NOT, as Hermes does
		{"charlie NOT delta", sessiondb.SearchOptions{}, []int64{m4}},
		{"alpha", sessiondb.SearchOptions{}, []int64{m7, m5, m2, m1}},
		{"alpha", sessiondb.SearchOptions{Sort: "oldest"}, []int64{m1, m2, m5, m7}},
		{"alpha AND gamma", sessiondb.SearchOptions{}, []int64{m2}},
		{`"alpha beta"`, sessiondb.SearchOptions{}, []int64{m5, m1}},
		{"alph*", sessiondb.SearchOptions{Limit: 2}, []int64{m7, m5}},
		{"alpha", sessiondb.SearchOptions{Limit: 2, Offset: 1}, []int64{m5, m2}},
		{"alpha", sessiondb.SearchOptions{Roles: []string{"assistant"}}, []int64{m5}},
		{"deepstale", sessiondb.SearchOptions{}, []int64{m6}},
		{"记忆", sessiondb.SearchOptions{}, []int64{m7}},
		{"记忆断裂 OR charlie", sessiondb.SearchOptions{}, []int64{m7, m4, m3}},
	} {
		t.Run(fmt.Sprintf("%s %+v", tt.q, tt.o), func(t *testing.T) {
			hits := s.search(t, tt.q, tt.o)
			if got := sbIDs(hits); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ids = %v, want %v", got, tt.want)
			}
			for _, h := range hits {
				if strings.Contains(sbSnippet(h), ">>>") {
					t.Errorf("hit %d snippet %q comes from an index, want a scan", h.ID, sbSnippet(h))
				}
			}
		})
	}
	t.Run("snippet is cut from the content around the first term", func(t *testing.T) {
		hits := s.search(t, "gamma", sessiondb.SearchOptions{})
		if len(hits) != 1 || sbSnippet(hits[0]) != "alpha gamma" {
			t.Errorf("hits = %+v, want one with snippet %q", hits, "alpha gamma")
		}
	})
}

// TestSearchBehaviourPendingBackfill: rows in the deferred-rebuild gap
// (ids in (progress, high_water]) are not in the word index; search tops
// the hits up from them with a LIKE scan.
func TestSearchBehaviourPendingBackfill(t *testing.T) {
	s := sbOpen(t)
	s.session("a", "cli")
	indexed := s.msg("a", "user", "gapword indexed row")
	// The triggers index a row iff id <= progress or id > high_water: every
	// row appended from now on lands in the gap.
	s.exec(t, "INSERT INTO state_meta(key, value) VALUES('fts_rebuild_high_water', '1000000'), ('fts_rebuild_progress', ?)", fmt.Sprint(indexed))
	g1 := s.msg("a", "user", "gapword pending one")
	g2 := s.add(sessiondb.NewMessage{SessionID: "a", Role: "tool", Content: "gapword pending tool output", ToolName: "t", ToolCallID: "c"})
	g3 := s.msg("a", "assistant", "gapword pending 部署")
	hiddenGap := s.add(sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "gapword pending hidden", DisplayKind: "hidden"})
	if got, want := count(t, s.raw, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'gapword'"), 1; got != want {
		t.Fatalf("word index holds %d gapword rows, want %d (the gap rows must be unindexed)", got, want)
	}

	t.Run("index hits first, then the gap newest first", func(t *testing.T) {
		hits := s.search(t, "gapword", sessiondb.SearchOptions{})
		if got, want := sbIDs(hits), []int64{indexed, g3, g2, g1}; !reflect.DeepEqual(got, want) {
			t.Fatalf("ids = %v, want %v", got, want)
		}
		if got := sbSnippet(hits[0]); !strings.Contains(got, ">>>gapword<<<") {
			t.Errorf("indexed hit snippet = %q, want a marked match", got)
		}
		for _, h := range hits[1:] {
			if got := sbSnippet(h); strings.Contains(got, ">>>") || !strings.Contains(got, "gapword") {
				t.Errorf("gap hit %d snippet = %q, want the content around gapword", h.ID, got)
			}
		}
		if sbHas(hits, hiddenGap) {
			t.Errorf("hidden gap row %d found", hiddenGap)
		}
	})
	t.Run("the top-up stops at the limit", func(t *testing.T) {
		if got, want := sbIDs(s.search(t, "gapword", sessiondb.SearchOptions{Limit: 2})), []int64{indexed, g3}; !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %v, want %v", got, want)
		}
	})
	t.Run("gap terms are ANDed", func(t *testing.T) {
		if got, want := sbIDs(s.search(t, "gapword pending", sessiondb.SearchOptions{})), []int64{g3, g2, g1}; !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %v, want %v", got, want)
		}
	})
	t.Run("filters apply to the gap", func(t *testing.T) {
		if got, want := sbIDs(s.search(t, "gapword", sessiondb.SearchOptions{Roles: []string{"user"}})), []int64{indexed, g1}; !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %v, want %v", got, want)
		}
	})
	t.Run("a CJK hit also in the gap is not repeated", func(t *testing.T) {
		if got, want := sbIDs(s.search(t, "部署", sessiondb.SearchOptions{})), []int64{g3}; !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %v, want %v", got, want)
		}
	})
	t.Run("without the keys the gap rows are lost to the word index", func(t *testing.T) {
		// The index now misses g1..g3 for good; no integrity check here.
		s.exec(t, "DELETE FROM state_meta WHERE key IN ('fts_rebuild_high_water', 'fts_rebuild_progress')")
		if got, want := sbIDs(s.search(t, "gapword", sessiondb.SearchOptions{})), []int64{indexed}; !reflect.DeepEqual(got, want) {
			t.Errorf("ids = %v, want %v: the earlier hits came from the top-up", got, want)
		}
		if got := s.search(t, "output", sessiondb.SearchOptions{}); len(got) != 0 {
			t.Errorf("tool gap row found without the top-up: %v", sbIDs(got))
		}
	})
}

// TestSearchBehaviourToolRole: the word index holds the first 8192
// characters of a tool row; a tool-role search scans the whole text.
func TestSearchBehaviourToolRole(t *testing.T) {
	s := sbOpen(t)
	s.session("a", "cli")
	body := "shallowmarker " + strings.Repeat("filler ", 1500) + "deepmarker " + strings.Repeat("padding ", 1200)
	if n := len(body); n < 20000 || strings.Index(body, "deepmarker") < 8192 {
		t.Fatalf("tool output has %d characters, deepmarker at %d", n, strings.Index(body, "deepmarker"))
	}
	tool := s.add(sessiondb.NewMessage{SessionID: "a", Role: "tool", Content: body, ToolName: "shell", ToolCallID: "c"})
	user := s.msg("a", "user", "deepmarker mentioned by the user")

	if got, want := sbIDs(s.search(t, "deepmarker", sessiondb.SearchOptions{Roles: []string{"tool"}})), []int64{tool}; !reflect.DeepEqual(got, want) {
		t.Errorf("role tool: ids = %v, want %v", got, want)
	}
	if got, want := sbSet(s.search(t, "deepmarker", sessiondb.SearchOptions{Roles: []string{"tool", "user"}})), sbSorted(tool, user); !reflect.DeepEqual(got, want) {
		t.Errorf("roles tool+user: ids = %v, want %v", got, want)
	}
	if got, want := sbIDs(s.search(t, "deepmarker", sessiondb.SearchOptions{})), []int64{user}; !reflect.DeepEqual(got, want) {
		t.Errorf("default (word index holds a prefix of tool rows): ids = %v, want %v", got, want)
	}
	if got, want := sbIDs(s.search(t, "shallowmarker", sessiondb.SearchOptions{})), []int64{tool}; !reflect.DeepEqual(got, want) {
		t.Errorf("shallowmarker: ids = %v, want %v", got, want)
	}
	hits := s.search(t, "deepmarker", sessiondb.SearchOptions{Roles: []string{"tool"}})
	if len(hits) == 1 && !strings.Contains(sbSnippet(hits[0]), "deepmarker") {
		t.Errorf("snippet = %q, want the text around deepmarker", sbSnippet(hits[0]))
	}
}

// TestSearchBehaviourReasoning: IncludeReasoning also scans an assistant's
// reasoning, reasoning_content and the text of reasoning_details.
func TestSearchBehaviourReasoning(t *testing.T) {
	s := sbOpen(t)
	s.session("a", "cli")
	str := func(v string) *string { return &v }
	assistant := s.add(sessiondb.NewMessage{SessionID: "a", Role: "assistant", Content: "the answer", Reasoning: str("first I thought about reasonmarker carefully")})
	s.add(sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "a question", Reasoning: str("reasonmarker in a user row")})
	contentRow := s.add(sessiondb.NewMessage{SessionID: "a", Role: "assistant", Content: "answer", ReasoningContent: str("rcmarker thinking")})
	details := s.add(sessiondb.NewMessage{SessionID: "a", Role: "assistant", Content: "answer",
		ReasoningDetails: json.RawMessage(`[{"type":"reasoning.text","text":"detailmarker deep down","keymarkerzz":1}]`)})

	for _, tt := range []struct {
		q    string
		o    sessiondb.SearchOptions
		want []int64
	}{
		{"reasonmarker", sessiondb.SearchOptions{IncludeReasoning: true}, []int64{assistant}},
		{"reasonmarker", sessiondb.SearchOptions{}, []int64{}},
		{"rcmarker", sessiondb.SearchOptions{IncludeReasoning: true}, []int64{contentRow}},
		{"detailmarker", sessiondb.SearchOptions{IncludeReasoning: true}, []int64{details}},
		{"keymarkerzz", sessiondb.SearchOptions{IncludeReasoning: true}, []int64{}},
		{"reasonmarker", sessiondb.SearchOptions{IncludeReasoning: true, Roles: []string{"user"}}, []int64{}},
		{"answer", sessiondb.SearchOptions{IncludeReasoning: true}, []int64{details, contentRow, assistant}},
	} {
		t.Run(fmt.Sprintf("%s %+v", tt.q, tt.o), func(t *testing.T) {
			hits := s.search(t, tt.q, tt.o)
			if got := sbIDs(hits); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ids = %v, want %v", got, tt.want)
			}
			for _, h := range hits {
				if got := sbSnippet(h); !strings.Contains(strings.ToLower(got), tt.q) {
					t.Errorf("hit %d snippet = %q, want the text around %q", h.ID, got, tt.q)
				}
			}
		})
	}
}
