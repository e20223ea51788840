package browse

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/sessiondb/sessiondb"
)

type screen int

const (
	screenList screen = iota
	screenTranscript
)

type prompt int

const (
	promptNone prompt = iota
	promptRename
	promptDelete
)

// target is the session an action applies to.
type target struct{ id, title string }

// name is how the status line names the target.
func (t target) name() string {
	if t.title != "" {
		return "“" + t.title + "”"
	}
	return t.id
}

// hit is a search hit with its session's title.
type hit struct {
	sessiondb.SearchHit
	title string
}

// Results of commands, fed back to Update.
type (
	// listMsg is a page of the session list.
	listMsg struct {
		gen, offset int
		rows        []sessiondb.SessionSummary
		total       int
		err         error
	}
	// searchTickMsg fires when the query has been still for the debounce
	// time; seq tells whether it was edited since.
	searchTickMsg struct{ seq int }
	// searchMsg is the answer to search id.
	searchMsg struct {
		id    int
		query string
		hits  []hit
		err   error
	}
	// transcriptMsg is a loaded session; reload means it refreshes the
	// open transcript rather than opening one.
	transcriptMsg struct {
		id      string
		session *sessiondb.Session
		msgs    []*sessiondb.Message
		focus   int64
		reload  bool
		err     error
	}
	// actionMsg reports a rename, pin, archive, export or delete.
	actionMsg struct {
		op, id string
		text   string // what happened (export: the file written)
		title  string // rename: the title asked for
		err    error
	}
)

// searchFields are the hit fields the browser shows (not "context", which
// costs three reads per hit).
var searchFields = []string{"id", "session_id", "role", "snippet", "timestamp", "tool_name", "source", "model", "session_started"}

// Model is the browser's Bubble Tea model. Make one with New.
type Model struct {
	ctx   context.Context
	store Store
	opt   Options
	st    styles
	w, h  int

	screen screen
	help   bool

	// the session list
	rows        []sessiondb.SessionSummary
	total       int
	cursor, top int
	gen         int // bumped by every reload, so a page of an older one is dropped
	loading     bool
	loaded      bool
	archived    bool // list archived sessions too

	// search
	query             editor
	typing            bool // the query line has the keyboard
	seq               int  // bumped by every edit of the query
	searchID          int  // bumped by every search started
	cancelSearch      context.CancelFunc
	searching         bool
	hits              []hit
	hitsFor           string // the query the hits answer
	hitCursor, hitTop int

	// the open session
	tr      *transcript
	opening string

	// the prompt on the bottom line
	prompt prompt
	input  editor
	target target

	status     string
	statusErr  bool
	statusPath string // a path shown after status, cut at its start
}

// New returns a browser over store. ctx bounds every store call the
// browser makes (see the package comment for why it is kept).
func New(ctx context.Context, store Store, o Options) *Model {
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Model{ctx: ctx, store: store, opt: o, st: styles{color: o.Color}, w: 80, h: 24}
}

// Init loads the first page of the session list.
func (m *Model) Init() tea.Cmd { return m.reload() }

// bodyHeight is the number of lines between the header and the status line.
func (m *Model) bodyHeight() int { return max(m.h-3, 1) }

// Update handles a key, a window size or the result of a command.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = max(msg.Width, 1), max(msg.Height, 1)
		if m.tr != nil {
			m.tr.render(m.w, m.st, m.clock)
			m.tr.scroll(0, m.bodyHeight())
		}
		m.clamp()
		return m, nil
	case tea.KeyMsg:
		return m, m.key(msg)
	case listMsg:
		return m, m.listLoaded(msg)
	case searchTickMsg:
		if msg.seq != m.seq {
			return m, nil
		}
		return m, m.search()
	case searchMsg:
		if msg.id != m.searchID {
			return m, nil
		}
		m.searching = false
		if msg.err != nil {
			m.fail(msg.err)
			return m, nil
		}
		if msg.query != m.hitsFor {
			m.hitCursor, m.hitTop = 0, 0
		}
		m.hits, m.hitsFor = msg.hits, msg.query
		m.clamp()
		return m, nil
	case transcriptMsg:
		m.transcriptLoaded(msg)
		return m, nil
	case actionMsg:
		return m, m.actionDone(msg)
	}
	return m, nil
}

