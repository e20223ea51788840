//go:build sqlite_fts5 || fts5

package fts5cjk_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// TestSourceIDs: sessiondb_source_ids(source, ...) returns the same blob as
// sessiondb_idset over the messages of those sources' sessions, on one
// connection after each change made on another (a message added, a
// session moved to another source, messages deleted) and in its own write
// transaction, before and after the rollback; a second call with nothing
// changed is answered from the set kept, a call in a write transaction
// never; lists of sources are told apart ("a", "b" from "ab" and
// "a0:b", NULL from the empty source), past the number of sets kept too.
func TestSourceIDs(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "s.db"))
	execAll(t, db, `CREATE TABLE sessions(id TEXT PRIMARY KEY, source TEXT)`,
		`CREATE TABLE messages(id INTEGER PRIMARY KEY, session_id TEXT)`,
		`CREATE INDEX messages_session ON messages(session_id)`)
	sources := []string{"discord", "slack", "discord", "ab", "a", "b", "c:d", "e", "f", "g"}
	for i, src := range sources {
		execAll(t, db, fmt.Sprintf(`INSERT INTO sessions VALUES ('s%d', '%s')`, i, src))
	}
	for id := 1; id <= 300; id++ {
		execAll(t, db, fmt.Sprintf(`INSERT INTO messages VALUES (%d, 's%d')`, id*3, (id*7)%len(sources)))
	}
	reader, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	blob := func(stmt string, args []any) []byte {
		t.Helper()
		var b []byte
		if err := reader.QueryRowContext(ctx, stmt, args...).Scan(&b); err != nil {
			t.Fatalf("%s %v: %v", stmt, args, err)
		}
		return b
	}
	// check compares the function with the aggregate for each list, and
	// returns how many calls were answered from a kept set.
	check := func(stage string, lists ...[]string) int64 {
		t.Helper()
		before := fts5cjk.SrcKept()
		for _, list := range lists {
			args := make([]any, len(list))
			for i, v := range list {
				args[i] = v
			}
			marks := strings.TrimSuffix(strings.Repeat("?, ", len(list)), ", ")
			// (FROM sessions: a statement that reads the file, in a
			// read transaction, as a search's)
			got := blob("SELECT sessiondb_source_ids("+marks+") FROM sessions LIMIT 1", args)
			want := blob("SELECT sessiondb_idset(am.id) FROM sessions AS a JOIN messages AS am ON am.session_id = a.id WHERE a.source IN ("+marks+")", args)
			if !bytes.Equal(got, want) {
				t.Errorf("%s: sources %q: % x\nwant % x", stage, list, got, want)
			}
		}
		return fts5cjk.SrcKept() - before
	}
	discord, both := []string{"discord"}, []string{"discord", "slack"}
	if n := check("first", discord, both); n != 0 {
		t.Errorf("first calls: %d answered from kept sets, want 0", n)
	}
	if n := check("again", discord, both); n != 2 {
		t.Errorf("calls with nothing changed: %d answered from kept sets, want 2", n)
	}
	if n := check("lists told apart", []string{"a", "b"}, []string{"ab"}, []string{"a0:b"}, []string{"c:d"}, []string{"c", "d"}); n != 0 {
		t.Errorf("new lists: %d answered from kept sets, want 0", n)
	}
	// More lists than are kept: each still its own set.
	var many [][]string
	for _, src := range sources[3:] {
		many = append(many, []string{src}, []string{src, "discord"})
	}
	check("many lists", many...)
	check("many lists again", many...)

	execAll(t, db, `INSERT INTO messages VALUES (2, 's0')`)
	check("a message added", discord, both)
	execAll(t, db, `UPDATE sessions SET source = 'discord' WHERE source = 'slack'`)
	check("a session moved", discord, both)
	execAll(t, db, `DELETE FROM messages WHERE id % 2 = 0`)
	check("messages deleted", discord, both)

	check("before a transaction", discord)
	execAll(t, reader, "BEGIN IMMEDIATE", `INSERT INTO messages VALUES (1, 's0')`)
	check("in a write transaction", discord)
	if n := check("in a write transaction again", discord); n != 0 {
		t.Errorf("in a write transaction: %d answered from kept sets, want 0", n)
	}
	execAll(t, reader, "ROLLBACK")
	check("rolled back", discord)

	// NULL is not '' (a session with an empty source).
	execAll(t, db, `INSERT INTO sessions VALUES ('empty', '')`, `INSERT INTO messages VALUES (5, 'empty')`)
	check("before NULL and ''", []string{"discord"})
	var null, empty []byte
	if err := reader.QueryRowContext(ctx, "SELECT sessiondb_source_ids(NULL), sessiondb_source_ids('') FROM sessions LIMIT 1").Scan(&null, &empty); err != nil {
		t.Fatal(err)
	}
	if string(null) != "A" || len(empty) < 2 {
		t.Errorf("NULL's set % x, want empty ('A'); the empty source's % x, want its message", null, empty)
	}
	var b []byte
	if err := reader.QueryRowContext(ctx, "SELECT sessiondb_source_ids() FROM sessions LIMIT 1").Scan(&b); err == nil || !strings.Contains(err.Error(), "no source") {
		t.Errorf("sessiondb_source_ids() without a source: %v, want an error naming it", err)
	}
}
