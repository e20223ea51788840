package sqlite_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
	"github.com/sessiondb/sessiondb/sqlite"
)

// exportJSONL exports sel from db as JSON lines.
func exportJSONL(tb testing.TB, db *sqlite.DB, sel sqlite.ExportSelection) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := export.NewJSONL(&buf, export.Options{})
	err := db.ExportSessions(ctx, sel, func(x *sqlite.ExportedSession) error {
		it := export.ItemOf(x)
		return enc.Encode(&it)
	})
	if err != nil {
		tb.Fatalf("export %+v: %v", sel, err)
	}
	if err := enc.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func mustImport(tb testing.TB, db *sqlite.DB, data []byte, o sqlite.ImportOptions) *sqlite.ImportReport {
	tb.Helper()
	rep, err := db.ImportSessions(ctx, bytes.NewReader(data), o)
	if err != nil {
		tb.Fatalf("import: %v (report %+v)", err, rep)
	}
	return rep
}

// decodeLines decodes JSON lines, numbers kept exact.
func decodeLines(tb testing.TB, data []byte) []map[string]any {
	tb.Helper()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			tb.Fatalf("decode export: %v", err)
		}
		out = append(out, m)
	}
	return out
}

func TestExportImportRoundTrip(t *testing.T) {
	src := MustOpenPath(t, fixture(t, "hermes-v23.db"))
	first := exportJSONL(t, src, sqlite.ExportSelection{})
	if n := bytes.Count(first, []byte("\n")); n != 50 {
		t.Fatalf("exported %d lines, want the fixture's 50 sessions", n)
	}

	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepRuntimeState=%v", keep), func(t *testing.T) {
			dst := MustOpen(t)
			rep := mustImport(t, dst, first, sqlite.ImportOptions{KeepRuntimeState: keep})
			if rep.Imported != 50 || rep.Failed != 0 || rep.Skipped != 0 || rep.Detached != 0 {
				t.Fatalf("report = %+v", rep)
			}
			if len(rep.Warnings) != 0 {
				t.Errorf("warnings on a faithful export: %+v", rep.Warnings)
			}
			if got, want := rep.Messages, 653; got != want {
				t.Errorf("imported %d messages, want %d", got, want)
			}
			second := exportJSONL(t, dst, sqlite.ExportSelection{})
			// Into an empty database even the message ids are kept: the
			// second export is the first, byte for byte.
			if !bytes.Equal(first, second) {
				t.Errorf("the JSONL differs after export → import → export")
			}
			a, b := decodeLines(t, first), decodeLines(t, second)
			if len(a) != len(b) {
				t.Fatalf("%d objects after the round trip, want %d", len(b), len(a))
			}
			for i := range a {
				if !reflect.DeepEqual(a[i], b[i]) {
					t.Errorf("session %v differs after the round trip:\n%s", a[i]["id"], diffKeys(a[i], b[i]))
				}
			}
		})
	}
}

// diffKeys names the top-level keys whose values differ.
func diffKeys(a, b map[string]any) string {
	var out []string
	for k, v := range a {
		if !reflect.DeepEqual(v, b[k]) {
			out = append(out, fmt.Sprintf("  %s: %.200v -> %.200v", k, v, b[k]))
		}
	}
	return strings.Join(out, "\n")
}

