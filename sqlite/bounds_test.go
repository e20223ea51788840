package sqlite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
	"github.com/sessiondb/sessiondb/sqlite"
)

func nestedJSON(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// wantInvalid fails unless err is EINVALID and says every one of words.
func wantInvalid(t *testing.T, what string, err error, words ...string) {
	t.Helper()
	if sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Fatalf("%s: %v (code %q), want EINVALID", what, err, sessiondb.ErrorCode(err))
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not say %q", what, err, w)
		}
	}
}

// TestAppendRefusesDeepJSON: every JSON field of a message and of a session
// is refused past MaxJSONDepth with an error naming the field, its depth and
// the limit, and nothing is written; at the limit it is accepted.
func TestAppendRefusesDeepJSON(t *testing.T) {
	db := MustOpen(t)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	deep, ok := json.RawMessage(nestedJSON(10000)), json.RawMessage(nestedJSON(sessiondb.MaxJSONDepth))
	wrapped := func(raw json.RawMessage) json.RawMessage { b, _ := json.Marshal(string(raw)); return b }
	fields := map[string]func(m *sessiondb.NewMessage, v json.RawMessage){
		"tool_calls":            func(m *sessiondb.NewMessage, v json.RawMessage) { m.ToolCalls = v },
		"reasoning_details":     func(m *sessiondb.NewMessage, v json.RawMessage) { m.ReasoningDetails = v },
		"codex_reasoning_items": func(m *sessiondb.NewMessage, v json.RawMessage) { m.CodexReasoningItems = v },
		"codex_message_items":   func(m *sessiondb.NewMessage, v json.RawMessage) { m.CodexMessageItems = v },
		"display_metadata":      func(m *sessiondb.NewMessage, v json.RawMessage) { m.DisplayMetadata = v },
		"structured message content": func(m *sessiondb.NewMessage, v json.RawMessage) {
			m.Content = v
		},
	}
	for name, set := range fields {
		t.Run(name, func(t *testing.T) {
			for _, v := range []json.RawMessage{deep, wrapped(deep)} {
				if name == "structured message content" && v[0] == '"' {
					continue // a string is text, not JSON
				}
				m := sessiondb.NewMessage{SessionID: "s", Role: "assistant"}
				set(&m, v)
				_, err := db.AppendMessage(ctx, m)
				wantInvalid(t, "AppendMessage", err, name, "10000 levels", "at most 256")
				_, err = db.AppendMessages(ctx, "s", []sessiondb.NewMessage{m})
				wantInvalid(t, "AppendMessages", err, name, "10000 levels")
			}
			m := sessiondb.NewMessage{SessionID: "s", Role: "assistant"}
			set(&m, ok)
			if _, err := db.AppendMessage(ctx, m); err != nil {
				t.Fatalf("depth %d: %v", sessiondb.MaxJSONDepth, err)
			}
		})
	}
	if got, want := len(mustMessages(t, db, "s")), len(fields); got != want {
		t.Fatalf("%d messages stored, want %d (only those at the limit)", got, want)
	}
	for _, ns := range []sessiondb.NewSession{
		{ID: "m", Source: "cli", ModelConfig: `{"a":` + nestedJSON(300) + `}`},
		{ID: "o", Source: "cli", OriginJSON: `{"b":` + nestedJSON(300) + `}`},
	} {
		_, err := db.CreateSession(ctx, ns)
		wantInvalid(t, "CreateSession "+ns.ID, err, "301 levels", "at most 256")
	}
}

