package sqlite

import "testing"

// TestSQLiteConfiguredFirst: the package configures SQLite before anything
// initializes it (fts5cjk.Configure, first in init, before the VFS and the
// tokenizer are registered). Too late, SQLite refuses the settings without
// a word and keeps its bulk allocation of 20 pages for every page cache,
// whose memory each search then faults in again (BENCHMARKS.md, "Page
// faults in every search").
func TestSQLiteConfiguredFirst(t *testing.T) {
	if !configured {
		t.Fatal("SQLite had initialized before fts5cjk.Configure ran: call it first in init")
	}
}
