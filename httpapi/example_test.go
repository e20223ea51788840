package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/httpapi"
	"github.com/sessiondb/sessiondb/sqlite"
)

// A store served over HTTP: the API alone here; add web.FS() as
// Config.Assets for the page, and call Open to listen on Config.Addr.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "state.db"), sqlite.Options{})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	id, _ := db.CreateSession(ctx, sessiondb.NewSession{ID: "20260501_090000_abcdef", Source: "cli"})
	db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: id, Role: "user", Content: "How do I deploy with docker compose?"})

	srv, err := httpapi.New(httpapi.Config{Store: db, ReadOnly: true})
	if err != nil {
		panic(err)
	}
	defer srv.Close(ctx)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/api/v1/search?q=docker&limit=1")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var got struct{ Hits []sessiondb.SearchHit }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, *got.Hits[0].Snippet)
	// Output:
	// 200 How do I deploy with >>>docker<<< compose?
}
