package storetest

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// base is the first timestamp the suite gives (2023-11-14T22:13:20Z): far
// from any store's clock, so a value the store made up is told apart from
// one the suite gave.
const base = 1700000000.0

// day is a day in Unix seconds.
const day = 86400.0

// harness is a store under test whose helpers fail t on error.
type harness struct {
	t *testing.T
	sessiondb.Store
}

// on returns h reporting to t (a subtest sharing h's store).
func (h *harness) on(t *testing.T) *harness { return &harness{t: t, Store: h.Store} }

// create creates a session.
func (h *harness) create(ns sessiondb.NewSession) string {
	h.t.Helper()
	id, err := h.CreateSession(h.t.Context(), ns)
	if err != nil {
		h.t.Fatalf("CreateSession(%q): %v", ns.ID, err)
	}
	return id
}

// at creates a session with source cli started at the given time.
func (h *harness) at(id string, started float64) string {
	h.t.Helper()
	return h.create(sessiondb.NewSession{ID: id, Source: "cli", StartedAt: started})
}

// get reads a session.
func (h *harness) get(id string) *sessiondb.Session {
	h.t.Helper()
	s, err := h.Session(h.t.Context(), id)
	if err != nil {
		h.t.Fatalf("Session(%q): %v", id, err)
	}
	return s
}

// exists reports whether a session exists, failing on any error but
// ENOTFOUND.
func (h *harness) exists(id string) bool {
	h.t.Helper()
	_, err := h.Session(h.t.Context(), id)
	switch sessiondb.ErrorCode(err) {
	case "":
		return true
	case sessiondb.ENOTFOUND:
		return false
	}
	h.t.Fatalf("Session(%q): %v", id, err)
	return false
}

// add appends messages to a session one by one and returns their ids.
func (h *harness) add(sid string, ms ...sessiondb.NewMessage) []int64 {
	h.t.Helper()
	ids := make([]int64, len(ms))
	for i, m := range ms {
		m.SessionID = sid
		id, err := h.AppendMessage(h.t.Context(), m)
		if err != nil {
			h.t.Fatalf("AppendMessage(%s, %s %q): %v", sid, m.Role, m.Content, err)
		}
		ids[i] = id
	}
	return ids
}

// end ends a session.
func (h *harness) end(id, reason string) {
	h.t.Helper()
	if err := h.EndSession(h.t.Context(), id, reason); err != nil {
		h.t.Fatalf("EndSession(%q, %q): %v", id, reason, err)
	}
}

// title sets a session's title.
func (h *harness) title(id, title string) {
	h.t.Helper()
	if err := h.SetTitle(h.t.Context(), id, title); err != nil {
		h.t.Fatalf("SetTitle(%q, %q): %v", id, title, err)
	}
}

// messages lists a session's messages.
func (h *harness) messages(sid string, f sessiondb.MessageFilter) []*sessiondb.Message {
	h.t.Helper()
	ms, err := h.Messages(h.t.Context(), sid, f)
	if err != nil {
		h.t.Fatalf("Messages(%q, %+v): %v", sid, f, err)
	}
	return ms
}

// conversation returns a session's conversation.
func (h *harness) conversation(sid string, o sessiondb.ConversationOptions) []map[string]any {
	h.t.Helper()
	c, err := h.Conversation(h.t.Context(), sid, o)
	if err != nil {
		h.t.Fatalf("Conversation(%q, %+v): %v", sid, o, err)
	}
	return c
}

// list lists sessions.
func (h *harness) list(o sessiondb.ListOptions) ([]sessiondb.SessionSummary, int) {
	h.t.Helper()
	rows, total, err := h.ListSessions(h.t.Context(), o)
	if err != nil {
		h.t.Fatalf("ListSessions(%+v): %v", o, err)
	}
	return rows, total
}

// listIDs lists every matching session (no limit) and returns the ids in
// order.
func (h *harness) listIDs(o sessiondb.ListOptions) []string {
	h.t.Helper()
	o.Limit = -1
	rows, _ := h.list(o)
	return summaryIDs(rows)
}

// counters returns a session's message_count and tool_call_count.
func (h *harness) counters(id string) (int64, int64) {
	h.t.Helper()
	s := h.get(id)
	return s.MessageCount, s.ToolCallCount
}

// wantCounters fails unless a session's counters are msgs and calls.
func (h *harness) wantCounters(id string, msgs, calls int64) {
	h.t.Helper()
	if gotM, gotC := h.counters(id); gotM != msgs || gotC != calls {
		h.t.Fatalf("%s: message_count, tool_call_count = %d, %d; want %d, %d", id, gotM, gotC, msgs, calls)
	}
}

// wantCode fails unless err carries the error code want.
func wantCode(t *testing.T, err error, want string) {
	t.Helper()
	if got := sessiondb.ErrorCode(err); got != want {
		t.Fatalf("error code = %q (err %v), want %q", got, err, want)
	}
}

// str renders a nullable column for messages ("<nil>" for NULL).
func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func ptr[T any](v T) *T { return &v }

// user and assistant are plain messages at a given time.
func user(text string, ts float64) sessiondb.NewMessage {
	return sessiondb.NewMessage{Role: sessiondb.RoleUser, Content: text, Timestamp: ts}
}

func assistant(text string, ts float64) sessiondb.NewMessage {
	return sessiondb.NewMessage{Role: sessiondb.RoleAssistant, Content: text, Timestamp: ts}
}

func summaryIDs(rows []sessiondb.SessionSummary) []string {
	ids := []string{}
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	return ids
}

func messageIDs(ms []*sessiondb.Message) []int64 {
	ids := []int64{}
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids
}

// row returns the listed row of id.
func row(t *testing.T, rows []sessiondb.SessionSummary, id string) sessiondb.SessionSummary {
	t.Helper()
	for _, r := range rows {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no row %q in %v", id, summaryIDs(rows))
	return sessiondb.SessionSummary{}
}

// sameSet fails unless got and want hold the same strings in any order.
func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		t.Errorf("%s = %v, want %v", what, g, w)
	}
}

// equal fails unless got and want are deeply equal.
func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// decode decodes JSON text, failing t when it is invalid.
func decode(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return v
}

// field is one nullable column compared as text (str renders NULL).
type field struct{ name, got, want string }

// fields reports every field whose value is not the one wanted.
func fields(t *testing.T, what string, fs ...field) {
	t.Helper()
	for _, f := range fs {
		if f.got != f.want {
			t.Errorf("%s %s = %q, want %q", what, f.name, f.got, f.want)
		}
	}
}