func (m *Model) setStatus(s string) { m.status, m.statusErr, m.statusPath = s, false, "" }

// fail shows err in the status line; the UI goes on.
func (m *Model) fail(err error) {
	if errors.Is(err, context.Canceled) && m.ctx.Err() != nil {
		return
	}
	m.status, m.statusErr, m.statusPath = err.Error(), true, ""
}

func (m *Model) quit() tea.Cmd {
	if m.cancelSearch != nil {
		m.cancelSearch()
	}
	return tea.Quit
}

// showingHits reports whether the list shows search hits rather than
// sessions.
func (m *Model) showingHits() bool { return strings.TrimSpace(m.query.value()) != "" }

func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	if k.String() == "ctrl+c" {
		return m.quit()
	}
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 && !k.Paste {
		// Keys typed faster than they are read arrive together ("/dock"):
		// each is a key of its own.
		var cmds []tea.Cmd
		for _, r := range k.Runes {
			cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: k.Alt}))
		}
		return tea.Batch(cmds...)
	}
	if k.Paste && m.screen == screenList && m.prompt == promptNone && !m.typing {
		m.typing = true // pasting into the list searches for the text
	}
	if m.prompt != promptNone {
		return m.promptKey(k)
	}
	if m.help {
		m.help = false
		return nil
	}
	m.setStatus("")
	if m.screen == screenTranscript {
		return m.transcriptKey(k)
	}
	if m.typing {
		return m.typingKey(k)
	}
	return m.listKey(k)
}

func (m *Model) listKey(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "q":
		return m.quit()
	case "esc":
		if m.showingHits() {
			m.clearSearch()
			return nil
		}
		return m.quit()
	case "/", "tab":
		m.typing = true
	case "enter", "right", "l":
		return m.openSelected()
	case "R", "ctrl+r":
		return m.refresh()
	case "A":
		m.archived = !m.archived
		if m.archived {
			m.setStatus("showing archived sessions too")
		} else {
			m.setStatus("hiding archived sessions")
		}
		return m.reload()
	case "?":
		m.help = true
	case "r", "p", "a", "e", "d":
		return m.action(k.String())
	default:
		return m.move(k.String())
	}
	return nil
}

func (m *Model) typingKey(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "esc":
		m.clearSearch()
		return nil
	case "enter":
		if m.showingHits() && len(m.hits) == 0 {
			return nil
		}
		return m.openSelected()
	case "tab":
		m.typing = false
		return nil
	case "ctrl+r":
		return m.refresh()
	case "up", "down", "pgup", "pgdown", "ctrl+p", "ctrl+n":
		return m.move(k.String())
	}
	if _, changed := m.query.handle(k); changed {
		return m.queryChanged()
	}
	return nil
}

func (m *Model) transcriptKey(k tea.KeyMsg) tea.Cmd {
	h := m.bodyHeight()
	switch k.String() {
	case "q", "esc", "backspace", "left", "h":
		return m.back()
	case "up", "k", "ctrl+p":
		m.tr.scroll(-1, h)
	case "down", "j", "ctrl+n", "enter":
		m.tr.scroll(1, h)
	case "pgup", "b", "ctrl+b":
		m.tr.scroll(-h, h)
	case "pgdown", "f", " ", "ctrl+f":
		m.tr.scroll(h, h)
	case "ctrl+u":
		m.tr.scroll(-h/2, h)
	case "ctrl+d":
		m.tr.scroll(h/2, h)
	case "home", "g":
		m.tr.top = 0
	case "end", "G":
		m.tr.scroll(len(m.tr.lines), h)
	case "t":
		m.tr.details = !m.tr.details
		m.tr.render(m.w, m.st, m.clock)
		m.tr.scroll(0, h)
	case "R", "ctrl+r":
		return m.loadTranscript(m.tr.session.ID, 0, true)
	case "?":
		m.help = true
	case "r", "p", "a", "e", "d":
		return m.action(k.String())
	}
	return nil
}

