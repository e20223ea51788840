package replicate_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/replicate"
	"github.com/sessiondb/sessiondb/sqlite"
)

// indexedAsV30 are the fixture queries where the SQLite backend answers
// from the legacy index Hermes wrote (schema v11 indexed tool output
// whole), while PostgreSQL indexes as the current layout does (the first
// 8192 characters of a tool row): two ~50k-character tool outputs mention
// "docker deployment" further in. SQLite answers the same once the file is
// converted (optimize-storage), and on v23 files (sqlite/search_test.go's
// knownDifferences). The values are PostgreSQL's counts.
var indexedAsV30 = map[string]int{"hermes-v11/word": 163, "hermes-v11/phrase": 55}

// TestSyncedFixturesSearchAsSQLite: each fixture that carries Hermes'
// recorded searches, synced into PostgreSQL, answers every recorded query
// with the same count and the same session set as the SQLite backend gives
// on the same file, at Hermes' limit of 1000; at the default limit of 20 the
// count is the same (which 20 depends on the ranking, which differs:
// postgres/DESIGN.md, "Ranking").
func TestSyncedFixturesSearchAsSQLite(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"hermes-v11", "hermes-v23", "hermes-v23-nocjk"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(testenv.Shared("fixtures", name+".json"))
			if err != nil {
				testenv.Missing(t, "fixture manifest: "+err.Error())
				return
			}
			var manifest struct {
				Searches []struct{ Label, Query string } `json:"searches"`
			}
			if err := json.Unmarshal(raw, &manifest); err != nil {
				t.Fatal(err)
			}
			// The SQLite side answers on a writable copy (opening it
			// upgrades and builds the indexes, as a user's open would).
			path := copyFixture(t, testenv.Shared("fixtures", name+".db"))
			lite, err := sqlite.Open(path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer lite.Close()
			pg, _ := MustOpenPG(t)
			mustSync(t, testenv.Shared("fixtures", name+".db"), pg, replicate.Options{Origin: "fixture"})
			if len(manifest.Searches) == 0 {
				t.Fatal("the manifest records no searches")
			}
			for _, q := range manifest.Searches {
				for _, limit := range []int{1000, 0} {
					want, err := lite.Search(ctx, q.Query, sessiondb.SearchOptions{Limit: limit})
					if err != nil {
						t.Fatalf("sqlite %s %q: %v", q.Label, q.Query, err)
					}
					got, err := pg.Search(ctx, q.Query, sessiondb.SearchOptions{Limit: limit})
					if err != nil {
						t.Fatalf("postgres %s %q: %v", q.Label, q.Query, err)
					}
					if n, ok := indexedAsV30[name+"/"+q.Label]; ok && limit == 1000 {
						if len(got) != n {
							t.Errorf("%s %q: %d hits on PostgreSQL, want %d (the current layout's index)", q.Label, q.Query, len(got), n)
						}
						continue
					}
					if len(got) != len(want) {
						t.Errorf("%s %q limit %d: %d hits on PostgreSQL, %d on SQLite", q.Label, q.Query, limit, len(got), len(want))
					}
					if g, w := hitSessions(got), hitSessions(want); limit == 1000 && !slices.Equal(g, w) {
						t.Errorf("%s %q limit %d: sessions %v on PostgreSQL, %v on SQLite", q.Label, q.Query, limit, g, w)
					}
				}
			}
		})
	}
}

func hitSessions(hits []sessiondb.SearchHit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.SessionID)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// copyFixture copies a fixture with its -wal and -shm into a temporary
// directory.
func copyFixture(tb testing.TB, path string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), filepath.Base(path))
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			if suffix != "" && os.IsNotExist(err) {
				continue
			}
			tb.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return dst
}
