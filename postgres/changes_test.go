package postgres_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/servetest"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/replicate"
	"github.com/sessiondb/sessiondb/sqlite"
)

// feedReader follows a store's change feed as the event stream does: it
// passes back the last message id and session cursor it got, and checks
// that ids only grow.
type feedReader struct {
	db       *postgres.DB
	last     int64
	seq      int64
	ids      []int64
	sessions map[string]bool
}

func newFeedReader(t *testing.T, db *postgres.DB) *feedReader {
	t.Helper()
	last, seq, err := db.ChangeHead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &feedReader{db: db, last: last, seq: seq, sessions: map[string]bool{}}
}

// read calls Changes until a page is not full and returns the messages
// it reported.
func (r *feedReader) read(t *testing.T) []*sessiondb.Message {
	t.Helper()
	var got []*sessiondb.Message
	for {
		msgs, sess, seq, err := r.db.Changes(context.Background(), r.last, r.seq, 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.ID <= r.last {
				t.Fatalf("Changes after %d returned message %d", r.last, m.ID)
			}
			r.last = m.ID
			r.ids = append(r.ids, m.ID)
		}
		for _, s := range sess {
			r.sessions[s.ID] = true
		}
		if seq < r.seq {
			t.Fatalf("the session cursor went back from %d to %d", r.seq, seq)
		}
		r.seq = seq
		got = append(got, msgs...)
		if len(msgs) < 50 {
			return got
		}
	}
}

