package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Event stream sizes.
const (
	ringSize       = 4096 // events kept for streams that fall behind
	changePage     = 500  // messages read per Changes call
	maxCatchUp     = 20   // pages a reconnecting stream may catch up before it is told to reload
	heartbeatEvery = 15 * time.Second
)

// event is one Server-Sent Event. Its id is the cursor after it,
// "MESSAGEID.SESSIONSEQ": a client that reconnects with it as
// Last-Event-ID gets every later message and new session.
type event struct {
	n     int64 // position in the hub's sequence
	id    string
	typ   string // "message" or "session"
	msgID int64  // for messages, to drop those a catch-up already sent
	data  []byte
}

// messageEvent is the data of a "message" event: enough to place it and
// decide whether to fetch it.
type messageEvent struct {
	ID        int64   `json:"id"`
	SessionID string  `json:"session_id"`
	Role      string  `json:"role"`
	Timestamp float64 `json:"timestamp"`
	ToolName  *string `json:"tool_name"`
	Preview   string  `json:"preview"`
}

// sessionEvent is the data of a "session" event: the session row without
// its system prompt, or {"id", "deleted": true}.
type sessionEvent struct {
	*sessiondb.Session
	Deleted bool `json:"deleted,omitempty"`
}

// hub polls the store's ChangeFeed for every stream at once: one PRAGMA
// data_version per interval, and one Changes call per change, whose events
// go to a ring that every stream reads.
type hub struct {
	feed     ChangeFeed
	interval time.Duration
	once     sync.Once
	ctx      context.Context
	cancel   context.CancelFunc
	ready    chan struct{} // closed once the cursor is set

	mu      sync.Mutex
	ring    []event
	next    int64         // n of the next event
	wake    chan struct{} // closed and replaced when events arrive
	lastMsg int64
	seq     int64
	prints  map[string]string // session id → its row as last sent
}

func newHub(feed ChangeFeed, interval time.Duration) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &hub{feed: feed, interval: interval, ctx: ctx, cancel: cancel, ready: make(chan struct{}),
		wake: make(chan struct{}), prints: map[string]string{}}
}

// start begins polling on the first stream and waits until the hub has
// its starting cursor (or ctx, the request's, ends).
func (h *hub) start(ctx context.Context) error {
	h.once.Do(func() {
		go h.run()
	})
	select {
	case <-h.ready:
		return nil
	case <-h.ctx.Done():
		return sessiondb.Errorf(sessiondb.EUNAVAILABLE, "the server is stopping")
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return sessiondb.Errorf(sessiondb.EUNAVAILABLE, "the store does not answer the change feed; try again")
	}
}

func (h *hub) close() { h.cancel() }

func (h *hub) run() {
	ctx := h.ctx
	var version int64
	for {
		err := h.init(ctx, &version)
		if err == nil {
			break
		}
		select { // a busy or unreachable store: try again
		case <-ctx.Done():
			return
		case <-time.After(h.interval):
		}
	}
	close(h.ready)
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v, err := h.feed.DataVersion(ctx)
		if err != nil || v == version {
			continue // a failed poll is retried on the next tick
		}
		if err := h.poll(ctx); err == nil {
			version = v
		}
	}
}

// init sets the starting cursor, the data version and the rows of the
// recent sessions as they are now.
func (h *hub) init(ctx context.Context, version *int64) error {
	v, err := h.feed.DataVersion(ctx)
	if err != nil {
		return err
	}
	lastMsg, seq, err := h.feed.ChangeHead(ctx)
	if err != nil {
		return err
	}
	_, sess, _, err := h.feed.Changes(ctx, lastMsg, seq, 1)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	*version, h.lastMsg, h.seq = v, lastMsg, seq
	for _, s := range sess {
		h.prints[s.ID] = fingerprint(s)
	}
	return nil
}

// poll reads every change since the hub's cursor into the ring.
func (h *hub) poll(ctx context.Context) error {
	for {
		msgs, sess, seq, err := h.feed.Changes(ctx, h.lastMsg, h.seq, changePage)
		if err != nil {
			return err
		}
		var evs []event
		last := h.lastMsg
		for _, m := range msgs {
			evs = append(evs, msgEvent(m, h.seq))
			last = m.ID
		}
		cursor := cursorID(last, seq)
		h.mu.Lock()
		for _, s := range sess {
			if p := fingerprint(s); h.prints[s.ID] != p {
				h.prints[s.ID] = p
				evs = append(evs, sessEvent(s, false, cursor))
			}
		}
		if len(h.prints) > 10000 {
			h.prints = map[string]string{} // bounded: at worst some rows are sent again
		}
		// The cursor moves with the events, under one lock: a stream that
		// starts in between either gets both or neither.
		h.lastMsg, h.seq = last, seq
		h.pushLocked(evs)
		h.mu.Unlock()
		if len(msgs) < changePage {
			return nil
		}
	}
}

// publishSession sends a change this server made itself.
func (h *hub) publishSession(s *sessiondb.Session, deleted bool) {
	h.mu.Lock()
	cursor := cursorID(h.lastMsg, h.seq)
	if deleted {
		delete(h.prints, s.ID)
	} else {
		h.prints[s.ID] = fingerprint(s)
	}
	h.pushLocked([]event{sessEvent(s, deleted, cursor)})
	h.mu.Unlock()
}

func (h *hub) pushLocked(evs []event) {
	if len(evs) == 0 {
		return
	}
	for _, e := range evs {
		e.n = h.next
		h.next++
		h.ring = append(h.ring, e)
	}
	if over := len(h.ring) - ringSize; over > 0 {
		h.ring = append(h.ring[:0:0], h.ring[over:]...)
	}
	close(h.wake)
	h.wake = make(chan struct{})
}

