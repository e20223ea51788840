package sqlite_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

func TestAppendBatch(t *testing.T) {
	db := MustOpen(t)
	for _, id := range []string{"a", "b", "done"} {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.EndSession(ctx, "done", sessiondb.EndReasonCompression); err != nil {
		t.Fatal(err)
	}
	user := func(sid, text string) sessiondb.NewMessage {
		return sessiondb.NewMessage{SessionID: sid, Role: "user", Content: text}
	}

	for _, tt := range []struct {
		name  string
		batch []sessiondb.NewMessage
		index int
		sid   string
		code  string
	}{
		{"missing session", []sessiondb.NewMessage{user("a", "1"), user("b", "2"), user("a", "3"), user("ghost", "4")}, 3, "ghost", sessiondb.ENOTFOUND},
		{"closed session", []sessiondb.NewMessage{user("a", "1"), user("done", "2"), user("done", "3")}, 1, "done", sessiondb.ECONFLICT},
		{"refused content", []sessiondb.NewMessage{user("a", "1"), user("b", sessiondb.ContentJSONPrefix+"x")}, 1, "b", sessiondb.EINVALID},
		{"no session id", []sessiondb.NewMessage{user("a", "1"), user("", "2")}, 1, "", sessiondb.EINVALID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := db.AppendBatch(ctx, tt.batch)
			var be *sqlite.BatchError
			if !errors.As(err, &be) || be.Index != tt.index || be.SessionID != tt.sid || sessiondb.ErrorCode(err) != tt.code {
				t.Fatalf("AppendBatch = %d, %v (%#v); want a BatchError for message %d of %q, code %s", n, err, be, tt.index, tt.sid, tt.code)
			}
			if got, err := db.MessageCount(ctx); err != nil || got != 0 {
				t.Errorf("%d messages written by a refused batch (%v), want none", got, err)
			}
		})
	}

	reasoning := "think"
	calls := json.RawMessage(`[{"id":"c1"},{"id":"c2"}]`)
	batch := []sessiondb.NewMessage{
		user("b", "one"),
		{SessionID: "a", Role: "assistant", Content: "two", ToolCalls: calls, Reasoning: &reasoning},
		{SessionID: "b", Role: "user", Content: "three", Reasoning: &reasoning},
	}
	if n, err := db.AppendBatch(ctx, batch); err != nil || n != 3 {
		t.Fatalf("AppendBatch = %d, %v", n, err)
	}
	a, _ := db.Session(ctx, "a")
	b, _ := db.Session(ctx, "b")
	if a.MessageCount != 1 || a.ToolCallCount != 2 || b.MessageCount != 2 || b.ToolCallCount != 0 {
		t.Errorf("counters: a %d/%d, b %d/%d; want 1/2 and 2/0", a.MessageCount, a.ToolCallCount, b.MessageCount, b.ToolCallCount)
	}
	am, _ := db.Messages(ctx, "a", sessiondb.MessageFilter{})
	bm, _ := db.Messages(ctx, "b", sessiondb.MessageFilter{})
	if len(am) != 1 || len(bm) != 2 || !(bm[0].ID < am[0].ID && am[0].ID < bm[1].ID) {
		t.Fatalf("messages not in batch order: a %+v, b %+v", am, bm)
	}
	if am[0].Reasoning == nil || bm[1].Reasoning != nil {
		t.Errorf("reasoning: assistant %v, user %v; want it kept on the assistant row only", am[0].Reasoning, bm[1].Reasoning)
	}
}
