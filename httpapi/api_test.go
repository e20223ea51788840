package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/httpapi"
	"github.com/sessiondb/sessiondb/internal/servetest"
)

func TestListSessions(t *testing.T) {
	f := newFixture(t, nil)
	var got struct {
		Sessions []sessiondb.SessionSummary
		Total    int
	}
	f.get(t, "/api/v1/sessions", &got)
	var ids []string
	for _, s := range got.Sessions {
		ids = append(ids, s.ID)
		if s.SystemPrompt != nil {
			t.Errorf("%s: the listing carries the system prompt", s.ID)
		}
	}
	// newest first; the compression chain shows once, as its tip; the
	// delegate child is left out
	if want := []string{servetest.Hostile, servetest.Tip, servetest.Docker, servetest.Project}; !slices.Equal(ids, want) || got.Total != 4 {
		t.Fatalf("sessions = %v total %d, want %v total 4", ids, got.Total, want)
	}
	if p := got.Sessions[3].Preview; !strings.HasPrefix(p, "请帮我整理") {
		t.Errorf("preview = %q", p)
	}

	t.Run("filters and paging", func(t *testing.T) {
		f.get(t, "/api/v1/sessions?source=telegram,discord&limit=1&offset=1", &got)
		if len(got.Sessions) != 1 || got.Sessions[0].ID != servetest.Docker || got.Total != 2 {
			t.Fatalf("got %+v", got)
		}
		f.get(t, "/api/v1/sessions?q=项目", &got)
		if len(got.Sessions) != 1 || got.Sessions[0].ID != servetest.Project {
			t.Fatalf("q=项目: got %d sessions", len(got.Sessions))
		}
	})
	t.Run("bad parameters are 400 invalid", func(t *testing.T) {
		for _, q := range []string{"limit=0", "limit=201", "offset=-1", "archived=maybe", "pinned=2", "sort=title"} {
			status, body, _ := f.do(t, "GET", "/api/v1/sessions?"+q, "")
			if status != 400 || errorCode(t, body) != sessiondb.EINVALID {
				t.Errorf("%s: %d %s", q, status, body)
			}
		}
	})
}

