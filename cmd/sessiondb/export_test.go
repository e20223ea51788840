package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testenv"
)

func init() {
	commands["export"] = newExportCommand
	commands["import"] = newImportCommand
}

// fixtureDB copies a Hermes fixture database into a temporary directory
// and upgrades the copy with `sessiondb init`, as a user would: read
// commands refuse a file at an older schema.
func fixtureDB(t *testing.T, name string) string {
	t.Helper()
	in, err := os.Open(testenv.Shared("fixtures", name))
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	defer in.Close()
	dst := filepath.Join(t.TempDir(), "state.db")
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, dst, "init")
	return dst
}

type importReport struct {
	DryRun      bool     `json:"dry_run"`
	Imported    int      `json:"imported"`
	Replaced    int      `json:"replaced"`
	Skipped     int      `json:"skipped"`
	Failed      int      `json:"failed"`
	Messages    int      `json:"messages"`
	ImportedIDs []string `json:"imported_ids"`
	Errors      []struct {
		Line      int    `json:"line"`
		SessionID string `json:"session_id"`
		Message   string `json:"message"`
	} `json:"errors"`
}

func parseReport(t *testing.T, out string) importReport {
	t.Helper()
	var r importReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("import --json printed %q: %v", out, err)
	}
	return r
}

// tempFiles lists the leftovers of atomic writes in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return matches
}

func TestExportImportCommands(t *testing.T) {
	src := fixtureDB(t, "hermes-v23.db")
	dir := t.TempDir()
	backup := filepath.Join(dir, "backup.jsonl")

	mustCLI(t, src, "export", "--all", "--output", backup)
	data, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 50 {
		t.Fatalf("backup has %d lines, want 50", n)
	}
	if fi, _ := os.Stat(backup); fi.Mode().Perm() != 0o600 {
		t.Errorf("backup mode %v, want 0600 (transcripts are private)", fi.Mode().Perm())
	}
	if stdout := mustCLI(t, src, "export", "--all"); stdout != string(data) {
		t.Error("--output and standard output differ")
	}

	t.Run("refuses to overwrite", func(t *testing.T) {
		os.WriteFile(backup, []byte("keep me"), 0o600)
		_, errOut, code := cli(t, src, "", "export", "--all", "--output", backup)
		if code != exitError || !strings.Contains(errOut, "--force") {
			t.Errorf("exit %d, stderr %q; want 1 and a hint about --force", code, errOut)
		}
		if b, _ := os.ReadFile(backup); string(b) != "keep me" {
			t.Error("an existing file was overwritten without --force")
		}
		mustCLI(t, src, "export", "--all", "--output", backup, "--force")
		if b, _ := os.ReadFile(backup); !bytes.Equal(b, data) {
			t.Error("--force did not write the export")
		}
		if left := tempFiles(t, dir); len(left) > 0 {
			t.Errorf("temporary files left behind: %v", left)
		}
	})

	dst := filepath.Join(t.TempDir(), "state.db")
	t.Run("import", func(t *testing.T) {
		r := parseReport(t, mustCLI(t, dst, "import", backup, "--dry-run", "--json"))
		if !r.DryRun || r.Imported != 50 {
			t.Fatalf("dry run report %+v", r)
		}
		if out := mustCLI(t, dst, "export", "--all"); out != "" {
			t.Fatalf("a dry run wrote sessions:\n%.300s", out)
		}
		r = parseReport(t, mustCLI(t, dst, "import", backup, "--json"))
		if r.Imported != 50 || r.Messages != 653 || r.Failed != 0 {
			t.Fatalf("report %+v", r)
		}
		out, _, code := cli(t, dst, string(data), "import", "-")
		if code != 0 || !strings.Contains(out, "imported 0 sessions") || !strings.Contains(out, "skipped 50 already present") {
			t.Errorf("second import: exit %d\n%s", code, out)
		}
		r = parseReport(t, mustCLI(t, dst, "import", backup, "--replace", "--json"))
		if r.Replaced != 50 {
			t.Errorf("--replace report %+v", r)
		}
	})

	t.Run("round trip", func(t *testing.T) {
		strip := func(s string) []map[string]any {
			var objs []map[string]any
			for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
				var o map[string]any
				if err := json.Unmarshal([]byte(line), &o); err != nil {
					t.Fatal(err)
				}
				for _, m := range o["messages"].([]any) {
					delete(m.(map[string]any), "id")
				}
				objs = append(objs, o)
			}
			return objs
		}
		a, b := strip(string(data)), strip(mustCLI(t, dst, "export", "--all"))
		ab, _ := json.Marshal(a)
		bb, _ := json.Marshal(b)
		if !bytes.Equal(ab, bb) {
			t.Error("export → import → export changed more than the message ids")
		}
	})
}

