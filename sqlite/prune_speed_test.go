package sqlite_test

import (
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestPruneBulkIndexes: a prune of most sessions and messages drops their
// b-tree indexes for the transaction and builds them again from what
// remains. The result must be what a row-by-row delete leaves: the same
// rows, orphans, pins and chains, and the same schema (names, SQL and
// order of every index and trigger), in a file that passes the integrity
// checks.
func TestPruneBulkIndexes(t *testing.T) {
	db := MustOpen(t)
	raw := rawDB(t, db.Path())
	old := float64(fixedNow.Unix()) - 400*86400
	recent := float64(fixedNow.Unix()) - 86400
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := tx.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustExec("INSERT INTO system_prompts (hash, prompt) VALUES ('h-old', 'old prompt'), ('h-kept', 'kept prompt')")
	for i := 0; i < 3000; i++ {
		id := fmt.Sprintf("old-%04d", i)
		mustExec(`INSERT INTO sessions (id, source, started_at, ended_at, end_reason, title, system_prompt_hash, user_id, session_key)
			VALUES (?, 'cli', ?, ?, 'user_exit', ?, ?, 'u', ?)`, id, old+float64(i), old+float64(i)+10,
			fmt.Sprintf("title %d", i), "h-old", fmt.Sprintf("key-%d", i%7))
		mustExec("INSERT INTO messages (session_id, role, content, timestamp, platform_message_id) VALUES (?, 'user', ?, ?, ?)",
			id, fmt.Sprintf("old docker note %d 项目", i), old+float64(i)+1, fmt.Sprintf("p%d", i))
		mustExec("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'assistant', 'old answer kubernetes', ?)", id, old+float64(i)+2)
		mustExec("INSERT INTO session_model_usage (session_id, model) VALUES (?, 'm')", id)
	}
	// Survivors: a recent session, a recent child of a pruned one (orphaned),
	// an open old one, a pinned old one, and an old compression ancestor
	// whose continuation is recent (kept with its lineage).
	mustExec("INSERT INTO sessions (id, source, started_at, ended_at, title, system_prompt_hash) VALUES ('recent', 'cli', ?, ?, 'recent title', 'h-kept')", recent, recent+10)
	mustExec("INSERT INTO sessions (id, source, started_at, ended_at, parent_session_id) VALUES ('child', 'cli', ?, ?, 'old-0005')", recent, recent+10)
	mustExec("INSERT INTO sessions (id, source, started_at) VALUES ('open-old', 'cli', ?)", old)
	mustExec("INSERT INTO sessions (id, source, started_at, ended_at, pinned) VALUES ('pinned-old', 'cli', ?, ?, 1)", old, old+10)
	mustExec("INSERT INTO sessions (id, source, started_at, ended_at, end_reason) VALUES ('chain-1', 'cli', ?, ?, 'compression')", old, old+10)
	mustExec("INSERT INTO sessions (id, source, started_at, ended_at, parent_session_id) VALUES ('chain-2', 'cli', ?, ?, 'chain-1')", recent, recent+10)
	for id, at := range map[string]float64{"recent": recent, "child": recent, "open-old": old, "pinned-old": old, "chain-1": old, "chain-2": recent} {
		mustExec("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'kept docker 项目 question', ?)", id, at+5)
		mustExec("INSERT INTO session_model_usage (session_id, model) VALUES (?, 'm')", id)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	type object struct{ Type, Name, Table, SQL string }
	schema := func() (objs []object, roots map[string]int) {
		rows, err := raw.Query("SELECT type, name, tbl_name, COALESCE(sql, ''), rootpage FROM sqlite_master ORDER BY rowid")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		roots = map[string]int{}
		for rows.Next() {
			var o object
			var root int
			if err := rows.Scan(&o.Type, &o.Name, &o.Table, &o.SQL, &root); err != nil {
				t.Fatal(err)
			}
			if o.Type == "index" || o.Type == "trigger" { // tables keep their rows
				objs = append(objs, o)
			}
			roots[o.Name] = root
		}
		return objs, roots
	}
	type message struct{ Session, Row string }
	keptMessages := func() []message {
		var out []message
		rows, err := raw.Query(`SELECT session_id, id || '|' || role || '|' || COALESCE(content, '') || '|' || timestamp || '|' ||
			COALESCE(display_order, '') FROM messages ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var m message
			if err := rows.Scan(&m.Session, &m.Row); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	}
	schemaBefore, rootsBefore := schema()
	messagesBefore := keptMessages()

	o := sessiondb.PruneOptions{Before: old + 100*86400}
	dry, err := db.Prune(ctx, sessiondb.PruneOptions{Before: o.Before, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	pruned, err := db.Prune(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pruned, dry) || len(pruned) != 3000 {
		t.Fatalf("pruned %d sessions, the dry run %d; want 3000", len(pruned), len(dry))
	}
	gone := map[string]bool{}
	for _, c := range pruned {
		gone[c.ID] = true
	}
	for _, id := range []string{"recent", "child", "open-old", "pinned-old", "chain-1", "chain-2"} {
		if gone[id] {
			t.Errorf("%s pruned", id)
		}
	}

	// Every index and trigger is back with the same SQL, and each table's
	// indexes in the same order (the planner breaks ties by it).
	schemaAfter, rootsAfter := schema()
	byTable := func(objs []object) map[string][]object {
		m := map[string][]object{}
		for _, o := range objs {
			m[o.Type+" "+o.Table] = append(m[o.Type+" "+o.Table], o)
		}
		for k, v := range m {
			if k[:len("trigger")] == "trigger" { // rebuildCheaper reinstalls the delete triggers last
				slices.SortFunc(v, func(a, b object) int { return strings.Compare(a.Name, b.Name) })
			}
		}
		return m
	}
	if got, want := byTable(schemaAfter), byTable(schemaBefore); !reflect.DeepEqual(got, want) {
		t.Errorf("indexes and triggers after the prune:\n%v\nbefore:\n%v", got, want)
	}
	for _, ix := range []string{"idx_messages_session", "idx_sessions_source"} {
		if rootsAfter[ix] == rootsBefore[ix] {
			t.Errorf("%s was not rebuilt: the bulk path did not run", ix)
		}
	}
	for _, table := range []string{"messages", "sessions"} {
		var before, after []string
		for _, o := range schemaBefore {
			if o.Type == "index" && o.Table == table && o.SQL != "" {
				before = append(before, o.Name)
			}
		}
		rows, err := raw.Query("SELECT name FROM pragma_index_list(?) WHERE origin = 'c'", table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n string
			rows.Scan(&n)
			after = append(after, n)
		}
		rows.Close()
		slices.Reverse(after) // index_list runs newest first
		if !reflect.DeepEqual(after, before) {
			t.Errorf("index_list(%s) = %v, want %v", table, after, before)
		}
	}

	var want []message
	for _, m := range messagesBefore {
		if !gone[m.Session] {
			want = append(want, m)
		}
	}
	if got := keptMessages(); !reflect.DeepEqual(got, want) {
		t.Errorf("messages after the prune:\n%v\nwant:\n%v", got, want)
	}
	if n := count(t, raw, "SELECT COUNT(*) FROM sessions"); n != 6 {
		t.Errorf("%d sessions left, want 6", n)
	}
	if n := count(t, raw, "SELECT COUNT(*) FROM session_model_usage"); n != 6 {
		t.Errorf("%d usage rows left, want 6", n)
	}
	var parent sql.NullString
	raw.QueryRow("SELECT parent_session_id FROM sessions WHERE id = 'child'").Scan(&parent)
	if parent.Valid {
		t.Errorf("child's parent = %q, want NULL (orphaned)", parent.String)
	}
	if n := count(t, raw, "SELECT COUNT(*) FROM system_prompts WHERE hash = 'h-old'"); n != 0 {
		t.Error("the pruned sessions' system prompt was not collected")
	}
	if n := count(t, raw, "SELECT COUNT(*) FROM system_prompts WHERE hash = 'h-kept'"); n != 1 {
		t.Error("a kept session's system prompt was collected")
	}
	if n := count(t, raw, "SELECT COUNT(*) FROM pragma_foreign_key_check"); n != 0 {
		t.Errorf("%d foreign-key violations", n)
	}
	checkIntegrity(t, raw)
	for _, q := range []string{"docker", "项目"} {
		if hits := search(t, db, q, sessiondb.SearchOptions{Limit: 100}); len(hits) != 6 {
			t.Errorf("%q after the prune: %d hits, want 6", q, len(hits))
		}
	}
	// The rebuilt unique title index still enforces uniqueness.
	if _, err := raw.Exec("UPDATE sessions SET title = 'recent title' WHERE id = 'child'"); err == nil {
		t.Error("duplicate title accepted after the prune")
	}
}
