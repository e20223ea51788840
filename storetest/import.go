package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
)

// exportAll writes every session of the store as JSON Lines
// (sessiondb.Exporter), as `sessiondb export --all` does.
func (h *harness) exportAll() []byte {
	h.t.Helper()
	ex, ok := h.Store.(sessiondb.Exporter)
	if !ok {
		h.t.Fatalf("%T does not implement sessiondb.Exporter", h.Store)
	}
	var buf bytes.Buffer
	enc := export.NewJSONL(&buf, export.Options{})
	err := ex.ExportSessions(h.t.Context(), sessiondb.ExportSelection{}, func(x *sessiondb.ExportedSession) error {
		it := export.ItemOf(x)
		return enc.Encode(&it)
	})
	if err != nil {
		h.t.Fatalf("ExportSessions: %v", err)
	}
	if err := enc.Close(); err != nil {
		h.t.Fatal(err)
	}
	return buf.Bytes()
}

// exportLineage writes the compression lineage of id as one object.
func (h *harness) exportLineage(id string) []byte {
	h.t.Helper()
	var buf bytes.Buffer
	enc := export.NewJSONL(&buf, export.Options{})
	err := h.Store.(sessiondb.Exporter).ExportSessions(h.t.Context(), sessiondb.ExportSelection{SessionID: id, Lineage: true},
		func(x *sessiondb.ExportedSession) error {
			it := export.ItemOf(x)
			return enc.Encode(&it)
		})
	if err != nil {
		h.t.Fatalf("ExportSessions(lineage of %q): %v", id, err)
	}
	if err := enc.Close(); err != nil {
		h.t.Fatal(err)
	}
	return buf.Bytes()
}

// importData imports data (sessiondb.Importer), failing t on an error that
// stops the import.
func (h *harness) importData(data string, o sessiondb.ImportOptions) *sessiondb.ImportReport {
	h.t.Helper()
	rep, err := h.importErr(data, o)
	if err != nil {
		h.t.Fatalf("ImportSessions: %v (report %+v)", err, rep)
	}
	return rep
}

func (h *harness) importErr(data string, o sessiondb.ImportOptions) (*sessiondb.ImportReport, error) {
	h.t.Helper()
	im, ok := h.Store.(sessiondb.Importer)
	if !ok {
		h.t.Fatalf("%T does not implement sessiondb.Importer", h.Store)
	}
	rep, err := im.ImportSessions(h.t.Context(), strings.NewReader(data), o)
	if rep == nil {
		h.t.Fatalf("ImportSessions returned no report (err %v)", err)
	}
	return rep, err
}

// snapshot is what a store holds, read through the contract: the export of
// every session (every column, every active message with its id), the
// session list and the hits of every search of importQueries.
type snapshot struct {
	export []byte
	list   []sessiondb.SessionSummary
	hits   map[string][]sessiondb.SearchHit
}

// importQueries cover the search routes over the imported corpus: words,
// a phrase, a prefix, a hyphenated and dotted term, CJK of one, two and
// three characters, and the newest sort.
var importQueries = []string{"docker", `"docker compose"`, "rollo*", "rollout-plan.v2", "目", "项目", "部署项目", "structured"}

func (h *harness) snapshot() snapshot {
	h.t.Helper()
	rows, _ := h.list(sessiondb.ListOptions{Limit: -1, IncludeArchived: true, IncludeChildren: true, RawChains: true})
	s := snapshot{export: h.exportAll(), list: rows, hits: map[string][]sessiondb.SearchHit{}}
	for _, q := range importQueries {
		for _, sort := range []string{"", "newest"} {
			hits, err := h.Search(h.t.Context(), q, sessiondb.SearchOptions{Sort: sort, Limit: 100})
			if err != nil {
				h.t.Fatalf("Search(%q): %v", q, err)
			}
			s.hits[q+" sort="+sort] = hits
		}
	}
	return s
}

