package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

func init() { commands["recover"] = newRecoverCommand }

// run runs a command line without a --db and returns stdout, stderr and the
// exit status.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

// recoverSource writes a database with 400 messages, each with a unique
// MARKER-NNNN, and closes it (checkpointing the WAL into the file).
func recoverSource(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	ms := make([]sessiondb.NewMessage, 400)
	for i := range ms {
		ms[i] = sessiondb.NewMessage{Role: "user", Content: fmt.Sprintf("MARKER-%04d docker deployment notes", i)}
	}
	if _, err := db.AppendMessages(ctx, "s1", ms); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// corrupt zeroes the page of path holding text (a table leaf page).
func corrupt(t *testing.T, path, text string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, []byte(text))
	if at < 0 || bytes.LastIndex(data, []byte(text)) != at {
		t.Fatalf("%q found at %d (want exactly once)", text, at)
	}
	ps := int(binary.BigEndian.Uint16(data[16:18]))
	page := at / ps
	if page == 0 || data[page*ps] != 0x0d {
		t.Fatalf("%q is on page %d of type %#x, not a table leaf", text, page+1, data[page*ps])
	}
	copy(data[page*ps:(page+1)*ps], make([]byte, ps))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

type cliReport struct {
	Complete bool `json:"complete"`
	Tables   []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
		Copied int64  `json:"copied"`
		Lost   []struct {
			From int64 `json:"from"`
			To   int64 `json:"to"`
		} `json:"lost_ranges"`
	} `json:"tables"`
	Verify struct {
		OK bool `json:"ok"`
	} `json:"verification"`
	Error string `json:"error"`
}

func (r *cliReport) messages(t *testing.T) (copied int64, lost int) {
	t.Helper()
	for _, tb := range r.Tables {
		if tb.Name == "messages" {
			return tb.Copied, len(tb.Lost)
		}
	}
	t.Fatal("no messages in the report")
	return 0, 0
}

func readReport(t *testing.T, path string) cliReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r cliReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report %s: %v", path, err)
	}
	return r
}

func TestRecoverCLI(t *testing.T) {
	src := recoverSource(t)
	dir := t.TempDir()

	t.Run("complete", func(t *testing.T) {
		out := filepath.Join(dir, "complete.db")
		stdout, stderr, code := run(t, "recover", "--source", src, "--output", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, want := range []string{"complete", "TABLE", "messages", "400", "verification: ok"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
		if got := mustCLI(t, out, "search", "docker", "--json"); !strings.Contains(got, "MARKER") {
			t.Errorf("search in the recovered file: %s", got)
		}
	})

	t.Run("json and report file", func(t *testing.T) {
		out := filepath.Join(dir, "json.db")
		report := filepath.Join(dir, "report.json")
		stdout, stderr, code := run(t, "recover", "--source", src, "--output", out, "--json", "--report", report)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var got cliReport
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("--json: %v\n%s", err, stdout)
		}
		if copied, _ := got.messages(t); !got.Complete || !got.Verify.OK || copied != 400 {
			t.Errorf("report %+v", got)
		}
		if file := readReport(t, report); !file.Complete {
			t.Errorf("report file %+v", file)
		}
	})

	broken := filepath.Join(t.TempDir(), "broken.db")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, data, 0o600); err != nil {
		t.Fatal(err)
	}
	corrupt(t, broken, "MARKER-0200")

	t.Run("damaged without allow-partial", func(t *testing.T) {
		out := filepath.Join(dir, "strict.db")
		report := filepath.Join(dir, "strict.json")
		_, stderr, code := run(t, "recover", "--source", broken, "--output", out, "--report", report)
		if code != 1 {
			t.Fatalf("exit %d, want 1: %s", code, stderr)
		}
		if !strings.Contains(stderr, `"messages"`) || !strings.Contains(stderr, "--allow-partial") {
			t.Errorf("stderr: %s", stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("output left behind: %v", err)
		}
		if r := readReport(t, report); r.Complete || r.Error == "" {
			t.Errorf("report %+v", r)
		}
	})

	t.Run("damaged with allow-partial", func(t *testing.T) {
		out := filepath.Join(dir, "partial.db")
		report := filepath.Join(dir, "partial.json")
		stdout, stderr, code := run(t, "recover", "--source", broken, "--output", out, "--allow-partial", "--report", report)
		if code != 1 {
			t.Fatalf("exit %d, want 1: %s", code, stderr)
		}
		for _, want := range []string{"partial", "unreadable rowids", "verification: ok"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
		if !strings.Contains(stderr, "partial") {
			t.Errorf("stderr: %s", stderr)
		}
		r := readReport(t, report)
		copied, lost := r.messages(t)
		if r.Complete || !r.Verify.OK || lost == 0 || copied == 0 || copied >= 400 {
			t.Errorf("report %+v", r)
		}
		if _, err := os.Stat(out); err != nil {
			t.Errorf("partial output missing: %v", err)
		}
	})

	t.Run("refuses", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			args []string
			code int
		}{
			{"existing output", []string{"--source", src, "--output", filepath.Join(dir, "complete.db")}, 1},
			{"output is the source", []string{"--source", src, "--output", src}, 1},
			{"missing source", []string{"--source", filepath.Join(dir, "none.db"), "--output", filepath.Join(dir, "x.db")}, 1},
			{"report over the source", []string{"--source", src, "--output", filepath.Join(dir, "y.db"), "--report", src}, 2},
			{"no output", []string{"--source", src}, 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, stderr, code := run(t, append([]string{"recover"}, tc.args...)...); code != tc.code {
					t.Errorf("exit %d, want %d: %s", code, tc.code, stderr)
				}
			})
		}
	})
}
