//go:build !sqlite_fts5 && !fts5

package fts5cjk_test

import (
	"database/sql"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// Without FTS5 compiled in, the auto extension must stay silent: opening
// connections keeps working and only Tokens reports the missing build tag.
func TestWithoutFTS5(t *testing.T) {
	fts5cjk.Register()
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT 1`).Scan(&n); err != nil {
		t.Fatalf("query on a connection opened after Register: %v", err)
	}
	_, err = fts5cjk.Tokens("项目")
	if err == nil || !strings.Contains(err.Error(), "sqlite_fts5") {
		t.Errorf("Tokens without FTS5: err = %v, want one naming the sqlite_fts5 build tag", err)
	}
}
