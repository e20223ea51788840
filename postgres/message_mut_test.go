package postgres

import (
	"context"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestAppendRetriesAFailedInsert: an INSERT of an append that fails with a
// serialization failure (injected by a trigger, once, on the second row)
// makes the whole append run again, which then stores every message once,
// in order, with exact counters; on every append path.
func TestAppendRetriesAFailedInsert(t *testing.T) {
	ctx := context.Background()
	db := openInternal(t, Options{})
	// A sequence is not rolled back with the failed transaction: the
	// trigger fails the first INSERT of a row 'second' it sees, no other.
	if _, err := db.pool.Exec(ctx, `CREATE SEQUENCE inject_seq;
		CREATE FUNCTION inject_fail() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.content = 'second' AND nextval('inject_seq') = 1 THEN
				RAISE EXCEPTION 'injected failure' USING ERRCODE = '40001';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER inject_fail BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION inject_fail()`); err != nil {
		t.Fatal(err)
	}
	for _, path := range []struct {
		name   string
		append func(sid string, ms []sessiondb.NewMessage) (int, error)
	}{
		{"AppendMessages", func(sid string, ms []sessiondb.NewMessage) (int, error) { return db.AppendMessages(ctx, sid, ms) }},
		{"AppendBatch", func(sid string, ms []sessiondb.NewMessage) (int, error) {
			for i := range ms {
				ms[i].SessionID = sid
			}
			return db.AppendBatch(ctx, ms)
		}},
	} {
		t.Run(path.name, func(t *testing.T) {
			if _, err := db.pool.Exec(ctx, "ALTER SEQUENCE inject_seq RESTART"); err != nil {
				t.Fatal(err)
			}
			sid := path.name
			if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: sid, Source: "cli", StartedAt: 1.7e9}); err != nil {
				t.Fatal(err)
			}
			n, err := path.append(sid, []sessiondb.NewMessage{
				{Role: "user", Content: "first", Timestamp: 1.7e9 + 1},
				{Role: "assistant", Content: "second", Timestamp: 1.7e9 + 2},
				{Role: "user", Content: "third", Timestamp: 1.7e9 + 3},
			})
			if err != nil || n != 3 {
				t.Fatalf("append = %d, %v; want 3 after a retry", n, err)
			}
			var seen int64
			if err := db.pool.QueryRow(ctx, "SELECT last_value FROM inject_seq").Scan(&seen); err != nil || seen < 2 {
				t.Fatalf("the trigger saw 'second' %d times (%v): no failure was injected and retried", seen, err)
			}
			ms, err := db.Messages(ctx, sid, sessiondb.MessageFilter{})
			if err != nil {
				t.Fatal(err)
			}
			var got []any
			for _, m := range ms {
				got = append(got, m.Content)
			}
			if len(got) != 3 || got[0] != "first" || got[1] != "second" || got[2] != "third" {
				t.Fatalf("messages = %v, want first, second, third once each", got)
			}
			if s, err := db.Session(ctx, sid); err != nil || s.MessageCount != 3 {
				t.Fatalf("message_count = %v (%v), want 3", s.MessageCount, err)
			}
		})
	}
}
