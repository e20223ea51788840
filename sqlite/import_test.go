package sqlite_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
	"github.com/sessiondb/sessiondb/sqlite"
)

// interleave creates sessions ids and appends n messages to them in turn
// (a, b, c, a, b, c, …), so their message ids interleave.
func interleave(tb testing.TB, db *sqlite.DB, n int, ids ...string) {
	tb.Helper()
	for _, id := range ids {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range n {
		id := ids[i%len(ids)]
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "user", Content: fmt.Sprintf("%s says %d", id, i)}); err != nil {
			tb.Fatal(err)
		}
	}
}

// Issue 19 finding 1: sessions whose messages interleave did not survive
// export --all → import into an empty database (the second failed with a
// raw UNIQUE constraint error).
func TestImportInterleavedSessions(t *testing.T) {
	src := MustOpen(t)
	interleave(t, src, 12, "a", "b", "c")
	first := exportJSONL(t, src, sqlite.ExportSelection{})

	dst := MustOpen(t)
	rep := mustImport(t, dst, first, sqlite.ImportOptions{})
	if rep.Imported != 3 || rep.Failed != 0 || rep.Messages != 12 || len(rep.Errors) != 0 {
		t.Fatalf("report = %+v", rep)
	}
	if second := exportJSONL(t, dst, sqlite.ExportSelection{}); !bytes.Equal(first, second) {
		t.Errorf("export → import → export differs:\n%s\n---\n%s", first, second)
	}
	if n, err := dst.MessageCount(ctx); err != nil || n != 12 {
		t.Errorf("%d messages in the new database (%v), want 12", n, err)
	}
}

// importSeed fixes the seed of TestImportRoundTripProperty (0: a new one
// each run, logged).
var importSeed = flag.Uint64("importseed", 0, "seed of TestImportRoundTripProperty (0: random, logged)")

// propGen builds random source databases for the round-trip property.
type propGen struct {
	r *rand.Rand
}

var propFragments = []string{"deploy", "docker", "the build failed", "数据库迁移", "東京の天気", "서울",
	"emoji 🚀", `"quoted"`, "back\\slash", "line\nbreak", "tab\there", "nul\x00byte", "<b>html</b>", " "}

// text returns a random string of fragments.
func (g *propGen) text() string {
	var b strings.Builder
	for range g.r.IntN(4) {
		b.WriteString(propFragments[g.r.IntN(len(propFragments))])
		b.WriteByte(' ')
	}
	return b.String() + strconv.Itoa(g.r.IntN(1000))
}

// maybe returns v or nil, half of the time each.
func (g *propGen) maybe(v any) any {
	if g.r.IntN(2) == 0 {
		return nil
	}
	return v
}

// jsonString returns s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// jsonValue returns random JSON: an object, a list, a string or a number.
func (g *propGen) jsonValue() json.RawMessage {
	var v any
	switch g.r.IntN(4) {
	case 0:
		v = map[string]any{"k": g.text(), "n": g.r.IntN(100), "nested": []any{true, nil, 1.5}}
	case 1:
		v = []any{g.text(), map[string]any{"type": "summary", "text": g.text()}}
	case 2:
		v = g.text()
	default:
		v = g.r.Float64() * 1000
	}
	b, _ := json.Marshal(v)
	return b
}

