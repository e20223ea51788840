package sqlite_test

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite"
)

// Each version-gated data step of the upgrade (migrate.go dataMigrations),
// tested on its own effect, from Hermes' v11 fixture (the newest real file
// before all three steps) with its schema_version set just below and at
// each step's bound.

// v11At copies the v11 fixture, sets its schema_version and runs extra
// statements on it before the store opens it.
func v11At(t *testing.T, version int, stmts ...string) (string, *sql.DB) {
	t.Helper()
	path := fixture(t, "hermes-v11.db")
	withRawDB(t, path, func(db *sql.DB) {
		rawExec(t, db, "UPDATE schema_version SET version = ?", version)
		for _, s := range stmts {
			rawExec(t, db, s)
		}
	})
	return path, rawDB(t, path)
}

// delegateRows are sessions added to the fixture, one per rule of the
// delegate tagging: name → the _delegate_from the step must leave.
var delegateRows = []struct {
	id, insert, want string
}{
	// A child of an ordinary parent is a delegate.
	{"dlg-child", `INSERT INTO sessions (id, source, started_at, parent_session_id) VALUES ('dlg-child', 'cli', 100, 'dlg-parent')`, "dlg-parent"},
	// A branch (its model_config says so) is not.
	{"dlg-branch-mc", `INSERT INTO sessions (id, source, started_at, parent_session_id, model_config) VALUES ('dlg-branch-mc', 'cli', 100, 'dlg-parent', '{"_branched_from":"x"}')`, ""},
	// Nor a child started after its parent ended as branched.
	{"dlg-branch-end", `INSERT INTO sessions (id, source, started_at, parent_session_id) VALUES ('dlg-branch-end', 'cli', 60, 'dlg-branched')`, ""},
	// Nor a continuation of a compressed parent.
	{"dlg-compressed", `INSERT INTO sessions (id, source, started_at, parent_session_id) VALUES ('dlg-compressed', 'cli', 100, 'dlg-compression')`, ""},
	// Nor a reset (its model_config says so).
	{"dlg-reset", `INSERT INTO sessions (id, source, started_at, parent_session_id, model_config) VALUES ('dlg-reset', 'cli', 100, 'dlg-parent', '{"_reset_from":"x"}')`, ""},
	// A root with a tool message, no title, no children: an orphaned delegate.
	{"dlg-orphan", `INSERT INTO sessions (id, source, started_at, message_count) VALUES ('dlg-orphan', 'cli', 100, 1)`, "__orphaned__"},
	// A root with a title is the user's own session.
	{"dlg-titled", `INSERT INTO sessions (id, source, started_at, message_count, title) VALUES ('dlg-titled', 'cli', 100, 1, 'mine')`, ""},
}

var delegateSetup = []string{
	`INSERT INTO sessions (id, source, started_at, ended_at, end_reason) VALUES ('dlg-parent', 'cli', 10, 20, 'user_exit')`,
	`INSERT INTO sessions (id, source, started_at, ended_at, end_reason) VALUES ('dlg-branched', 'cli', 10, 50, 'branched')`,
	`INSERT INTO sessions (id, source, started_at, ended_at, end_reason) VALUES ('dlg-compression', 'cli', 10, 20, 'compression')`,
	`INSERT INTO messages (session_id, role, content, timestamp) VALUES ('dlg-orphan', 'tool', 'out', 101)`,
	`INSERT INTO messages (session_id, role, content, timestamp) VALUES ('dlg-titled', 'tool', 'out', 101)`,
}

func delegateStmts() []string {
	out := append([]string{}, delegateSetup...)
	for _, r := range delegateRows {
		out = append(out, r.insert)
	}
	return out
}

func delegateFrom(t *testing.T, raw *sql.DB, id string) string {
	t.Helper()
	var v sql.NullString
	if err := raw.QueryRow("SELECT json_extract(model_config, '$._delegate_from') FROM sessions WHERE id = ?", id).Scan(&v); err != nil {
		t.Fatalf("session %s: %v", id, err)
	}
	return v.String
}

