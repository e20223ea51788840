package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/postgres"
)

func TestAppendRoundTripsAnyText(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	id := "s\x00\ue000'1"
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	reasoning := "r\x00\ue0000"
	in := []sessiondb.NewMessage{
		{SessionID: id, Role: "user", Content: "a\x00b \ue000 \ue0001 c", Timestamp: 10},
		{SessionID: id, Role: "user", Content: "bad \xff\xed\xa0\x80 utf8", Timestamp: 11},
		{SessionID: id, Role: "assistant", Content: []any{map[string]any{"type": "text", "text": "x\x00y"}},
			Reasoning: &reasoning, ToolCalls: json.RawMessage(`[{"id":"c1","function":{"name":"f\u0000"}}]`), Timestamp: 12},
		{SessionID: id, Role: "tool", Content: nil, ToolCallID: "c1", ToolName: "t\x00", Timestamp: 13},
	}
	for _, m := range in {
		if _, err := db.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := db.Messages(ctx, id, sessiondb.MessageFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 4 {
		t.Fatalf("%d messages, want 4", len(ms))
	}
	if got, want := ms[0].Content, "a\x00b \ue000 \ue0001 c"; got != want {
		t.Errorf("content = %q, want %q", got, want)
	}
	if got, want := ms[1].Content, "bad \uFFFD\uFFFD utf8"; got != want {
		t.Errorf("invalid UTF-8 = %q, want %q (scrubbed)", got, want)
	}
	if parts, ok := ms[2].Content.([]any); !ok || parts[0].(map[string]any)["text"] != "x\x00y" {
		t.Errorf("structured content = %#v", ms[2].Content)
	}
	if *ms[2].Reasoning != reasoning || string(ms[2].ToolCalls) != `[{"id":"c1","function":{"name":"f\u0000"}}]` {
		t.Errorf("reasoning %q tool calls %s", *ms[2].Reasoning, ms[2].ToolCalls)
	}
	if ms[3].Content != nil || *ms[3].ToolName != "t\x00" || ms[3].SessionID != id {
		t.Errorf("tool row = %#v", ms[3])
	}
	s, err := db.Session(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.MessageCount != 4 || s.ToolCallCount != 1 {
		t.Errorf("counters = %d messages %d calls, want 4 1", s.MessageCount, s.ToolCallCount)
	}
	conv, err := db.Conversation(ctx, id, sessiondb.ConversationOptions{IncludeRowIDs: true})
	if err != nil || len(conv) != 4 || conv[3]["content"] != "" || conv[0]["_row_id"] != ms[0].ID {
		t.Fatalf("conversation = %v, %v", conv, err)
	}
}

func TestAppendRefusals(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "nope", Role: "user"}); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Fatalf("append to a missing session: %v, want not found", err)
	}
	db.EnsureSession(ctx, "a", "cli", "")
	db.EnsureSession(ctx, "b", "cli", "")
	if err := db.EndSession(ctx, "b", sessiondb.EndReasonCompression); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "b", Role: "user"}); sessiondb.ErrorCode(err) != sessiondb.ECONFLICT {
		t.Fatalf("append after compression: %v, want conflict", err)
	}
	_, err := db.AppendMessages(ctx, "a", []sessiondb.NewMessage{{Role: "user", Content: "ok"}, {Content: "no role"}})
	if sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Fatalf("batch with a bad message: %v, want invalid", err)
	}
	_, err = db.AppendBatch(ctx, []sessiondb.NewMessage{{SessionID: "a", Role: "user"}, {SessionID: "b", Role: "user"}})
	var be *sessiondb.BatchError
	if !errors.As(err, &be) || be.Index != 1 || be.SessionID != "b" || sessiondb.ErrorCode(err) != sessiondb.ECONFLICT {
		t.Fatalf("batch to a compressed session: %v, want a BatchError for message 1", err)
	}
	if ms, _ := db.Messages(ctx, "a", sessiondb.MessageFilter{}); len(ms) != 0 {
		t.Fatalf("a refused batch wrote %d messages", len(ms))
	}
	if n, err := db.AppendBatch(ctx, []sessiondb.NewMessage{{SessionID: "a", Role: "user"}, {SessionID: "a", Role: "assistant"}}); n != 2 || err != nil {
		t.Fatalf("batch = %d, %v", n, err)
	}
}

func TestMessagesPaging(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	db.EnsureSession(ctx, "s", "cli", "")
	var batch []sessiondb.NewMessage
	for i := range 10 {
		batch = append(batch, sessiondb.NewMessage{Role: "user", Content: fmt.Sprint(i), Timestamp: float64(100 + i)})
	}
	if _, err := db.AppendMessages(ctx, "s", batch); err != nil {
		t.Fatal(err)
	}
	text := func(ms []*sessiondb.Message) string {
		s := ""
		for _, m := range ms {
			s += m.Content.(string)
		}
		return s
	}
	all, _ := db.Messages(ctx, "s", sessiondb.MessageFilter{})
	for _, tt := range []struct {
		f    sessiondb.MessageFilter
		want string
	}{
		{sessiondb.MessageFilter{}, "0123456789"},
		{sessiondb.MessageFilter{Limit: 3, Offset: 2}, "234"},
		{sessiondb.MessageFilter{Offset: 8}, "89"},
		{sessiondb.MessageFilter{Limit: 3, Latest: true}, "789"},
		{sessiondb.MessageFilter{Limit: 2, Offset: 1, Latest: true}, "78"},
		{sessiondb.MessageFilter{AfterID: all[6].ID}, "789"},
	} {
		ms, err := db.Messages(ctx, "s", tt.f)
		if got := text(ms); err != nil || got != tt.want {
			t.Errorf("Messages(%+v) = %q, %v; want %q", tt.f, got, err, tt.want)
		}
	}
}

