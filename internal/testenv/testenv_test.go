package testenv

import (
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test would end.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skip(args ...any)                  { r.skipped = args[0].(string) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = format }

func TestMissingSkipsOutsideCI(t *testing.T) {
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	Missing(r, "zsh is not installed")
	if r.skipped != "zsh is not installed" || r.failed != "" {
		t.Fatalf("skipped %q, failed %q; want a skip with the reason", r.skipped, r.failed)
	}
}

func TestMissingFailsInCI(t *testing.T) {
	for _, v := range []string{"true", "1", "yes"} {
		t.Setenv("CI", v)
		r := &recorder{TB: t}
		Missing(r, "zsh is not installed")
		if r.failed == "" || r.skipped != "" {
			t.Fatalf("CI=%s: skipped %q, failed %q; want a failure", v, r.skipped, r.failed)
		}
	}
	for _, v := range []string{"", "0", "false"} {
		t.Setenv("CI", v)
		if InCI() {
			t.Errorf("CI=%q counts as CI", v)
		}
	}
}

func TestProgram(t *testing.T) {
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	if p := Program(r, "sh", "to run scripts"); p == "" || r.skipped != "" {
		t.Fatalf("sh: path %q, skipped %q", p, r.skipped)
	}
	Program(r, "no-such-program-sessiondb", "to test testenv")
	if !strings.Contains(r.skipped, "no-such-program-sessiondb is not installed") || !strings.Contains(r.skipped, "to test testenv") {
		t.Fatalf("skip reason %q does not name the program and its use", r.skipped)
	}
}