func TestMigrateDelegateTagging(t *testing.T) {
	for _, tt := range []struct {
		version int
		runs    bool
	}{{11, true}, {15, true}, {16, false}} {
		t.Run(fmt.Sprintf("from version %d", tt.version), func(t *testing.T) {
			path, raw := v11At(t, tt.version, delegateStmts()...)
			MustOpenPath(t, path)
			for _, r := range delegateRows {
				want := r.want
				if !tt.runs {
					want = ""
				}
				if got := delegateFrom(t, raw, r.id); got != want {
					t.Errorf("%s: _delegate_from = %q, want %q", r.id, got, want)
				}
			}
			// The fixture's own children all continue compressed parents.
			if n := count(t, raw, `SELECT COUNT(*) FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
				WHERE p.end_reason = 'compression' AND json_extract(c.model_config, '$._delegate_from') IS NOT NULL`); n != 0 {
				t.Errorf("%d continuations of compressed sessions tagged as delegates", n)
			}
			if !tt.runs {
				if n := count(t, raw, "SELECT COUNT(*) FROM sessions WHERE json_extract(model_config, '$._delegate_from') IS NOT NULL"); n != 0 {
					t.Errorf("%d sessions tagged from version %d", n, tt.version)
				}
			}
		})
	}
}

func TestMigrateUsageSeeding(t *testing.T) {
	for _, tt := range []struct {
		version int
		runs    bool
	}{{11, true}, {19, true}, {20, false}} {
		t.Run(fmt.Sprintf("from version %d", tt.version), func(t *testing.T) {
			path, raw := v11At(t, tt.version)
			type usage struct {
				model                        string
				in, out, calls               int64
				first, last                  float64
				provider, baseURL, billingMd string
			}
			want := map[string]usage{}
			rows, err := raw.Query(`SELECT id, COALESCE(model, 'unknown'), COALESCE(input_tokens, 0), COALESCE(output_tokens, 0),
				COALESCE(api_call_count, 0), started_at, COALESCE(ended_at, started_at), COALESCE(billing_provider, ''),
				COALESCE(billing_base_url, ''), COALESCE(billing_mode, '')
				FROM sessions WHERE COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0)
				+ COALESCE(cache_write_tokens, 0) + COALESCE(reasoning_tokens, 0) + COALESCE(api_call_count, 0) > 0`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id string
				var u usage
				if err := rows.Scan(&id, &u.model, &u.in, &u.out, &u.calls, &u.first, &u.last, &u.provider, &u.baseURL, &u.billingMd); err != nil {
					t.Fatal(err)
				}
				want[id] = u
			}
			rows.Close()
			if len(want) == 0 || len(want) == count(t, raw, "SELECT COUNT(*) FROM sessions") {
				t.Fatalf("%d of the fixture's sessions have usage: need some with and some without", len(want))
			}
			MustOpenPath(t, path)
			got := map[string]usage{}
			rows, err = raw.Query(`SELECT session_id, model, input_tokens, output_tokens, api_call_count, first_seen, last_seen,
				billing_provider, billing_base_url, billing_mode FROM session_model_usage`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id string
				var u usage
				if err := rows.Scan(&id, &u.model, &u.in, &u.out, &u.calls, &u.first, &u.last, &u.provider, &u.baseURL, &u.billingMd); err != nil {
					t.Fatal(err)
				}
				got[id] = u
			}
			rows.Close()
			if !tt.runs {
				if len(got) != 0 {
					t.Errorf("usage seeded from version %d: %d rows", tt.version, len(got))
				}
				return
			}
			if len(got) != len(want) {
				t.Errorf("%d usage rows, want %d (one per session with usage)", len(got), len(want))
			}
			for id, w := range want {
				if got[id] != w {
					t.Errorf("usage of %s = %+v, want %+v", id, got[id], w)
				}
			}
		})
	}
}