func (g *propGen) message(sid string) sessiondb.NewMessage {
	roles := []string{"user", "assistant", "tool", "system"}
	m := sessiondb.NewMessage{SessionID: sid, Role: roles[g.r.IntN(len(roles))]}
	switch g.r.IntN(4) {
	case 0:
	case 1:
		m.Content = json.RawMessage(`[{"type":"text","text":` + jsonString(g.text()) + `},{"type":"image_url","image_url":{"url":"data:x"}}]`)
	default:
		m.Content = g.text()
	}
	if g.r.IntN(3) == 0 {
		var calls []any
		for i := range 1 + g.r.IntN(3) {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
				"function": map[string]any{"name": "terminal", "arguments": `{"command":"ls"}`}})
		}
		m.ToolCalls, _ = json.Marshal(calls)
	}
	str := func() string {
		if g.r.IntN(2) == 0 {
			return ""
		}
		return g.text()
	}
	strp := func() *string {
		if g.r.IntN(2) == 0 {
			return nil
		}
		s := g.text()
		return &s
	}
	raw := func() json.RawMessage {
		if g.r.IntN(2) == 0 {
			return nil
		}
		return g.jsonValue()
	}
	m.ToolCallID, m.ToolName, m.EffectDisposition = str(), str(), str()
	m.FinishReason, m.PlatformMessageID, m.APIContent, m.DisplayKind = str(), str(), str(), str()
	m.Reasoning, m.ReasoningContent = strp(), strp()
	m.ReasoningDetails, m.CodexReasoningItems, m.CodexMessageItems, m.DisplayMetadata = raw(), raw(), raw(), raw()
	if g.r.IntN(2) == 0 {
		n := g.r.Int64N(1 << 40)
		m.TokenCount = &n
	}
	m.Timestamp = 1.6e9 + g.r.Float64()*2e8
	m.Observed, m.CompressedSummary = g.r.IntN(4) == 0, g.r.IntN(8) == 0
	return m
}

// sessionColumns are the sessions columns the property sets with raw SQL
// (those NewSession does not take), each with a value generator.
func (g *propGen) sessionColumns(i int) map[string]any {
	real := func() any { return g.maybe(1.6e9 + g.r.Float64()*2e8) }
	cost := func() any { return g.maybe(g.r.Float64() * 3) }
	text := func() any { return g.maybe(g.text()) }
	count := func() any { return g.r.Int64N(1 << 40) }
	small := func() any { return g.r.IntN(5) }
	flag := func() any { return g.r.IntN(2) }
	reasons := []any{nil, "user_exit", "compression", "timeout"}
	return map[string]any{
		"created_source": text(), "display_name": text(), "expiry_finalized": flag(),
		"ended_at": real(), "end_reason": reasons[g.r.IntN(len(reasons))],
		"api_call_count": count(), "input_tokens": count(), "output_tokens": count(),
		"cache_read_tokens": count(), "cache_write_tokens": count(), "reasoning_tokens": count(),
		"billing_provider": text(), "billing_base_url": text(), "billing_mode": text(),
		"estimated_cost_usd": cost(), "actual_cost_usd": cost(),
		"cost_status": text(), "cost_source": text(), "pricing_version": text(),
		"git_branch": text(), "git_metadata_generation": small(),
		"title": g.maybe(fmt.Sprintf("title %d %s", i, g.text())), "title_source": text(),
		"last_activity_at": real(), "last_activity_description": text(), "last_activity_provenance": text(),
		"handoff_state": text(), "handoff_platform": text(), "handoff_error": text(),
		"compression_failure_cooldown_until": real(), "compression_failure_error": text(),
		"compression_fallback_streak": small(), "compression_ineffective_count": small(),
		"compression_recovery_deadline": real(), "compression_overload_streak": small(),
		"transport_profile": text(), "rewind_count": small(),
		"archived": flag(), "auto_archived": flag(), "pinned": flag(), "hidden": flag(),
		"last_read_at": real(), "tool_names": text(),
	}
}

