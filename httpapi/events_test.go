package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/httpapi"
	"github.com/sessiondb/sessiondb/internal/servetest"
)

// sse is one open event stream.
type sse struct {
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

type sseEvent struct{ id, typ, data string }

func (f *fixture) stream(t *testing.T, lastID string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.ts.URL+"/api/v1/events", nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %v", resp.StatusCode, resp.Header)
	}
	s := &sse{resp: resp, events: make(chan sseEvent, 100), cancel: cancel}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.typ != "" {
					s.events <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			}
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s
}

// next returns the next event of type typ, skipping others; it fails
// after 10 s (the feed polls every 20 ms here).
func (s *sse) next(t *testing.T, typ string) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-s.events:
			if !ok {
				t.Fatalf("stream ended waiting for %s", typ)
			}
			if e.typ == typ {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event", typ)
		}
	}
}

// TestEventsFromAnotherProcess: a message another process writes reaches
// the stream as a "message" event and its session as a "session" event,
// on either backend.
func TestEventsFromAnotherProcess(t *testing.T) { backends(t, testEventsFromAnotherProcess) }

func testEventsFromAnotherProcess(t *testing.T, f *fixture) {
	s := f.stream(t, "")
	ready := s.next(t, "ready")
	if ready.id == "" {
		t.Fatal("ready has no id")
	}
	servetest.AppendFromProcess(t, f.path, servetest.Docker, "written by another process")
	e := s.next(t, "message")
	var m struct {
		ID        int64
		SessionID string `json:"session_id"`
		Preview   string
	}
	if err := json.Unmarshal([]byte(e.data), &m); err != nil || m.SessionID != servetest.Docker || m.Preview != "written by another process" {
		t.Fatalf("message event %+v (%v)", e, err)
	}
	if !strings.HasPrefix(e.id, itoa(m.ID)+".") {
		t.Errorf("event id %q does not start with the message id %d", e.id, m.ID)
	}
	se := s.next(t, "session")
	var sess sessiondb.Session
	if err := json.Unmarshal([]byte(se.data), &sess); err != nil || sess.ID != servetest.Docker || sess.MessageCount != 5 {
		t.Fatalf("session event %s", se.data)
	}

	t.Run("a change made through the API is pushed", func(t *testing.T) {
		f.do(t, "PATCH", "/api/v1/sessions/"+servetest.Project, `{"pinned":true}`, httpapi.CSRFHeader, "1")
		for {
			e := s.next(t, "session")
			if strings.Contains(e.data, servetest.Project) && strings.Contains(e.data, `"pinned":1`) {
				return
			}
		}
	})
}

// TestEventsResume: a client that reconnects with Last-Event-ID gets every
// message written while it was away, once, in order, on either backend.
func TestEventsResume(t *testing.T) { backends(t, testEventsResume) }

func testEventsResume(t *testing.T, f *fixture) {
	s := f.stream(t, "")
	s.next(t, "ready")
	servetest.AppendFromProcess(t, f.path, servetest.Docker, "one")
	last := s.next(t, "message").id
	s.cancel()

	var want []int64
	for _, text := range []string{"two", "three", "four"} {
		id, err := f.store.AppendMessage(t.Context(), sessiondb.NewMessage{SessionID: servetest.Project, Role: "user", Content: text})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	id, err := f.store.CreateSession(t.Context(), sessiondb.NewSession{ID: "20260510_000000_abcdef", Source: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	s2 := f.stream(t, last)
	for _, w := range want {
		e := s2.next(t, "message")
		var m struct{ ID int64 }
		json.Unmarshal([]byte(e.data), &m)
		if m.ID != w {
			t.Fatalf("resumed message %d, want %d", m.ID, w)
		}
	}
	for {
		e := s2.next(t, "session")
		if strings.Contains(e.data, id) {
			break
		}
	}
	// and then live, without repeats
	servetest.AppendFromProcess(t, f.path, servetest.Docker, "five")
	e := s2.next(t, "message")
	if !strings.Contains(e.data, `"preview":"five"`) {
		t.Fatalf("after resuming: %s", e.data)
	}
}