func (m *Model) promptKey(k tea.KeyMsg) tea.Cmd {
	t := m.target
	if m.prompt == promptDelete {
		m.prompt = promptNone
		if k.String() != "y" && k.String() != "Y" {
			m.setStatus("not deleted")
			return nil
		}
		m.setStatus("deleting " + t.name() + "…")
		store := m.store
		return m.do("delete", t, func(ctx context.Context) (string, error) {
			ids, err := store.DeleteSession(ctx, t.id)
			if err != nil {
				return "", err
			}
			if n := len(ids) - 1; n > 0 {
				return fmt.Sprintf("deleted %s and %d subagent runs", t.name(), n), nil
			}
			return "deleted " + t.name(), nil
		})
	}
	switch k.String() {
	case "esc":
		m.prompt = promptNone
		m.setStatus("rename cancelled")
		return nil
	case "enter":
		m.prompt = promptNone
		title := m.input.value()
		m.setStatus("renaming…")
		ctx, store := m.ctx, m.store
		return func() tea.Msg {
			msg := actionMsg{op: "rename", id: t.id, title: title}
			if msg.err = store.SetTitle(ctx, t.id, title); msg.err != nil {
				return msg
			}
			s, err := store.Session(ctx, t.id)
			switch {
			case err != nil:
				msg.err = err
			case s.Title == nil:
				msg.text = "title of " + t.id + " cleared"
			default:
				msg.text = "renamed to “" + *s.Title + "”"
			}
			return msg
		}
	}
	m.input.handle(k)
	return nil
}

// move moves the cursor of the list on screen.
func (m *Model) move(key string) tea.Cmd {
	n := 0
	switch key {
	case "up", "k", "ctrl+p":
		n = -1
	case "down", "j", "ctrl+n":
		n = 1
	case "pgup", "ctrl+b":
		n = -m.bodyHeight()
	case "pgdown", "ctrl+f", " ":
		n = m.bodyHeight()
	case "home", "g":
		n = -1 << 30
	case "end", "G":
		n = 1 << 30
	default:
		return nil
	}
	if m.showingHits() {
		m.hitCursor = max(min(m.hitCursor+n, len(m.hits)-1), 0)
	} else {
		m.cursor = max(min(m.cursor+n, len(m.rows)-1), 0)
	}
	m.clamp()
	return m.more()
}

// clamp keeps the cursors inside their lists and on screen.
func (m *Model) clamp() {
	h := m.bodyHeight()
	m.cursor = max(min(m.cursor, len(m.rows)-1), 0)
	m.top = max(min(m.top, m.cursor), m.cursor-h+1, 0)
	m.hitCursor = max(min(m.hitCursor, len(m.hits)-1), 0)
	if len(m.hits) == 0 {
		m.hitTop = 0
		return
	}
	line := m.hitLine(m.hitCursor)
	first := line
	if m.hitCursor == 0 || m.hits[m.hitCursor-1].SessionID != m.hits[m.hitCursor].SessionID {
		first-- // keep the group's heading in view
	}
	m.hitTop = max(min(m.hitTop, first), line-h+1, 0)
}

// hitLine is the line of hit i in the grouped hit list.
func (m *Model) hitLine(i int) int {
	line := 0
	for j := 0; j <= i && j < len(m.hits); j++ {
		if j == 0 || m.hits[j-1].SessionID != m.hits[j].SessionID {
			line++
		}
		if j < i {
			line++
		}
	}
	return line
}

