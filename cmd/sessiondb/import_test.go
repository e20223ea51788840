package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 19 finding 1 through the command line: sessions whose messages
// interleave, exported with export --all and imported into an empty
// database, export again exactly as they were; a second import skips them.
func TestImportInterleavedCommand(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	for _, id := range []string{"a", "b"} {
		mustCLI(t, src, "new", "--source", "cli", "--id", id)
	}
	for i := range 6 {
		id := []string{"a", "b"}[i%2]
		mustCLI(t, src, "append", id, "--role", "user", "--content", fmt.Sprintf("message %d of %s", i, id))
	}
	backup := filepath.Join(t.TempDir(), "backup.jsonl")
	mustCLI(t, src, "export", "--all", "--output", backup)
	data, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(t.TempDir(), "state.db")
	out, errOut, code := cli(t, dst, "", "import", backup)
	if code != 0 || !strings.Contains(out, "imported 2 sessions (6 messages)") {
		t.Fatalf("import: exit %d\n%s%s", code, out, errOut)
	}
	if again := mustCLI(t, dst, "export", "--all"); again != string(data) {
		t.Errorf("export → import → export differs:\n%s\n---\n%s", data, again)
	}
	if out := mustCLI(t, dst, "import", backup); !strings.Contains(out, "imported 0 sessions (0 messages), replaced 0, skipped 2 already present") {
		t.Errorf("second import:\n%s", out)
	}

	// Into a database whose own session holds ids 1 to 6, every message
	// gets a new id after them, in order, and the report says so.
	other := filepath.Join(t.TempDir(), "state.db")
	mustCLI(t, other, "new", "--source", "cli", "--id", "z")
	for i := range 6 {
		mustCLI(t, other, "append", "z", "--role", "user", "--content", fmt.Sprintf("holds id %d", i+1))
	}
	out = mustCLI(t, other, "import", backup)
	for _, want := range []string{"imported 2 sessions (6 messages)", "6 messages with new ids",
		"session a: 3 of 3 messages got new ids", "session b: 3 of 3 messages got new ids"} {
		if !strings.Contains(out, want) {
			t.Errorf("import into a database holding ids 1-6 does not say %q:\n%s", want, out)
		}
	}
}