// allIDs returns every message id in the database, in order.
func allIDs(t *testing.T, db *postgres.DB) []int64 {
	t.Helper()
	rows, _ := db.Pool().Query(context.Background(), "SELECT id FROM messages ORDER BY id")
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func version(t *testing.T, db *postgres.DB) int64 {
	t.Helper()
	v, err := db.DataVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// rawInsert inserts a message in tx as any client of the database may
// (no search columns) and returns its id.
func rawInsert(t *testing.T, tx pgx.Tx, session, text string) int64 {
	t.Helper()
	var id int64
	if err := tx.QueryRow(context.Background(), `INSERT INTO messages (session_id, role, content, timestamp)
		VALUES ($1, 'user', $2, 1) RETURNING id`, session, text).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestChangesWaitForAnOpenTransaction: a message committed while a
// transaction holding a lower id is still open is not reported until that
// transaction ends; then both come, in id order. A rolled-back transaction
// holds nothing back once it is gone. DataVersion changes when a writer
// starts and when it commits, and not otherwise.
func TestChangesWaitForAnOpenTransaction(t *testing.T) {
	db, r := feedOnTwoSessions(t)
	ctx := context.Background()
	v0 := version(t, db)
	if v := version(t, db); v != v0 {
		t.Fatalf("the data version moved from %d to %d with nothing written", v0, v)
	}

	slow, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(ctx)
	a := rawInsert(t, slow, "s", "slow")
	v1 := version(t, db)
	if v1 == v0 {
		t.Error("the data version did not move when a writer began")
	}
	b, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "t", Role: "user", Content: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	if b <= a {
		t.Fatalf("ids %d then %d: the test needs the later id committed first", a, b)
	}
	if got := r.read(t); len(got) != 0 {
		t.Fatalf("reported %d (message %d) while message %d, below it, is uncommitted", len(got), got[0].ID, a)
	}
	// A reader going by "id above the last seen" would have moved past a.
	var visible int64
	if err := db.Pool().QueryRow(ctx, "SELECT max(id) FROM messages").Scan(&visible); err != nil || visible != b {
		t.Fatalf("newest visible id %d (%v), want %d", visible, err, b)
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v := version(t, db); v == v1 {
		t.Error("the data version did not move when the writer committed")
	}
	got := r.read(t)
	if len(got) != 2 || got[0].ID != a || got[1].ID != b || got[0].Content != "slow" || got[1].Content != "fast" {
		t.Fatalf("after the commit: %v, want %d then %d", msgIDs(got), a, b)
	}

	aborted, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rawInsert(t, aborted, "s", "never")
	c, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "t", Role: "user", Content: "after"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.read(t); len(got) != 0 {
		t.Fatalf("reported %v past an open transaction", msgIDs(got))
	}
	aborted.Rollback(ctx)
	if got := r.read(t); len(got) != 1 || got[0].ID != c {
		t.Fatalf("after the rollback: %v, want %d", msgIDs(got), c)
	}
	v2 := version(t, db)
	if v := version(t, db); v != v2 {
		t.Error("the data version moved with nothing written")
	}
}

// TestChangesSessionNotBeforeItsMessage: a session's row is reported no
// earlier than its newest message. While a message committed above the
// horizon waits for an open transaction, its session is not reported
// either, not even among the recently active sessions (its row already
// counts the message); it comes with the message, after it.
func TestChangesSessionNotBeforeItsMessage(t *testing.T) {
	db, r := feedOnTwoSessions(t)
	ctx := context.Background()
	r.read(t)
	slow, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(ctx)
	a := rawInsert(t, slow, "s", "slow")
	b, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "t", Role: "user", Content: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	clear(r.sessions)
	if got := r.read(t); len(got) != 0 || r.sessions["t"] {
		t.Fatalf("while message %d waits: messages %v, sessions %v; want neither message %d nor its session", a, msgIDs(got), r.sessions, b)
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	clear(r.sessions)
	if got := r.read(t); len(got) != 2 || got[1].ID != b || !r.sessions["t"] || !r.sessions["s"] {
		t.Fatalf("after the commit: messages %v, sessions %v; want %d, %d and both sessions", msgIDs(got), r.sessions, a, b)
	}
}

// feedOnTwoSessions opens a store with sessions "s" and "t" (two, because
// a writer of s holds a lock on its row that AppendMessage to s would wait
// for) and a feed reader from its head.
func feedOnTwoSessions(t *testing.T) (*postgres.DB, *feedReader) {
	t.Helper()
	db := MustOpen(t)
	for _, id := range []string{"s", "t"} {
		if _, err := db.CreateSession(context.Background(), sessiondb.NewSession{ID: id, Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	return db, newFeedReader(t, db)
}

func msgIDs(ms []*sessiondb.Message) []int64 {
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// TestChangesExactlyOnceUnderConcurrentWriters: writers on other
// connection pools (as other processes are) append through the Store and
// through plain transactions that sleep before they commit, so commits
// come out of id order; a reader following the feed meanwhile gets every
// message exactly once, in id order, and every new session.
func TestChangesExactlyOnceUnderConcurrentWriters(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	open := func() *postgres.DB {
		db, err := postgres.Open(ctx, url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	reader := open()
	r := newFeedReader(t, reader)
	const writers, each = 6, 30
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := open()
			sid := fmt.Sprintf("w%d", w)
			if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: sid, Source: "cli"}); err != nil {
				errs <- err
				return
			}
			for i := range each {
				var err error
				switch {
				case w%2 == 0 && i%5 == 4:
					_, err = db.AppendBatch(ctx, []sessiondb.NewMessage{{SessionID: sid, Role: "user", Content: "b1"}, {SessionID: sid, Role: "user", Content: "b2"}})
				case w%2 == 0:
					_, err = db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: fmt.Sprint(i)})
				default:
					err = pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
						if _, err := tx.Exec(ctx, `INSERT INTO messages (session_id, role, content, timestamp) VALUES ($1, 'user', 'raw', 1)`, sid); err != nil {
							return err
						}
						time.Sleep(time.Duration(rand.IntN(15)) * time.Millisecond)
						return nil
					})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	polls := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(3 * time.Millisecond):
		}
		r.read(t)
		polls++
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r.read(t)
	want := allIDs(t, reader)
	if !slices.Equal(r.ids, want) {
		t.Fatalf("the feed reported %d messages, the table holds %d (polled %d times)", len(r.ids), len(want), polls)
	}
	if n := writers/2*(each+each/5) + writers/2*each; len(want) != n {
		t.Fatalf("%d messages stored, want %d", len(want), n)
	}
	for w := range writers {
		if !r.sessions[fmt.Sprintf("w%d", w)] {
			t.Errorf("session w%d was never reported", w)
		}
	}
	t.Logf("%d messages, %d polls", len(want), polls)
}

// TestChangesSeeASync: a sync (replicate's ingest, COPY in batches) into
// the database reaches the feed of another connection pool: every message
// once, in id order, and every session.
func TestChangesSeeASync(t *testing.T) {
	src := testenv.Shared("fixtures", "hermes-v23.db")
	url := testenv.Postgres(t)
	ctx := context.Background()
	reader, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	writer, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	r := newFeedReader(t, reader)
	done := make(chan error, 1)
	go func() {
		_, err := replicate.Sync(ctx, servetest.CopyDB(t, src), writer, replicate.Options{Origin: "host-a", Batch: 50})
		done <- err
	}()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		case <-time.After(5 * time.Millisecond):
		}
		r.read(t)
	}
	r.read(t)
	want := allIDs(t, reader)
	if len(want) < 600 || !slices.Equal(r.ids, want) {
		t.Fatalf("the feed reported %d messages, the table holds %d", len(r.ids), len(want))
	}
	var sessions int
	if err := reader.Pool().QueryRow(ctx, "SELECT count(*) FROM sessions").Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	if len(r.sessions) != sessions {
		t.Errorf("the feed reported %d sessions, the table holds %d", len(r.sessions), sessions)
	}
}

// TestChangesPreviewAndSessions: a message's preview is its text cut to
// 200 characters (structured content flattened, NUL kept), its session
// comes with it, and a session without messages is reported once created.
func TestChangesPreviewAndSessions(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli", StartedAt: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range sessiondb.ChangeWindow + 5 { // push "s" out of the recent window
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: fmt.Sprintf("old%02d", i), Source: "cli", StartedAt: float64(100 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	r := newFeedReader(t, db)
	long := string(slices.Repeat([]rune("项\x00"), 150))
	for _, c := range []any{long, []any{map[string]any{"type": "text", "text": "parts"}}} {
		if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "empty", Source: "cli", StartedAt: 2}); err != nil {
		t.Fatal(err)
	}
	msgs, sess, _, err := db.Changes(ctx, r.last, r.seq, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Content != string([]rune(long)[:200]) || msgs[1].Content != "parts" {
		var previews []any
		for _, m := range msgs {
			previews = append(previews, m.Content)
		}
		t.Fatalf("previews %q", previews)
	}
	var ids []string
	for _, s := range sess {
		ids = append(ids, s.ID)
	}
	if len(ids) < 2 || ids[0] != "s" || ids[1] != "empty" || sess[0].MessageCount != 2 {
		t.Fatalf("sessions %v, want s (2 messages) then empty first", ids)
	}
}

// TestDailyModelUsageMatchesSQLite: the per-day, per-model totals on
// PostgreSQL equal the SQLite store's for the same data: the server's
// sample sessions written into both, and a Hermes fixture synced.
func TestDailyModelUsageMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	t.Run("sample", func(t *testing.T) {
		lite, err := sqlite.Open(t.TempDir()+"/state.db", sqlite.Options{Now: func() time.Time { return servetest.Base }})
		if err != nil {
			t.Fatal(err)
		}
		defer lite.Close()
		pg, err := postgres.Open(ctx, testenv.Postgres(t), postgres.Options{Now: func() time.Time { return servetest.Base }})
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		servetest.Seed(t, lite)
		servetest.Seed(t, pg)
		compareDaily(t, lite, pg, 0, 4)
		compareDaily(t, lite, pg, float64(servetest.Base.Unix()+86400), 3)
	})
	t.Run("hermes-v23", func(t *testing.T) {
		path := servetest.CopyDB(t, testenv.Shared("fixtures", "hermes-v23.db"))
		pg := MustOpen(t)
		if _, err := replicate.Sync(ctx, path, pg, replicate.Options{Origin: "host-a"}); err != nil {
			t.Fatal(err)
		}
		lite, err := sqlite.Open(path, sqlite.Options{}) // upgraded, as sync reads it
		if err != nil {
			t.Fatal(err)
		}
		defer lite.Close()
		compareDaily(t, lite, pg, 0, 40)
	})
}

type dailyReporter interface {
	DailyModelUsage(ctx context.Context, since float64) (map[string][]sessiondb.UsageRow, error)
}

// compareDaily checks that both stores give the same days and rows (costs
// to rounding) and that there are at least minDays days.
func compareDaily(t *testing.T, lite, pg dailyReporter, since float64, minDays int) {
	t.Helper()
	want, err := lite.DailyModelUsage(context.Background(), since)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pg.DailyModelUsage(context.Background(), since)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < minDays || len(got) != len(want) {
		t.Fatalf("since %v: %d days on PostgreSQL, %d on SQLite (want at least %d)", since, len(got), len(want), minDays)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	for day, w := range want {
		g := got[day]
		if len(g) != len(w) {
			t.Fatalf("%s: %+v, want %+v", day, g, w)
		}
		for i := range w {
			a, b := g[i], w[i]
			if !near(a.EstimatedCostUSD, b.EstimatedCostUSD) || !near(a.ActualCostUSD, b.ActualCostUSD) {
				t.Errorf("%s %s: costs %v/%v, want %v/%v", day, b.Key, a.EstimatedCostUSD, a.ActualCostUSD, b.EstimatedCostUSD, b.ActualCostUSD)
			}
			a.EstimatedCostUSD, a.ActualCostUSD = b.EstimatedCostUSD, b.ActualCostUSD
			if a != b {
				t.Errorf("%s row %d: %+v, want %+v", day, i, a, b)
			}
		}
	}
}

// BenchmarkChangeFeedIdle measures what the event stream's poll costs
// while nothing is written: DataVersion alone, and a Changes call that
// finds nothing new (50 sessions in the recent window).
func BenchmarkChangeFeedIdle(b *testing.B) {
	db := MustOpen(b)
	ctx := context.Background()
	for i := range 60 {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: fmt.Sprintf("s%02d", i), Source: "cli"}); err != nil {
			b.Fatal(err)
		}
	}
	last, seq, err := db.ChangeHead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("DataVersion", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.DataVersion(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Changes", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, err := db.Changes(ctx, last, seq, 500); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestChangesClaimAfterRolledBackSavepoint: a transaction whose claim was
// made in a savepoint it rolled back (as sync's COPY falls back to an
// upsert) claims again before its next insert, so a message committed
// meanwhile still waits for it.
func TestChangesClaimAfterRolledBackSavepoint(t *testing.T) {
	db, r := feedOnTwoSessions(t)
	ctx := context.Background()
	tx, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, q := range []string{"SAVEPOINT a", "INSERT INTO messages (session_id, role, timestamp) VALUES ('s', 'user', 1)", "ROLLBACK TO SAVEPOINT a"} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	x := rawInsert(t, tx, "s", "kept")
	y, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "t", Role: "user", Content: "meanwhile"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.read(t); len(got) != 0 {
		t.Fatalf("reported %v while message %d is uncommitted", msgIDs(got), x)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.read(t); !slices.Equal(msgIDs(got), []int64{x, y}) {
		t.Fatalf("after the commit: %v, want [%d %d]", msgIDs(got), x, y)
	}
}

// TestWritePathsDrawIDsAfterTheirClaim guards the feed's invariant on every
// write path of the package and of sync: each message id and session
// feed_seq is drawn after its transaction claimed (above the claim). A
// trigger of the test's own checks each inserted row against the claims
// its connection holds.
func TestWritePathsDrawIDsAfterTheirClaim(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, `CREATE FUNCTION test_check_claim() RETURNS trigger LANGUAGE plpgsql AS $$
		DECLARE
			c bigint;
			v bigint;
		BEGIN
			IF TG_TABLE_NAME = 'messages' THEN
				v := NEW.id;
			ELSE
				v := NEW.feed_seq;
			END IF;
			SELECT min(last_id) INTO c FROM sessiondb_feed_claims() f
				JOIN pg_locks l ON l.virtualtransaction = f.holder WHERE l.pid = pg_backend_pid();
			IF c IS NULL OR v <= c THEN
				RAISE EXCEPTION '% row % drawn at or below its transaction''s claim %', TG_TABLE_NAME, v, c;
			END IF;
			RETURN NULL;
		END $$;
		CREATE TRIGGER test_check_claim AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION test_check_claim();
		CREATE TRIGGER test_check_claim AFTER INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION test_check_claim();`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessages(ctx, "s", []sessiondb.NewMessage{{Role: "user", Content: "a"}, {Role: "assistant", Content: "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendBatch(ctx, []sessiondb.NewMessage{{SessionID: "s", Role: "user", Content: "c"}}); err != nil {
		t.Fatal(err)
	}
	path := servetest.CopyDB(t, testenv.Shared("fixtures", "hermes-v23.db"))
	for range 2 { // the first copy (COPY), then a pass over a changed source (upserts)
		if _, err := replicate.Sync(ctx, path, db, replicate.Options{Origin: "host-a", Batch: 100}); err != nil {
			t.Fatal(err)
		}
		lite, err := sqlite.Open(path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		list, _, err := lite.ListSessions(ctx, sessiondb.ListOptions{Limit: 3})
		if err == nil {
			_, err = lite.AppendMessage(ctx, sessiondb.NewMessage{SessionID: list[0].ID, Role: "user", Content: "later"})
		}
		if err == nil {
			_, err = lite.CreateSession(ctx, sessiondb.NewSession{ID: "20261203_000000_abcdef", Source: "cli"})
		}
		lite.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := db.Pool().QueryRow(ctx, "SELECT count(*) FROM messages").Scan(&n); err != nil || n < 650 {
		t.Fatalf("%d messages (%v)", n, err)
	}
}

// TestMessageSequenceHasNoCache: a per-connection cache of ids would hand
// out ids below other connections' claims (DESIGN.md, "Change feed").
func TestMessageSequenceHasNoCache(t *testing.T) {
	db := MustOpen(t)
	var cache int64
	if err := db.Pool().QueryRow(context.Background(), `SELECT cache_size FROM pg_sequences
		WHERE schemaname = current_schema() AND sequencename = 'messages_id_seq'`).Scan(&cache); err != nil {
		t.Fatal(err)
	}
	if cache != 1 {
		t.Fatalf("messages_id_seq caches %d ids per connection; the change feed needs 1", cache)
	}
}
