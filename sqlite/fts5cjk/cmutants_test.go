package fts5cjk_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCMutantListMatchesCode: every mutant of scripts/c-mutants.tsv (the C
// mutants scripts/mutate-c applies, TESTING.md) names text that its line of
// the C code holds, and changes it. An edit of the C code that moves lines
// fails here, instead of leaving mutate-c to skip the mutant as stale.
func TestCMutantListMatchesCode(t *testing.T) {
	if os.Getenv("SESSIONDB_C_MUTANT") != "" {
		// Under scripts/mutate-c the mutant's own line no longer holds its
		// text: failing here would count every mutant as killed.
		t.Skip("scripts/mutate-c is running (SESSIONDB_C_MUTANT)")
	}
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "scripts", "c-mutants.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string][]string{}
	n := 0
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			t.Errorf("c-mutants.tsv:%d: %d tab-separated fields, want 5: %q", i+1, len(f), line)
			continue
		}
		file, at, from, to := f[0], f[1], f[2], f[3]
		if _, ok := sources[file]; !ok {
			src, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Errorf("c-mutants.tsv:%d: %v", i+1, err)
				continue
			}
			sources[file] = strings.Split(string(src), "\n")
		}
		lines := sources[file]
		ln, err := strconv.Atoi(at)
		switch {
		case err != nil || ln < 1 || ln > len(lines):
			t.Errorf("c-mutants.tsv:%d: line %q is not a line of %s", i+1, at, file)
		case !strings.Contains(lines[ln-1], from):
			t.Errorf("c-mutants.tsv:%d: %s:%d no longer holds %q (it reads %q): update the list", i+1, file, ln, from, strings.TrimSpace(lines[ln-1]))
		case from == to:
			t.Errorf("c-mutants.tsv:%d: the mutant changes nothing", i+1)
		}
	}
	if n == 0 {
		t.Error("c-mutants.tsv lists no mutant")
	}
}