// selected is the session the cursor is on, if any.
func (m *Model) selected() (target, bool) {
	switch {
	case m.screen == screenTranscript && m.tr != nil:
		return target{m.tr.session.ID, titleOf(m.tr.session)}, true
	case m.showingHits():
		if len(m.hits) == 0 {
			return target{}, false
		}
		h := m.hits[m.hitCursor]
		return target{h.SessionID, h.title}, true
	case len(m.rows) > 0:
		return target{m.rows[m.cursor].ID, titleOf(&m.rows[m.cursor].Session)}, true
	}
	return target{}, false
}

func titleOf(s *sessiondb.Session) string {
	if s.Title == nil {
		return ""
	}
	return oneLine(*s.Title)
}

// reload reads the session list again from the top, keeping as many rows
// as are loaded and the cursor on the same session.
func (m *Model) reload() tea.Cmd {
	m.gen++
	m.loading = true
	return m.page(0, max(m.opt.PageSize, len(m.rows)))
}

// more loads the next page when the cursor nears the end of the list.
func (m *Model) more() tea.Cmd {
	if m.loading || m.showingHits() || len(m.rows) >= m.total || m.cursor < len(m.rows)-m.bodyHeight() {
		return nil
	}
	m.loading = true
	return m.page(len(m.rows), m.opt.PageSize)
}

func (m *Model) page(offset, limit int) tea.Cmd {
	ctx, store, gen := m.ctx, m.store, m.gen
	o := sessiondb.ListOptions{Limit: limit, Offset: offset, OrderByActivity: true, IncludeArchived: m.archived}
	return func() tea.Msg {
		rows, total, err := store.ListSessions(ctx, o)
		return listMsg{gen: gen, offset: offset, rows: rows, total: total, err: err}
	}
}

func (m *Model) listLoaded(msg listMsg) tea.Cmd {
	if msg.gen != m.gen {
		return nil
	}
	m.loading = false
	if msg.err != nil {
		m.fail(msg.err)
		return nil
	}
	switch {
	case msg.offset == 0:
		var keep string
		if len(m.rows) > 0 {
			keep = m.rows[m.cursor].ID
		}
		m.rows = msg.rows
		for i, r := range m.rows {
			if r.ID == keep {
				m.cursor = i
			}
		}
	case msg.offset == len(m.rows):
		m.rows = append(m.rows, msg.rows...)
	}
	m.total = msg.total
	if len(msg.rows) == 0 {
		m.total = len(m.rows) // rows went away while paging: stop here
	}
	m.loaded = true
	m.clamp()
	return m.more()
}

// queryChanged schedules a search for when the typing pauses.
func (m *Model) queryChanged() tea.Cmd {
	m.seq++
	if !m.showingHits() {
		m.stopSearch()
		m.hits, m.hitsFor = nil, ""
		return nil
	}
	seq := m.seq
	return tea.Tick(m.opt.Debounce, func(time.Time) tea.Msg { return searchTickMsg{seq: seq} })
}

func (m *Model) stopSearch() {
	if m.cancelSearch != nil {
		m.cancelSearch()
		m.cancelSearch = nil
	}
	m.searchID++
	m.searching = false
}

// search runs the query in a command; a newer search cancels it.
func (m *Model) search() tea.Cmd {
	q := strings.TrimSpace(m.query.value())
	if q == "" {
		return nil
	}
	m.stopSearch()
	ctx, cancel := context.WithTimeout(m.ctx, sessiondb.DefaultSearchTimeout)
	m.cancelSearch = cancel
	m.searching = true
	id, store := m.searchID, m.store
	return func() tea.Msg {
		defer cancel()
		found, err := store.Search(ctx, q, sessiondb.SearchOptions{Limit: SearchLimit, Fields: searchFields})
		if err != nil {
			return searchMsg{id: id, query: q, err: err}
		}
		// Group the hits by session, the sessions in order of their best hit.
		var order []string
		groups := map[string][]hit{}
		for _, h := range found {
			if _, ok := groups[h.SessionID]; !ok {
				order = append(order, h.SessionID)
			}
			groups[h.SessionID] = append(groups[h.SessionID], hit{SearchHit: h})
		}
		hits := make([]hit, 0, len(found))
		for _, sid := range order {
			title := ""
			if s, err := store.Session(ctx, sid); err == nil {
				title = titleOf(s)
			} else if sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
				return searchMsg{id: id, query: q, err: err}
			}
			for _, h := range groups[sid] {
				h.title = title
				hits = append(hits, h)
			}
		}
		return searchMsg{id: id, query: q, hits: hits}
	}
}

