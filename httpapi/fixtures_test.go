package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/httpapi"
	"github.com/sessiondb/sessiondb/internal/servetest"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/sqlite"
)

// TestHermesFixtures serves every Hermes-written database of
// ../shared/fixtures (a copy, upgraded on open) and reads all of it
// through the API: the listing, every session with its messages, lineage
// and export, the fixture's search queries and the statistics. Nothing may
// fail.
func TestHermesFixtures(t *testing.T) {
	paths, _ := filepath.Glob(testenv.Shared("fixtures", "hermes-v*.db"))
	if len(paths) == 0 {
		testenv.Missing(t, "no Hermes fixtures in "+testenv.Shared("fixtures"))
	}
	queries := []string{"docker", `"docker deployment"`, "deploy*", "kubernetes OR helm", "chat-send", "P2.2", "web_search",
		"大别山项目", "项目", "東京の天気", "서울", "🚀", "xylophonezzz"}
	for _, src := range paths {
		t.Run(filepath.Base(src), func(t *testing.T) {
			db, err := sqlite.Open(servetest.CopyDB(t, src), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			srv, err := httpapi.New(httpapi.Config{Store: db})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			get := func(path string) []byte {
				t.Helper()
				resp, err := http.Get(ts.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 {
					t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
				}
				return body
			}
			list, _, err := db.ListSessions(t.Context(), sessiondb.ListOptions{Limit: -1, IncludeArchived: true, IncludeHidden: true, IncludeChildren: true, RawChains: true})
			if err != nil {
				t.Fatal(err)
			}
			get("/api/v1/sessions?limit=200&archived=1&children=1")
			get("/api/v1/sessions?sort=activity")
			for _, s := range list {
				id := "/api/v1/sessions/" + url.PathEscape(s.ID)
				get(id)
				get(id + "/messages?limit=1000")
				get(id + "/lineage")
			}
			if md := string(get("/api/v1/sessions/" + url.PathEscape(list[0].ID) + "/export?format=md&redact=1")); !strings.Contains(md, list[0].ID) {
				t.Errorf("the Markdown export does not name the session")
			}
			for _, q := range queries {
				resp, err := http.Get(ts.URL + "/api/v1/search?q=" + url.QueryEscape(q))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 200 && resp.StatusCode != 400 { // a query the sanitiser refuses is 400 invalid
					t.Errorf("search %q: %d", q, resp.StatusCode)
				}
			}
			for _, by := range []string{"", "day", "model", "source", "day_model"} {
				get("/api/v1/stats?group_by=" + by)
			}
		})
	}
}
