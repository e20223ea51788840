// Package testenv decides what a test does when a program it needs is not
// installed: on a developer's machine with only Go and gcc it skips with a
// one-line reason; under CI (the environment variable CI is set, as
// .ci/run's machine sets it) it fails, because CI installs every program and
// a skip there would hide a test that never ran.
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// InCI reports whether the tests run under CI, where nothing may be
// skipped for a missing program.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// Missing ends the test for a prerequisite that is not there: a skip with
// the reason, or under CI a failure with it.
func Missing(tb testing.TB, reason string) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("%s (CI is set: .ci/run installs it, so this test may not skip)", reason)
		return
	}
	tb.Skip(reason)
}

// Program returns the path of the program name on PATH. If it is missing,
// the test skips, or fails under CI; what says what the program is needed
// for, e.g. "to check the completion script's syntax".
func Program(tb testing.TB, name, what string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(tb, name+" is not installed; it is needed "+what+" (apt-get install "+name+")")
		return ""
	}
	return path
}

// pythonCheck is what a Python must do to stand in for Hermes: open SQLite
// with FTS5 and the trigram tokenizer (SQLite 3.34 or newer).
const pythonCheck = `import sqlite3
c = sqlite3.connect(":memory:")
c.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
`

// Python returns the path of a python3 whose sqlite3 module has FTS5 with
// the trigram tokenizer, as Hermes needs. If there is none, the test skips,
// or fails under CI.
func Python(tb testing.TB, what string) string {
	tb.Helper()
	path := Program(tb, "python3", what)
	if out, err := exec.Command(path, "-c", pythonCheck).CombinedOutput(); err != nil {
		Missing(tb, path+" cannot create an FTS5 trigram table ("+strings.TrimSpace(lastLine(string(out)))+"); a Python whose SQLite is 3.34 or newer with FTS5 is needed "+what)
	}
	return path
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