func TestExportLineage(t *testing.T) {
	db := MustOpenPath(t, fixture(t, "hermes-v23.db"))
	chain := []string{"20260226_113011_066326", "20260228_202754_3b8313", "20260324_083154_49e260"}
	objs := decodeLines(t, exportJSONL(t, db, sqlite.ExportSelection{SessionID: chain[1], Lineage: true}))
	if len(objs) != 1 {
		t.Fatalf("%d objects, want 1", len(objs))
	}
	o := objs[0]
	if got, want := o["id"], chain[2]; got != want {
		t.Errorf("id = %v, want the tip %v", got, want)
	}
	ids := fmt.Sprint(o["lineage_session_ids"])
	if want := fmt.Sprint([]any{chain[0], chain[1], chain[2]}); ids != want {
		t.Errorf("lineage_session_ids = %v, want %v", ids, want)
	}
	var total int
	var concat []any
	segs := o["segments"].([]any)
	if len(segs) != 3 {
		t.Fatalf("%d segments, want 3", len(segs))
	}
	for i, id := range chain {
		single := decodeLines(t, exportJSONL(t, db, sqlite.ExportSelection{SessionID: id}))[0]
		if !reflect.DeepEqual(segs[i], any(single)) {
			t.Errorf("segment %d differs from export_session(%s)", i, id)
		}
		msgs := single["messages"].([]any)
		total += len(msgs)
		concat = append(concat, msgs...)
	}
	if got := o["message_count"]; fmt.Sprint(got) != fmt.Sprint(total) {
		t.Errorf("message_count = %v, want the sum %d", got, total)
	}
	if !reflect.DeepEqual(o["messages"], any(concat)) {
		t.Errorf("messages are not the segments' messages concatenated (%d vs %d)", len(o["messages"].([]any)), len(concat))
	}

	t.Run("import", func(t *testing.T) {
		line, _ := json.Marshal(o)
		dst := MustOpen(t)
		rep := mustImport(t, dst, line, sqlite.ImportOptions{})
		if rep.Imported != 3 || rep.Failed != 0 || rep.Detached != 0 {
			t.Fatalf("report = %+v", rep)
		}
		got, err := dst.CompressionChain(ctx, chain[0])
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(chain) {
			t.Errorf("imported chain = %v, want %v", got, chain)
		}
	})
}

// newSession creates a session and appends messages to it.
func newSession(tb testing.TB, db *sqlite.DB, ns sessiondb.NewSession, msgs ...sessiondb.NewMessage) {
	tb.Helper()
	if _, err := db.CreateSession(ctx, ns); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.AppendMessages(ctx, ns.ID, msgs); err != nil {
		tb.Fatal(err)
	}
}

func TestImportIdempotent(t *testing.T) {
	src := MustOpenPath(t, fixture(t, "hermes-v23.db"))
	data := exportJSONL(t, src, sqlite.ExportSelection{})
	dst := MustOpen(t)
	mustImport(t, dst, data, sqlite.ImportOptions{})
	before := exportJSONL(t, dst, sqlite.ExportSelection{})
	rep := mustImport(t, dst, data, sqlite.ImportOptions{})
	if rep.Imported != 0 || rep.Skipped != 50 || rep.Messages != 0 || len(rep.SkippedIDs) != 50 {
		t.Fatalf("second import: %+v", rep)
	}
	if after := exportJSONL(t, dst, sqlite.ExportSelection{}); !bytes.Equal(before, after) {
		t.Error("a second import changed the database")
	}
}

