package testenv

import (
	"os"
	"path/filepath"
)

// SharedEnv names the environment variable that overrides where Shared
// looks: scripts/mutate sets it, because the mutation tool runs the tests in
// a copy of the module made in a temporary directory, which has no
// ../shared beside it.
const SharedEnv = "SESSIONDB_SHARED"

// Shared returns the path of elem inside the project's shared folder (the
// Hermes fixtures, the bench workload generator): $SESSIONDB_SHARED when
// set, else the folder shared beside the module root (the directory holding
// go.mod, found from the working directory up).
func Shared(elem ...string) string {
	dir := os.Getenv(SharedEnv)
	if dir == "" {
		dir = filepath.Join(moduleRoot(), "..", "shared")
	}
	return filepath.Join(append([]string{dir}, elem...)...)
}

// moduleRoot is the nearest directory holding go.mod from the working
// directory up, or the working directory itself when there is none.
func moduleRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return wd
		}
		dir = parent
	}
}