func (m *Model) clearSearch() {
	m.query.set("")
	m.typing = false
	m.seq++
	m.stopSearch()
	m.hits, m.hitsFor = nil, ""
	m.hitCursor, m.hitTop = 0, 0
}

// refresh reads again what is on screen.
func (m *Model) refresh() tea.Cmd {
	m.setStatus("refreshed")
	if m.showingHits() {
		return tea.Batch(m.reload(), m.search())
	}
	return m.reload()
}

func (m *Model) openSelected() tea.Cmd {
	if m.showingHits() {
		if len(m.hits) == 0 {
			return nil
		}
		h := m.hits[m.hitCursor]
		return m.open(h.SessionID, h.ID)
	}
	if len(m.rows) == 0 {
		return nil
	}
	return m.open(m.rows[m.cursor].ID, 0)
}

func (m *Model) open(id string, focus int64) tea.Cmd {
	m.opening = id
	m.setStatus("opening " + id + "…")
	return m.loadTranscript(id, focus, false)
}

func (m *Model) loadTranscript(id string, focus int64, reload bool) tea.Cmd {
	ctx, store := m.ctx, m.store
	return func() tea.Msg {
		msg := transcriptMsg{id: id, focus: focus, reload: reload}
		if msg.session, msg.err = store.Session(ctx, id); msg.err == nil {
			msg.msgs, msg.err = store.Messages(ctx, id, sessiondb.MessageFilter{})
		}
		return msg
	}
}

func (m *Model) transcriptLoaded(msg transcriptMsg) {
	h := m.bodyHeight()
	if msg.reload {
		if m.screen != screenTranscript || m.tr == nil || m.tr.session.ID != msg.id {
			return
		}
		if msg.err != nil {
			m.fail(msg.err)
			return
		}
		atEnd := m.tr.top >= len(m.tr.lines)-h
		m.tr.session, m.tr.msgs = msg.session, msg.msgs
		m.tr.render(m.w, m.st, m.clock)
		if atEnd {
			m.tr.top = len(m.tr.lines) // follow a session that is being written
		}
		m.tr.scroll(0, h)
		return
	}
	if msg.id != m.opening {
		return
	}
	m.opening = ""
	if msg.err != nil {
		m.fail(msg.err)
		return
	}
	m.setStatus("")
	m.tr = &transcript{session: msg.session, msgs: msg.msgs}
	m.tr.render(m.w, m.st, m.clock)
	if i := m.tr.index(msg.focus); i >= 0 {
		m.tr.top = m.tr.starts[i]
		m.tr.scroll(0, h)
	}
	m.screen = screenTranscript
	m.typing = false // back from the transcript, keys act on the hits
}

// back leaves the transcript and reads the list (and the hits) again.
func (m *Model) back() tea.Cmd {
	m.screen = screenList
	m.tr = nil
	if m.showingHits() {
		return tea.Batch(m.reload(), m.search())
	}
	return m.reload()
}

