package postgres_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/testenv"
	"github.com/sessiondb/sessiondb/postgres"
)

// MustOpen opens a store on a fresh database of the test server.
func MustOpen(tb testing.TB) *postgres.DB {
	tb.Helper()
	url := testenv.Postgres(tb)
	db, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func TestOpenMigratesOnceUnderConcurrentStarts(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := postgres.Open(ctx, url, postgres.Options{})
			if err == nil {
				db.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var versions, max int
	if err := db.Pool().QueryRow(ctx, "SELECT count(*), max(version) FROM schema_migrations").Scan(&versions, &max); err != nil {
		t.Fatal(err)
	}
	// One row per embedded migration (numbers may skip while branches
	// that add migrations land in another order).
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if want := postgres.SchemaVersion(); max != want || versions != len(files) {
		t.Errorf("schema_migrations holds %d rows up to %d, want %d rows up to %d", versions, max, len(files), want)
	}
	var sync string
	if err := db.Pool().QueryRow(ctx, "SHOW synchronous_commit").Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if sync != "on" {
		t.Errorf("synchronous_commit = %q, want on (writes are durable when they return)", sync)
	}
}

func TestOpenNewerSchemaIsRefused(t *testing.T) {
	db := MustOpen(t)
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES (9999, 'future')"); err != nil {
		t.Fatal(err)
	}
	url := db.Pool().Config().ConnString()
	_, err := postgres.Open(ctx, url, postgres.Options{})
	if got := sessiondb.ErrorCode(err); got != sessiondb.ECONFLICT {
		t.Fatalf("open of a newer schema: code %q (%v), want %q", got, err, sessiondb.ECONFLICT)
	}
}

func TestOpenUnreachableServerFailsFast(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	// A port nothing listens on (connection refused), and an address that
	// does not answer (the connect timeout bounds it).
	for _, url := range []string{
		"postgres://nobody@127.0.0.1:1/x?sslmode=disable",
		"postgres://nobody@10.255.255.1:5432/x?sslmode=disable",
	} {
		_, err := postgres.Open(ctx, url, postgres.Options{ConnectTimeout: time.Second})
		if got := sessiondb.ErrorCode(err); got != sessiondb.EUNAVAILABLE {
			t.Errorf("open %s: code %q (%v), want %q", url, got, err, sessiondb.EUNAVAILABLE)
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("opening two unreachable servers took %s; the connect timeout should bound it", took)
	}
}

func TestOpenBadURLIsInvalid(t *testing.T) {
	_, err := postgres.Open(context.Background(), "postgres://a:b@host:notaport/x", postgres.Options{})
	if got := sessiondb.ErrorCode(err); got != sessiondb.EINVALID {
		t.Fatalf("code %q (%v), want %q", got, err, sessiondb.EINVALID)
	}
}
