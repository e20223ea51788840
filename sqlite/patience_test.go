package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// TestWritePatienceUnderASecond: an EBUSY error names a patience below a
// second in milliseconds, not as "0s".
func TestWritePatienceUnderASecond(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return fixedNow }, WritePatience: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := rawDB(t, path).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK")
	_, err = db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"})
	if sessiondb.ErrorCode(err) != sessiondb.EBUSY || !strings.Contains(err.Error(), "for over 200ms") {
		t.Errorf("write under a held lock with a 200 ms patience: %v; want EBUSY naming 200ms", err)
	}
}