// action starts r, p, a, e or d on the selected session.
func (m *Model) action(key string) tea.Cmd {
	t, ok := m.selected()
	if !ok {
		m.fail(errors.New("no session selected"))
		return nil
	}
	m.target = t
	store := m.store
	switch key {
	case "r":
		m.prompt = promptRename
		m.input.set(t.title)
	case "d":
		m.prompt = promptDelete
	case "p":
		m.setStatus("pinning…")
		return m.do("pin", t, func(ctx context.Context) (string, error) {
			s, err := store.Session(ctx, t.id)
			if err != nil {
				return "", err
			}
			on := s.Pinned == 0
			if err := store.SetPinned(ctx, t.id, on); err != nil {
				return "", err
			}
			if on {
				return "pinned " + t.name(), nil
			}
			return "unpinned " + t.name(), nil
		})
	case "a":
		m.setStatus("archiving…")
		return m.do("archive", t, func(ctx context.Context) (string, error) {
			s, err := store.Session(ctx, t.id)
			if err != nil {
				return "", err
			}
			on := s.Archived == 0
			if err := store.SetArchived(ctx, t.id, on); err != nil {
				return "", err
			}
			if on {
				return "archived " + t.name() + " (A lists archived sessions)", nil
			}
			return "unarchived " + t.name(), nil
		})
	case "e":
		if m.opt.Export == nil {
			m.fail(errors.New("export is not available"))
			return nil
		}
		m.setStatus("exporting…")
		export, dir := m.opt.Export, m.opt.ExportDir
		return m.do("export", t, func(ctx context.Context) (string, error) {
			s, err := store.Session(ctx, t.id)
			if err != nil {
				return "", err
			}
			msgs, err := store.Messages(ctx, t.id, sessiondb.MessageFilter{})
			if err != nil {
				return "", err
			}
			return writeExport(dir, s, msgs, export)
		})
	}
	return nil
}

// do runs fn in a command and reports it as an actionMsg. fn may use only
// the store, never the model: it runs on another goroutine.
func (m *Model) do(op string, t target, fn func(ctx context.Context) (string, error)) tea.Cmd {
	ctx := m.ctx
	return func() tea.Msg {
		text, err := fn(ctx)
		return actionMsg{op: op, id: t.id, text: text, err: err}
	}
}

func (m *Model) actionDone(msg actionMsg) tea.Cmd {
	if msg.err != nil {
		m.fail(fmt.Errorf("%s: %w", msg.op, msg.err))
		if msg.op == "rename" && m.prompt == promptNone {
			// Let the title be corrected instead of typed again.
			m.prompt, m.target = promptRename, target{id: msg.id, title: msg.title}
			m.input.set(msg.title)
		}
		return nil
	}
	if msg.op == "export" {
		m.setStatus("exported to")
		m.statusPath = msg.text
		return nil
	}
	m.setStatus(msg.text)
	if msg.op == "delete" && m.screen == screenTranscript && m.tr != nil && m.tr.session.ID == msg.id {
		m.screen, m.tr = screenList, nil
	}
	cmds := []tea.Cmd{m.reload()}
	if m.showingHits() {
		cmds = append(cmds, m.search())
	}
	if m.screen == screenTranscript && m.tr != nil {
		cmds = append(cmds, m.loadTranscript(m.tr.session.ID, 0, true))
	}
	return tea.Batch(cmds...)
}

// writeExport writes s as <dir>/<id>.md through a temporary file, so a
// failed export leaves no half-written file, and returns the path.
func writeExport(dir string, s *sessiondb.Session, msgs []*sessiondb.Message, export ExportFunc) (string, error) {
	if dir == "" {
		dir = "."
	}
	path, err := filepath.Abs(filepath.Join(dir, fileName(s.ID)+".md"))
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".sessiondb-export-*")
	if err != nil {
		return "", err
	}
	err = export(f, s, msgs)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return path, nil
}

// fileName makes a session id safe as a file name.
func fileName(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		b = append([]byte("_"), b...)
	}
	return string(b)
}

// clock formats a message time for the transcript.
func (m *Model) clock(sec float64) string {
	return time.Unix(0, int64(sec*1e9)).Local().Format("2006-01-02 15:04:05")
}

// day formats a list time: month, day and time this year, else the date.
func (m *Model) day(sec float64) string {
	t := time.Unix(0, int64(sec*1e9)).Local()
	if t.Year() == m.opt.Now().Year() {
		return t.Format("01-02 15:04")
	}
	return t.Format("2006-01-02")
}
