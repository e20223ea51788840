package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// testAppendBatch checks the optional sessiondb.BatchAppender: messages to
// several sessions in one transaction, in the batch's order, all or none;
// a refused message is a *BatchError naming it. A store without
// AppendBatch skips.
func testAppendBatch(t *testing.T, s *suite) {
	batcher := func(t *testing.T) (*harness, sessiondb.BatchAppender) {
		h := s.store(t)
		b, ok := h.Store.(sessiondb.BatchAppender)
		if !ok {
			t.Skip("the store has no AppendBatch")
		}
		h.at("a", base)
		h.at("b", base)
		return h, b
	}
	contents := func(h *harness, sid string) []string {
		h.t.Helper()
		var out []string
		for _, m := range h.messages(sid, sessiondb.MessageFilter{}) {
			out = append(out, m.Content.(string))
		}
		return out
	}

	t.Run("appends to each session in the batch's order and counts per session", func(t *testing.T) {
		h, b := batcher(t)
		h.add("a", user("a0", base+1))
		n, err := b.AppendBatch(t.Context(), []sessiondb.NewMessage{
			{SessionID: "a", Role: "user", Content: "a1", Timestamp: base + 2},
			{SessionID: "b", Role: "assistant", Content: "b1", Timestamp: base + 2, ToolCalls: []byte(`[{"id":"c1"},{"id":"c2"}]`)},
			{SessionID: "a", Role: "assistant", Content: "a2", Timestamp: base + 3, ToolCalls: []byte(`[{"id":"c3"}]`)},
			{SessionID: "b", Role: "tool", Content: "b2", Timestamp: base + 3, ToolCallID: "c1"},
		})
		if err != nil || n != 4 {
			t.Fatalf("AppendBatch = %d, %v; want 4", n, err)
		}
		equal(t, "a's messages", contents(h, "a"), []string{"a0", "a1", "a2"})
		equal(t, "b's messages", contents(h, "b"), []string{"b1", "b2"})
		h.wantCounters("a", 3, 1)
		h.wantCounters("b", 2, 2)
		am, bm := h.messages("a", sessiondb.MessageFilter{}), h.messages("b", sessiondb.MessageFilter{})
		if !(am[0].ID < am[1].ID && am[1].ID < bm[0].ID && bm[0].ID < am[2].ID && am[2].ID < bm[1].ID) {
			t.Errorf("ids a %v b %v: not in the batch's order", messageIDs(am), messageIDs(bm))
		}
	})

	t.Run("an empty batch appends nothing", func(t *testing.T) {
		_, b := batcher(t)
		if n, err := b.AppendBatch(t.Context(), nil); n != 0 || err != nil {
			t.Fatalf("AppendBatch(nil) = %d, %v", n, err)
		}
	})

	refused := func(t *testing.T, h *harness, b sessiondb.BatchAppender, ms []sessiondb.NewMessage, index int, sid, code string) {
		t.Helper()
		n, err := b.AppendBatch(t.Context(), ms)
		var be *sessiondb.BatchError
		if !errors.As(err, &be) {
			t.Fatalf("AppendBatch = %d, %v; want a *BatchError", n, err)
		}
		if be.Index != index || be.SessionID != sid {
			t.Errorf("BatchError names message %d of %q, want %d of %q (%v)", be.Index, be.SessionID, index, sid, err)
		}
		wantCode(t, err, code)
		if n != 0 {
			t.Errorf("n = %d, want 0", n)
		}
		for _, id := range []string{"a", "b"} {
			if got := contents(h, id); len(got) != 0 {
				t.Errorf("%s got %v from a refused batch", id, got)
			}
			h.wantCounters(id, 0, 0)
		}
	}
	m := func(sid string) sessiondb.NewMessage {
		return sessiondb.NewMessage{SessionID: sid, Role: "user", Content: "x " + sid, Timestamp: base + 1}
	}

	t.Run("a missing session refuses the batch at its first message", func(t *testing.T) {
		h, b := batcher(t)
		// "zz" comes first in the batch, "nope" first in sorted order.
		refused(t, h, b, []sessiondb.NewMessage{m("a"), m("b"), m("a"), m("zz"), m("nope"), m("zz")}, 3, "zz", sessiondb.ENOTFOUND)
	})

	t.Run("a session ended by compression refuses the batch", func(t *testing.T) {
		h, b := batcher(t)
		h.at("c", base)
		h.end("c", sessiondb.EndReasonCompression)
		refused(t, h, b, []sessiondb.NewMessage{m("a"), m("c"), m("b")}, 1, "c", sessiondb.ECONFLICT)
	})

	t.Run("an invalid message refuses the batch", func(t *testing.T) {
		h, b := batcher(t)
		bad := m("b")
		bad.Role = ""
		refused(t, h, b, []sessiondb.NewMessage{m("a"), m("b"), bad}, 2, "b", sessiondb.EINVALID)
	})
}

// testAppendMessagesRefused: AppendMessages' error names the refused
// message by its position in the batch, from 1, so the caller can fix it.
func testAppendMessagesRefused(t *testing.T, s *suite) {
	for _, at := range []int{0, 2} {
		h := withOne(t, s)
		ms := []sessiondb.NewMessage{user("one", base+1), user("two", base+2), user("three", base+3)}
		ms[at].Role = ""
		_, err := h.AppendMessages(t.Context(), "s1", ms)
		wantCode(t, err, sessiondb.EINVALID)
		if want := fmt.Sprintf("message %d:", at+1); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name the refused message (%q)", err, want)
		}
	}
}