func TestImportReplace(t *testing.T) {
	db := MustOpen(t)
	newSession(t, db, sessiondb.NewSession{ID: "s1", Source: "cli", SystemPrompt: "old prompt"},
		sessiondb.NewMessage{Role: "user", Content: "zebracorn question"},
		sessiondb.NewMessage{Role: "assistant", Content: "zebracorn answer"})
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "child", Source: "cli", ParentSessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	objs := decodeLines(t, exportJSONL(t, db, sqlite.ExportSelection{SessionID: "s1"}))
	o := objs[0]
	o["title"] = "Replaced"
	o["system_prompt"] = "new prompt"
	o["messages"] = []any{map[string]any{"role": "user", "content": "quokkafish question", "timestamp": 1777000000.25}}
	line, _ := json.Marshal(o)

	rep := mustImport(t, db, line, sqlite.ImportOptions{})
	if rep.Skipped != 1 || rep.Replaced != 0 {
		t.Fatalf("without Replace: %+v", rep)
	}
	rep = mustImport(t, db, line, sqlite.ImportOptions{Replace: true})
	if rep.Replaced != 1 || rep.Imported != 0 || rep.Messages != 1 || len(rep.ReplacedIDs) != 1 {
		t.Fatalf("with Replace: %+v", rep)
	}
	s, err := db.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if *s.Title != "Replaced" || *s.SystemPrompt != "new prompt" || s.MessageCount != 1 {
		t.Errorf("session after replace: title %v prompt %v message_count %d", *s.Title, *s.SystemPrompt, s.MessageCount)
	}
	msgs, err := db.Messages(ctx, "s1", sessiondb.MessageFilter{IncludeInactive: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Content != "quokkafish question" || msgs[0].Timestamp != 1777000000.25 {
		t.Fatalf("messages after replace: %+v", msgs)
	}
	for q, want := range map[string]int{"zebracorn": 0, "quokkafish": 1} {
		hits, err := db.Search(ctx, q, sessiondb.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != want {
			t.Errorf("search %q: %d hits, want %d (the triggers keep the index in step)", q, len(hits), want)
		}
	}
	if c, err := db.Session(ctx, "child"); err != nil || c.ParentSessionID == nil || *c.ParentSessionID != "s1" {
		t.Errorf("the child of a replaced session lost its parent: %v %v", c, err)
	}
}

func TestImportAllOrNothingPerSession(t *testing.T) {
	in := strings.Join([]string{
		`{"id":"a","source":"cli","started_at":1777000000,"messages":[{"role":"user","content":"one","timestamp":1777000001}]}`,
		``,
		`{"id":"b","source":"cli","started_at":1777000000,"messages":[{"role":"user","content":"ok","timestamp":1777000001},{"content":"no role"}]}`,
		`{"id":"c","source":"cli","started_at":1777000000,"messages":[{"role":"user","content":"three","timestamp":1777000001}]}`,
		`{"id":"d", not json`,
		`{"id":"a","source":"cli","started_at":1777000000,"messages":[]}`,
	}, "\n")
	db := MustOpen(t)
	rep, err := db.ImportSessions(ctx, strings.NewReader(in), sqlite.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Imported != 2 || rep.Failed != 3 {
		t.Fatalf("report = %+v", rep)
	}
	wantLines := []int{3, 5, 6}
	for i, e := range rep.Errors {
		if e.Line != wantLines[i] {
			t.Errorf("error %d at line %d, want %d: %+v", i, e.Line, wantLines[i], e)
		}
	}
	if !strings.Contains(rep.Errors[0].Message, "message 2") {
		t.Errorf("error does not name the message: %q", rep.Errors[0].Message)
	}
	if _, err := db.Session(ctx, "b"); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Errorf("session b with an invalid message was imported (err %v)", err)
	}
	n, err := db.MessageCount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d messages in the database, want 2 (none of b's)", n)
	}
}

func TestImportDryRun(t *testing.T) {
	src := MustOpenPath(t, fixture(t, "hermes-v23.db"))
	data := exportJSONL(t, src, sqlite.ExportSelection{})
	dst := MustOpen(t)
	newSession(t, dst, sessiondb.NewSession{ID: "20260101_001647_0837eb", Source: "cli"})
	rep := mustImport(t, dst, data, sqlite.ImportOptions{DryRun: true})
	if !rep.DryRun || rep.Imported != 49 || rep.Skipped != 1 || rep.Detached != 0 || rep.Messages != 651 {
		t.Fatalf("dry run report = %+v", rep)
	}
	if n, _ := dst.MessageCount(ctx); n != 0 {
		t.Errorf("a dry run wrote %d messages", n)
	}
	if _, err := dst.Session(ctx, "20260226_113011_066326"); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Errorf("a dry run wrote a session (err %v)", err)
	}
}

func TestImportParents(t *testing.T) {
	in := strings.Join([]string{
		`{"id":"child","source":"cli","parent_session_id":"parent","started_at":1777000002,"messages":[]}`,
		`{"id":"orphan","source":"cli","parent_session_id":"nowhere","started_at":1777000003,"messages":[]}`,
		`{"id":"parent","source":"cli","started_at":1777000001,"end_reason":"compression","ended_at":1777000002,"messages":[]}`,
	}, "\n")
	for _, dry := range []bool{false, true} {
		db := MustOpen(t)
		rep := mustImport(t, db, []byte(in), sqlite.ImportOptions{DryRun: dry})
		if rep.Imported != 3 || rep.Detached != 1 || len(rep.Warnings) != 1 || rep.Warnings[0].Line != 2 {
			t.Fatalf("dry run %v: report = %+v", dry, rep)
		}
		if dry {
			continue
		}
		c, _ := db.Session(ctx, "child")
		if c.ParentSessionID == nil || *c.ParentSessionID != "parent" {
			t.Errorf("child parent = %v, want the parent imported after it", c.ParentSessionID)
		}
		o, _ := db.Session(ctx, "orphan")
		if o.ParentSessionID != nil {
			t.Errorf("orphan parent = %v, want none", *o.ParentSessionID)
		}
	}
}

// A Hermes export: flags as numbers, model_config and reasoning_details as
// JSON text, message_id for platform_message_id.
func TestImportHermesShape(t *testing.T) {
	in := `{"id":"h1","source":"telegram","model":"m","model_config":"{\"temperature\": 0.2}","system_prompt":"be brief",` +
		`"started_at":1777000000.5,"ended_at":null,"message_count":2,"tool_call_count":1,"archived":1,"pinned":0,` +
		`"session_key":"agent:main:telegram:dm:1","last_activity_at":1777000100.0,"title":"Hermes",` +
		`"messages":[` +
		`{"id":7,"session_id":"h1","role":"user","content":"hi","timestamp":1777000001.0,"observed":0,"active":1,"message_id":"tg-9"},` +
		`{"id":8,"session_id":"h1","role":"assistant","content":[{"type":"text","text":"hello"}],"tool_calls":[{"id":"c1","type":"function","function":{"name":"x","arguments":"{}"}}],` +
		`"reasoning":"think","reasoning_details":"[{\"type\":\"summary\"}]","timestamp":1777000002.0,"observed":1,"_compressed_summary":0,"active":1,"compacted":0}]}`
	db := MustOpen(t)
	rep := mustImport(t, db, []byte(in), sqlite.ImportOptions{})
	if rep.Imported != 1 || len(rep.Warnings) != 0 {
		t.Fatalf("report = %+v", rep)
	}
	s, err := db.Session(ctx, "h1")
	if err != nil {
		t.Fatal(err)
	}
	if *s.ModelConfig != `{"temperature": 0.2}` || *s.SystemPrompt != "be brief" || s.SystemPromptHash == nil ||
		s.Archived != 1 || s.MessageCount != 2 || s.ToolCallCount != 1 || s.StartedAt != 1777000000.5 {
		t.Errorf("session = %+v", s)
	}
	if s.SessionKey != nil || s.LastActivityAt != nil {
		t.Errorf("runtime state imported: session_key %v last_activity_at %v", s.SessionKey, s.LastActivityAt)
	}
	msgs, err := db.Messages(ctx, "h1", sessiondb.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	if msgs[0].PlatformMessageID == nil || *msgs[0].PlatformMessageID != "tg-9" || msgs[0].Observed {
		t.Errorf("message 1 = %+v", msgs[0])
	}
	m := msgs[1]
	if !m.Observed || string(m.ReasoningDetails) != `[{"type":"summary"}]` || *m.Reasoning != "think" ||
		sessiondb.ContentText(m.Content) != "hello" || sessiondb.ToolCallCount(m.ToolCalls) != 1 {
		t.Errorf("message 2 = %+v (reasoning_details %s)", m, m.ReasoningDetails)
	}
}

func TestImportRuntimeState(t *testing.T) {
	line := []byte(`{"id":"r","source":"telegram","started_at":1777000000,"session_key":"k","chat_id":"c","origin_json":"{}",` +
		`"last_activity_at":1777000100,"last_activity_description":"working","handoff_state":"pending","rewind_count":2,` +
		`"compression_fallback_streak":3,"tool_names":"abc","user_id":"u","messages":[]}`)
	runtimeNil := func(s *sessiondb.Session) bool {
		return s.SessionKey == nil && s.ChatID == nil && s.OriginJSON == nil && s.LastActivityAt == nil &&
			s.LastActivityDescription == nil && s.HandoffState == nil && s.RewindCount == 0 &&
			s.CompressionFallbackStreak == 0 && s.ToolNames == nil
	}

	db := MustOpen(t)
	mustImport(t, db, line, sqlite.ImportOptions{})
	s, _ := db.Session(ctx, "r")
	if !runtimeNil(s) || s.UserID == nil || *s.UserID != "u" {
		t.Errorf("default import: %+v", s)
	}

	db = MustOpen(t)
	mustImport(t, db, line, sqlite.ImportOptions{KeepRuntimeState: true})
	s, _ = db.Session(ctx, "r")
	if *s.SessionKey != "k" || *s.LastActivityDescription != "working" || s.RewindCount != 2 || *s.ToolNames != "abc" {
		t.Errorf("KeepRuntimeState import: %+v", s)
	}

	// A replaced session keeps its own runtime state.
	newer := bytes.Replace(line, []byte(`"session_key":"k"`), []byte(`"session_key":"other"`), 1)
	mustImport(t, db, newer, sqlite.ImportOptions{Replace: true})
	s, _ = db.Session(ctx, "r")
	if *s.SessionKey != "k" {
		t.Errorf("replace overwrote the runtime state: session_key %v", *s.SessionKey)
	}
}

func TestImportJSONArray(t *testing.T) {
	src := MustOpenPath(t, fixture(t, "hermes-v23.db"))
	var buf bytes.Buffer
	enc := export.NewJSON(&buf, export.Options{})
	err := src.ExportSessions(ctx, sqlite.ExportSelection{Source: "telegram"}, func(x *sqlite.ExportedSession) error {
		it := export.ItemOf(x)
		return enc.Encode(&it)
	})
	if err != nil {
		t.Fatal(err)
	}
	enc.Close()
	dst := MustOpen(t)
	rep := mustImport(t, dst, buf.Bytes(), sqlite.ImportOptions{})
	if rep.Imported == 0 || rep.Failed != 0 {
		t.Fatalf("report = %+v", rep)
	}
	for _, id := range rep.ImportedIDs {
		s, err := dst.Session(ctx, id)
		if err != nil || s.Source != "telegram" {
			t.Fatalf("session %s: %v %v", id, s, err)
		}
	}

	// An invalid element is reported with its line and item.
	bad := "[\n" + `{"id":"x1","source":"cli","started_at":1,"messages":[]},` + "\n" +
		`{"id":"x2","source":"cli","started_at":1,"messages":[{"content":"no role"}]}` + "\n]\n"
	rep = mustImport(t, dst, []byte(bad), sqlite.ImportOptions{})
	if rep.Imported != 1 || rep.Failed != 1 || rep.Errors[0].Line != 3 || rep.Errors[0].Item != 2 {
		t.Fatalf("report = %+v", rep)
	}
}

func TestExportSelection(t *testing.T) {
	db := MustOpenPath(t, fixture(t, "hermes-v23.db"))
	if err := db.ExportSessions(ctx, sqlite.ExportSelection{SessionID: "nope"}, func(*sqlite.ExportedSession) error { return nil }); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Errorf("unknown session: %v", err)
	}
	if err := db.ExportSessions(ctx, sqlite.ExportSelection{Lineage: true}, nil); sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Errorf("lineage without a session: %v", err)
	}
	for _, source := range []string{"cli", "telegram", "discord", "none"} {
		objs := decodeLines(t, exportJSONL(t, db, sqlite.ExportSelection{Source: source}))
		for _, o := range objs {
			if o["source"] != source {
				t.Errorf("--source %s exported a %v session", source, o["source"])
			}
		}
		if source == "none" && len(objs) != 0 {
			t.Errorf("an unknown source exported %d sessions", len(objs))
		}
	}
}

func TestExportArchivedIncluded(t *testing.T) {
	db := MustOpen(t)
	newSession(t, db, sessiondb.NewSession{ID: "live", Source: "cli"})
	newSession(t, db, sessiondb.NewSession{ID: "old", Source: "cli"})
	if err := db.SetArchived(ctx, "old", true); err != nil {
		t.Fatal(err)
	}
	if got := decodeLines(t, exportJSONL(t, db, sqlite.ExportSelection{})); len(got) != 2 {
		t.Errorf("exported %d sessions, want 2 (archived included)", len(got))
	}
}

// TestExportBoundedMemory exports a session of 100 000 messages (over
// 100 MB of JSON) and checks that the heap never grows by more than a
// small multiple of one page of messages.
func TestExportBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100k-message session")
	}
	const total = 100_000
	path := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, path)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "big", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	// Set-up only: one INSERT … SELECT on a connection of its own fills the
	// session in seconds (the FTS triggers still index every row), where
	// 100 000 appends would take a minute.
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
		INSERT INTO messages (session_id, role, tool_name, content, timestamp, active)
		SELECT 'big', 'tool', 'shell', printf('%06d ', i) || replace(hex(zeroblob(500)), '00', 'xx'), 1777000000 + i, 1 FROM n`, total); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, "UPDATE sessions SET message_count = ? WHERE id = 'big'", total); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	start := time.Now()

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	var n int
	var lastID int64
	sample := func(seq export.Messages) export.Messages {
		return func(yield func(*sessiondb.Message, error) bool) {
			for m, err := range seq {
				if err == nil {
					n++
					if m.ID <= lastID {
						t.Errorf("message %d after %d: not in id order", m.ID, lastID)
					}
					lastID = m.ID
					if n%2000 == 0 {
						runtime.ReadMemStats(&ms)
						peak = max(peak, ms.HeapInuse)
					}
				}
				if !yield(m, err) {
					return
				}
			}
		}
	}
	cw := &countingWriter{}
	enc := export.NewJSONL(cw, export.Options{})
	err = db.ExportSessions(ctx, sqlite.ExportSelection{SessionID: "big"}, func(x *sqlite.ExportedSession) error {
		return enc.Encode(&export.Item{Session: x.Session, Messages: sample(x.Messages)})
	})
	if err != nil {
		t.Fatal(err)
	}
	enc.Close()
	t.Logf("exported in %v", time.Since(start))
	growth := int64(peak) - int64(base)
	t.Logf("exported %d messages, %.1f MiB of JSON; heap in use grew by at most %.1f MiB (page size %d)",
		n, float64(cw.n)/(1<<20), float64(growth)/(1<<20), sqlite.ExportPageSize)
	if n != total {
		t.Fatalf("exported %d messages, want %d", n, total)
	}
	// One page is 500 messages of ~1 KB (under 2 MiB decoded); the whole
	// session decoded would be over 200 MiB.
	if limit := int64(32 << 20); growth > limit {
		t.Errorf("heap grew by %d MiB while exporting: more than %d MiB, so messages are being held beyond a page", growth>>20, limit>>20)
	}
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// Messages is an iter.Seq2: the sequence can stop early without reading
// further pages.
func TestExportMessagesStopEarly(t *testing.T) {
	db := MustOpen(t)
	var msgs []sessiondb.NewMessage
	for i := 0; i < sqlite.ExportPageSize+10; i++ {
		msgs = append(msgs, sessiondb.NewMessage{Role: "user", Content: fmt.Sprint(i)})
	}
	newSession(t, db, sessiondb.NewSession{ID: "s", Source: "cli"}, msgs...)
	err := db.ExportSessions(ctx, sqlite.ExportSelection{SessionID: "s"}, func(x *sqlite.ExportedSession) error {
		next, stop := iter.Pull2(x.Messages)
		defer stop()
		for i := 0; i < 3; i++ {
			if _, err, ok := next(); !ok || err != nil {
				return fmt.Errorf("message %d: %v %v", i, ok, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// In DELETE journal mode reads share the single writer connection: the
// export must never hold a cursor open while it calls back or yields.
func TestExportDeleteJournalMode(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), sqlite.Options{JournalMode: "delete", Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var msgs []sessiondb.NewMessage
	for i := 0; i < sqlite.ExportPageSize*2+1; i++ {
		msgs = append(msgs, sessiondb.NewMessage{Role: "user", Content: fmt.Sprint(i)})
	}
	for i := 0; i < 3; i++ {
		newSession(t, db, sessiondb.NewSession{ID: fmt.Sprintf("s%d", i), Source: "cli"}, msgs...)
	}
	data := exportJSONL(t, db, sqlite.ExportSelection{})
	if got := len(decodeLines(t, data)); got != 3 {
		t.Fatalf("%d sessions exported, want 3", got)
	}
	dst, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"), sqlite.Options{JournalMode: "delete"})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if rep := mustImport(t, dst, data, sqlite.ImportOptions{}); rep.Imported != 3 || rep.Messages != 3*len(msgs) {
		t.Fatalf("report %+v", rep)
	}
}

func ExampleDB_ExportSessions() {
	dir, _ := os.MkdirTemp("", "sessiondb-example")
	defer os.RemoveAll(dir)
	db, _ := sqlite.Open(filepath.Join(dir, "state.db"), sqlite.Options{Now: func() time.Time { return fixedNow }})
	defer db.Close()
	db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"})
	db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "hello"})

	enc := export.NewMarkdown(os.Stdout, export.Options{})
	db.ExportSessions(ctx, sqlite.ExportSelection{SessionID: "s1"}, func(x *sqlite.ExportedSession) error {
		return enc.Encode(&export.Item{Session: x.Session, Messages: x.Messages})
	})
	enc.Close()
}

func ExampleDB_ImportSessions() {
	dir, _ := os.MkdirTemp("", "sessiondb-example")
	defer os.RemoveAll(dir)
	db, _ := sqlite.Open(filepath.Join(dir, "state.db"), sqlite.Options{})
	defer db.Close()
	in := `{"id":"s1","source":"cli","started_at":1777593600,"messages":[{"role":"user","content":"hello","timestamp":1777593601}]}`
	rep, err := db.ImportSessions(ctx, strings.NewReader(in), sqlite.ImportOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.Imported, rep.Messages, rep.ImportedIDs)
	// Output: 1 1 [s1]
}