func mustMessages(t *testing.T, db *sqlite.DB, id string) []*sessiondb.Message {
	t.Helper()
	ms, err := db.Messages(ctx, id, sessiondb.MessageFilter{IncludeInactive: true})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestAppendRefusesOversizedMessage: a message whose text fields together
// are over Options.MaxMessageBytes is refused, appended alone, in a batch
// or imported; one at the limit is stored.
func TestAppendRefusesOversizedMessage(t *testing.T) {
	const limit = 1000
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), sqlite.Options{Now: func() time.Time { return fixedNow }, MaxMessageBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	role := len(sessiondb.RoleTool)
	fits := sessiondb.NewMessage{SessionID: "s", Role: sessiondb.RoleTool, Content: strings.Repeat("x", limit-role)}
	if _, err := db.AppendMessage(ctx, fits); err != nil {
		t.Fatalf("a message of %d bytes: %v", limit, err)
	}
	over := []sessiondb.NewMessage{
		{SessionID: "s", Role: sessiondb.RoleTool, Content: strings.Repeat("x", limit-role+1)},
		{SessionID: "s", Role: sessiondb.RoleTool, Content: strings.Repeat("x", limit/2), ToolName: strings.Repeat("n", limit/2)},
		{SessionID: "s", Role: sessiondb.RoleTool, Content: []any{map[string]any{"type": "text", "text": strings.Repeat("x", limit)}}},
	}
	for i, m := range over {
		_, err := db.AppendMessage(ctx, m)
		wantInvalid(t, fmt.Sprintf("AppendMessage %d", i), err, "over the limit of 1000 bytes", "MaxMessageBytes", sqlite.MaxMessageSizeEnv)
		_, err = db.AppendMessages(ctx, "s", []sessiondb.NewMessage{fits, m})
		wantInvalid(t, fmt.Sprintf("AppendMessages %d", i), err, "over the limit")
	}
	in := `{"id":"imp","source":"cli","started_at":1,"messages":[{"role":"tool","content":"` + strings.Repeat("x", limit) + `"}]}`
	rep, err := db.ImportSessions(ctx, strings.NewReader(in), sqlite.ImportOptions{})
	if err != nil || rep.Failed != 1 || !strings.Contains(rep.Errors[0].Message, "over the limit") {
		t.Fatalf("import of an oversized message: %v, %+v", err, rep)
	}
	if got := len(mustMessages(t, db, "s")); got != 1 {
		t.Fatalf("%d messages stored, want 1", got)
	}
}

// TestReadsSurviveDeepStoredJSON: values another program stored (here with
// raw SQL) nested far past MaxJSONDepth, or beyond what Go's JSON reader
// takes, are read back as their raw text: every read path of the session
// works, and its JSON Lines export imports into a new database as it was.
func TestReadsSurviveDeepStoredJSON(t *testing.T) {
	for _, depth := range []int{sessiondb.MaxJSONDepth + 1, 9999, 10000, 20000} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			db := MustOpen(t)
			if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
				t.Fatal(err)
			}
			db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "deploy the docker app"})
			deep := nestedJSON(depth)
			raw := rawDB(t, db.Path())
			if _, err := raw.Exec(`INSERT INTO messages (session_id, role, content, tool_calls, reasoning_details,
				codex_reasoning_items, codex_message_items, display_metadata, timestamp, active)
				VALUES ('s', 'assistant', ?, ?, ?, ?, ?, ?, 1777593700, 1)`,
				sessiondb.ContentJSONPrefix+deep, deep, deep, deep, deep, deep); err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Exec(`UPDATE sessions SET model_config = ? WHERE id = 's'`, `{"a":`+deep+`}`); err != nil {
				t.Fatal(err)
			}
			db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "and after it"})

			ms := mustMessages(t, db, "s")
			if len(ms) != 3 {
				t.Fatalf("%d messages, want 3", len(ms))
			}
			var tc string
			if err := json.Unmarshal(ms[1].ToolCalls, &tc); err != nil || tc != deep {
				t.Fatalf("tool_calls = %.40s…, want the stored text as a JSON string", ms[1].ToolCalls)
			}
			if got, ok := ms[1].Content.(string); !ok || got != sessiondb.ContentJSONPrefix+deep {
				t.Fatalf("content = %.40v, want the stored text", ms[1].Content)
			}
			if _, err := json.MarshalIndent(map[string]any{"messages": ms}, "", "  "); err != nil {
				t.Fatalf("show --json: %v", err)
			}
			conv, err := db.Conversation(ctx, "s", sessiondb.ConversationOptions{IncludeAncestors: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := json.MarshalIndent(conv, "", "  "); err != nil {
				t.Fatalf("show --conversation: %v", err)
			}
			hits, err := db.Search(ctx, "docker", sessiondb.SearchOptions{})
			if err != nil || len(hits) != 1 || len(hits[0].Context) != 2 {
				t.Fatalf("search: %v, %+v", err, hits)
			}

			exported := map[string][]byte{}
			for _, format := range export.Formats {
				var buf bytes.Buffer
				enc, err := export.NewEncoder(format, &buf, export.Options{Redact: format == "md"})
				if err != nil {
					t.Fatal(err)
				}
				err = db.ExportSessions(ctx, sqlite.ExportSelection{SessionID: "s"}, func(x *sqlite.ExportedSession) error {
					return enc.Encode(&export.Item{Session: x.Session, Messages: x.Messages})
				})
				if err == nil {
					err = enc.Close()
				}
				if err != nil {
					t.Fatalf("export %s: %v", format, err)
				}
				exported[format] = buf.Bytes()
			}

			back := MustOpen(t)
			rep, err := back.ImportSessions(ctx, bytes.NewReader(exported["jsonl"]), sqlite.ImportOptions{})
			if err != nil || rep.Imported != 1 || rep.Failed != 0 || rep.Messages != 3 {
				t.Fatalf("import of the export: %v, %+v", err, rep)
			}
			var cols [6]string
			if err := rawDB(t, back.Path()).QueryRow(`SELECT content, tool_calls, reasoning_details, codex_reasoning_items,
				codex_message_items, display_metadata FROM messages WHERE role = 'assistant'`).Scan(&cols[0], &cols[1], &cols[2], &cols[3], &cols[4], &cols[5]); err != nil {
				t.Fatal(err)
			}
			if cols[0] != sessiondb.ContentJSONPrefix+deep {
				t.Errorf("imported content = %.40q…, want the original text", cols[0])
			}
			for i, c := range cols[1:] {
				if c != deep {
					t.Errorf("imported column %d = %.40q…, want the original text", i+1, c)
				}
			}
			s, err := back.Session(ctx, "s")
			if err != nil || s.ModelConfig == nil || *s.ModelConfig != `{"a":`+deep+`}` {
				t.Errorf("imported model_config: %v", err)
			}
		})
	}
}

