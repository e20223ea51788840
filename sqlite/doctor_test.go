package sqlite_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/sqlite"
)

func diagnose(t *testing.T, path string) map[string]sqlite.Check {
	t.Helper()
	return diagnoseWith(t, path, false)
}

// diagnoseFull is diagnose of doctor --full.
func diagnoseFull(t *testing.T, path string) map[string]sqlite.Check {
	t.Helper()
	return diagnoseWith(t, path, true)
}

func diagnoseWith(t *testing.T, path string, full bool) map[string]sqlite.Check {
	t.Helper()
	d, err := sqlite.Diagnose(context.Background(), path, full)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]sqlite.Check{}
	for _, c := range d.Checks {
		out[c.Name] = c
	}
	return out
}

func TestDoctorHealthy(t *testing.T) {
	db := MustOpen(t)
	seed(t, db, 20)
	sqlite.SetFileSystem(t, false, 1<<40) // whatever this machine's disk holds
	d, err := sqlite.Diagnose(ctx, db.Path(), true)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Healthy {
		t.Fatalf("a fresh database is unhealthy: %+v", d.Checks)
	}
	for _, c := range d.Checks {
		if c.Status != sqlite.CheckOK {
			t.Errorf("%s: %s %s", c.Name, c.Status, c.Detail)
		}
	}
}

func TestDoctorFindsProblems(t *testing.T) {
	t.Run("stale index", func(t *testing.T) {
		db := MustOpen(t)
		seed(t, db, 5)
		rawDB(t, db.Path()).Exec("INSERT INTO state_meta (key, value) VALUES ('fts_stale', '1')")
		c := diagnose(t, db.Path())["fts_stale"]
		if c.Status != sqlite.CheckFail || c.Fix != "sessiondb rebuild-fts" {
			t.Fatalf("fts_stale check = %+v", c)
		}
	})
	t.Run("pending backfill", func(t *testing.T) {
		db := MustOpen(t)
		raw := rawDB(t, db.Path())
		raw.Exec("INSERT INTO state_meta (key, value) VALUES ('fts_cjk_rebuild_high_water', '1000'), ('fts_cjk_rebuild_progress', '0')")
		seed(t, db, 5) // ids 1..5 lie in the gap: not indexed by the CJK triggers
		checks := diagnose(t, db.Path())
		if c := checks["backfill CJK"]; c.Status != sqlite.CheckWarn || c.Fix != "sessiondb init" {
			t.Fatalf("backfill check = %+v", c)
		}
		if c := checks["index messages_fts_cjk"]; c.Status == sqlite.CheckFail {
			t.Fatalf("a pending backfill is reported as damage: %+v", c)
		}
	})
	t.Run("merge settings of an interrupted rebuild", func(t *testing.T) {
		db := MustOpen(t)
		seed(t, db, 5)
		raw := rawDB(t, db.Path())
		rawExec(t, raw, "INSERT INTO messages_fts_trigram(messages_fts_trigram, rank) VALUES('automerge', 64)")
		// While the CJK family is still being filled, the word and
		// trigram indexes keep the bulk policy: no warning.
		rawExec(t, raw, "INSERT INTO state_meta (key, value) VALUES ('fts_cjk_rebuild_high_water', '5'), ('fts_cjk_rebuild_progress', '0')")
		if c, ok := diagnose(t, db.Path())["merge settings messages_fts_trigram"]; ok {
			t.Fatalf("warned during a backfill: %+v", c)
		}
		rawExec(t, raw, "DELETE FROM state_meta WHERE key LIKE 'fts_cjk_rebuild_%'")
		c := diagnose(t, db.Path())["merge settings messages_fts_trigram"]
		if c.Status != sqlite.CheckWarn || c.Fix != "sessiondb optimize" {
			t.Fatalf("merge settings check = %+v", c)
		}
		if _, err := db.Optimize(ctx, false); err != nil {
			t.Fatal(err)
		}
		if c, ok := diagnose(t, db.Path())["merge settings messages_fts_trigram"]; ok {
			t.Fatalf("after optimize: %+v", c)
		}
	})
	t.Run("held write lock", func(t *testing.T) {
		db := MustOpen(t)
		raw := rawDB(t, db.Path())
		conn, err := raw.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		defer conn.ExecContext(ctx, "ROLLBACK")
		if c := diagnose(t, db.Path())["write lock"]; c.Status != sqlite.CheckWarn || !strings.Contains(c.Detail, "held") {
			t.Fatalf("write lock check = %+v", c)
		}
	})
	t.Run("damaged page", func(t *testing.T) {
		path := fixture(t, "hermes-v11.db")
		b, _ := os.ReadFile(path)
		page := 4096
		for i := 40 * page; i < 41*page; i++ {
			b[i] = 0xA5
		}
		os.WriteFile(path, b, 0o600)
		d, err := sqlite.Diagnose(ctx, path, true)
		if err != nil {
			t.Fatal(err)
		}
		if d.Healthy {
			t.Fatal("a damaged file is healthy")
		}
	})
	t.Run("non-WAL file", func(t *testing.T) {
		path := fixture(t, "hermes-v23.db") // written in DELETE mode
		if c := diagnose(t, path)["journal"]; c.Status != sqlite.CheckWarn {
			t.Fatalf("journal check = %+v", c)
		}
	})
}
