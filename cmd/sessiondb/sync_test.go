package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testenv"
)

func TestSyncCopiesOnceThenNothing(t *testing.T) {
	url := testenv.Postgres(t)
	fixture := testenv.Shared("fixtures", "hermes-v23.db")
	out := mustCLI(t, fixture, "sync", "--to", url, "--origin", "host-a")
	if !strings.Contains(out, "origin host-a: 50 sessions, 653 messages") || !strings.Contains(out, "0 conflicts") {
		t.Errorf("first sync: %q", out)
	}
	out = mustCLI(t, fixture, "sync", "--from", fixture, "--to", url, "--origin", "host-a", "--json")
	var rep struct {
		Sessions, Messages, Usage, Prompts int64
		Conflicts                          []any
		HighWaterMark                      int64 `json:"high_water_mark"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if rep.Sessions != 0 || rep.Messages != 0 || rep.Usage != 0 || rep.Prompts != 0 || len(rep.Conflicts) != 0 || rep.HighWaterMark != 653 {
		t.Errorf("second sync: %+v, want nothing copied up to mark 653", rep)
	}
	out = mustCLI(t, fixture, "sync", "--to", url, "--origin", "host-b")
	if got := strings.Count(out, "conflict: session "); got != 50 || !strings.Contains(out, "50 conflicts") {
		t.Errorf("another origin: %d conflict lines in %q, want 50", got, out)
	}
}

func TestSyncErrorsAreOneLine(t *testing.T) {
	fixture := testenv.Shared("fixtures", "hermes-v23.db")
	for _, tt := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no target", []string{"sync"}, exitUsage, "missing --to"},
		{"not a URL", []string{"sync", "--to", "/tmp/x.db"}, exitUsage, "not a postgres:// URL"},
		{"bad URL", []string{"sync", "--to", "postgres://u:secret@host:notaport/db"}, exitUsage, "cannot read the connection URL"},
		{"unreachable server", []string{"sync", "--to", "postgres://u:secret@127.0.0.1:1/db?connect_timeout=2"}, exitError, "cannot connect"},
		{"missing source", []string{"sync", "--from", "/nonexistent/state.db", "--to", "postgres://u@127.0.0.1:1/db"}, exitError, "no database at /nonexistent/state.db"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := cli(t, fixture, "", tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.err) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tt.code, errOut, tt.err)
			}
			if strings.Count(strings.SplitN(errOut, "\n\n", 2)[0], "\n") > 1 {
				t.Errorf("error is not one line: %q", errOut)
			}
			if strings.Contains(errOut, "secret") {
				t.Errorf("the password shows: %q", errOut)
			}
		})
	}
}
