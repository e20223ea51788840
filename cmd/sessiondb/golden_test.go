package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGoldenHumanOutput pins the human output of every command that prints
// one, on the deterministic database of the ops tests (refresh with
// -update). Paths and byte sizes, which vary by machine, are masked.
func TestGoldenHumanOutput(t *testing.T) {
	db := opsGoldenDB(t)
	mask := func(s string) string {
		s = strings.ReplaceAll(s, filepath.Dir(db), "<DIR>")
		s = regexp.MustCompile(`(?m)^file .*\n`).ReplaceAllString(s, "")             // info: which sidecars exist varies
		s = regexp.MustCompile(`(?m)(files\s+).*$`).ReplaceAllString(s, "${1}SIZES") // doctor: likewise
		s = regexp.MustCompile(`\d+ bytes`).ReplaceAllString(s, "N bytes")
		s = regexp.MustCompile(`\d+ of \d+ pages free`).ReplaceAllString(s, "N of N pages free")
		s = regexp.MustCompile(`(?m)(filesystem\s+)\S+$`).ReplaceAllString(s, "${1}FS")
		// doctor's access checks: the user, owners, mount and free space vary,
		// and so does which sidecars exist.
		s = regexp.MustCompile(`(?m)^  ok    (-wal|-shm|-journal) .*\n`).ReplaceAllString(s, "")
		s = regexp.MustCompile(`(?m)^  (?:ok  |WARN|FAIL)  ((?:user|mount|disk space|directory) +).*$`).ReplaceAllString(s, "  ok    ${1}VARIES")
		s = regexp.MustCompile(`(?m)^(  ok    file\s+-rw-------) \S+ \S+: \S+ can`).ReplaceAllString(s, "${1} OWNER GROUP: USER can")
		s = regexp.MustCompile(`→ \d+ bytes`).ReplaceAllString(s, "→ N bytes")
		return s
	}
	steps := []struct {
		name string
		args []string
	}{
		{"help", []string{"help"}},
		{"help_search", []string{"help", "search"}},
		{"show", []string{"show", opsK8s}},
		{"search", []string{"search", "docker"}},
		{"search_none", []string{"search", "xylophone"}},
		{"info", []string{"info"}},
		{"doctor", []string{"doctor"}},
		{"prune_dry_run", []string{"prune", "--older-than", "2026-01-12", "--dry-run"}},
		{"rename", []string{"rename", opsReport, "Quarterly", "report"}},
		{"pin", []string{"pin", "Quarterly report"}},
		{"archive", []string{"archive", opsReport}},
		{"unarchive", []string{"unarchive", opsReport}},
		{"optimize", []string{"optimize"}},
		{"clear", []string{"clear", opsReport, "--yes"}},
		{"delete", []string{"delete", opsRoot, "--yes"}},
		{"prune", []string{"prune", "--older-than", "2026-01-12", "--yes"}},
		{"rebuild_fts", []string{"rebuild-fts"}},
		{"init", []string{"init"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			opsGolden(t, "human_"+st.name, mask(mustCLI(t, db, st.args...)))
		})
	}
}