// source builds a database at path: sessions created in random order
// (some children of others), messages appended to them in random
// interleaving (one at a time or in small batches), random values in every
// other sessions column, some messages deactivated or marked compacted
// (the counters kept true), and sometimes a session deleted, so the ids
// the export carries have gaps. It returns the store.
func (g *propGen) source(tb testing.TB, path string) *sqlite.DB {
	tb.Helper()
	db := MustOpenPath(tb, path)
	raw := rawDB(tb, path)
	n := 1 + g.r.IntN(6)
	var ids []string
	prompts := []string{"", "You are Hermes.", "Be brief. " + g.text()}
	sources := []string{"cli", "telegram", "discord", "cron", "subagent"}
	for i := range n {
		ns := sessiondb.NewSession{
			ID:           fmt.Sprintf("p%03d-%04x", g.r.IntN(1000), g.r.IntN(1<<16)),
			Source:       sources[g.r.IntN(len(sources))],
			SystemPrompt: prompts[g.r.IntN(len(prompts))],
			StartedAt:    1.6e9 + float64(i)*1000 + g.r.Float64(),
		}
		if g.r.IntN(2) == 0 {
			ns.Model, ns.UserID, ns.SessionKey, ns.ChatID = g.text(), g.text(), g.text(), g.text()
			ns.ChatType, ns.ThreadID, ns.Cwd, ns.ProfileName = g.text(), g.text(), g.text(), g.text()
			ns.GitRepoRoot, ns.OriginJSON, ns.DisplayName = g.text(), `{"platform":"x"}`, g.text()
			ns.ModelConfig = `{"temperature":` + strconv.Itoa(g.r.IntN(3)) + `,"note":` + jsonString(g.text()) + `}`
		}
		if len(ids) > 0 && g.r.IntN(3) == 0 {
			ns.ParentSessionID = ids[g.r.IntN(len(ids))]
		}
		if _, err := db.CreateSession(ctx, ns); err != nil {
			tb.Fatalf("create %+v: %v", ns, err)
		}
		ids = append(ids, ns.ID)
	}
	for range g.r.IntN(60) {
		sid := ids[g.r.IntN(len(ids))]
		if g.r.IntN(4) == 0 {
			batch := make([]sessiondb.NewMessage, 1+g.r.IntN(4))
			for i := range batch {
				batch[i] = g.message(sid)
			}
			if _, err := db.AppendMessages(ctx, sid, batch); err != nil {
				tb.Fatal(err)
			}
		} else if _, err := db.AppendMessage(ctx, g.message(sid)); err != nil {
			tb.Fatal(err)
		}
	}
	exec := func(q string, args ...any) {
		tb.Helper()
		if _, err := raw.Exec(q, args...); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
	exec("UPDATE messages SET active = 0 WHERE abs(random()) % 6 = 0")
	exec("UPDATE messages SET compacted = 1 WHERE active = 1 AND abs(random()) % 8 = 0")
	for i, id := range ids {
		cols := g.sessionColumns(i)
		var set []string
		var args []any
		for name, v := range cols {
			set = append(set, name+" = ?")
			args = append(args, v)
		}
		exec("UPDATE sessions SET "+strings.Join(set, ", ")+" WHERE id = ?", append(args, id)...)
		msgs, err := db.Messages(ctx, id, sessiondb.MessageFilter{})
		if err != nil {
			tb.Fatal(err)
		}
		calls := 0
		for _, m := range msgs {
			if m.Role != sessiondb.RoleTool {
				calls += sessiondb.ToolCallCount(m.ToolCalls)
			}
		}
		exec("UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?", len(msgs), calls, id)
	}
	if len(ids) > 1 && g.r.IntN(3) == 0 {
		if _, err := db.DeleteSession(ctx, ids[g.r.IntN(len(ids))]); err != nil {
			tb.Fatal(err)
		}
	}
	return db
}

// exportAs exports every session of db in format (jsonl or json).
func exportAs(tb testing.TB, db *sqlite.DB, format string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc, err := export.NewEncoder(format, &buf, export.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	err = db.ExportSessions(ctx, sqlite.ExportSelection{}, func(x *sqlite.ExportedSession) error {
		it := export.ItemOf(x)
		return enc.Encode(&it)
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// decodeExport decodes an export in either JSON format into its objects,
// numbers kept exact.
func decodeExport(tb testing.TB, data []byte) []map[string]any {
	tb.Helper()
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		var objs []map[string]any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&objs); err != nil {
			tb.Fatal(err)
		}
		return objs
	}
	return decodeLines(tb, data)
}

// firstDifference names the first session whose object differs.
func firstDifference(tb testing.TB, a, b []byte) string {
	tb.Helper()
	x, y := decodeExport(tb, a), decodeExport(tb, b)
	if len(x) != len(y) {
		return fmt.Sprintf("%d sessions, want %d", len(y), len(x))
	}
	for i := range x {
		if !reflect.DeepEqual(x[i], y[i]) {
			return fmt.Sprintf("session %v:\n%s", x[i]["id"], diffKeys(x[i], y[i]))
		}
	}
	return "the objects are equal; the bytes differ"
}

// TestImportRoundTripProperty: for random databases of interleaved
// sessions with random values in every column, an export in either format
// that import reads (JSON Lines, JSON array) imported into an empty
// database exports again byte for byte, message ids included; into a
// database that already holds some of the ids and some of the sessions,
// every session arrives with every column and the same messages in the
// same order, only the clashing ids (and those after them in their
// session) renumbered, the indexes consistent, and a second import is a
// no-op.
func TestImportRoundTripProperty(t *testing.T) {
	seed := *importSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -importseed %d)", seed, seed)
	g := &propGen{r: rand.New(rand.NewPCG(seed, 19))}
	budget := time.Now().Add(4 * time.Second)
	rounds, messages, renumbered := 0, 0, 0
	for ; rounds < 40 && (rounds < 5 || time.Now().Before(budget)); rounds++ {
		dir := t.TempDir()
		src := g.source(t, filepath.Join(dir, "src.db"))
		for _, format := range []string{"jsonl", "json"} {
			first := exportAs(t, src, format)
			dst := MustOpenPath(t, filepath.Join(dir, "dst-"+format+".db"))
			rep := mustImport(t, dst, first, sqlite.ImportOptions{KeepRuntimeState: true})
			if rep.Failed != 0 || rep.Renumbered != 0 || len(rep.Warnings) != 0 || rep.Skipped != 0 {
				t.Fatalf("round %d, %s: report %+v", rounds, format, rep)
			}
			messages += rep.Messages
			if second := exportAs(t, dst, format); !bytes.Equal(first, second) {
				t.Fatalf("round %d, %s: export → import → export differs: %s", rounds, format, firstDifference(t, first, second))
			}
		}
		renumbered += checkOverlapImport(t, g, dir, exportAs(t, src, "jsonl"))
	}
	t.Logf("%d rounds, %d messages imported into empty databases, %d renumbered in overlapping ones", rounds, messages, renumbered)
}

// checkOverlapImport imports data into a database that already holds
// messages at some of its ids (one of their sessions deleted, so some ids
// are free below sqlite_sequence) and some of its sessions, and checks
// the result against data with the renumbered message ids ignored. It
// returns how many were renumbered.
func checkOverlapImport(t *testing.T, g *propGen, dir string, data []byte) int {
	t.Helper()
	path := filepath.Join(dir, "overlap.db")
	dst := MustOpenPath(t, path)
	for _, id := range []string{"zz-occupant", "zz-gone"} {
		if _, err := dst.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	for range g.r.IntN(40) {
		id := []string{"zz-occupant", "zz-gone"}[g.r.IntN(2)]
		if _, err := dst.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "user", Content: g.text()}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dst.DeleteSession(ctx, "zz-gone"); err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for l := range bytes.Lines(data) {
		lines = append(lines, l)
	}
	var some []byte
	for _, l := range lines {
		if g.r.IntN(3) == 0 {
			some = append(some, l...)
		}
	}
	renumbered := mustImport(t, dst, some, sqlite.ImportOptions{KeepRuntimeState: true}).Renumbered
	rep := mustImport(t, dst, data, sqlite.ImportOptions{KeepRuntimeState: true})
	if rep.Failed != 0 || rep.Imported+rep.Skipped != len(lines) {
		t.Fatalf("overlapping import: report %+v", rep)
	}
	renumbered += rep.Renumbered

	var got []map[string]any
	for _, o := range decodeLines(t, exportJSONL(t, dst, sqlite.ExportSelection{})) {
		if o["id"] != "zz-occupant" {
			got = append(got, o)
		}
	}
	want := decodeLines(t, data)
	if len(got) != len(want) {
		t.Fatalf("%d sessions after the overlapping import, want %d", len(got), len(want))
	}
	changed := 0
	for i := range want {
		wm, gm := want[i]["messages"].([]any), got[i]["messages"].([]any)
		if len(wm) != len(gm) {
			t.Fatalf("session %v: %d messages, want %d", want[i]["id"], len(gm), len(wm))
		}
		var prev int64
		for j := range wm {
			w, g := wm[j].(map[string]any), gm[j].(map[string]any)
			gid, _ := g["id"].(json.Number).Int64()
			if gid <= prev {
				t.Fatalf("session %v: message ids out of order: %d after %d", want[i]["id"], gid, prev)
			}
			prev = gid
			if w["id"] != g["id"] {
				changed++
				delete(w, "id")
				delete(g, "id")
			}
		}
		if !reflect.DeepEqual(want[i], got[i]) {
			t.Fatalf("session %v differs beyond renumbered ids:\n%s", want[i]["id"], diffKeys(want[i], got[i]))
		}
	}
	if changed != renumbered {
		t.Errorf("%d messages have new ids, the reports say %d", changed, renumbered)
	}
	before := exportJSONL(t, dst, sqlite.ExportSelection{})
	if again := mustImport(t, dst, data, sqlite.ImportOptions{}); again.Imported != 0 || again.Messages != 0 {
		t.Errorf("a second import wrote: %+v", again)
	}
	if after := exportJSONL(t, dst, sqlite.ExportSelection{}); !bytes.Equal(before, after) {
		t.Error("a second import changed the database")
	}
	raw := rawDB(t, path)
	checkIntegrity(t, raw)
	var maxID, seq int64
	if err := raw.QueryRow("SELECT COALESCE(MAX(id), 0), (SELECT seq FROM sqlite_sequence WHERE name = 'messages') FROM messages").Scan(&maxID, &seq); err != nil {
		t.Fatal(err)
	}
	if seq < maxID {
		t.Errorf("sqlite_sequence %d is below the largest message id %d: AUTOINCREMENT would issue a held id", seq, maxID)
	}
	return renumbered
}

// An import stopped after a child session but before its parent (which
// comes later in the file) left the child without a parent; importing the
// file again skips the child and must link it.
func TestImportAgainLinksParent(t *testing.T) {
	child := `{"id":"a-child","source":"cli","parent_session_id":"b-parent","started_at":1777000002,"messages":[]}`
	parent := `{"id":"b-parent","source":"cli","started_at":1777000001,"messages":[]}`
	db := MustOpen(t)
	mustImport(t, db, []byte(child), sqlite.ImportOptions{})
	rep := mustImport(t, db, []byte(child+"\n"+parent+"\n"), sqlite.ImportOptions{})
	if rep.Imported != 1 || rep.Skipped != 1 || rep.Detached != 0 || len(rep.Warnings) != 0 {
		t.Fatalf("report = %+v", rep)
	}
	s, err := db.Session(ctx, "a-child")
	if err != nil {
		t.Fatal(err)
	}
	if s.ParentSessionID == nil || *s.ParentSessionID != "b-parent" {
		t.Errorf("parent = %v, want b-parent", s.ParentSessionID)
	}

	// A parent the stored session has is never changed.
	other := `{"id":"a-child","source":"cli","parent_session_id":"c-other","started_at":1777000002,"messages":[]}`
	mustImport(t, db, []byte(`{"id":"c-other","source":"cli","started_at":1777000003,"messages":[]}`+"\n"+other), sqlite.ImportOptions{})
	if s, _ := db.Session(ctx, "a-child"); s.ParentSessionID == nil || *s.ParentSessionID != "b-parent" {
		t.Errorf("parent = %v after importing another parent, want b-parent kept", s.ParentSessionID)
	}
}

// Messages imported with ids inside a pending FTS backfill range are left
// to the backfill, those outside it are indexed by the triggers, and each
// ends up indexed exactly once.
func TestImportPendingBackfill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, path)
	if err := db.SetMeta(ctx, "fts_rebuild_high_water", "1000"); err != nil {
		t.Fatal(err)
	}
	if err := db.SetMeta(ctx, "fts_rebuild_progress", "0"); err != nil {
		t.Fatal(err)
	}
	in := `{"id":"a","source":"cli","started_at":1777000000,"messages":[` +
		`{"id":3,"role":"user","content":"quokka three","timestamp":1777000001},` +
		`{"id":7,"role":"user","content":"quokka seven","timestamp":1777000002},` +
		`{"id":1200,"role":"user","content":"quokka twelve hundred","timestamp":1777000003}]}
{"id":"b","source":"cli","started_at":1777000000,"messages":[` +
		`{"id":5,"role":"user","content":"quokka five","timestamp":1777000001},` +
		`{"id":1100,"role":"user","content":"quokka eleven hundred","timestamp":1777000002}]}`
	if rep := mustImport(t, db, []byte(in), sqlite.ImportOptions{}); rep.Imported != 2 || rep.Renumbered != 0 {
		t.Fatalf("report = %+v", rep)
	}
	if n, err := db.PendingBackfill(ctx); err != nil || n != 1000 {
		t.Fatalf("pending backfill = %d, %v; want 1000", n, err)
	}
	if err := db.Backfill(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkIntegrity(t, rawDB(t, path))
	hits, err := db.Search(ctx, "quokka", sessiondb.SearchOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 {
		t.Errorf("%d hits after the backfill, want the 5 messages once each", len(hits))
	}
}

// A row the database refuses (here a newer Hermes' trigger, a unique
// index) fails its own session with an error that names the session and
// what to do, not SQLite's text alone; the other sessions are imported.
func TestImportRefusedRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, path)
	raw := rawDB(t, path)
	for _, q := range []string{
		`CREATE TRIGGER refuse_forbidden BEFORE INSERT ON messages WHEN new.content = 'forbidden'
			BEGIN SELECT RAISE(ABORT, 'forbidden content'); END`,
		`CREATE UNIQUE INDEX one_platform_id ON messages(platform_message_id)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	in := `{"id":"a","source":"cli","started_at":1777000000,"messages":[{"id":1,"role":"user","content":"fine","platform_message_id":"p1"}]}
{"id":"b","source":"cli","started_at":1777000000,"messages":[{"id":2,"role":"user","content":"ok"},{"id":3,"role":"user","content":"forbidden"}]}
{"id":"c","source":"cli","started_at":1777000000,"messages":[{"id":4,"role":"user","content":"fine too","platform_message_id":"p1"}]}
{"id":"d","source":"cli","started_at":1777000000,"messages":[{"id":5,"role":"user","content":"also fine"}]}`
	rep, err := db.ImportSessions(ctx, strings.NewReader(in), sqlite.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Imported != 2 || rep.Failed != 2 || len(rep.Errors) != 2 {
		t.Fatalf("report = %+v", rep)
	}
	for i, want := range []struct {
		line int
		id   string
		says []string
	}{
		{2, "b", []string{`session "b" was not imported`, "forbidden content", "nothing of it was written", "import the file again"}},
		{3, "c", []string{`session "c" clashes with a row already in the database`, "nothing of it was imported", "import the file again"}},
	} {
		e := rep.Errors[i]
		if e.Line != want.line || e.SessionID != want.id {
			t.Errorf("error %d at line %d for %q, want line %d for %q", i, e.Line, e.SessionID, want.line, want.id)
		}
		for _, s := range want.says {
			if !strings.Contains(e.Message, s) {
				t.Errorf("error %d = %q, want it to say %q", i, e.Message, s)
			}
		}
		if strings.HasPrefix(e.Message, "import session") || strings.HasPrefix(strings.ToUpper(e.Message), "UNIQUE") {
			t.Errorf("error %d is SQLite's text with a prefix: %q", i, e.Message)
		}
	}
	if n, _ := db.MessageCount(ctx); n != 2 {
		t.Errorf("%d messages stored, want a's and d's only", n)
	}
}

// An id from the file beyond 2^53 - 1 is not kept: at the top of the int64
// range it would leave AUTOINCREMENT no room, and every later append would
// fail with SQLITE_FULL.
func TestImportHugeMessageID(t *testing.T) {
	db := MustOpen(t)
	in := `{"id":"a","source":"cli","started_at":1777000000,"messages":[` +
		`{"id":7,"role":"user","content":"small","timestamp":1777000001},` +
		`{"id":9223372036854775807,"role":"user","content":"huge","timestamp":1777000002},` +
		`{"id":"12","role":"user","content":"a string id","timestamp":1777000003}]}`
	rep := mustImport(t, db, []byte(in), sqlite.ImportOptions{})
	if rep.Imported != 1 || rep.Renumbered != 1 {
		t.Fatalf("report = %+v; want the huge id renumbered", rep)
	}
	msgs, err := db.Messages(ctx, "a", sessiondb.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, m := range msgs {
		ids = append(ids, m.ID)
	}
	if fmt.Sprint(ids) != "[7 8 9]" {
		t.Errorf("ids %v, want [7 8 9]: the huge one and the string one numbered on after 7", ids)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "a", Role: "user", Content: "later"}); err != nil {
		t.Errorf("append after the import: %v", err)
	}
}
