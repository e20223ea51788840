package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/httpapi"
	"github.com/sessiondb/sessiondb/internal/servetest"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

// fixture is a seeded store behind a test server.
type fixture struct {
	db    *sqlite.DB      // the SQLite store; nil on PostgreSQL
	store sessiondb.Store // the store, on either backend
	path  string          // the file, or the postgres:// URL
	srv   *httpapi.Server
	ts    *httptest.Server
}

// newFixture seeds a database and serves it; change adjusts the config.
func newFixture(tb testing.TB, change func(*httpapi.Config)) *fixture {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "state.db")
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return servetest.Base }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	f := serveFixture(tb, db, path, change)
	f.db = db
	return f
}

// newPostgresFixture is newFixture on a fresh PostgreSQL database; it
// skips without one (testenv.Postgres).
func newPostgresFixture(tb testing.TB, change func(*httpapi.Config)) *fixture {
	tb.Helper()
	url := testenv.Postgres(tb)
	db, err := postgres.Open(context.Background(), url, postgres.Options{Now: func() time.Time { return servetest.Base }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return serveFixture(tb, db, url, change)
}

// serveFixture seeds store and serves it; change adjusts the config.
func serveFixture(tb testing.TB, store sessiondb.Store, path string, change func(*httpapi.Config)) *fixture {
	tb.Helper()
	servetest.Seed(tb, store)
	cfg := httpapi.Config{Store: store, PollInterval: 20 * time.Millisecond}
	if change != nil {
		change(&cfg)
	}
	srv, err := httpapi.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	tb.Cleanup(func() {
		srv.Close(tb.Context())
		ts.Close()
	})
	return &fixture{store: store, path: path, srv: srv, ts: ts}
}

// backends runs test on a SQLite and on a PostgreSQL fixture.
func backends(t *testing.T, test func(t *testing.T, f *fixture)) {
	t.Run("sqlite", func(t *testing.T) { test(t, newFixture(t, nil)) })
	t.Run("postgres", func(t *testing.T) { test(t, newPostgresFixture(t, nil)) })
}

// do sends one request and returns the status and the body.
func (f *fixture) do(tb testing.TB, method, path, body string, header ...string) (int, []byte, http.Header) {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.ts.URL+path, rd)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "Host") {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// get is do for a GET that must succeed; it decodes the JSON into v.
func (f *fixture) get(tb testing.TB, path string, v any) {
	tb.Helper()
	status, body, _ := f.do(tb, "GET", path, "")
	if status != http.StatusOK {
		tb.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		tb.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// errorCode returns the code of an error body.
func errorCode(tb testing.TB, body []byte) string {
	tb.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		tb.Fatalf("not an error body: %s", body)
	}
	return e.Error.Code
}