// since returns the events from position n on, the next position, the
// channel closed when more arrive, and whether events before the ring's
// start were lost.
func (h *hub) since(n int64) ([]event, int64, <-chan struct{}, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	lost := false
	first := h.next - int64(len(h.ring))
	if n < first {
		n, lost = first, true
	}
	evs := append([]event(nil), h.ring[n-first:]...)
	return evs, h.next, h.wake, lost
}

func (h *hub) position() (n, lastMsg, seq int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.next, h.lastMsg, h.seq
}

// fingerprint is a session row as sent, to tell whether it changed.
func fingerprint(s *sessiondb.Session) string {
	c := *s
	c.SystemPrompt = nil
	b, _ := json.Marshal(&c)
	return string(b)
}

func cursorID(lastMsg, seq int64) string {
	return strconv.FormatInt(lastMsg, 10) + "." + strconv.FormatInt(seq, 10)
}

func parseCursor(s string) (lastMsg, seq int64, ok bool) {
	a, b, found := strings.Cut(s, ".")
	if !found {
		return 0, 0, false
	}
	m, err1 := strconv.ParseInt(a, 10, 64)
	q, err2 := strconv.ParseInt(b, 10, 64)
	return m, q, err1 == nil && err2 == nil && m >= 0 && q >= 0
}

func msgEvent(m *sessiondb.Message, seq int64) event {
	text, _ := m.Content.(string)
	data, _ := json.Marshal(messageEvent{m.ID, m.SessionID, m.Role, m.Timestamp, m.ToolName, text})
	return event{id: cursorID(m.ID, seq), typ: "message", msgID: m.ID, data: data}
}

func sessEvent(s *sessiondb.Session, deleted bool, cursor string) event {
	c := *s
	c.SystemPrompt = nil
	var data []byte
	if deleted {
		data, _ = json.Marshal(map[string]any{"id": s.ID, "deleted": true})
	} else {
		data, _ = json.Marshal(sessionEvent{Session: &c})
	}
	return event{id: cursor, typ: "session", data: data}
}

// events serves GET /api/v1/events as Server-Sent Events: "ready" (its id
// the cursor the stream starts at), then "message" and "session" events
// as changes are committed, "reset" when the client fell too far behind
// and should reload, and a comment line every 15 s. Last-Event-ID (or
// ?last_event_id=) resumes after that cursor: nothing written in between
// is missed.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if s.hub == nil {
		writeError(w, &apiError{http.StatusNotImplemented, codeNotImplemented, "this store reports no changes"})
		return
	}
	if !s.acquireStream() {
		writeError(w, &apiError{http.StatusServiceUnavailable, codeTooMany, "too many open event streams"})
		return
	}
	defer s.releaseStream()
	if err := s.hub.start(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	pos, lastMsg, seq := s.hub.position()
	ctx := r.Context()
	resume := r.Header.Get("Last-Event-ID")
	if resume == "" {
		resume = r.URL.Query().Get("last_event_id")
	}
	sent := lastMsg // messages up to here are not sent again
	fmt.Fprintf(w, "retry: 2000\n")
	if m, q, ok := parseCursor(resume); ok && (m < lastMsg || q < seq) {
		var err error
		if sent, err = s.catchUp(ctx, w, m, q); err != nil {
			return
		}
	} else {
		writeEvent(w, event{id: cursorID(lastMsg, seq), typ: "ready", data: []byte("{}")})
	}
	if rc.Flush() != nil {
		return
	}
	beat := time.NewTicker(heartbeatEvery)
	defer beat.Stop()
	for {
		evs, next, wake, lost := s.hub.since(pos)
		pos = next
		if lost {
			writeEvent(w, event{typ: "reset", data: []byte(`{"reason":"the stream fell behind; reload"}`)})
		}
		for _, e := range evs {
			if e.typ == "message" {
				if e.msgID <= sent {
					continue
				}
				sent = e.msgID
			}
			writeEvent(w, e)
		}
		if len(evs) > 0 || lost {
			if rc.Flush() != nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.hub.ctx.Done():
			return
		case <-beat.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			if rc.Flush() != nil {
				return
			}
		case <-wake:
		}
	}
}

// catchUp sends what was written after a client's last cursor, reading the
// store directly, and returns the last message id sent. A client too far
// behind gets a "reset" event instead of the rest.
func (s *Server) catchUp(ctx context.Context, w http.ResponseWriter, lastMsg, seq int64) (int64, error) {
	for range maxCatchUp {
		msgs, sess, next, err := s.hub.feed.Changes(ctx, lastMsg, seq, changePage)
		if err != nil {
			return lastMsg, err
		}
		for _, m := range msgs {
			writeEvent(w, msgEvent(m, seq))
			lastMsg = m.ID
		}
		cursor := cursorID(lastMsg, next)
		for _, ss := range sess {
			writeEvent(w, sessEvent(ss, false, cursor))
		}
		seq = next
		if len(msgs) < changePage {
			return lastMsg, nil
		}
	}
	writeEvent(w, event{typ: "reset", data: []byte(`{"reason":"too much changed since the last event; reload"}`)})
	return lastMsg, nil
}

func writeEvent(w http.ResponseWriter, e event) {
	var b strings.Builder
	if e.id != "" {
		b.WriteString("id: " + e.id + "\n")
	}
	b.WriteString("event: " + e.typ + "\ndata: ")
	b.Write(e.data) // JSON: one line, no newline inside
	b.WriteString("\n\n")
	_, _ = w.Write([]byte(b.String()))
}

func (s *Server) acquireStream() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams >= s.cfg.MaxEventClients {
		return false
	}
	s.streams++
	return true
}

func (s *Server) releaseStream() {
	s.mu.Lock()
	s.streams--
	s.mu.Unlock()
}