func TestExportCommandFormats(t *testing.T) {
	db := fixtureDB(t, "hermes-v23.db")
	md := mustCLI(t, db, "export", "--session", "20260228_202754", "--lineage", "--format", "md")
	for _, want := range []string{"# Kubernetes migration #3", "**Segments:** `20260226_113011_066326` → `20260228_202754_3b8313` → `20260324_083154_49e260`", "### User", "### Assistant", "### Tool ("} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	var arr []map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, db, "export", "--source", "discord", "--format", "json")), &arr); err != nil {
		t.Fatal(err)
	}
	if len(arr) == 0 {
		t.Fatal("no discord sessions exported")
	}
	for _, o := range arr {
		if o["source"] != "discord" {
			t.Errorf("--source discord exported a %v session", o["source"])
		}
	}
	var one map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, db, "export", "--session", "20260324_083154")), &one); err != nil {
		t.Fatal(err)
	}
	if one["id"] != "20260324_083154_49e260" || one["segments"] != nil {
		t.Errorf("single export: id %v segments %v", one["id"], one["segments"])
	}
}

func TestExportRedactCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	id := strings.TrimSpace(mustCLI(t, db, "new", "--source", "cli", "--id", "20260501_120000_abcdef"))
	mustCLI(t, db, "append", id, "--role", "user", "--content", "my key is sk-abcdefghijklmnop0123456789ABCD and password=swordfish")
	for _, format := range []string{"jsonl", "json", "md"} {
		out := mustCLI(t, db, "export", "--session", id, "--redact", "--format", format)
		if strings.Contains(out, "swordfish") || strings.Contains(out, "0123456789ABCD") || !strings.Contains(out, "[REDACTED]") {
			t.Errorf("%s --redact:\n%s", format, out)
		}
	}
	if out := mustCLI(t, db, "export", "--session", id); !strings.Contains(out, "swordfish") {
		t.Error("secrets masked without --redact")
	}
}

func TestExportImportExitCodes(t *testing.T) {
	db := fixtureDB(t, "hermes-v23.db")
	dir := t.TempDir()
	out := filepath.Join(dir, "x.jsonl")
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"export", "--session", "nope"}, exitNotFound, `"nope"`},
		{[]string{"export", "--session", "nope", "--output", out}, exitNotFound, `"nope"`},
		{[]string{"export"}, exitUsage, "--all"},
		{[]string{"export", "--all", "--session", "2026"}, exitUsage, "cannot be combined"},
		{[]string{"export", "--all", "--lineage"}, exitUsage, "--lineage needs --session"},
		{[]string{"export", "--all", "--format", "xml"}, exitUsage, "want jsonl, json or md"},
		{[]string{"export", "--session", "2026"}, exitUsage, "ambiguous"},
		{[]string{"export", "--all", "--output", dir}, exitUsage, "is a directory"},
		{[]string{"import"}, exitUsage, "missing PATH"},
		{[]string{"import", filepath.Join(dir, "missing.jsonl")}, exitUsage, "missing.jsonl"},
	} {
		_, errOut, code := cli(t, db, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.err) {
			t.Errorf("sessiondb %s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), code, errOut, tc.code, tc.err)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed export left %s (err %v)", out, err)
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}

	// A file with one bad session: the others are imported, the bad one is
	// reported with its line, and the exit status is 1.
	in := `{"id":"ok1","source":"cli","started_at":1777000000,"messages":[{"role":"user","content":"hi","timestamp":1777000001}]}
{"id":"bad","source":"cli","started_at":1777000000,"messages":[{"content":"no role"}]}
{"id":"ok2","source":"cli","started_at":1777000000,"messages":[]}
`
	fresh := filepath.Join(t.TempDir(), "state.db")
	stdout, errOut, code := cli(t, fresh, in, "import", "-")
	if code != exitError || !strings.Contains(stdout, "line 2: session bad: message 1") || !strings.Contains(errOut, "1 of 3 sessions") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, stdout, errOut)
	}
	stdout, _, code = cli(t, fresh, in, "import", "-", "--json")
	r := parseReport(t, stdout)
	if code != exitError || r.Skipped != 2 || r.Failed != 1 || r.Errors[0].Line != 2 || r.Errors[0].SessionID != "bad" {
		t.Errorf("exit %d, report %+v", code, r)
	}
}