func TestSessionAndMessages(t *testing.T) {
	f := newFixture(t, nil)
	var s sessiondb.Session
	f.get(t, "/api/v1/sessions/"+servetest.Docker, &s)
	if s.Title == nil || *s.Title != "Docker compose networking" || s.MessageCount != 4 {
		t.Fatalf("session = %+v", s)
	}
	status, body, _ := f.do(t, "GET", "/api/v1/sessions/nope", "")
	if status != 404 || errorCode(t, body) != sessiondb.ENOTFOUND {
		t.Fatalf("missing session: %d %s", status, body)
	}

	type page struct {
		Messages []sessiondb.Message
		More     bool
	}
	var p page
	var all []int64
	after := int64(0)
	for {
		f.get(t, "/api/v1/sessions/"+servetest.Project+"/messages?limit=10&after_id="+itoa(after), &p)
		for _, m := range p.Messages {
			all = append(all, m.ID)
			after = m.ID
		}
		if !p.More {
			break
		}
	}
	if len(all) != 33 || !slices.IsSorted(all) {
		t.Fatalf("paged %d messages %v", len(all), all)
	}
	f.get(t, "/api/v1/sessions/"+servetest.Project+"/messages?tail=2", &p)
	if len(p.Messages) != 2 || p.Messages[1].ID != all[32] || p.Messages[0].ID != all[31] {
		t.Fatalf("tail=2 = %+v", p.Messages)
	}
	f.get(t, "/api/v1/sessions/"+servetest.Docker+"/messages", &p)
	if p.Messages[2].ToolName == nil || *p.Messages[2].ToolName != "read_file" || p.Messages[1].Reasoning == nil {
		t.Fatalf("tool and reasoning fields lost: %+v", p.Messages)
	}
	status, body, _ = f.do(t, "GET", "/api/v1/sessions/"+servetest.Docker+"/messages?tail=2&after_id=3", "")
	if status != 400 {
		t.Fatalf("tail with after_id: %d %s", status, body)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestSearchMatchesCLI: the hits are exactly what `sessiondb search --json`
// prints, markers included.
func TestSearchMatchesCLI(t *testing.T) {
	f := newFixture(t, nil)
	status, body, _ := f.do(t, "GET", "/api/v1/search?q=项目&sort=newest&limit=5", "")
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var got struct {
		Hits     []json.RawMessage
		Sessions map[string]struct{ Title *string }
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Hits) == 0 || got.Sessions[servetest.Project].Title == nil || *got.Sessions[servetest.Project].Title != "项目计划" {
		t.Fatalf("search: %s", body)
	}
	if !bytes.Contains(body, []byte(">>>项目<<<")) {
		t.Errorf("no >>>项目<<< marker in %s", body)
	}
	hits, err := f.db.Search(t.Context(), "项目", sessiondb.SearchOptions{Sort: "newest", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hits {
		want, _ := json.Marshal(h)
		if !jsonEqual(t, got.Hits[i], want) {
			t.Errorf("hit %d = %s, want %s", i, got.Hits[i], want)
		}
	}
	if cli := cliSearch(t, f.path, "项目", "--sort", "newest", "--limit", "5"); cli != nil && !jsonEqual(t, cli, mustJSON(t, got.Hits)) {
		t.Errorf("API hits differ from search --json:\n%s\n%s", mustJSON(t, got.Hits), cli)
	}

	for q, code := range map[string]string{"": "invalid", "q=x&sort=best": "invalid", "q=x&limit=500": "invalid"} {
		status, body, _ := f.do(t, "GET", "/api/v1/search?"+q, "")
		if status != 400 || errorCode(t, body) != code {
			t.Errorf("%q: %d %s", q, status, body)
		}
	}
	var byRole struct{ Hits []sessiondb.SearchHit }
	f.get(t, "/api/v1/search?q=tokenizer&role=user", &byRole)
	if len(byRole.Hits) != 1 || byRole.Hits[0].Role != "user" || byRole.Hits[0].SessionID != servetest.Delegate {
		t.Errorf("role filter: %+v", byRole.Hits)
	}
}

// cliSearch runs `go run ./cmd/sessiondb search --json` when the go
// command is at hand; nil otherwise.
func cliSearch(t *testing.T, db string, args ...string) []byte {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil || testing.Short() {
		return nil
	}
	cmd := exec.Command(gobin, append([]string{"run", "-tags", "sqlite_fts5", "../cmd/sessiondb", "--db", db, "search", "--json"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sessiondb search: %v", err)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return mustString(x) == mustString(y)
}

func mustString(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestLineageStatsExport reads the lineage, the statistics (the charts'
// per-day, per-model totals included) and an export, on either backend.
func TestLineageStatsExport(t *testing.T) { backends(t, testLineageStatsExport) }

func testLineageStatsExport(t *testing.T, f *fixture) {
	var info map[string]bool
	f.get(t, "/api/v1/info", &info)
	if !info["events"] || !info["stats"] || !info["stats_day_model"] {
		t.Errorf("info = %v: the store should report events and usage per day and model", info)
	}
	var n sessiondb.LineageNode
	f.get(t, "/api/v1/sessions/"+servetest.Tip+"/lineage", &n)
	if n.ID != servetest.Root || len(n.Children) != 2 {
		t.Fatalf("lineage = %+v", n)
	}

	var st struct {
		GroupBy string `json:"group_by"`
		Rows    []sessiondb.UsageRow
	}
	f.get(t, "/api/v1/stats?group_by=model", &st)
	var models []string
	for _, r := range st.Rows {
		models = append(models, r.Key)
	}
	if st.GroupBy != "model" || !slices.Contains(models, "claude-haiku-4") || !slices.Contains(models, "gpt-5") {
		t.Fatalf("stats by model = %+v", st)
	}
	f.get(t, "/api/v1/stats?group_by=day&until=2026-05-02", &st)
	for _, r := range st.Rows {
		if r.Key > "2026-05-02" {
			t.Errorf("until kept %s", r.Key)
		}
	}
	if len(st.Rows) == 0 {
		t.Error("no days")
	}
	var dm struct {
		Rows []struct {
			Day string
			sessiondb.UsageRow
		}
	}
	f.get(t, "/api/v1/stats?group_by=day_model&until=2026-05-02", &dm)
	var got []string
	for _, r := range dm.Rows {
		got = append(got, r.Day+" "+r.Key)
	}
	// the sessions' days in the server's zone (servetest.Base is 09:00 UTC)
	day := func(d int) string { return servetest.Base.AddDate(0, 0, d).Local().Format("2006-01-02") }
	if want := []string{day(0) + " qwen3-coder", day(1) + " claude-sonnet-4", day(1) + " claude-haiku-4"}; !slices.Equal(got, want) {
		t.Errorf("day_model rows = %q, want %q", got, want)
	}
	status, body, _ := f.do(t, "GET", "/api/v1/stats?group_by=source&until=2026-05-02", "")
	if status != 400 {
		t.Errorf("until without day: %d %s", status, body)
	}

	// the costliest sessions of the whole store, the delegate child included
	if !info["stats_costliest"] {
		t.Errorf("info = %v: the store should rank sessions by cost", info)
	}
	var top struct{ Sessions []sessiondb.Session }
	f.get(t, "/api/v1/stats/costliest?limit=5", &top)
	var ids []string
	for _, s := range top.Sessions {
		ids = append(ids, s.ID)
	}
	if want := []string{servetest.Root, servetest.Tip, servetest.Docker, servetest.Project, servetest.Delegate}; !slices.Equal(ids, want) {
		t.Errorf("costliest = %q, want %q", ids, want)
	}
	for _, bad := range []string{"limit=0", "limit=1001", "since=yesterday"} {
		if status, body, _ := f.do(t, "GET", "/api/v1/stats/costliest?"+bad, ""); status != 400 {
			t.Errorf("costliest?%s: %d %s", bad, status, body)
		}
	}

	status, body, h := f.do(t, "GET", "/api/v1/sessions/"+servetest.Docker+"/export?format=md", "")
	if status != 200 || h.Get("Content-Disposition") != `attachment; filename="`+servetest.Docker+`.md"` || !bytes.Contains(body, []byte("service name")) {
		t.Fatalf("export md: %d %v %s", status, h, body)
	}
	status, body, _ = f.do(t, "GET", "/api/v1/sessions/"+servetest.Project+"/export?format=jsonl", "")
	var obj struct{ Messages []sessiondb.Message }
	if status != 200 || json.Unmarshal(body, &obj) != nil || len(obj.Messages) != 33 {
		t.Fatalf("export jsonl: %d %d messages", status, len(obj.Messages))
	}
	status, body, _ = f.do(t, "GET", "/api/v1/sessions/"+servetest.Docker+"/export?format=pdf", "")
	if status != 400 {
		t.Fatalf("format=pdf: %d %s", status, body)
	}
}

func TestMutations(t *testing.T) {
	f := newFixture(t, nil)
	hdr := []string{httpapi.CSRFHeader, "1"}
	status, body, _ := f.do(t, "PATCH", "/api/v1/sessions/"+servetest.Docker, `{"title":"Compose networks","pinned":true,"archived":true}`, hdr...)
	var s sessiondb.Session
	if status != 200 || json.Unmarshal(body, &s) != nil || *s.Title != "Compose networks" || s.Pinned != 1 || s.Archived != 1 {
		t.Fatalf("patch: %d %s", status, body)
	}
	status, body, _ = f.do(t, "PATCH", "/api/v1/sessions/"+servetest.Project, `{"title":"Compose networks"}`, hdr...)
	if status != 409 || errorCode(t, body) != sessiondb.ECONFLICT {
		t.Fatalf("duplicate title: %d %s", status, body)
	}
	status, body, _ = f.do(t, "PATCH", "/api/v1/sessions/"+servetest.Project, `{"colour":"red"}`, hdr...)
	if status != 400 {
		t.Fatalf("unknown field: %d %s", status, body)
	}
	status, body, _ = f.do(t, "POST", "/api/v1/sessions/"+servetest.Docker+"/end", `{"reason":"user_exit"}`, hdr...)
	if status != 200 || json.Unmarshal(body, &s) != nil || s.EndReason == nil || *s.EndReason != "user_exit" {
		t.Fatalf("end: %d %s", status, body)
	}
	status, body, _ = f.do(t, "POST", "/api/v1/sessions/"+servetest.Docker+"/reopen", "", hdr...)
	if status != 200 || json.Unmarshal(body, &s) != nil || s.EndedAt != nil {
		t.Fatalf("reopen: %d %s", status, body)
	}
	status, body, _ = f.do(t, "DELETE", "/api/v1/sessions/"+servetest.Root, "", hdr...)
	if status != 200 || !bytes.Contains(body, []byte(servetest.Delegate)) {
		t.Fatalf("delete: %d %s", status, body)
	}
	status, _, _ = f.do(t, "GET", "/api/v1/sessions/"+servetest.Root, "")
	if status != 404 {
		t.Fatalf("deleted session: %d", status)
	}
	big := `{"title":"` + strings.Repeat("x", 2<<20) + `"}`
	status, body, _ = f.do(t, "PATCH", "/api/v1/sessions/"+servetest.Project, big, hdr...)
	if status != http.StatusRequestEntityTooLarge || errorCode(t, body) != "too_large" {
		t.Fatalf("2 MiB body: %d %s", status, body)
	}
}

func TestReadOnly(t *testing.T) {
	f := newFixture(t, func(c *httpapi.Config) { c.ReadOnly = true })
	hdr := []string{httpapi.CSRFHeader, "1"}
	for _, m := range [][2]string{{"PATCH", ""}, {"POST", "/end"}, {"POST", "/reopen"}, {"DELETE", ""}} {
		status, body, _ := f.do(t, m[0], "/api/v1/sessions/"+servetest.Docker+m[1], `{"pinned":true}`, hdr...)
		if status != 405 || errorCode(t, body) != "read_only" {
			t.Errorf("%s %s: %d %s", m[0], m[1], status, body)
		}
	}
	var info map[string]bool
	f.get(t, "/api/v1/info", &info)
	if !info["read_only"] || !info["events"] || !info["stats"] {
		t.Errorf("info = %v", info)
	}
}

// TestOpenAPICoversRoutes: every route is in the OpenAPI document, and the
// document names no route the server lacks.
func TestOpenAPICoversRoutes(t *testing.T) {
	f := newFixture(t, nil)
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]any
	}
	f.get(t, "/api/v1/openapi.json", &doc)
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	for _, r := range f.srv.Routes() {
		if !documented[r] {
			t.Errorf("route %s is not in openapi.json", r)
		}
		delete(documented, r)
	}
	for r := range documented {
		t.Errorf("openapi.json documents %s, which the server does not have", r)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi = %q", doc.OpenAPI)
	}
}
