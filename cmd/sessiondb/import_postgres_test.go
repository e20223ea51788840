package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testenv"
)

// A Hermes fixture exported with export --all and imported into
// PostgreSQL: the import reports every session, the database exports
// again exactly as the file was, and `search 项目 --json` gives the same
// hits as on the SQLite file. Other queries give what the same file
// imported into a new SQLite file gives (export writes tool_calls as
// compact JSON, so hits in them differ from the fixture's in spacing,
// on either backend), and the same match set in rank order.
func TestImportFixtureIntoPostgres(t *testing.T) {
	src := fixtureDB(t, "hermes-v23.db")
	file := filepath.Join(t.TempDir(), "all.jsonl")
	mustCLI(t, src, "export", "--all", "--output", file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pg := testenv.Postgres(t)
	if out := mustCLI(t, pg, "import", file); out != "imported 50 sessions (653 messages), replaced 0, skipped 0 already present, failed 0\n" {
		t.Fatalf("import into PostgreSQL printed %q", out)
	}
	if again := mustCLI(t, pg, "export", "--all"); again != string(data) {
		t.Errorf("fixture → export → import into PostgreSQL → export differs")
	}
	if a, b := mustCLI(t, src, "search", "项目", "--json"), mustCLI(t, pg, "search", "项目", "--json"); a != b || !strings.Contains(a, ">>>项目<<<") {
		t.Errorf("search 项目 --json differs between the fixture and PostgreSQL:\n%s\n---\n%s", a, b)
	}

	copied := filepath.Join(t.TempDir(), "copy.db")
	mustCLI(t, copied, "import", file)
	for _, q := range []string{"docker", `"permission denied"`, "deploy* NOT helm", "目", "部署", "helm-chart", "values.yaml", "permission OR 데이터베이스"} {
		args := []string{"search", q, "--json", "--limit", "200"}
		if a, b := mustCLI(t, copied, append(args, "--sort", "newest")...), mustCLI(t, pg, append(args, "--sort", "newest")...); a != b {
			t.Errorf("search %s --sort newest differs between SQLite and PostgreSQL after the same import:\n%s\n---\n%s", q, a, b)
		}
		if a, b := hitIDs(t, mustCLI(t, src, args...)), hitIDs(t, mustCLI(t, pg, args...)); !slices.Equal(a, b) || len(a) == 0 {
			t.Errorf("search %s: hits %v on the fixture, %v on PostgreSQL", q, a, b)
		}
	}

	if out := mustCLI(t, pg, "import", file); !strings.Contains(out, "imported 0 sessions (0 messages), replaced 0, skipped 50 already present") {
		t.Errorf("second import printed %q", out)
	}
}

// hitIDs returns the sorted "session/message" ids of search --json output.
func hitIDs(t *testing.T, out string) []string {
	t.Helper()
	var hits []struct {
		ID        json.Number `json:"id"`
		SessionID string      `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out), &hits); err != nil {
		t.Fatalf("search --json: %v\n%s", err, out)
	}
	ids := []string{}
	for _, h := range hits {
		ids = append(ids, h.SessionID+"/"+h.ID.String())
	}
	slices.Sort(ids)
	return ids
}