// TestSearchCollapsesRepeats: a query repeating its terms finds what the
// query without the repeats finds, on the index and on the LIKE routes.
func TestSearchCollapsesRepeats(t *testing.T) {
	db := MustOpen(t)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"alpha beta", "alpha gamma", "beta gamma", "delta", "alphabet soup"} {
		role := sessiondb.RoleUser
		if i%2 == 1 {
			role = sessiondb.RoleTool
		}
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: role, Content: text, Timestamp: float64(1777593600 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ repeated, plain string }{
		{strings.Repeat("alph* OR ", 340) + "alph*", "alph*"},
		{strings.Repeat("alpha ", 200) + "beta", "alpha beta"},
		{"gamma NOT beta NOT beta NOT beta", "gamma NOT beta"},
		{strings.Repeat("alpha gamma OR ", 100) + "delta", "alpha gamma OR delta"},
	} {
		if sessiondb.SanitizeQuery(tt.repeated) != sessiondb.SanitizeQuery(tt.plain) {
			t.Errorf("SanitizeQuery(%.40q…) = %q, want %q", tt.repeated, sessiondb.SanitizeQuery(tt.repeated), sessiondb.SanitizeQuery(tt.plain))
		}
		for _, o := range []sessiondb.SearchOptions{{}, {Roles: []string{"tool", "user"}}, {IncludeReasoning: true}} {
			want := search(t, db, tt.plain, o)
			got := search(t, db, tt.repeated, o)
			if fmt.Sprint(sbIDs(got)) != fmt.Sprint(sbIDs(want)) || len(want) == 0 {
				t.Errorf("Search(%.40q…, %+v) = %v, want %v as for %q", tt.repeated, o, sbIDs(got), sbIDs(want), tt.plain)
			}
		}
	}
}

// TestSearchRefusesTooManyTerms: past MaxQueryTerms distinct terms a
// search is refused, on every route, saying the query is too complex and
// how to narrow it.
func TestSearchRefusesTooManyTerms(t *testing.T) {
	db := MustOpen(t)
	words := make([]string, sessiondb.MaxQueryTerms+1)
	for i := range words {
		words[i] = fmt.Sprintf("word%d*", i)
	}
	for _, q := range []string{strings.Join(words, " OR "), `"` + strings.Join(words, " ") + `"`, strings.Join(words[1:], " ") + " 项目"} {
		for _, o := range []sessiondb.SearchOptions{{}, {Roles: []string{"tool"}}, {IncludeReasoning: true}} {
			_, err := db.Search(ctx, q, o)
			wantInvalid(t, fmt.Sprintf("Search(%.30q…, %+v)", q, o), err, "too complex", "33 terms", "at most 32", "Narrow it")
		}
	}
	if _, err := db.Search(ctx, strings.Join(words[1:], " OR "), sessiondb.SearchOptions{}); err != nil {
		t.Fatalf("%d terms: %v", sessiondb.MaxQueryTerms, err)
	}
}

