package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSharedBesideModuleRoot(t *testing.T) {
	t.Setenv(SharedEnv, "")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// This package is internal/testenv: the module root is two levels up.
	want := filepath.Join(wd, "..", "..", "..", "shared", "fixtures", "x.db")
	if got := Shared("fixtures", "x.db"); got != filepath.Clean(want) {
		t.Errorf("Shared = %q, want %q", got, filepath.Clean(want))
	}
}

func TestSharedFromEnvironment(t *testing.T) {
	t.Setenv(SharedEnv, "/elsewhere/shared")
	if got, want := Shared("fixtures", "x.db"), "/elsewhere/shared/fixtures/x.db"; got != want {
		t.Errorf("Shared = %q, want %q", got, want)
	}
}