func TestMigrateMovePrompts(t *testing.T) {
	for _, tt := range []struct {
		version int
		runs    bool
	}{{11, true}, {24, true}, {25, false}} {
		t.Run(fmt.Sprintf("from version %d", tt.version), func(t *testing.T) {
			path, raw := v11At(t, tt.version)
			prompts := map[string]string{}
			rows, err := raw.Query("SELECT id, system_prompt FROM sessions WHERE system_prompt IS NOT NULL")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id, p string
				if err := rows.Scan(&id, &p); err != nil {
					t.Fatal(err)
				}
				prompts[id] = p
			}
			rows.Close()
			distinct := map[string]bool{}
			for _, p := range prompts {
				distinct[p] = true
			}
			if len(prompts) == 0 || len(distinct) == len(prompts) {
				t.Fatalf("fixture: %d inline prompts, %d distinct: need shared ones", len(prompts), len(distinct))
			}
			MustOpenPath(t, path)
			if !tt.runs {
				if n := count(t, raw, "SELECT COUNT(*) FROM sessions WHERE system_prompt IS NOT NULL"); n != len(prompts) {
					t.Errorf("%d inline prompts left from version %d, want all %d", n, tt.version, len(prompts))
				}
				if n := count(t, raw, "SELECT COUNT(*) FROM system_prompts"); n != 0 {
					t.Errorf("%d prompts moved from version %d", n, tt.version)
				}
				return
			}
			if n := count(t, raw, "SELECT COUNT(*) FROM sessions WHERE system_prompt IS NOT NULL"); n != 0 {
				t.Errorf("%d inline prompts left", n)
			}
			if n := count(t, raw, "SELECT COUNT(*) FROM system_prompts"); n != len(distinct) {
				t.Errorf("system_prompts holds %d rows, want %d (one per distinct prompt)", n, len(distinct))
			}
			for id, p := range prompts {
				sum := sha256.Sum256([]byte(p))
				var hash, stored string
				if err := raw.QueryRow("SELECT s.system_prompt_hash, p.prompt FROM sessions s JOIN system_prompts p ON p.hash = s.system_prompt_hash WHERE s.id = ?", id).Scan(&hash, &stored); err != nil {
					t.Errorf("session %s: %v", id, err)
					continue
				}
				if hash != hex.EncodeToString(sum[:]) || stored != p {
					t.Errorf("session %s: hash %s for prompt %.30q…, want the sha256 of its old prompt", id, hash, stored)
				}
			}
		})
	}
}

// TestMigrateActiveDefault: a file whose messages.active column holds
// NULLs (a nullable column added by an older tool) has every such message
// active after the upgrade; they would otherwise vanish from every read.
func TestMigrateActiveDefault(t *testing.T) {
	path, raw := v11At(t, 11, "ALTER TABLE messages ADD COLUMN active INTEGER",
		"UPDATE messages SET active = 0 WHERE id = (SELECT MIN(id) FROM messages)")
	n := count(t, raw, "SELECT COUNT(*) FROM messages")
	if got := count(t, raw, "SELECT COUNT(*) FROM messages WHERE active IS NULL"); got != n-1 {
		t.Fatalf("setup: %d NULL active of %d", got, n)
	}
	MustOpenPath(t, path)
	if got := count(t, raw, "SELECT COUNT(*) FROM messages WHERE active = 1"); got != n-1 {
		t.Errorf("%d of %d messages active after the upgrade, want %d", got, n, n-1)
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM messages WHERE active = 0"); got != 1 {
		t.Errorf("%d inactive messages after the upgrade, want the 1 archived before", got)
	}
}

