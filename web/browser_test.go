package web_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/httpapi"
	"github.com/sessiondb/sessiondb/internal/servetest"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite"
	"github.com/sessiondb/sessiondb/web"
)

var readme = flag.Bool("readme", false, "write the README screenshots, docs/serve.png and docs/serve-usage.png")

func TestMain(m *testing.M) { servetest.Main(m) }

// page is a served sample database and a headless Chromium.
type page struct {
	url, path string
	browser   context.Context
	srv       *httpapi.Server
	db        *sqlite.DB
}

func newPage(t *testing.T) *page {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return servetest.Base }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	servetest.Seed(t, db)
	return servePage(t, db, path)
}

// servePage serves db and starts Chromium.
func servePage(t testing.TB, db *sqlite.DB, path string, change ...func(*httpapi.Config)) *page {
	t.Helper()
	chromium := testenv.Program(t, "chromium", "to test the web page in a real browser")
	cfg := httpapi.Config{Store: db, Assets: web.FS(), PollInterval: 100 * time.Millisecond}
	for _, c := range change {
		c(&cfg)
	}
	srv, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(context.Background()); ts.Close() })

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-US"), chromedp.WindowSize(1280, 800))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(bctx); err != nil { // start the browser
		t.Fatalf("start chromium: %v", err)
	}
	return &page{url: ts.URL, path: path, browser: bctx, srv: srv, db: db}
}

// tab opens a new tab at the given viewport; on failure the test's
// screenshots at 1280×800 and 390×844 are written and named in the log.
func (p *page) tab(t *testing.T, w, h int64) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(p.browser)
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() {
		if t.Failed() {
			shootFailure(t, ctx)
		}
		cancelT()
		cancel()
	})
	p.do(t, ctx, chromedp.EmulateViewport(w, h))
	return ctx
}

func shootFailure(t *testing.T, ctx context.Context) {
	dir := filepath.Join(os.TempDir(), "sessiondb-browser-failures")
	os.MkdirAll(dir, 0o755)
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(size[0], size[1])); err != nil {
			t.Logf("screenshot: %v", err)
			return
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Logf("screenshot: %v", err)
			return
		}
		name := filepath.Join(dir, fmt.Sprintf("%s-%dx%d.png", strings.ReplaceAll(t.Name(), "/", "_"), size[0], size[1]))
		if err := os.WriteFile(name, png, 0o644); err == nil {
			t.Logf("screenshot: %s", name)
		}
	}
}

func (p *page) do(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// wait polls a JavaScript condition in the page until it is true.
func wait(t testing.TB, ctx context.Context, what, cond string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, cond, err)
	}
}