// Eight writers append at once: every acknowledged message is stored once
// and the counters are exact.
func TestConcurrentAppends(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	const writers, each = 8, 25
	for _, id := range []string{"one", "two"} {
		if _, err := db.EnsureSession(ctx, id, "cli", ""); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	ids := make(chan int64, writers*each)
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				sid := []string{"one", "two"}[(w+i)%2]
				m := sessiondb.NewMessage{SessionID: sid, Role: "assistant", Content: fmt.Sprintf("w%d m%d", w, i),
					ToolCalls: json.RawMessage(`[{"id":"a"},{"id":"b"}]`)}
				var id int64
				var err error
				if i%5 == 4 {
					_, err = db.AppendMessages(ctx, sid, []sessiondb.NewMessage{m, m})
				} else {
					id, err = db.AppendMessage(ctx, m)
				}
				if err != nil {
					errs <- err
					continue
				}
				ids <- id
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(ids)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for id := range ids {
		if id != 0 && seen[id] {
			t.Fatalf("id %d returned twice", id)
		}
		seen[id] = true
	}
	total := 0
	for _, sid := range []string{"one", "two"} {
		s, err := db.Session(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := db.Messages(ctx, sid, sessiondb.MessageFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if s.MessageCount != int64(len(ms)) || s.ToolCallCount != 2*int64(len(ms)) {
			t.Errorf("%s: counters %d messages %d calls, rows %d", sid, s.MessageCount, s.ToolCallCount, len(ms))
		}
		total += len(ms)
	}
	if want := writers * (each + each/5); total != want {
		t.Fatalf("%d messages stored, want %d", total, want)
	}
}

// Appends racing an end with 'compression': each append is either stored
// (and counted) or refused with ECONFLICT, never both or neither.
func TestAppendRacesCompression(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	if _, err := db.EnsureSession(ctx, "s", "cli", ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				_, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "x"})
				switch sessiondb.ErrorCode(err) {
				case "":
					mu.Lock()
					acked++
					mu.Unlock()
				case sessiondb.ECONFLICT:
				default:
					t.Error(err)
				}
			}
		}()
	}
	if err := db.EndSession(ctx, "s", sessiondb.EndReasonCompression); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s, _ := db.Session(ctx, "s")
	ms, _ := db.Messages(ctx, "s", sessiondb.MessageFilter{})
	if s.MessageCount != int64(acked) || len(ms) != acked {
		t.Fatalf("%d appends acknowledged, %d stored, message_count %d", acked, len(ms), s.MessageCount)
	}
	n, err := db.ClearMessages(ctx, "s")
	if err != nil || n != int64(acked) {
		t.Fatalf("clear = %d, %v; want %d", n, err, acked)
	}
	if s, _ = db.Session(ctx, "s"); s.MessageCount != 0 || s.ToolCallCount != 0 {
		t.Fatalf("counters after clear: %d %d", s.MessageCount, s.ToolCallCount)
	}
}

// The trigram flag of an appended row depends on its session, which the
// append's pipeline learns with its answer: a first append to a cron,
// subagent or delegate session (guessed wrong) and later ones (guessed
// from the first) both leave its rows out of the trigram index, and a
// second store that guessed otherwise corrects its guess.
func TestAppendTrigramFlagFollowsSession(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	sessions := []sessiondb.NewSession{
		{ID: "cli", Source: "cli"},
		{ID: "cron", Source: "cron"},
		{ID: "sub", Source: "subagent"},
		{ID: "del", Source: "cli", ModelConfig: `{"_delegate_from":"cli"}`},
	}
	want := map[string]bool{"cli": true, "cron": false, "sub": false, "del": false}
	for _, s := range sessions {
		if _, err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	other, err := postgres.Open(ctx, db.Pool().Config().ConnString(), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for round, store := range []*postgres.DB{db, db, other} {
		for _, s := range sessions {
			if _, err := store.AppendMessage(ctx, sessiondb.NewMessage{SessionID: s.ID, Role: "user", Content: fmt.Sprintf("round %d", round)}); err != nil {
				t.Fatal(err)
			}
			if _, err := store.AppendMessages(ctx, s.ID, []sessiondb.NewMessage{{Role: "user", Content: "a"}, {Role: "tool", Content: "b"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows, err := db.Pool().Query(ctx, "SELECT session_id, role, trigram FROM messages ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var sid, role string
		var trigram bool
		if err := rows.Scan(&sid, &role, &trigram); err != nil {
			t.Fatal(err)
		}
		n++
		if w := want[sid] && role != "tool"; trigram != w {
			t.Errorf("session %s, %s row: trigram %v, want %v", sid, role, trigram, w)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 3*4*3 {
		t.Errorf("%d rows, want %d", n, 3*4*3)
	}
}