// TestMigrateAddedColumnsAsDeclared: the columns an upgrade adds to an old
// file (the oldest Hermes fixture lacks the most) are declared as in a fresh
// file: same type, NOT NULL and default, so values get the same affinity
// and old rows the same defaults.
func TestMigrateAddedColumnsAsDeclared(t *testing.T) {
	path := fixture(t, "hermes-v01.db")
	raw := rawDB(t, path)
	type decl struct {
		typ     string
		notNull int
		dflt    sql.NullString
	}
	read := func(db *sql.DB, table string) map[string]decl {
		rows, err := db.Query(`SELECT name, type, "notnull", dflt_value FROM pragma_table_info(?)`, table)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]decl{}
		for rows.Next() {
			var name string
			var d decl
			if err := rows.Scan(&name, &d.typ, &d.notNull, &d.dflt); err != nil {
				t.Fatal(err)
			}
			out[name] = d
		}
		return out
	}
	tables := []string{"sessions", "messages"}
	before := map[string]map[string]decl{}
	for _, tbl := range tables {
		before[tbl] = read(raw, tbl)
	}
	MustOpenPath(t, path)
	fresh := rawDB(t, MustOpen(t).Path())
	added := 0
	for _, tbl := range tables {
		want := read(fresh, tbl)
		for name, got := range read(raw, tbl) {
			if _, old := before[tbl][name]; old {
				continue
			}
			added++
			if got != want[name] {
				t.Errorf("%s.%s added as %+v, want %+v as in a fresh file", tbl, name, got, want[name])
			}
		}
	}
	if added < 5 {
		t.Fatalf("only %d columns added to the v01 fixture: the test would prove little", added)
	}
}

// TestReopenRebuildsNothing: opening a file that is up to date changes no
// table: none is rebuilt (a primary key heal that misjudged a correct key
// would copy the table on every open).
func TestReopenRebuildsNothing(t *testing.T) {
	for _, name := range []string{"", "hermes-v11.db"} {
		t.Run("fixture "+name, func(t *testing.T) {
			var path string
			if name == "" {
				path = filepath.Join(t.TempDir(), "state.db")
			} else {
				path = fixture(t, name)
			}
			MustOpenPath(t, path).Close()
			raw := rawDB(t, path)
			schema := func() map[string]string {
				rows, err := raw.Query("SELECT name, rootpage || ' ' || COALESCE(sql, '') FROM sqlite_master")
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				out := map[string]string{}
				for rows.Next() {
					var n, v string
					if err := rows.Scan(&n, &v); err != nil {
						t.Fatal(err)
					}
					out[n] = v
				}
				return out
			}
			before := schema()
			MustOpenPath(t, path)
			after := schema()
			for n, v := range before {
				if after[n] != v {
					t.Errorf("%s changed on reopening: %q, now %q", n, v, after[n])
				}
			}
			if len(after) != len(before) {
				t.Errorf("%d schema objects after reopening, %d before", len(after), len(before))
			}
		})
	}
}

// TestPrimaryKeyHealsSameWidth: a primary key of the right width but other
// columns is healed too.
func TestPrimaryKeyHealsSameWidth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	raw := rawDB(t, path)
	rawExec(t, raw, `CREATE TABLE gateway_routing (scope TEXT NOT NULL DEFAULT '', session_key TEXT NOT NULL,
		entry_json TEXT NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (session_key, updated_at))`)
	rawExec(t, raw, `INSERT INTO gateway_routing VALUES ('', 'k', '{"old":1}', 1), ('', 'k', '{"new":1}', 2)`)
	MustOpenPath(t, path)
	if got := count(t, raw, "SELECT COUNT(*) FROM pragma_table_info('gateway_routing') WHERE pk > 0 AND name IN ('scope', 'session_key')"); got != 2 {
		t.Errorf("gateway_routing primary key not (scope, session_key)")
	}
	var entry string
	if err := raw.QueryRow("SELECT entry_json FROM gateway_routing WHERE session_key = 'k'").Scan(&entry); err != nil || entry != `{"new":1}` {
		t.Errorf("routing entry %q (%v), want the newest row's", entry, err)
	}
}

