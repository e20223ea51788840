package browse

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
	"github.com/sessiondb/sessiondb/sqlite"
)

// The model is white-box tested here (package browse): tests feed keys,
// window sizes and command results to Update, run the commands it returns
// synchronously, and read View, against a real store on a temporary file.

const (
	idDocker = "20260501_100000_aaaaaa"
	idK8s    = "20260502_100000_bbbbbb"
	idCJK    = "20260503_100000_cccccc"
)

func unix(s string) float64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return float64(t.Unix())
}

// mustOpen opens a store on a new file with three sessions: "Docker
// deployment" (user, assistant with reasoning and a tool call, tool
// output), "Kubernetes notes" and an untitled Chinese one, newest last.
func mustOpen(tb testing.TB) *sqlite.DB {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "state.db")
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	ctx := context.Background()
	str := func(s string) *string { return &s }
	type session struct {
		id, source, title, started string
		msgs                       []sessiondb.NewMessage
	}
	for _, s := range []session{
		{idDocker, "cli", "Docker deployment", "2026-05-01T10:00:00Z", []sessiondb.NewMessage{
			{Role: "user", Content: "how do I deploy with docker compose?"},
			{Role: "assistant", Content: "Run docker compose up -d in the project directory.",
				Reasoning: str("The user wants compose, not swarm."),
				ToolCalls: json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"docker compose ps\"}"}}]`)},
			{Role: "tool", ToolName: "terminal", ToolCallID: "c1", Content: "NAME  STATUS\nweb   up\ndb    up\ncache up\nworker up\n"},
		}},
		{idK8s, "telegram", "Kubernetes notes", "2026-05-02T10:00:00Z", []sessiondb.NewMessage{
			{Role: "user", Content: "kubectl get pods shows CrashLoopBackOff"},
			{Role: "assistant", Content: "Check the logs with kubectl logs."},
		}},
		{idCJK, "cli", "", "2026-05-03T10:00:00Z", []sessiondb.NewMessage{
			{Role: "user", Content: "这个项目的计划是什么？"},
			{Role: "assistant", Content: "项目计划如下：先迁移数据库。"},
		}},
	} {
		started := unix(s.started)
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: s.id, Source: s.source, Model: "test-model", StartedAt: started}); err != nil {
			tb.Fatal(err)
		}
		if s.title != "" {
			if err := db.SetTitle(ctx, s.id, s.title); err != nil {
				tb.Fatal(err)
			}
		}
		for i, m := range s.msgs {
			m.SessionID, m.Timestamp = s.id, started+float64(i+1)
			if _, err := db.AppendMessage(ctx, m); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return db
}

// spy wraps a store to count searches and inject errors.
type spy struct {
	Store
	mu       sync.Mutex
	searches []string
	fail     map[string]error
}

func (s *spy) err(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail[op]
}

func (s *spy) setFail(op string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail == nil {
		s.fail = map[string]error{}
	}
	s.fail[op] = err
}

func (s *spy) Search(ctx context.Context, q string, o sessiondb.SearchOptions) ([]sessiondb.SearchHit, error) {
	s.mu.Lock()
	s.searches = append(s.searches, q)
	s.mu.Unlock()
	if err := s.err("Search"); err != nil {
		return nil, err
	}
	return s.Store.Search(ctx, q, o)
}

func (s *spy) ListSessions(ctx context.Context, o sessiondb.ListOptions) ([]sessiondb.SessionSummary, int, error) {
	if err := s.err("ListSessions"); err != nil {
		return nil, 0, err
	}
	return s.Store.ListSessions(ctx, o)
}

func (s *spy) SetPinned(ctx context.Context, id string, on bool) error {
	if err := s.err("SetPinned"); err != nil {
		return err
	}
	return s.Store.SetPinned(ctx, id, on)
}

func markdown(w io.Writer, s *sessiondb.Session, msgs []*sessiondb.Message) error {
	enc := export.NewMarkdown(w, export.Options{})
	err := enc.Encode(&export.Item{Session: s, Messages: func(yield func(*sessiondb.Message, error) bool) {
		for _, m := range msgs {
			if !yield(m, nil) {
				return
			}
		}
	}})
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	return err
}

// harness is a model on a spied store, sized 80x24, with its first page
// loaded.
type harness struct {
	t     *testing.T
	db    *sqlite.DB
	store *spy
	m     *Model
	quit  bool
}

func newHarness(t *testing.T, o Options) *harness {
	t.Helper()
	db := mustOpen(t)
	h := &harness{t: t, db: db, store: &spy{Store: db}}
	o.Debounce = time.Millisecond
	if o.Path == "" {
		o.Path = db.Path()
	}
	h.m = New(context.Background(), h.store, o)
	h.runCmd(h.m.Init())
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	return h
}

// send feeds msg to Update and runs the commands it returns, feeding their
// results back, until nothing is left to run.
func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	_, cmd := h.m.Update(msg)
	h.runCmd(cmd)
}

func (h *harness) runCmd(cmd tea.Cmd) {
	h.t.Helper()
	for _, msg := range h.exec(cmd) {
		h.send(msg)
	}
}

// exec runs cmd (each command of a batch) and returns the messages.
func (h *harness) exec(cmd tea.Cmd) []tea.Msg {
	h.t.Helper()
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-done:
	case <-time.After(10 * time.Second):
		h.t.Fatal("a command did not return")
	}
	switch msg := msg.(type) {
	case nil:
		return nil
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, h.exec(c)...)
		}
		return out
	case tea.QuitMsg:
		h.quit = true
		return nil
	}
	return []tea.Msg{msg}
}

func (h *harness) keys(ks ...tea.KeyMsg) {
	h.t.Helper()
	for _, k := range ks {
		h.send(k)
	}
}

func (h *harness) typeText(s string) {
	h.t.Helper()
	for _, r := range s {
		h.send(key(r))
	}
}

func key(r rune) tea.KeyMsg {
	if r == ' ' {
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}
}

var (
	enter  = tea.KeyMsg{Type: tea.KeyEnter}
	escKey = tea.KeyMsg{Type: tea.KeyEsc}
	down   = tea.KeyMsg{Type: tea.KeyDown}
	ctrlU  = tea.KeyMsg{Type: tea.KeyCtrlU}
	ctrlR  = tea.KeyMsg{Type: tea.KeyCtrlR}
	endKey = tea.KeyMsg{Type: tea.KeyEnd}
	home   = tea.KeyMsg{Type: tea.KeyHome}
)

// screen returns View without escape sequences.
func (h *harness) screen() string { return ansi.Strip(h.m.View()) }

func (h *harness) wantScreen(subs ...string) {
	h.t.Helper()
	s := h.screen()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			h.t.Fatalf("screen lacks %q:\n%s", sub, s)
		}
	}
}

func (h *harness) dontWantScreen(subs ...string) {
	h.t.Helper()
	s := h.screen()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			h.t.Fatalf("screen shows %q:\n%s", sub, s)
		}
	}
}

// statusLine is the second-last line of the screen.
func (h *harness) statusLine() string {
	lines := strings.Split(h.screen(), "\n")
	return lines[len(lines)-2]
}

// checkFits fails unless the view has exactly h lines of at most w cells.
func checkFits(t *testing.T, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != h {
		t.Fatalf("view has %d lines, want %d:\n%s", len(lines), h, ansi.Strip(view))
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Fatalf("line %d is %d cells wide, more than %d: %q", i+1, n, w, ansi.Strip(l))
		}
	}
}

func TestBrowseListShowsSessionsNewestFirst(t *testing.T) {
	h := newHarness(t, Options{})
	s := h.screen()
	cjk, k8s, docker := strings.Index(s, "(untitled)"), strings.Index(s, "Kubernetes notes"), strings.Index(s, "Docker deployment")
	if cjk < 0 || k8s < 0 || docker < 0 || !(cjk < k8s && k8s < docker) {
		t.Fatalf("want the untitled, Kubernetes and Docker sessions newest first:\n%s", s)
	}
	h.wantScreen("这个项目的计划是什么", "telegram", "3 sessions", h.db.Path()[len(h.db.Path())-8:])
	checkFits(t, h.m.View(), 80, 24)
	for _, r := range h.m.rows {
		h.wantScreen(h.m.day(r.LastActive)) // the last column is not cut
	}
	if got, want := h.m.rows[h.m.cursor].ID, idCJK; got != want {
		t.Fatalf("cursor on %s, want the newest session %s", got, want)
	}
	h.keys(key('j'), key('j'))
	if got, want := h.m.rows[h.m.cursor].ID, idDocker; got != want {
		t.Fatalf("after j j the cursor is on %s, want %s", got, want)
	}
	h.keys(key('k'), home)
	if h.m.cursor != 0 {
		t.Fatalf("Home left the cursor at %d", h.m.cursor)
	}
}

func TestBrowseSearchAsYouType(t *testing.T) {
	h := newHarness(t, Options{})
	h.send(key('/'))
	if !h.m.typing {
		t.Fatal("/ did not focus the query line")
	}
	// Every keystroke schedules a search; only the last one, after the
	// pause, runs.
	var cmds []tea.Cmd
	for _, r := range "docker" {
		_, cmd := h.m.Update(key(r))
		if cmd == nil {
			t.Fatalf("typing %q scheduled no search", r)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		h.runCmd(cmd)
	}
	if got := strings.Join(h.store.searches, ","); got != "docker" {
		t.Fatalf("searches run: %q, want just docker", got)
	}
	if len(h.m.hits) == 0 || h.m.hitsFor != "docker" {
		t.Fatalf("hits = %d for %q", len(h.m.hits), h.m.hitsFor)
	}
	for _, ht := range h.m.hits {
		if ht.SessionID != idDocker {
			t.Fatalf("hit in session %s, want only %s", ht.SessionID, idDocker)
		}
	}
	h.wantScreen("/ docker", "Docker deployment", "deploy with docker compose", "hits in 1 sessions")
	checkFits(t, h.m.View(), 80, 24)

	t.Run("a stale result is dropped", func(t *testing.T) {
		before := len(h.m.hits)
		h.send(searchMsg{id: h.m.searchID - 1, query: "old", hits: nil})
		if len(h.m.hits) != before || h.m.hitsFor != "docker" {
			t.Fatalf("a result of an older search replaced the hits")
		}
	})

	t.Run("CJK", func(t *testing.T) {
		h.send(ctrlU)
		h.typeText("项目")
		if h.m.hitsFor != "项目" || len(h.m.hits) == 0 || h.m.hits[0].SessionID != idCJK {
			t.Fatalf("hits for %q: %+v", h.m.hitsFor, h.m.hits)
		}
		h.wantScreen("/ 项目", "(untitled)", "项目计划")
		checkFits(t, h.m.View(), 80, 24)
	})

	t.Run("no matches", func(t *testing.T) {
		h.send(ctrlU)
		h.typeText("zebra")
		h.wantScreen("no matches for zebra", "0 hits")
	})

	t.Run("esc clears the search", func(t *testing.T) {
		h.send(escKey)
		if h.m.typing || h.m.showingHits() {
			t.Fatal("esc left the search open")
		}
		h.wantScreen("Kubernetes notes", "3 sessions")
	})
}

func TestBrowseLoadsMoreAsTheCursorNearsTheEnd(t *testing.T) {
	h := newHarness(t, Options{PageSize: 2})
	if got := len(h.m.rows); got != 3 {
		// The cursor starts within a screen of the end, so the second
		// page is read at once.
		t.Fatalf("%d rows loaded, want all 3", got)
	}
	h.wantScreen("3 sessions", "Docker deployment")
	h.send(key('G'))
	if got, want := h.m.rows[h.m.cursor].ID, idDocker; got != want {
		t.Fatalf("G went to %s, want %s", got, want)
	}
	h.send(ctrlR)
	if got, want := h.m.rows[h.m.cursor].ID, idDocker; got != want || len(h.m.rows) != 3 {
		t.Fatalf("after a refresh: %d rows, cursor on %s, want 3 rows and %s", len(h.m.rows), got, want)
	}
}

func TestBrowseKeysReadTogether(t *testing.T) {
	// A terminal read can hold several keys; each counts on its own.
	h := newHarness(t, Options{})
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/docker")})
	if !h.m.typing || h.m.query.value() != "docker" || h.m.hitsFor != "docker" {
		t.Fatalf("typing %t, query %q, hits for %q", h.m.typing, h.m.query.value(), h.m.hitsFor)
	}
	h.send(escKey)
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("kubectl"), Paste: true})
	if !h.m.typing || h.m.hitsFor != "kubectl" {
		t.Fatalf("a paste into the list: typing %t, hits for %q", h.m.typing, h.m.hitsFor)
	}
}

func TestBrowseOpenTranscript(t *testing.T) {
	h := newHarness(t, Options{})
	h.send(key('/'))
	h.typeText("docker")
	h.send(enter)
	if h.m.screen != screenTranscript || h.m.tr == nil || h.m.tr.session.ID != idDocker {
		t.Fatalf("enter on a hit did not open %s", idDocker)
	}
	h.wantScreen("Docker deployment", "── user", "── assistant", "── tool · terminal",
		"Run docker compose up -d in the project directory.",
		"▸ reasoning", "▸ call terminal", "▸ 2 more lines (t shows)")
	h.dontWantScreen("The user wants compose", "cache up")
	checkFits(t, h.m.View(), 80, 24)

	h.send(key('t'))
	h.wantScreen("▾ reasoning", "The user wants compose, not swarm.", `"command": "docker compose ps"`, "cache up", "worker up")
	checkFits(t, h.m.View(), 80, 24)

	h.send(escKey)
	if h.m.screen != screenList {
		t.Fatal("esc did not go back to the list")
	}
	h.wantScreen("/ docker", "Docker deployment")

	h.send(escKey) // clear the search
	h.keys(down, enter)
	if h.m.tr == nil || h.m.tr.session.ID != idK8s {
		t.Fatalf("enter on the second row did not open %s", idK8s)
	}
	h.wantScreen("Kubernetes notes", "kubectl get pods shows CrashLoopBackOff", "telegram")
	h.send(key('q'))
	if h.m.screen != screenList || h.quit {
		t.Fatal("q in a transcript should go back, not quit")
	}
	h.send(key('q'))
	if !h.quit {
		t.Fatal("q in the list did not quit")
	}
}

func TestBrowseTranscriptScrolling(t *testing.T) {
	h := newHarness(t, Options{})
	ctx := context.Background()
	for i := range 40 {
		if _, err := h.db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: idK8s, Role: "assistant",
			Content: "pod log line " + strings.Repeat("x", i%7), Timestamp: unix("2026-05-02T11:00:00Z") + float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	h.keys(down, enter)
	h.wantScreen("kubectl get pods", "lines 1–21 of")
	h.send(endKey)
	h.dontWantScreen("kubectl get pods")
	h.wantScreen("pod log line xxxx")
	top := h.m.tr.top
	h.send(tea.KeyMsg{Type: tea.KeyPgUp})
	if got, want := h.m.tr.top, top-21; got != want {
		t.Fatalf("PgUp moved to line %d, want %d", got, want)
	}
	h.send(key('k'))
	if got, want := h.m.tr.top, top-22; got != want {
		t.Fatalf("k moved to line %d, want %d", got, want)
	}
	h.send(key('g'))
	h.wantScreen("kubectl get pods")

	t.Run("reload follows new messages at the end", func(t *testing.T) {
		h.send(key('G'))
		if _, err := h.db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: idK8s, Role: "user", Content: "a message written meanwhile"}); err != nil {
			t.Fatal(err)
		}
		h.send(ctrlR)
		h.wantScreen("a message written meanwhile")
	})
}

func TestBrowseRename(t *testing.T) {
	h := newHarness(t, Options{})
	h.keys(down, down, key('r'))
	if h.m.prompt != promptRename {
		t.Fatal("r did not open the rename prompt")
	}
	h.wantScreen("Rename: Docker deployment")
	h.send(ctrlU)
	h.typeText("Compose rollout")
	h.send(enter)
	s, err := h.db.Session(context.Background(), idDocker)
	if err != nil {
		t.Fatal(err)
	}
	if s.Title == nil || *s.Title != "Compose rollout" {
		t.Fatalf("title = %v, want Compose rollout", s.Title)
	}
	h.wantScreen("Compose rollout", "renamed to “Compose rollout”")
	h.dontWantScreen("Docker deployment")

	t.Run("a clash shows the store's error and keeps the text", func(t *testing.T) {
		h.send(key('r'))
		h.send(ctrlU)
		h.typeText("Kubernetes notes")
		h.send(enter)
		if got := h.statusLine(); !strings.Contains(got, "error: rename: Title 'Kubernetes notes' is already in use") {
			t.Fatalf("status line %q lacks the conflict", got)
		}
		if h.m.prompt != promptRename || h.m.input.value() != "Kubernetes notes" {
			t.Fatalf("prompt %v with %q after a failed rename", h.m.prompt, h.m.input.value())
		}
		h.send(escKey)
		h.wantScreen("rename cancelled")
	})
}

func TestBrowseDelete(t *testing.T) {
	h := newHarness(t, Options{})
	h.keys(down, key('d'))
	h.wantScreen("Delete “Kubernetes notes” and its messages? y/N")
	h.send(key('n'))
	h.wantScreen("not deleted", "Kubernetes notes")
	h.keys(key('d'), key('y'))
	if _, err := h.db.Session(context.Background(), idK8s); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Fatalf("session after d y: err %v, want not found", err)
	}
	h.wantScreen("deleted “Kubernetes notes”", "2 sessions")
	h.dontWantScreen("Kubernetes notes │")

	t.Run("from a transcript goes back to the list", func(t *testing.T) {
		h.keys(home, enter, key('d'), key('y'))
		if h.m.screen != screenList {
			t.Fatal("deleting the open session left the transcript open")
		}
		h.wantScreen("1 sessions", "Docker deployment")
	})
}

func TestBrowsePinArchive(t *testing.T) {
	h := newHarness(t, Options{})
	ctx := context.Background()
	h.keys(down, key('p'))
	if s, _ := h.db.Session(ctx, idK8s); s.Pinned != 1 {
		t.Fatal("p did not pin")
	}
	h.wantScreen("pinned “Kubernetes notes”", "* Kubernetes notes")
	h.send(key('p'))
	if s, _ := h.db.Session(ctx, idK8s); s.Pinned != 0 {
		t.Fatal("p again did not unpin")
	}
	h.send(key('a'))
	if s, _ := h.db.Session(ctx, idK8s); s.Archived != 1 {
		t.Fatal("a did not archive")
	}
	h.wantScreen("archived “Kubernetes notes”", "2 sessions")
	h.dontWantScreen("Kubernetes notes ")
	h.send(key('A'))
	h.wantScreen("a Kubernetes notes", "3 sessions", "(with archived)")
	h.send(home)
	for i := 0; i < 3 && h.m.rows[h.m.cursor].ID != idK8s; i++ {
		h.send(down)
	}
	h.send(key('a'))
	if s, _ := h.db.Session(ctx, idK8s); s.Archived != 0 {
		t.Fatal("a on an archived session did not unarchive")
	}
}

func TestBrowseExport(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{ExportDir: dir, Export: markdown})
	h.keys(down, down, enter, key('e'))
	path := filepath.Join(dir, idDocker+".md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Docker deployment", "### User", "how do I deploy with docker compose?", "docker compose ps"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("%s lacks %q:\n%s", path, want, b)
		}
	}
	if got := h.statusLine(); !strings.Contains(got, "exported to ") || !strings.Contains(got, ".md") {
		t.Fatalf("status line %q does not name the file", got)
	}
	t.Run("without an encoder the key reports it", func(t *testing.T) {
		h := newHarness(t, Options{})
		h.send(key('e'))
		if got := h.statusLine(); !strings.Contains(got, "error: export is not available") {
			t.Fatalf("status line %q", got)
		}
	})
}

func TestBrowseStoreErrorsShowInStatusLine(t *testing.T) {
	h := newHarness(t, Options{})
	h.store.setFail("SetPinned", sessiondb.Errorf(sessiondb.EBUSY, "database is locked by another process"))
	h.send(key('p'))
	if got := h.statusLine(); !strings.Contains(got, "error: pin: database is locked by another process") {
		t.Fatalf("status line %q lacks the error", got)
	}
	h.store.setFail("ListSessions", errors.New("disk I/O error"))
	h.send(ctrlR)
	if got := h.statusLine(); !strings.Contains(got, "error: disk I/O error") {
		t.Fatalf("status line %q lacks the error", got)
	}
	h.wantScreen("Kubernetes notes") // the rows read before stay
	h.store.setFail("Search", errors.New("search index busy"))
	h.send(key('/'))
	h.typeText("docker")
	if got := h.statusLine(); !strings.Contains(got, "error: search index busy") {
		t.Fatalf("status line %q lacks the search error", got)
	}
	h.send(escKey)
	h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x")})
	checkFits(t, h.m.View(), 80, 24)
}

func TestBrowseRefreshSeesOtherWriters(t *testing.T) {
	h := newHarness(t, Options{})
	other, err := sqlite.Open(h.db.Path(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	if _, err := other.CreateSession(ctx, sessiondb.NewSession{ID: "20260504_100000_dddddd", Source: "discord", StartedAt: unix("2026-05-04T10:00:00Z")}); err != nil {
		t.Fatal(err)
	}
	if err := other.SetTitle(ctx, "20260504_100000_dddddd", "Written elsewhere"); err != nil {
		t.Fatal(err)
	}
	h.dontWantScreen("Written elsewhere")
	h.send(key('R'))
	h.wantScreen("Written elsewhere", "4 sessions")
	if got, want := h.m.rows[h.m.cursor].ID, idCJK; got != want {
		t.Fatalf("refresh moved the cursor to %s, want it kept on %s", got, want)
	}
}

func TestBrowseFitsSmallTerminals(t *testing.T) {
	h := newHarness(t, Options{Color: true})
	long := strings.Repeat("a very long title ", 5)
	if err := h.db.SetTitle(context.Background(), idK8s, long[:90]); err != nil {
		t.Fatal(err)
	}
	h.send(ctrlR)
	for _, size := range [][2]int{{80, 24}, {40, 10}, {24, 6}, {132, 43}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		checkFits(t, h.m.View(), size[0], size[1])
		h.send(key('?'))
		checkFits(t, h.m.View(), size[0], size[1])
		h.send(key('x'))
		h.keys(key('/'))
		h.typeText("项目")
		checkFits(t, h.m.View(), size[0], size[1])
		h.send(enter)
		checkFits(t, h.m.View(), size[0], size[1])
		h.send(key('t'))
		checkFits(t, h.m.View(), size[0], size[1])
		h.keys(key('r'))
		checkFits(t, h.m.View(), size[0], size[1])
		h.keys(escKey, escKey, escKey)
	}
	h.send(tea.WindowSizeMsg{Width: 10, Height: 3})
	if got := h.screen(); strings.Contains(got, "\n") || ansi.StringWidth(got) > 10 {
		t.Fatalf("tiny terminal view %q", got)
	}
}

var colourRE = regexp.MustCompile(`\x1b\[(?:[0-9]+;)*(?:3[0-9]|4[0-9]|9[0-7])m`)

func TestBrowseNoColor(t *testing.T) {
	for _, color := range []bool{false, true} {
		h := newHarness(t, Options{Color: color})
		h.send(key('/'))
		h.typeText("docker")
		hits := h.m.View()
		h.send(enter)
		tr := h.m.View()
		if got := colourRE.MatchString(hits + tr); got != color {
			t.Fatalf("Color %v: colour escapes present = %v", color, got)
		}
	}
}

func TestBrowseCleansControlCharacters(t *testing.T) {
	h := newHarness(t, Options{})
	if _, err := h.db.AppendMessage(context.Background(), sessiondb.NewMessage{SessionID: idCJK, Role: "tool",
		Content: "\x1b[2J\x1b[31mred\x1b[0m\tcol\rover\x07bell"}); err != nil {
		t.Fatal(err)
	}
	h.send(enter)
	v := h.m.View()
	for _, bad := range []string{"\x1b[2J", "\x1b[31m", "\t", "\r", "\x07"} {
		if strings.Contains(v, bad) {
			t.Fatalf("view passes %q through", bad)
		}
	}
	h.wantScreen("red    coloverbell")
}

func TestBrowseAround(t *testing.T) {
	long := strings.Repeat("lead ", 30) + ">>>docker<<< tail"
	got := around(long, 40)
	if !strings.HasPrefix(got, "…") || !strings.Contains(got, ">>>docker<<<") || ansi.StringWidth(stripMarks(got)) > 40+len(" tail") {
		t.Fatalf("around = %q", got)
	}
	if short := "a >>>b<<< c"; around(short, 40) != short {
		t.Fatalf("a snippet that fits was cut: %q", around(short, 40))
	}
}

func TestBrowseEditor(t *testing.T) {
	var e editor
	for _, k := range []tea.KeyMsg{key('a'), key('b'), {Type: tea.KeyLeft}, key('X'), {Type: tea.KeyEnd}, key(' '), key('c')} {
		e.handle(k)
	}
	if got, want := e.value(), "aXb c"; got != want {
		t.Fatalf("value %q, want %q", got, want)
	}
	e.handle(tea.KeyMsg{Type: tea.KeyCtrlW})
	if got, want := e.value(), "aXb "; got != want {
		t.Fatalf("after ctrl+w %q, want %q", got, want)
	}
	e.handle(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("项\n目"), Paste: true})
	if got, want := e.value(), "aXb 项 目"; got != want {
		t.Fatalf("after paste %q, want %q", got, want)
	}
	if got := ansi.StringWidth(e.view(6, true)); got > 6 {
		t.Fatalf("view is %d cells wide, want at most 6", got)
	}
}