// same fails unless two snapshots are equal.
func (s snapshot) same(t *testing.T, what string, o snapshot) {
	t.Helper()
	if !bytes.Equal(s.export, o.export) {
		t.Errorf("%s: the exports differ:\n%s\n---\n%s", what, s.export, o.export)
	}
	equal(t, what+": sessions listed", o.list, s.list)
	for q, hits := range s.hits {
		equal(t, what+": hits of "+q, o.hits[q], hits)
	}
}

// importCorpus fills a store with sessions whose message ids interleave:
// a compression lineage with a system prompt, a title, tool calls and
// reasoning, and a pinned, archived session of another source whose
// messages hold NUL, structured content and CJK.
func importCorpus(h *harness) {
	h.t.Helper()
	h.create(sessiondb.NewSession{ID: "imp-root", Source: "cli", Model: "m1", ModelConfig: `{"temperature":0.5}`,
		SystemPrompt: "You are a careful deployer.", SessionKey: "agent:main:cli", StartedAt: base})
	h.create(sessiondb.NewSession{ID: "imp-other", Source: "telegram", ChatID: "42", StartedAt: base + 10})
	h.title("imp-root", "Deploy the project")
	h.add("imp-root", user("部署项目 with docker compose", base+1))
	h.add("imp-other", sessiondb.NewMessage{Role: sessiondb.RoleUser, Content: "nul\x00byte and 项目 notes", Timestamp: base + 11})
	reasoning := "check the compose file first"
	h.add("imp-root", sessiondb.NewMessage{Role: sessiondb.RoleAssistant, Content: "running it", Timestamp: base + 2,
		ToolCalls: []byte(`[{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{\"cmd\":\"docker compose up\"}"}}]`),
		Reasoning: &reasoning, FinishReason: "tool_calls"})
	h.add("imp-other", sessiondb.NewMessage{Role: sessiondb.RoleAssistant, Timestamp: base + 12,
		Content: []any{map[string]any{"type": "text", "text": "structured reply"}}})
	h.add("imp-root", sessiondb.NewMessage{Role: sessiondb.RoleTool, ToolCallID: "c1", ToolName: "terminal", Content: "started 3 containers", Timestamp: base + 3})
	if err := h.UpdateTokenCounts(h.t.Context(), "imp-root", sessiondb.TokenUpdate{InputTokens: 120, OutputTokens: 30, APICallCount: 2}); err != nil {
		h.t.Fatal(err)
	}
	h.end("imp-root", sessiondb.EndReasonCompression)
	h.create(sessiondb.NewSession{ID: "imp-tip", Source: "cli", ParentSessionID: "imp-root", StartedAt: base + 20})
	h.add("imp-tip", user("follow the rollout-plan.v2 for the 项目", base+21))
	h.add("imp-other", user("one more docker question", base+13))
	if err := h.SetPinned(h.t.Context(), "imp-other", true); err != nil {
		h.t.Fatal(err)
	}
	if err := h.SetArchived(h.t.Context(), "imp-other", true); err != nil {
		h.t.Fatal(err)
	}
}

// line is one session object of a hand-written import: its fields
// (already JSON) and messages.
func line(fields string, messages ...string) string {
	return fmt.Sprintf(`{%s,"messages":[%s]}`, fields, strings.Join(messages, ","))
}