// TestMigrateStepFailureLeavesTheFile: when a data step fails (here the
// prompts table refuses every insert), Open fails and the file keeps its
// version and its inline prompts: the upgrade is one transaction.
func TestMigrateStepFailureLeavesTheFile(t *testing.T) {
	path, raw := v11At(t, 11,
		"CREATE TABLE system_prompts (hash TEXT PRIMARY KEY, prompt TEXT NOT NULL)",
		"CREATE TRIGGER refuse_prompts BEFORE INSERT ON system_prompts BEGIN SELECT RAISE(ABORT, 'prompts refused'); END")
	inline := count(t, raw, "SELECT COUNT(*) FROM sessions WHERE system_prompt IS NOT NULL")
	db, err := sqlite.Open(path, sqlite.Options{})
	if err == nil {
		db.Close()
		t.Fatal("Open succeeded although moving the prompts failed")
	}
	if !strings.Contains(err.Error(), "prompts refused") {
		t.Errorf("error %q does not carry the step's failure", err)
	}
	if got := count(t, raw, "SELECT version FROM schema_version"); got != 11 {
		t.Errorf("schema_version = %d after a failed upgrade, want 11", got)
	}
	if got := count(t, raw, "SELECT COUNT(*) FROM sessions WHERE system_prompt IS NOT NULL"); got != inline {
		t.Errorf("%d inline prompts after a failed upgrade, want %d", got, inline)
	}
}

// TestOpenRestoresDroppedObject: a writer's open skips the migration only
// when every object of the schema files is there; one dropped since (an
// index or trigger anywhere in its file, not only the first) is created
// again.
func TestOpenRestoresDroppedObject(t *testing.T) {
	for _, tc := range []struct{ kind, name string }{
		{"index", "idx_sessions_started"},          // schema.sql, fourth index
		{"index", "idx_sessions_tool_names"},       // deferred.sql
		{"trigger", "messages_fts_cjk_delete"},     // fts_cjk_triggers.sql, second trigger
		{"trigger", "messages_fts_trigram_delete"}, // fts_trigram.sql
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			MustOpenPath(t, path).Close()
			raw := rawDB(t, path)
			rawExec(t, raw, "DROP "+tc.kind+" "+tc.name)
			MustOpenPath(t, path)
			if got := count(t, raw, "SELECT COUNT(*) FROM sqlite_master WHERE type = ? AND name = ?", tc.kind, tc.name); got != 1 {
				t.Errorf("%s %s not restored by the next open", tc.kind, tc.name)
			}
		})
	}
}

// TestOpenNarrowsBroadUpdateTriggers: update triggers written as `AFTER
// UPDATE ON messages` (every column, as older releases wrote them) are all
// replaced by the `AFTER UPDATE OF …` form in one open, however many there
// are.
func TestOpenNarrowsBroadUpdateTriggers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	MustOpenPath(t, path).Close()
	raw := rawDB(t, path)
	names := []string{"messages_fts_update", "messages_fts_trigram_update", "messages_fts_cjk_update"}
	triggerSQL := func(name string) string {
		var s string
		if err := raw.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", name).Scan(&s); err != nil {
			t.Fatalf("trigger %s: %v", name, err)
		}
		return s
	}
	broadOf := regexp.MustCompile(`AFTER UPDATE OF [a-z_, ]+ ON messages`)
	for _, n := range names {
		broad := broadOf.ReplaceAllString(triggerSQL(n), "AFTER UPDATE ON messages")
		rawExec(t, raw, "DROP TRIGGER "+n)
		rawExec(t, raw, broad)
	}
	MustOpenPath(t, path)
	for _, n := range names {
		if s := triggerSQL(n); !strings.Contains(s, "AFTER UPDATE OF ") {
			t.Errorf("%s is still broad after an open:\n%s", n, s)
		}
	}
}

// TestOpenDropsLeftoverOptimizeOffer: a file at the current layout that
// still carries the legacy layout's optimize-storage offer (as left by a
// conversion elsewhere) loses it at the next writer open, so later opens
// find the file current and write nothing.
func TestOpenDropsLeftoverOptimizeOffer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	MustOpenPath(t, path).Close()
	raw := rawDB(t, path)
	rawExec(t, raw, "INSERT INTO state_meta (key, value) VALUES ('fts_optimize_available', '1')")
	MustOpenPath(t, path).Close()
	if got := count(t, raw, "SELECT COUNT(*) FROM state_meta WHERE key = 'fts_optimize_available'"); got != 0 {
		t.Errorf("the optimize-storage offer is still there after an open of a current-layout file")
	}
}