// TestSearchDeadline: a search whose context deadline has passed, before
// it starts or while it runs, stops with ETIMEOUT saying how to narrow the
// query; a cancelled context is not a timeout.
func TestSearchDeadline(t *testing.T) {
	db := MustOpen(t)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	var ms []sessiondb.NewMessage
	for i := range 2000 {
		ms = append(ms, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: fmt.Sprintf("alpha%d beta%d docker 项目%d", i, i%7, i)})
	}
	if _, err := db.AppendMessages(ctx, "s", ms); err != nil {
		t.Fatal(err)
	}
	routes := []sessiondb.SearchOptions{{}, {Roles: []string{"tool"}}, {IncludeReasoning: true}, {Sort: "newest"}}
	queries := []string{"docker", "a* OR b*", "项目", "山", "项目1 OR 项目2"}

	expired, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
	defer cancel()
	for _, q := range queries {
		for _, o := range routes {
			_, err := db.Search(expired, q, o)
			if sessiondb.ErrorCode(err) != sessiondb.ETIMEOUT || !errors.Is(err, context.DeadlineExceeded) ||
				!strings.Contains(err.Error(), "narrow the query") {
				t.Fatalf("Search(%q, %+v) past its deadline = %v (code %q), want ETIMEOUT saying how to narrow it", q, o, err, sessiondb.ErrorCode(err))
			}
		}
	}

	// The deadline passes while the search runs: the hook holds its first
	// statement until then.
	for _, q := range queries {
		running, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		sqlite.SetSearchHook(t, func(string, []any) { <-running.Done() })
		_, err := db.Search(running, q, sessiondb.SearchOptions{})
		cancel()
		if sessiondb.ErrorCode(err) != sessiondb.ETIMEOUT || !strings.Contains(err.Error(), "took longer than") {
			t.Fatalf("Search(%q) running past its deadline = %v (code %q), want ETIMEOUT naming the budget", q, err, sessiondb.ErrorCode(err))
		}
	}
	sqlite.SetSearchHook(t, nil)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.Search(cancelled, "docker", sessiondb.SearchOptions{}); err == nil || sessiondb.ErrorCode(err) == sessiondb.ETIMEOUT {
		t.Fatalf("cancelled search = %v, want an error that is not ETIMEOUT", err)
	}
	if hits := search(t, db, "docker", sessiondb.SearchOptions{}); len(hits) != sessiondb.DefaultSearchLimit {
		t.Fatalf("the store after timeouts: %d hits", len(hits))
	}
}

// TestAppendSetsDisplayOrder: appends give each row the id AUTOINCREMENT
// would (never one issued before, even when deleted) and the display_order
// Hermes' insert trigger gives a row without a display identity (its id),
// as a row inserted through the trigger gets.
func TestAppendSetsDisplayOrder(t *testing.T) {
	db := MustOpen(t)
	raw := rawDB(t, db.Path())
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	add := func(n int) {
		var ms []sessiondb.NewMessage
		for i := range n {
			ms = append(ms, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: fmt.Sprint("m", i)})
		}
		if n == 1 {
			if _, err := db.AppendMessage(ctx, ms[0]); err != nil {
				t.Fatal(err)
			}
		} else if _, err := db.AppendMessages(ctx, "s", ms); err != nil {
			t.Fatal(err)
		}
	}
	add(1)
	add(3)
	if _, err := raw.Exec(`INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s', 'user', 'by the trigger', 1)`); err != nil {
		t.Fatal(err)
	}
	add(2)
	if _, err := raw.Exec(`DELETE FROM messages WHERE id = (SELECT MAX(id) FROM messages)`); err != nil {
		t.Fatal(err)
	}
	add(1)
	rows, err := raw.Query(`SELECT id, display_order FROM messages ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id, order int64
		if err := rows.Scan(&id, &order); err != nil {
			t.Fatal(err)
		}
		if order != id {
			t.Errorf("message %d: display_order %d, want its id", id, order)
		}
		ids = append(ids, id)
	}
	if got, want := fmt.Sprint(ids), "[1 2 3 4 5 6 8]"; got != want {
		t.Fatalf("ids %s, want %s (7 was deleted and is not reused)", got, want)
	}
}

// TestExportPagesLargeMessages: an export reads a session of large messages
// a few at a time (40 MiB here, in pages of 16 MiB), and yields every
// message once, in order.
func TestExportPagesLargeMessages(t *testing.T) {
	db := MustOpen(t)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		m := sessiondb.NewMessage{SessionID: "s", Role: "tool", Content: fmt.Sprintf("%d:", i) + strings.Repeat("x", 1<<20)}
		if _, err := db.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	err := db.ExportSessions(ctx, sqlite.ExportSelection{SessionID: "s"}, func(x *sqlite.ExportedSession) error {
		i := 0
		for m, err := range x.Messages {
			if err != nil {
				return err
			}
			if got, want := strings.SplitN(m.Content.(string), ":", 2)[0], fmt.Sprint(i); got != want {
				return fmt.Errorf("message %d is %s", i, got)
			}
			i++
		}
		if i != n {
			return fmt.Errorf("%d messages exported, want %d", i, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