func testImport(t *testing.T, s *suite) {
	t.Run("an export imported into an empty store gives the same store", func(t *testing.T) {
		src := s.store(t)
		importCorpus(src)
		want := src.snapshot()
		for q, hits := range want.hits {
			if len(hits) == 0 {
				t.Errorf("query %s finds nothing in the corpus: the comparison would prove nothing", q)
			}
		}

		dst := s.store(t)
		rep := dst.importData(string(want.export), sessiondb.ImportOptions{KeepRuntimeState: true})
		if rep.Imported != 3 || rep.Messages != 7 || rep.Failed != 0 || rep.Renumbered != 0 || rep.Skipped != 0 ||
			len(rep.Errors) != 0 || len(rep.Warnings) != 0 {
			t.Fatalf("report %+v, want 3 sessions and 7 messages imported, nothing else", rep)
		}
		sameSet(t, "imported ids", rep.ImportedIDs, []string{"imp-root", "imp-other", "imp-tip"})
		want.same(t, "export → import", dst.snapshot())
		dst.wantCounters("imp-root", 3, 1)

		again := dst.importData(string(want.export), sessiondb.ImportOptions{})
		if again.Imported != 0 || again.Skipped != 3 || again.Messages != 0 || again.Failed != 0 {
			t.Errorf("second import: report %+v, want the 3 sessions skipped", again)
		}
		want.same(t, "a second import", dst.snapshot())
	})

	t.Run("runtime state is left out unless asked for", func(t *testing.T) {
		src := s.store(t)
		importCorpus(src)
		dst := s.store(t)
		dst.importData(string(src.exportAll()), sessiondb.ImportOptions{})
		r, o := dst.get("imp-root"), dst.get("imp-other")
		fields(t, "imported session",
			field{"imp-root session_key", str(r.SessionKey), "<nil>"},
			field{"imp-other chat_id", str(o.ChatID), "<nil>"},
			field{"imp-root title", str(r.Title), "Deploy the project"},
			field{"imp-root system prompt", str(r.SystemPrompt), "You are a careful deployer."})
	})

	t.Run("existing sessions are skipped, or replaced keeping their runtime state", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "c-keep", Source: "cli", SessionKey: "local-key", StartedAt: base})
		held := h.add("c-keep", user("already here", base+1), user("and here", base+2))
		h.create(sessiondb.NewSession{ID: "holder", Source: "cli", StartedAt: base})
		h.title("holder", "Taken")
		last := h.add("holder", user("held", base+3))[0]
		data := line(`"id":"c-keep","source":"cli","session_key":"file-key","title":"Kept title","started_at":1700000000`,
			`{"id":1,"role":"user","content":"from the file","timestamp":1700000001}`) + "\n" +
			line(`"id":"c-title","source":"cli","title":"Taken","started_at":1700000000`,
				`{"role":"user","content":"title clash","timestamp":1700000002}`) + "\n" +
			line(`"id":"c-new","source":"cli","session_key":"file-key-2","started_at":1700000000`,
				fmt.Sprintf(`{"id":%d,"role":"user","content":"first","timestamp":1700000003}`, held[0]),
				fmt.Sprintf(`{"id":%d,"role":"assistant","content":"second",`, held[1])+`"tool_calls":[{"id":"x","type":"function","function":{"name":"t","arguments":"{}"}}],"timestamp":1700000004}`,
				`{"id":9000,"role":"tool","tool_call_id":"x","content":"third","timestamp":1700000005}`) + "\n"
		before := h.snapshot()

		dry := h.importData(data, sessiondb.ImportOptions{DryRun: true})
		if !dry.DryRun || dry.Imported != 1 || dry.Skipped != 1 || dry.Failed != 1 || dry.Messages != 3 {
			t.Errorf("dry run: report %+v, want 1 imported, 1 skipped, 1 failed", dry)
		}
		before.same(t, "a dry run", h.snapshot())

		rep := h.importData(data, sessiondb.ImportOptions{})
		equal(t, "imported", rep.ImportedIDs, []string{"c-new"})
		equal(t, "skipped", rep.SkippedIDs, []string{"c-keep"})
		if rep.Failed != 1 || len(rep.Errors) != 1 || rep.Errors[0].Line != 2 || rep.Errors[0].SessionID != "c-title" ||
			!strings.Contains(rep.Errors[0].Message, `"Taken"`) || !strings.Contains(rep.Errors[0].Message, "holder") {
			t.Errorf("errors %+v, want line 2: the title Taken held by holder", rep.Errors)
		}
		if h.exists("c-title") {
			t.Error("the session whose title clashed was imported")
		}
		// The first two ids are held by c-keep (a backend's ids need not
		// start at 1 nor be dense): those messages get new ids after every
		// id of the store, in order; 9000 is free and kept.
		if rep.Renumbered != 2 || rep.Messages != 3 {
			t.Errorf("report %+v, want 3 messages written, 2 renumbered", rep)
		}
		ms := h.messages("c-new", sessiondb.MessageFilter{})
		if len(ms) != 3 || ms[0].Content != "first" || ms[1].Content != "second" || ms[2].Content != "third" ||
			ms[0].ID <= last || ms[1].ID <= ms[0].ID || ms[2].ID != 9000 {
			t.Errorf("c-new messages %v (%d), want first, second, third with new ids above %d and 9000", messageIDs(ms), len(ms), last)
		}
		h.wantCounters("c-new", 3, 1)
		if got := h.get("c-new").SessionKey; got != nil {
			t.Errorf("a new session took the file's session_key %q", *got)
		}
		if ms := h.messages("c-keep", sessiondb.MessageFilter{}); len(ms) != 2 || ms[0].Content != "already here" {
			t.Errorf("a skipped session changed: %d messages", len(ms))
		}
		// An append after an import gets an id no imported message holds.
		after := h.add("c-new", user("appended", base+6))[0]
		if after <= 9000 {
			t.Errorf("an append after the import got id %d, at or below the imported 9000", after)
		}

		rep = h.importData(data, sessiondb.ImportOptions{Replace: true})
		sameSet(t, "replaced", rep.ReplacedIDs, []string{"c-keep", "c-new"})
		if rep.Failed != 1 || rep.Imported != 0 {
			t.Errorf("replace: report %+v, want c-keep and c-new replaced, c-title failed", rep)
		}
		k := h.get("c-keep")
		fields(t, "replaced session",
			field{"title", str(k.Title), "Kept title"},
			field{"session_key", str(k.SessionKey), "local-key"})
		h.wantCounters("c-keep", 1, 0)
		if ms := h.messages("c-keep", sessiondb.MessageFilter{}); len(ms) != 1 || ms[0].Content != "from the file" {
			t.Errorf("replaced c-keep holds %d messages, want the file's one", len(ms))
		}
		h.wantCounters("c-new", 3, 1)
		if hits, err := h.Search(t.Context(), "appended", sessiondb.SearchOptions{}); err != nil || len(hits) != 0 {
			t.Errorf("search for a replaced message: %d hits, err %v", len(hits), err)
		}
		if hits, err := h.Search(t.Context(), "file", sessiondb.SearchOptions{}); err != nil || len(hits) != 1 || hits[0].SessionID != "c-keep" {
			t.Errorf("search for the replacing message: %v, err %v", hits, err)
		}
	})

	t.Run("a malformed line is reported with its line and loses nothing", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "keep-me", Source: "cli", StartedAt: base})
		h.add("keep-me", user("stored before", base+1), assistant("also stored", base+2))
		before := h.snapshot()
		data := line(`"id":"m-1","source":"cli","started_at":1700000000`, `{"role":"user","content":"one","timestamp":1700000001}`) + "\n" +
			`{"id": "m-2", "source": broken` + "\n" +
			"\n" +
			line(`"id":"m-3","source":"cli","started_at":1700000000`, `{"role":"user","content":"three","timestamp":1700000003}`) + "\n" +
			line(`"id":"m-4","source":"cli","started_at":1700000000`, `{"role":"user","content":"four","timestamp":1700000004}`,
				`{"content":"no role","timestamp":1700000005}`) + "\n" +
			line(`"id":"keep-me","source":"cli","started_at":1700000000`, `{"role":"user","content":"not replaced","timestamp":1700000006}`) + "\n"
		rep := h.importData(data, sessiondb.ImportOptions{})
		equal(t, "imported", rep.ImportedIDs, []string{"m-1", "m-3"})
		equal(t, "skipped", rep.SkippedIDs, []string{"keep-me"})
		var lines []int
		for _, e := range rep.Errors {
			lines = append(lines, e.Line)
		}
		if rep.Failed != 2 || !slices.Equal(lines, []int{2, 5}) || rep.Errors[1].SessionID != "m-4" ||
			!strings.Contains(rep.Errors[1].Message, "message 2") {
			t.Errorf("errors %+v, want line 2 (not JSON) and line 5 (m-4's message 2)", rep.Errors)
		}
		if h.exists("m-4") {
			t.Error("a session with a refused message was imported in part")
		}
		h.wantCounters("m-1", 1, 0)
		for _, id := range []string{"m-1", "m-3"} {
			if _, err := h.DeleteSession(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		}
		before.same(t, "after a malformed import, less what it imported", h.snapshot())
	})

	t.Run("a broken JSON array stops at its line and keeps what came before", func(t *testing.T) {
		h := s.store(t)
		h.create(sessiondb.NewSession{ID: "keep-me", Source: "cli", StartedAt: base})
		h.add("keep-me", user("stored before", base+1))
		data := "[\n  " + line(`"id":"a-1","source":"cli","started_at":1700000000`, `{"role":"user","content":"one","timestamp":1700000001}`) +
			",\n  {\"id\": \"a-2\",\n   \"source\": }\n]\n"
		rep, err := h.importErr(data, sessiondb.ImportOptions{})
		wantCode(t, err, sessiondb.EINVALID)
		if !strings.Contains(err.Error(), "line 4") {
			t.Errorf("error %q does not name line 4", err)
		}
		equal(t, "imported", rep.ImportedIDs, []string{"a-1"})
		if rep.Failed != 1 || len(rep.Errors) != 1 || rep.Errors[0].Item != 2 {
			t.Errorf("errors %+v, want item 2", rep.Errors)
		}
		if ms := h.messages("keep-me", sessiondb.MessageFilter{}); len(ms) != 1 {
			t.Errorf("keep-me holds %d messages after a broken import, want 1", len(ms))
		}
	})

	t.Run("a parent later in the input is linked, a missing one dropped", func(t *testing.T) {
		h := s.store(t)
		data := line(`"id":"l-child","source":"cli","parent_session_id":"l-parent","started_at":1700000002`) + "\n" +
			line(`"id":"l-parent","source":"cli","started_at":1700000001`) + "\n" +
			line(`"id":"l-orphan","source":"cli","parent_session_id":"nowhere","started_at":1700000003`) + "\n"
		rep := h.importData(data, sessiondb.ImportOptions{})
		if rep.Imported != 3 || rep.Detached != 1 || len(rep.Warnings) != 1 || rep.Warnings[0].Line != 3 ||
			!strings.Contains(rep.Warnings[0].Message, `"nowhere"`) {
			t.Errorf("report %+v, want 3 imported, l-orphan detached from nowhere at line 3", rep)
		}
		fields(t, "parent",
			field{"l-child", str(h.get("l-child").ParentSessionID), "l-parent"},
			field{"l-orphan", str(h.get("l-orphan").ParentSessionID), "<nil>"})
	})

	t.Run("a lineage object imports each segment", func(t *testing.T) {
		src := s.store(t)
		importCorpus(src)
		dst := s.store(t)
		rep := dst.importData(string(src.exportLineage("imp-tip")), sessiondb.ImportOptions{})
		equal(t, "imported", rep.ImportedIDs, []string{"imp-root", "imp-tip"})
		if rep.Messages != 4 || rep.Failed != 0 {
			t.Errorf("report %+v, want 4 messages", rep)
		}
		if got := str(dst.get("imp-tip").ParentSessionID); got != "imp-root" {
			t.Errorf("imp-tip's parent = %s, want imp-root", got)
		}
		chain := dst.conversation("imp-tip", sessiondb.ConversationOptions{IncludeAncestors: true})
		equal(t, "conversation", chain, src.conversation("imp-tip", sessiondb.ConversationOptions{IncludeAncestors: true}))
	})
}