func eval[T any](t testing.TB, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func TestBrowser(t *testing.T) {
	p := newPage(t)

	t.Run("the list loads", func(t *testing.T) {
		ctx := p.tab(t, 1280, 800)
		p.do(t, ctx, chromedp.Navigate(p.url+"/"))
		wait(t, ctx, "four rows", `document.querySelectorAll('#list li.row').length === 4`)
		t.Logf("first render of the list: %.0f ms after navigation start", eval[float64](t, ctx, `performance.getEntriesByName('list-rendered')[0].startTime`))
		titles := eval[[]string](t, ctx, `[...document.querySelectorAll('#list .row-title')].map(e => e.textContent)`)
		if !strings.Contains(titles[3], "项目计划") || !strings.Contains(titles[0], `<img src=x onerror="window.__xss=1"> hostile`) {
			t.Fatalf("titles = %q", titles)
		}
	})

	t.Run("typing 项目 shows highlighted hits and a hit opens the transcript at it", func(t *testing.T) {
		ctx := p.tab(t, 1280, 800)
		p.do(t, ctx, chromedp.Navigate(p.url+"/"), chromedp.WaitVisible(chromedp.CSS("#list li.row")),
			chromedp.SendKeys(chromedp.CSS("#q"), "项目"))
		wait(t, ctx, "hits", `document.querySelectorAll('#list li.hit mark').length > 0`)
		marks := eval[[]string](t, ctx, `[...document.querySelectorAll('#list mark')].map(m => m.textContent)`)
		for _, m := range marks {
			if m != "项目" {
				t.Errorf("highlighted %q", m)
			}
		}
		if got := eval[string](t, ctx, `location.search`); got != "?q=%E9%A1%B9%E7%9B%AE" {
			t.Errorf("URL query = %q", got)
		}
		target := eval[string](t, ctx, `document.querySelector('#list li.hit').dataset.msg`)
		p.do(t, ctx, chromedp.Click(chromedp.CSS("#list li.hit a")))
		wait(t, ctx, "the target message", `document.querySelector('.msg.target') !== null`)
		if got := eval[string](t, ctx, `document.querySelector('.msg.target').dataset.id`); got != target {
			t.Fatalf("opened at message %s, want %s", got, target)
		}
		wait(t, ctx, "the target on screen", `(r => r.top >= 0 && r.bottom <= innerHeight + 1)(document.querySelector('.msg.target').getBoundingClientRect())`)
		if got := eval[string](t, ctx, `location.pathname + location.hash`); got != "/s/"+servetest.Project+"#m"+target {
			t.Errorf("URL = %q", got)
		}
	})

	t.Run("a message another process writes appears without a reload", func(t *testing.T) {
		ctx := p.tab(t, 1280, 800)
		p.do(t, ctx, chromedp.Navigate(p.url+"/s/"+servetest.Docker))
		wait(t, ctx, "the transcript", `document.querySelectorAll('.msg').length === 4`)
		folds := eval[[]string](t, ctx, `[...document.querySelectorAll('details.fold')].map(d => d.className + ': ' + d.querySelector('summary').textContent + (d.open ? ' (open)' : ''))`)
		if want := []string{"fold reasoning: Reasoning", "fold tool-call: Tool call: read_file", "fold tool-result: Result of read_file · 5 lines"}; !slices.Equal(folds, want) {
			t.Errorf("folded parts = %q, want %q", folds, want)
		}
		if got := eval[[]string](t, ctx, `[...document.querySelectorAll('.msg:last-child .md a, .msg:last-child .md strong, .msg:last-child .md code')].map(e => e.tagName + ' ' + e.textContent + ' ' + (e.getAttribute('href') || ''))`); !slices.Equal(got, []string{
			"STRONG service name ", "CODE db ", "CODE localhost ", "CODE db:5432 ", "A the docs https://docs.docker.com/compose/networking/"}) {
			t.Errorf("Markdown elements = %q", got)
		}
		wait(t, ctx, "the live stream", `document.getElementById('live').classList.contains('on')`)
		eval[bool](t, ctx, `window.__sameDocument = true`)
		servetest.AppendFromProcess(t, p.path, servetest.Docker, "appended by **another process** 进程")
		wait(t, ctx, "the new message", `document.querySelectorAll('.msg').length === 5`)
		if got := eval[string](t, ctx, `document.querySelector('.msg:last-child .msg-body').textContent`); got != "appended by another process 进程" {
			t.Errorf("new message = %q", got)
		}
		if !eval[bool](t, ctx, `window.__sameDocument === true`) {
			t.Error("the page reloaded")
		}
	})

	t.Run("the list reorders live and a search counts new hits", func(t *testing.T) {
		ctx := p.tab(t, 1280, 800)
		p.do(t, ctx, chromedp.Navigate(p.url+"/"))
		wait(t, ctx, "rows and the live stream", `document.querySelectorAll('#list li.row').length === 4 && document.getElementById('live').classList.contains('on')`)
		if eval[string](t, ctx, `document.querySelector('#list li.row').dataset.id`) == servetest.Project {
			t.Fatal("the Chinese session is already first")
		}
		servetest.AppendFromProcess(t, p.path, servetest.Project, "新的消息")
		wait(t, ctx, "the session moved to the top", `document.querySelector('#list li.row').dataset.id === '`+servetest.Project+`'`)

		p.do(t, ctx, chromedp.SendKeys(chromedp.CSS("#q"), "部署"))
		wait(t, ctx, "the search", `document.getElementById('list-status').textContent === 'No matches.'`)
		servetest.AppendFromProcess(t, p.path, servetest.Docker, "部署 is done")
		wait(t, ctx, "the badge", `!document.getElementById('new-hits').hidden && document.getElementById('new-hits').textContent === '1 new'`)
		p.do(t, ctx, chromedp.Click(chromedp.CSS("#new-hits")))
		wait(t, ctx, "the new hit", `document.querySelectorAll('#list li.hit mark').length === 1 && document.getElementById('new-hits').hidden`)
	})

	t.Run("a token server asks for it and keeps it in an HttpOnly cookie", func(t *testing.T) {
		const token = "browser-test-token-0123456789"
		srv, err := httpapi.New(httpapi.Config{Store: p.db, Assets: web.FS(), Token: token})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		defer srv.Close(context.Background())
		url := strings.Replace(ts.URL, "127.0.0.1", "localhost", 1) // another cookie jar entry than the other tabs'
		ctx := p.tab(t, 1280, 800)
		p.do(t, ctx, chromedp.Navigate(url+"/"))
		wait(t, ctx, "the login dialog", `document.getElementById('login').open`)
		if n := eval[int](t, ctx, `document.querySelectorAll('#list li').length`); n != 0 {
			t.Fatalf("%d rows shown without the token", n)
		}
		p.do(t, ctx, chromedp.SendKeys(chromedp.CSS("#token"), "wrong"), chromedp.Click(chromedp.CSS("#login-form button")))
		wait(t, ctx, "the refusal", `document.getElementById('login-error').textContent !== ''`)
		p.do(t, ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(url+"/#token="+token)) // as the link serve prints opens
		wait(t, ctx, "the list", `document.querySelectorAll('#list li.row').length === 4 && !document.getElementById('login').open`)
		if got := eval[string](t, ctx, `location.hash + document.cookie`); got != "" {
			t.Errorf("the token is readable by script or left in the URL: %q", got)
		}
	})

	t.Run("a multimodal message of a Hermes database shows its parts", func(t *testing.T) {
		db, err := sqlite.Open(servetest.CopyDB(t, testenv.Shared("fixtures", "hermes-v11.db")), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		srv, err := httpapi.New(httpapi.Config{Store: db, Assets: web.FS()})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		defer srv.Close(context.Background()) // first: it ends the tab's event stream, which ts.Close waits for
		ctx := p.tab(t, 1280, 800)
		p.do(t, ctx, chromedp.Navigate(ts.URL+"/s/20260122_042112_14b081#m236"))
		wait(t, ctx, "the message", `document.querySelector('#m236.target .parts') !== null`)
		if got := eval[string](t, ctx, `document.querySelector('#m236 .parts').textContent + ' | ' + document.querySelector('#m236 .parts img').getAttribute('src')`); got != "What is in this screenshot of the docker dashboard? | data:image/png;base64,iVBORw0KGgo=" {
			t.Errorf("parts = %q", got)
		}
	})

	t.Run("hostile text renders as text", func(t *testing.T) {
		ctx := p.tab(t, 1280, 800)
		p.do(t, ctx, chromedp.Navigate(p.url+"/s/"+servetest.Hostile))
		wait(t, ctx, "the transcript", fmt.Sprintf(`document.querySelectorAll('.msg').length === %d`, len(servetest.XSS)))
		bad := eval[[]string](t, ctx, `[...document.querySelectorAll('main script, main img, main iframe, main svg:not(.lineage-svg), main b, main [onerror], main [onmouseover], a[href^="javascript"]')].map(e => e.outerHTML)`)
		if len(bad) > 0 {
			t.Errorf("hostile markup became elements: %q", bad)
		}
		text := eval[string](t, ctx, `document.querySelector('.messages').textContent`)
		for _, want := range []string{`<script>window.__xss=1</script>`, `<img src=x onerror="window.__xss=1">`,
			`[click me](javascript:window.__xss=1)`, `<b onmouseover="window.__xss=1">bold</b>`, "\u202egnp.exe\u202c", "zero\u200bwidth",
			`<iframe src="javascript:window.__xss=1"></iframe>`, `&lt;escaped&gt; &amp;`, `<svg><script>window.__xss=1</script></svg>`} {
			if !strings.Contains(text, want) {
				t.Errorf("the transcript does not show %q as text", want)
			}
		}
		if h1 := eval[string](t, ctx, `document.querySelector('.session-head h1').textContent`); h1 != `<img src=x onerror="window.__xss=1"> hostile` {
			t.Errorf("title = %q", h1)
		}
		// HTML inside the snippet markers of a search hit
		p.do(t, ctx, chromedp.Navigate(p.url+"/?q=bold"))
		wait(t, ctx, "the hit", `document.querySelector('#list li.hit mark') !== null`)
		if got := eval[string](t, ctx, `document.querySelector('#list li.hit .snippet').textContent`); !strings.Contains(got, `<b onmouseover="window.__xss=1">`) {
			t.Errorf("snippet = %q", got)
		}
		if eval[bool](t, ctx, `document.querySelector('#list b') !== null || window.__xss !== undefined`) {
			t.Error("markup inside snippet markers became an element")
		}
	})

	t.Run("the charts draw", func(t *testing.T) {
		ctx := p.tab(t, 1280, 800)
		p.do(t, ctx, chromedp.Navigate(p.url+"/stats"))
		wait(t, ctx, "six charts", `document.querySelectorAll('#stats-pane figure svg').length === 6`)
		for i := range 6 {
			if n := eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll('#stats-pane figure')[%d].querySelectorAll('rect.bar').length`, i)); n == 0 {
				t.Errorf("chart %d has no bars", i)
			}
		}
		// the store ranks every session by cost, not the newest 200
		if got := eval[string](t, ctx, `document.querySelectorAll('#stats-pane figure')[5].textContent`); !strings.Contains(got, "Top sessions by cost") || strings.Contains(got, "200") {
			t.Errorf("the top-sessions chart reads %q", got)
		}
	})

	t.Run("at 390 px one pane shows at a time", func(t *testing.T) {
		ctx := p.tab(t, 390, 844)
		p.do(t, ctx, chromedp.Navigate(p.url+"/"))
		wait(t, ctx, "rows", `document.querySelectorAll('#list li.row').length === 4`)
		if eval[bool](t, ctx, `getComputedStyle(document.getElementById('detail-pane')).display !== 'none'`) {
			t.Error("the transcript pane shows beside the list")
		}
		p.do(t, ctx, chromedp.Click(chromedp.CSS("#list li.row a")))
		wait(t, ctx, "the transcript alone", `document.querySelectorAll('.msg').length > 0 && getComputedStyle(document.getElementById('list-pane')).display === 'none'`)
		if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("the page is %d px wide", w)
		}
	})

	t.Run("keyboard", func(t *testing.T) {
		ctx := p.tab(t, 1280, 800)
		p.do(t, ctx, chromedp.Navigate(p.url+"/"))
		wait(t, ctx, "rows", `document.querySelectorAll('#list li.row').length === 4`)
		wait(t, ctx, "the live stream", `document.getElementById('live').classList.contains('on')`)
		rows := eval[[]string](t, ctx, `[...document.querySelectorAll('#list li.row')].map(li => li.dataset.id)`)
		p.do(t, ctx, chromedp.KeyEvent("j"))
		wait(t, ctx, "the first row selected", `document.activeElement.dataset.id === '`+rows[0]+`'`)
		p.do(t, ctx, chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("k"))
		if got := eval[string](t, ctx, `document.querySelector('#list [aria-current]').dataset.id`); got != rows[1] {
			t.Errorf("j j j k selected %s, want %s", got, rows[1])
		}
		p.do(t, ctx, chromedp.Navigate(p.url+"/?q=tokenizer"))
		wait(t, ctx, "hits", `document.querySelectorAll('#list li.hit').length === 3`)
		p.do(t, ctx, chromedp.KeyEvent("j"), chromedp.KeyEvent("\r"))
		wait(t, ctx, "the transcript", `location.pathname.startsWith('/s/') && document.querySelectorAll('.msg').length > 0`)
		wait(t, ctx, "the lineage picture", `document.querySelectorAll('.lineage-svg .node').length === 3`)
		p.do(t, ctx, chromedp.KeyEvent("/"))
		if !eval[bool](t, ctx, `document.activeElement.id === 'q'`) {
			t.Error("/ did not focus the search box")
		}
		p.do(t, ctx, chromedp.KeyEvent("\x1b"), chromedp.KeyEvent("?"))
		wait(t, ctx, "the help", `document.getElementById('help').open`)
		p.do(t, ctx, chromedp.KeyEvent("\x1b"))
		wait(t, ctx, "the help closed", `!document.getElementById('help').open`)
		p.do(t, ctx, chromedp.KeyEvent("\x1b"))
		wait(t, ctx, "Esc back to the list", `location.pathname === '/'`)

		// dark, as the system asks
		light := eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`)
		if _, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
			return chromedp.Void{}, err
		}); err != nil {
			t.Fatal(err)
		}
		if dark := eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`); dark == light || light != "rgb(251, 251, 252)" {
			t.Errorf("background light %s, dark %s", light, dark)
		}
	})

	t.Run("a 10,000-message session opens at once and fills in", func(t *testing.T) {
		const id, n = "20260505_090000_b16b16", 10000
		if _, err := p.db.CreateSession(t.Context(), sessiondb.NewSession{ID: id, Source: "cli", StartedAt: float64(servetest.Base.Unix())}); err != nil {
			t.Fatal(err)
		}
		ms := make([]sessiondb.NewMessage, n)
		for i := range ms {
			ms[i] = sessiondb.NewMessage{Role: []string{"user", "assistant"}[i%2], Timestamp: float64(servetest.Base.Unix() + int64(i)),
				Content: fmt.Sprintf("message %d: some **Markdown** and `code`, 中文 text to wrap the line a little", i+1)}
		}
		if _, err := p.db.AppendMessages(t.Context(), id, ms); err != nil {
			t.Fatal(err)
		}
		late, err := p.db.Messages(t.Context(), id, sessiondb.MessageFilter{Offset: 9000, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx := p.tab(t, 1280, 800)
		p.do(t, ctx, chromedp.Navigate(p.url+"/s/"+id+"#m"+fmt.Sprint(late[0].ID)))
		wait(t, ctx, "the first page", `document.querySelectorAll('.msg').length >= 250`)
		first := eval[float64](t, ctx, `performance.now()`)
		wait(t, ctx, "the deep-linked message on screen", `(e => e && e.classList.contains('target') && (r => r.top >= 0 && r.bottom <= innerHeight + 1)(e.getBoundingClientRect()))(document.getElementById('m`+fmt.Sprint(late[0].ID)+`'))`)
		wait(t, ctx, "every message", fmt.Sprintf(`document.querySelectorAll('.msg').length === %d`, n))
		all := eval[float64](t, ctx, `performance.now()`)
		longTasks := eval[string](t, ctx, `new Promise(done => new PerformanceObserver(l => done(JSON.stringify(l.getEntries().map(e => [Math.round(e.startTime), Math.round(e.duration)])))).observe({type: "longtask", buffered: true}))`, chromedp.EvalAwaitPromise)
		t.Logf("10,000 messages: first page shown %.0f ms after navigation start, all %.0f ms; long tasks [start, ms]: %s", first, all, longTasks)
	})

	t.Run("another origin cannot change anything", func(t *testing.T) {
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "<!doctype html><title>elsewhere</title>")
		}))
		defer evil.Close()
		ctx := p.tab(t, 1280, 800)
		p.do(t, ctx, chromedp.Navigate(evil.URL+"/"))
		target := p.url + "/api/v1/sessions/" + servetest.Docker
		got := eval[[]string](t, ctx, `(async () => {
			const out = [];
			const tries = [
				['POST', '/end', 'no-cors', {}],
				['POST', '/end', 'no-cors', {'Content-Type': 'text/plain'}],
				['PATCH', '', 'cors', {'X-Sessiondb': '1', 'Content-Type': 'application/json'}],
				['DELETE', '', 'cors', {'X-Sessiondb': '1'}],
				['POST', '/end', 'cors', {'X-Sessiondb': '1'}],
			];
			for (const [method, path, mode, headers] of tries) {
				try {
					const r = await fetch('`+target+`' + path, {method, mode, headers, credentials: 'include', body: method === 'DELETE' ? undefined : '{"pinned":true}'});
					out.push(method + path + ' ' + r.type + ' ' + r.status);
				} catch (e) {
					out.push(method + path + ' refused');
				}
			}
			return out;
		})()`, chromedp.EvalAwaitPromise)
		t.Logf("from %s: %q", evil.URL, got)
		s, err := p.db.Session(t.Context(), servetest.Docker)
		if err != nil {
			t.Fatalf("the session is gone: %v", err)
		}
		if s.EndedAt != nil || s.Pinned != 0 {
			t.Fatalf("another origin changed the session: ended %v, pinned %d", s.EndedAt, s.Pinned)
		}
	})

	if *readme {
		t.Run("README screenshot", func(t *testing.T) {
			ctx := p.tab(t, 1280, 800)
			p.do(t, ctx, chromedp.Navigate(p.url+"/s/"+servetest.Project+"?q=项目"))
			wait(t, ctx, "hits and transcript", `document.querySelectorAll('#list mark').length > 0 && document.querySelectorAll('.msg').length > 30`)
			png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile("../docs/serve.png", png, 0o644); err != nil {
				t.Fatal(err)
			}
			p.do(t, ctx, chromedp.Navigate(p.url+"/stats"))
			wait(t, ctx, "charts", `document.querySelectorAll('#stats-pane figure svg').length === 6`)
			if png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot()); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile("../docs/serve-usage.png", png, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// BenchmarkFirstRender reports how long the list takes to first render on
// a copy of the 100k-message bench database named by SESSIONDB_BENCH_DB;
// it skips without it and asserts no time.
func BenchmarkFirstRender(b *testing.B) {
	src := os.Getenv("SESSIONDB_BENCH_DB")
	if src == "" {
		b.Skip("SESSIONDB_BENCH_DB is not set")
	}
	path := servetest.CopyDB(b, src)
	db, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	p := servePage(b, db, path)
	var times []float64
	for range 5 {
		ctx, cancel := chromedp.NewContext(p.browser) // one tab at a time: an open tab holds its event stream
		p.do(b, ctx, chromedp.EmulateViewport(1280, 800))
		p.do(b, ctx, chromedp.Navigate(p.url+"/"))
		wait(b, ctx, "rows", `performance.getEntriesByName('list-rendered').length > 0`)
		times = append(times, eval[float64](b, ctx, `performance.getEntriesByName('list-rendered')[0].startTime`))
		if len(times) == 5 {
			b.Logf("the last load: %s", eval[string](b, ctx, `performance.getEntriesByType('resource').map(e => e.name.replace(location.origin, '') + ' ' + Math.round(e.startTime) + '–' + Math.round(e.responseEnd)).join(', ')`))
		}
		cancel()
	}
	b.Logf("first render of the list on %s, ms after navigation start, 5 loads: %.0f", src, times)
}
