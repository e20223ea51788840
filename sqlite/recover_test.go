package sqlite_test

import (
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

var recoverOpts = sqlite.RecoverOptions{Now: func() time.Time { return fixedNow }}

// upgradedFixture returns a copy of a fixture that the store has opened once (so
// it is at schema 30) and closed again.
func upgradedFixture(tb testing.TB, name string) string {
	tb.Helper()
	path := fixture(tb, name)
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		tb.Fatal(err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// withRawDB opens path with the driver, runs fn and closes the connection
// (checkpointing any WAL into the file).
func withRawDB(tb testing.TB, path string, fn func(db *sql.DB)) {
	tb.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	fn(db)
}

func rawExec(tb testing.TB, db *sql.DB, q string, args ...any) {
	tb.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}

// messageSums returns a checksum of every message row by id.
func messageSums(tb testing.TB, db *sql.DB) map[int64]string {
	tb.Helper()
	rows, err := db.Query(`SELECT id, quote(session_id) || '|' || quote(role) || '|' || quote(content) || '|' ||
		quote(tool_calls) || '|' || quote(tool_name) || '|' || quote(timestamp) || '|' || quote(reasoning) FROM messages`)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	sums := map[int64]string{}
	for rows.Next() {
		var id int64
		var s string
		if err := rows.Scan(&id, &s); err != nil {
			tb.Fatal(err)
		}
		h := sha256.Sum256([]byte(s))
		sums[id] = hex.EncodeToString(h[:])
	}
	return sums
}

// bundleHash hashes a database file and its sidecars.
func bundleHash(tb testing.TB, path string) string {
	tb.Helper()
	h := sha256.New()
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil && !os.IsNotExist(err) {
			tb.Fatal(err)
		}
		fmt.Fprintf(h, "%s:%d:", suffix, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// noLeftovers fails when dir holds anything but the names given.
func noLeftovers(tb testing.TB, dir string, want ...string) {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(want, e.Name()) {
			tb.Errorf("%s: unexpected leftover %s", dir, e.Name())
		}
	}
}

func reportTable(tb testing.TB, rep *sqlite.RecoverReport, name string) *sqlite.RecoverTable {
	tb.Helper()
	for _, t := range rep.Tables {
		if t.Name == name {
			return t
		}
	}
	tb.Fatalf("report has no table %s", name)
	return nil
}

const deliveryDDL = `CREATE TABLE delivery_obligations (
    obligation_id TEXT PRIMARY KEY, session_key TEXT NOT NULL, platform TEXT NOT NULL,
    chat_id TEXT NOT NULL, thread_id TEXT, content TEXT NOT NULL, state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, updated_at REAL NOT NULL)`

func TestRecoverHealthyFixtures(t *testing.T) {
	for _, name := range []string{"hermes-v23.db", "hermes-v11.db"} {
		t.Run(name, func(t *testing.T) {
			src := upgradedFixture(t, name)
			withRawDB(t, src, func(db *sql.DB) {
				rawExec(t, db, deliveryDDL)
				rawExec(t, db, "CREATE INDEX idx_delivery_obligations_claim ON delivery_obligations(state, platform)")
				for i := range 3 {
					rawExec(t, db, `INSERT INTO delivery_obligations (obligation_id, session_key, platform, chat_id, content, state, created_at, updated_at)
						VALUES (?, 'k', 'telegram', 'c', 'reply', 'pending', 1, 2)`, fmt.Sprint("ob", i))
				}
				rawExec(t, db, "INSERT OR REPLACE INTO state_meta (key, value) VALUES ('loop:x', 'kept'), ('fts_rebuild_deferral', 'dropped')")
			})
			before := bundleHash(t, src)
			dir := t.TempDir()
			out := filepath.Join(dir, "new.db")
			var calls int
			opts := recoverOpts
			opts.Progress = func(done, total int64) {
				calls++
				if done > total {
					t.Errorf("progress %d/%d", done, total)
				}
			}
			rep, err := sqlite.Recover(ctx, src, out, opts)
			if err != nil {
				t.Fatalf("recover: %v (report %+v)", err, rep)
			}
			if !rep.Complete || !rep.Verify.OK || calls == 0 {
				t.Fatalf("complete=%v verify=%+v progress calls=%d", rep.Complete, rep.Verify, calls)
			}
			if got := bundleHash(t, src); got != before {
				t.Error("the source bundle changed")
			}
			noLeftovers(t, dir, "new.db")

			s, o := rawDB(t, src), rawDB(t, out)
			checkIntegrity(t, o)
			for _, tc := range []struct{ table, where string }{
				{"sessions", ""}, {"messages", ""}, {"session_model_usage", ""}, {"compression_locks", ""},
				{"gateway_routing", ""}, {"async_delegations", ""}, {"delivery_obligations", ""},
				{"system_prompts", " WHERE hash IN (SELECT system_prompt_hash FROM sessions)"},
				{"state_meta", " WHERE key NOT LIKE 'fts%' AND key NOT IN ('db_file_generation', 'telegram_dm_topic_schema_version')"},
			} {
				q := "SELECT COUNT(*) FROM " + tc.table + tc.where
				if got, want := count(t, o, q), count(t, s, q); got != want {
					t.Errorf("%s: %d rows, want %d", tc.table, got, want)
				}
				if st := reportTable(t, rep, tc.table); st.Status != sqlite.RecoverComplete {
					t.Errorf("%s: status %s (%s)", tc.table, st.Status, st.Note)
				}
			}
			if got, want := count(t, o, "SELECT COUNT(*) FROM messages"), count(t, s, "SELECT COUNT(*) FROM messages"); got != want || got == 0 {
				t.Fatalf("messages: %d, want %d", got, want)
			}
			if got, want := messageSums(t, o), messageSums(t, s); !sumsEqual(got, want) {
				t.Errorf("message checksums differ (%d vs %d rows)", len(got), len(want))
			}
			if got := count(t, o, "SELECT COUNT(*) FROM state_meta WHERE key = 'loop:x'"); got != 1 {
				t.Error("state_meta loop:x not copied")
			}
			if got := count(t, o, "SELECT COUNT(*) FROM state_meta WHERE key LIKE 'fts%' AND key <> 'fts_storage_version'"); got != 0 {
				t.Errorf("%d generated fts keys copied", got)
			}
			if got := count(t, o, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'idx_delivery_obligations_claim'"); got != 1 {
				t.Error("delivery_obligations index not created")
			}
			if !reportTable(t, rep, "delivery_obligations").Created {
				t.Error("delivery_obligations not reported as created")
			}
			if got := count(t, o, "SELECT version FROM schema_version"); got != 30 {
				t.Errorf("schema_version %d", got)
			}
			var fts string
			o.QueryRow("SELECT value FROM state_meta WHERE key = 'fts_storage_version'").Scan(&fts)
			if fts != "3" {
				t.Errorf("fts_storage_version %q", fts)
			}
			if got, want := count(t, o, "SELECT seq FROM sqlite_sequence WHERE name = 'messages'"),
				count(t, s, "SELECT seq FROM sqlite_sequence WHERE name = 'messages'"); got < want {
				t.Errorf("messages sequence %d, want ≥ %d", got, want)
			}
			docker := count(t, o, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'docker'")
			if docker == 0 {
				t.Error("search for docker finds nothing")
			}
			if name == "hermes-v23.db" {
				if want := count(t, s, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'docker'"); docker != want {
					t.Errorf("docker: %d hits, source %d", docker, want)
				}
			}
			db := MustOpenPath(t, out)
			hits, err := db.Search(ctx, "docker", sessiondb.SearchOptions{Limit: 1000})
			if err != nil || len(hits) == 0 {
				t.Errorf("store search: %d hits, %v", len(hits), err)
			}
		})
	}
}

func sumsEqual(a, b map[int64]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// leafRowids walks the table b-tree of table in the file at path (which
// must have no WAL) and returns the rowids on each leaf page.
func leafRowids(tb testing.TB, path, table string) map[int][]int64 {
	tb.Helper()
	var root int
	withRawDB(tb, path, func(db *sql.DB) {
		if err := db.QueryRow("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(&root); err != nil {
			tb.Fatal(err)
		}
	})
	if _, err := os.Stat(path + "-wal"); err == nil {
		tb.Fatalf("%s still has a WAL", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	ps := int(binary.BigEndian.Uint16(data[16:18]))
	if ps == 1 {
		ps = 65536
	}
	leaves := map[int][]int64{}
	var walk func(pg int)
	walk = func(pg int) {
		off := (pg - 1) * ps
		hdr := off
		if pg == 1 {
			hdr += 100
		}
		n := int(binary.BigEndian.Uint16(data[hdr+3:]))
		switch data[hdr] {
		case 0x05: // interior table page
			for i := range n {
				cell := off + int(binary.BigEndian.Uint16(data[hdr+12+2*i:]))
				walk(int(binary.BigEndian.Uint32(data[cell:])))
			}
			walk(int(binary.BigEndian.Uint32(data[hdr+8:])))
		case 0x0d: // leaf table page
			for i := range n {
				cell := off + int(binary.BigEndian.Uint16(data[hdr+8+2*i:]))
				_, k := btreeVarint(data[cell:])
				rowid, _ := btreeVarint(data[cell+k:])
				leaves[pg] = append(leaves[pg], int64(rowid))
			}
		default:
			tb.Fatalf("page %d: type %#x is not a table b-tree page", pg, data[hdr])
		}
	}
	walk(root)
	return leaves
}

// btreeVarint decodes a SQLite varint and returns it with its length.
func btreeVarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < 8; i++ {
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return v<<8 | uint64(b[8]), 9
}

// zeroPage overwrites page pg of the file at path with zeros.
func zeroPage(tb testing.TB, path string, pg int) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	ps := int(binary.BigEndian.Uint16(data[16:18]))
	copy(data[(pg-1)*ps:pg*ps], make([]byte, ps))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
}

func copyDBFile(tb testing.TB, src, dst string) {
	tb.Helper()
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}

func TestRecoverCorruptedMessagesPage(t *testing.T) {
	base := upgradedFixture(t, "hermes-v23.db")
	var want map[int64]string
	withRawDB(t, base, func(db *sql.DB) { want = messageSums(t, db) })
	leaves := leafRowids(t, base, "messages")
	pages := make([]int, 0, len(leaves))
	for pg := range leaves {
		pages = append(pages, pg)
	}
	slices.SortFunc(pages, func(a, b int) int { return int(leaves[a][0] - leaves[b][0]) })
	if len(pages) < 3 {
		t.Fatalf("messages has %d leaf pages, want at least 3", len(pages))
	}
	victim := pages[len(pages)/2]
	lost := leaves[victim]
	if len(lost) == 0 {
		t.Fatalf("leaf page %d is empty", victim)
	}

	srcDir := t.TempDir()
	src := filepath.Join(srcDir, "broken.db")
	copyDBFile(t, base, src)
	zeroPage(t, src, victim)
	before := bundleHash(t, src)

	t.Run("fails without allow-partial", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "new.db")
		_, err := sqlite.Recover(ctx, src, out, recoverOpts)
		if err == nil {
			t.Fatal("recover of a damaged file succeeded without AllowPartial")
		}
		if got := sessiondb.ErrorCode(err); got != sessiondb.ECORRUPT {
			t.Errorf("code %s, want %s: %v", got, sessiondb.ECORRUPT, err)
		}
		for _, want := range []string{`"messages"`, "rowids", "--allow-partial"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q: %v", want, err)
			}
		}
		noLeftovers(t, dir)
	})

	t.Run("salvages with allow-partial", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "new.db")
		opts := recoverOpts
		opts.AllowPartial = true
		rep, err := sqlite.Recover(ctx, src, out, opts)
		if err != nil {
			t.Fatalf("recover: %v", err)
		}
		if rep.Complete || !rep.Verify.OK {
			t.Fatalf("complete=%v verify=%+v", rep.Complete, rep.Verify)
		}
		noLeftovers(t, dir, "new.db")
		mt := reportTable(t, rep, "messages")
		if mt.Status != sqlite.RecoverPartial || len(mt.Lost) == 0 {
			t.Fatalf("messages report %+v", mt)
		}
		// Bisection loses the page's rowids one by one; the report joins
		// them: one page, one range.
		if len(mt.Lost) != 1 {
			t.Errorf("lost ranges %v, want the zeroed page's rowids as one range", mt.Lost)
		}
		if mt.SourceRows != nil && *mt.SourceRows != int64(len(want)) {
			t.Errorf("source rows %d, want %d", *mt.SourceRows, len(want))
		}
		inLost := func(id int64) bool {
			for _, r := range mt.Lost {
				if id >= r.From && id <= r.To {
					return true
				}
			}
			return false
		}
		for _, id := range lost {
			if !inLost(id) {
				t.Errorf("message %d (on the zeroed page) is not in a lost range %v", id, mt.Lost)
			}
		}
		o := rawDB(t, out)
		checkIntegrity(t, o)
		got := messageSums(t, o)
		for id, sum := range want {
			onPage := slices.Contains(lost, id)
			switch g, ok := got[id]; {
			case onPage && ok:
				t.Errorf("message %d from the zeroed page was copied", id)
			case !onPage && !ok:
				t.Errorf("message %d (undamaged page) is missing", id)
			case ok && g != sum:
				t.Errorf("message %d differs", id)
			}
			if !onPage && inLost(id) {
				t.Errorf("copied message %d lies in a lost range", id)
			}
		}
		if g, w := len(got), len(want)-len(lost); g != w || mt.Copied != int64(w) {
			t.Errorf("%d messages (report %d), want %d", g, mt.Copied, w)
		}
		for _, name := range []string{"sessions", "system_prompts", "session_model_usage", "state_meta"} {
			if st := reportTable(t, rep, name); st.Status != sqlite.RecoverComplete {
				t.Errorf("%s: %s (%s)", name, st.Status, st.Note)
			}
		}
		if rep.Counters.MessageCount == 0 {
			t.Error("no message_count mismatch reported for the sessions that lost messages")
		}
		if rep.RangeQueries == 0 || rep.RangeQueries > 10_000 {
			t.Errorf("range queries %d", rep.RangeQueries)
		}
		// Each lost rowid was read alone before it was given up, and each
		// such read counts.
		var lostIDs int64
		for _, r := range mt.Lost {
			lostIDs += r.To - r.From + 1
		}
		if int64(rep.RangeQueries) <= lostIDs {
			t.Errorf("range queries %d, want more than the %d lost rowids", rep.RangeQueries, lostIDs)
		}
	})

	if got := bundleHash(t, src); got != before {
		t.Error("the source bundle changed")
	}
	noLeftovers(t, srcDir, "broken.db")
}

// A file of an old schema that was never upgraded (a damaged one cannot
// be) comes out as an upgrade would leave it: usage seeded, prompts moved
// out of sessions, delegate children tagged.
func TestRecoverOldSchema(t *testing.T) {
	for _, name := range []string{"hermes-v06.db", "hermes-v11.db"} {
		t.Run(name, func(t *testing.T) {
			src := fixture(t, name)
			var version int
			withRawDB(t, src, func(db *sql.DB) { version = count(t, db, "SELECT MAX(version) FROM schema_version") })
			out := filepath.Join(t.TempDir(), "new.db")
			rep, err := sqlite.Recover(ctx, src, out, recoverOpts)
			if err != nil || !rep.Complete {
				t.Fatalf("recover: %v, %+v", err, rep)
			}
			if rep.SourceSchemaVersion != version {
				t.Errorf("source schema %d, want %d", rep.SourceSchemaVersion, version)
			}
			o, u := rawDB(t, out), rawDB(t, upgradedFixture(t, name))
			checkIntegrity(t, o)
			for _, q := range []string{
				"SELECT COUNT(*) FROM session_model_usage",
				"SELECT COUNT(*) FROM system_prompts",
				"SELECT COUNT(*) FROM sessions WHERE system_prompt IS NOT NULL",
				"SELECT COUNT(*) FROM sessions WHERE system_prompt_hash IS NOT NULL",
				"SELECT COUNT(*) FROM sessions WHERE json_extract(model_config, '$._delegate_from') IS NOT NULL",
				"SELECT COUNT(*) FROM messages",
			} {
				if got, want := count(t, o, q), count(t, u, q); got != want {
					t.Errorf("%s: recovered %d, upgraded %d", q, got, want)
				}
			}
			// Rows the upgrade adds are reported as added, not copied.
			for _, name := range []string{"system_prompts", "session_model_usage"} {
				tb := reportTable(t, rep, name)
				if n := count(t, o, "SELECT COUNT(*) FROM "+name); tb.Added == 0 || tb.Copied+tb.Added != int64(n) || tb.OutputRows != int64(n) {
					t.Errorf("%s: copied %d + added %d, output rows %d; want the %d rows of the output, some added", name, tb.Copied, tb.Added, tb.OutputRows, n)
				}
			}
		})
	}
}

// A file cut short (a full disk, an interrupted copy) loses the end of its
// schema and of several tables: what is left is copied, exactly.
func TestRecoverTruncated(t *testing.T) {
	base := upgradedFixture(t, "hermes-v23.db")
	var want map[int64]string
	withRawDB(t, base, func(db *sql.DB) { want = messageSums(t, db) })
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "cut.db")
	if err := os.WriteFile(src, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	_, err = sqlite.Recover(ctx, src, filepath.Join(dir, "strict.db"), recoverOpts)
	if got := sessiondb.ErrorCode(err); got != sessiondb.ECORRUPT {
		t.Fatalf("strict recover: code %s: %v", got, err)
	}
	noLeftovers(t, dir)

	out := filepath.Join(dir, "new.db")
	opts := recoverOpts
	opts.AllowPartial = true
	rep, err := sqlite.Recover(ctx, src, out, opts)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	if rep.Complete || !rep.Verify.OK || rep.RangeQueries > 10_000 {
		t.Fatalf("complete=%v queries=%d verify=%+v", rep.Complete, rep.RangeQueries, rep.Verify)
	}
	o := rawDB(t, out)
	checkIntegrity(t, o)
	got := messageSums(t, o)
	if len(got) == 0 || len(got) >= len(want) {
		t.Fatalf("%d of %d messages recovered", len(got), len(want))
	}
	for id, sum := range got {
		if want[id] != sum {
			t.Errorf("message %d differs from the original", id)
		}
	}
	mt := reportTable(t, rep, "messages")
	for id := range want {
		_, copied := got[id]
		lost := false
		for _, r := range mt.Lost {
			lost = lost || id >= r.From && id <= r.To
		}
		if copied == lost {
			t.Errorf("message %d: copied %v, in a lost range %v", id, copied, lost)
		}
	}
}

func TestRecoverRefuses(t *testing.T) {
	src := fixture(t, "hermes-v23.db")
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(existing, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, src, dst, code string
	}{
		{"output exists", src, existing, sessiondb.ECONFLICT},
		{"output is the source", src, src, sessiondb.EINVALID},
		{"output is the source's WAL", src, src + "-wal", sessiondb.EINVALID},
		{"output is the source by another path", src, filepath.Join(filepath.Dir(src), ".", filepath.Base(src)), sessiondb.EINVALID},
		{"source missing", filepath.Join(dir, "missing.db"), filepath.Join(dir, "a.db"), sessiondb.ENOTFOUND},
		{"source is a directory", dir, filepath.Join(dir, "b.db"), sessiondb.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := sqlite.Recover(ctx, tc.src, tc.dst, recoverOpts)
			if err == nil {
				t.Fatalf("recover succeeded: %+v", rep)
			}
			if got := sessiondb.ErrorCode(err); got != tc.code {
				t.Errorf("code %s, want %s: %v", got, tc.code, err)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Error("the existing output was changed")
	}
	t.Run("not enough free space", func(t *testing.T) {
		var probed string
		sqlite.SetFreeBytes(t, func(dir string) (uint64, error) {
			probed = dir
			return 4096, nil
		})
		rep, err := sqlite.Recover(ctx, src, filepath.Join(dir, "full", "c.db"), recoverOpts)
		if err == nil {
			t.Fatalf("recover succeeded: %+v", rep)
		}
		if got := sessiondb.ErrorCode(err); got != sessiondb.EINVALID || !strings.Contains(err.Error(), "free space") {
			t.Errorf("code %s: %v", got, err)
		}
		if probed != filepath.Join(dir, "full") {
			t.Errorf("free space probed in %q, want the output's directory", probed)
		}
		noLeftovers(t, filepath.Join(dir, "full"))
	})
	noLeftovers(t, dir, "existing.db", "full")
	noLeftovers(t, filepath.Dir(src), "state.db")
}

func TestRecoverOrphans(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.Open(src, sqlite.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "kept", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "kept", Role: "user", Content: "docker compose"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	withRawDB(t, src, func(raw *sql.DB) {
		conn, err := raw.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, q := range []string{
			"PRAGMA foreign_keys=OFF",
			"UPDATE sessions SET parent_session_id = 'ghost', system_prompt_hash = 'nohash' WHERE id = 'kept'",
			"INSERT INTO messages (session_id, role, content, timestamp) VALUES ('vanished', 'user', 'kubernetes orphan text', 200), ('vanished', 'assistant', 'helm answer', 150)",
			"INSERT INTO session_model_usage (session_id, model) VALUES ('nobody', 'm')",
			"INSERT INTO compression_locks (session_id, holder, acquired_at, expires_at) VALUES ('nobody', 'pid=1', 1, 2)",
			"INSERT INTO system_prompts (hash, prompt) VALUES ('unused', 'a prompt nobody uses')",
		} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	})

	out := filepath.Join(t.TempDir(), "new.db")
	rep, err := sqlite.Recover(ctx, src, out, recoverOpts)
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	c := rep.Cleanup
	if c.PlaceholderSessions != 1 || c.ParentsCleared != 1 || c.PromptHashesCleared != 1 || c.PromptsDeleted != 1 ||
		c.UsageDeleted != 1 || c.LocksDeleted != 1 {
		t.Errorf("cleanup %+v", c)
	}
	if !rep.Verify.OK {
		t.Fatalf("verification %+v", rep.Verify)
	}
	o := rawDB(t, out)
	checkIntegrity(t, o)
	var source string
	var started float64
	var msgs int
	if err := o.QueryRow("SELECT source, started_at, message_count FROM sessions WHERE id = 'vanished'").Scan(&source, &started, &msgs); err != nil {
		t.Fatal(err)
	}
	if source != "recovered" || started != 150 || msgs != 2 {
		t.Errorf("placeholder: source %q started %v messages %d", source, started, msgs)
	}
	if got := count(t, o, "SELECT COUNT(*) FROM messages"); got != 3 {
		t.Errorf("%d messages, want 3", got)
	}
	if got := count(t, o, "SELECT COUNT(*) FROM messages_fts_trigram WHERE messages_fts_trigram MATCH 'orphan'"); got != 1 {
		t.Errorf("trigram search for the placeholder's message: %d hits", got)
	}
	if got := count(t, o, "SELECT COUNT(*) FROM sessions WHERE parent_session_id IS NOT NULL OR system_prompt_hash IS NOT NULL"); got != 0 {
		t.Errorf("%d dangling references left", got)
	}
	if st := reportTable(t, rep, "sessions"); st.Added != 1 || st.OutputRows != 2 {
		t.Errorf("sessions report %+v", st)
	}
}

// seedOneBatch appends n messages to a new session "s" in one transaction.
func seedOneBatch(tb testing.TB, db *sqlite.DB, n int) {
	tb.Helper()
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		tb.Fatal(err)
	}
	ms := make([]sessiondb.NewMessage, n)
	for i := range ms {
		content := fmt.Sprintf("docker deployment step %d", i)
		if i%5 == 0 {
			content = "项目通信 " + content
		}
		ms[i] = sessiondb.NewMessage{Role: "user", Content: content}
	}
	if _, err := db.AppendMessages(ctx, "s", ms); err != nil {
		tb.Fatal(err)
	}
}

func TestRecoverHotWAL(t *testing.T) {
	db := MustOpen(t)
	seedOneBatch(t, db, 2500) // more than two chunks, still in the WAL of an open store
	src := db.Path()
	if fi, err := os.Stat(src + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("no WAL to recover from: %v", err)
	}
	before := bundleHash(t, src)
	out := filepath.Join(t.TempDir(), "new.db")
	rep, err := sqlite.Recover(ctx, src, out, recoverOpts)
	if err != nil || !rep.Complete {
		t.Fatalf("recover: %v, %+v", err, rep)
	}
	if got := reportTable(t, rep, "messages").Copied; got != 2500 {
		t.Errorf("copied %d messages, want 2500", got)
	}
	if bundleHash(t, src) != before {
		t.Error("the source bundle changed")
	}
	o := rawDB(t, out)
	checkIntegrity(t, o)
	if got := count(t, o, "SELECT COUNT(*) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH '项目'"); got != 500 {
		t.Errorf("CJK search: %d hits, want 500", got)
	}
}

// A writer in the middle of a transaction in rollback-journal mode has
// already written changed pages into the file: the copy must be rolled back
// with its journal, never read half-written.
func TestRecoverHotJournal(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.Open(src, sqlite.Options{JournalMode: "delete", Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	seedOneBatch(t, db, 1500)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", "file:"+src)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"PRAGMA cache_size=2", "BEGIN IMMEDIATE",
		"UPDATE messages SET content = 'CHANGED ' || content", "DELETE FROM messages WHERE id > 1000"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := os.Stat(src + "-journal"); err != nil {
		t.Fatalf("no hot journal: %v", err)
	}
	before := bundleHash(t, src)
	out := filepath.Join(t.TempDir(), "new.db")
	rep, err := sqlite.Recover(ctx, src, out, recoverOpts)
	if err != nil || !rep.Complete {
		t.Fatalf("recover: %v, %+v", err, rep)
	}
	if bundleHash(t, src) != before {
		t.Error("the source bundle changed")
	}
	o := rawDB(t, out)
	checkIntegrity(t, o)
	if got := count(t, o, "SELECT COUNT(*) FROM messages"); got != 1500 {
		t.Errorf("%d messages, want the 1500 committed", got)
	}
	if got := count(t, o, "SELECT COUNT(*) FROM messages WHERE content LIKE 'CHANGED%'"); got != 0 {
		t.Errorf("%d uncommitted changes recovered", got)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
}

func ExampleRecover() {
	rep, err := sqlite.Recover(ctx, "broken.db", "recovered.db", sqlite.RecoverOptions{AllowPartial: true})
	if err != nil {
		fmt.Println("recover:", err)
		return
	}
	for _, t := range rep.Tables {
		fmt.Println(t.Name, t.Status, t.Copied, t.Lost)
	}
}
