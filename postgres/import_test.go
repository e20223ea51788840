package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/postgres"
)

// importSource returns the export of a store holding sessions s00… of
// per messages each, their ids interleaved (every session gets a turn in
// each round).
func importSource(t *testing.T, sessions, per int) []byte {
	t.Helper()
	ctx := context.Background()
	db := MustOpen(t)
	for i := range sessions {
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: fmt.Sprintf("s%02d", i), Source: "cli", StartedAt: 1.7e9 + float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	const batch = 10
	for round := 0; round < per; round += batch {
		for i := range sessions {
			ms := make([]sessiondb.NewMessage, batch)
			for j := range ms {
				ms[j] = sessiondb.NewMessage{Role: "user", Content: fmt.Sprintf("s%02d message %d about the 项目 deploy", i, round+j), Timestamp: 1.7e9 + float64(round+j)}
			}
			if _, err := db.AppendMessages(ctx, fmt.Sprintf("s%02d", i), ms); err != nil {
				t.Fatal(err)
			}
		}
	}
	return exportAll(t, db)
}

// exportAll returns the JSON Lines export of every session of db but the
// ones skip names.
func exportAll(t *testing.T, db *postgres.DB, skip ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := export.NewJSONL(&buf, export.Options{})
	err := db.ExportSessions(context.Background(), sessiondb.ExportSelection{}, func(x *sessiondb.ExportedSession) error {
		for _, s := range skip {
			if x.Session.ID == s {
				return nil
			}
		}
		return enc.Encode(&export.Item{Session: x.Session, Messages: x.Messages})
	})
	if err == nil {
		err = enc.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An import and appends running at once: the import keeps the file's ids
// (into an almost empty database) while appenders draw theirs from the
// sequence; neither may take the other's id, every append succeeds, and
// the imported sessions export as they were.
func TestImportWithConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	data := importSource(t, 20, 100)

	dst := MustOpen(t)
	const writers, each = 4, 60
	live := make([]string, writers)
	for w := range live {
		live[w] = fmt.Sprintf("live-%d", w)
		if _, err := dst.CreateSession(ctx, sessiondb.NewSession{ID: live[w], Source: "cli"}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for _, sid := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := dst.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: fmt.Sprintf("%s #%d", sid, i)}); err != nil {
					errs <- err
				}
			}
		}()
	}
	rep, err := dst.ImportSessions(ctx, bytes.NewReader(data), sessiondb.ImportOptions{})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("append during the import: %v", err)
	}
	if err != nil || rep.Imported != 20 || rep.Messages != 2000 || rep.Failed != 0 {
		t.Fatalf("import: %v, report %+v", err, rep)
	}
	if got := exportAll(t, dst, live...); !bytes.Equal(stripIDs(t, got), stripIDs(t, data)) {
		t.Error("the imported sessions differ from the source beyond renumbered ids")
	}
	for _, sid := range live {
		ms, err := dst.Messages(ctx, sid, sessiondb.MessageFilter{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := dst.Session(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != each || s.MessageCount != each {
			t.Errorf("%s: %d messages, message_count %d; want %d", sid, len(ms), s.MessageCount, each)
		}
	}
}

// stripIDs drops the message ids of an export (renumbered ones differ),
// checking that each session's are increasing.
func stripIDs(t *testing.T, data []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	for line := range bytes.Lines(data) {
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil {
			t.Fatal(err)
		}
		var prev int64
		for _, m := range obj["messages"].([]any) {
			m := m.(map[string]any)
			id, err := m["id"].(json.Number).Int64()
			if err != nil || id <= prev {
				t.Errorf("session %v: message id %v after %d", obj["id"], m["id"], prev)
			}
			prev = id
			delete(m, "id")
		}
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(b, '\n'))
	}
	return out.Bytes()
}

// TestReliabilityImportRestart: the server restarts (pg_ctl restart -m
// fast) while an import runs. The import waits and retries, or stops with
// an error and is run again; either way the database ends holding every
// session once, exactly as exported, with no message twice.
func TestReliabilityImportRestart(t *testing.T) {
	ctx := context.Background()
	data := importSource(t, 40, 200)

	url, restart := testenv.PrivatePostgres(t)
	dst, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	restarted := make(chan int)
	go func() {
		for {
			var n int
			if err := dst.Pool().QueryRow(ctx, "SELECT count(*) FROM sessions").Scan(&n); err == nil && n >= 5 {
				restart()
				restarted <- n
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	rep, err := dst.ImportSessions(ctx, bytes.NewReader(data), sessiondb.ImportOptions{})
	if n := <-restarted; n >= 40 {
		t.Fatalf("the restart came after the import (%d sessions); nothing was tested", n)
	}
	imported := rep.Imported
	if err != nil || rep.Failed != 0 {
		t.Logf("import across a restart: %v (report: %d imported, %d failed); importing again", err, rep.Imported, rep.Failed)
		again, err := dst.ImportSessions(ctx, bytes.NewReader(data), sessiondb.ImportOptions{})
		if err != nil || again.Failed != 0 {
			t.Fatalf("second import: %v, report %+v", err, again)
		}
		imported += again.Imported
	}
	if imported != 40 {
		t.Errorf("%d sessions imported in all, want 40", imported)
	}
	if got := exportAll(t, dst); !bytes.Equal(got, data) {
		t.Error("after a restart mid-import the database does not export as the source")
	}
}
