package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresEnv names the environment variable holding the URL of a
// PostgreSQL server the tests may create databases on (scripts/pg-cluster
// starts a throw-away one and prints it).
const PostgresEnv = "SESSIONDB_TEST_POSTGRES"

// Postgres returns the URL of a new, empty database on the test server,
// dropped when the test ends. Without SESSIONDB_TEST_POSTGRES the test
// skips, or fails under CI.
func Postgres(tb testing.TB) string {
	tb.Helper()
	admin := os.Getenv(PostgresEnv)
	if admin == "" {
		Missing(tb, "PostgreSQL is not available: set "+PostgresEnv+` to a server's URL, e.g. eval "$(scripts/pg-cluster start)"`)
		return ""
	}
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("%s: %v", PostgresEnv, err)
	}
	var b [6]byte
	rand.Read(b[:])
	name := "sessiondb_test_" + hex.EncodeToString(b[:])
	exec := func(stmt string) {
		tb.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Fatalf("connect to %s: %v", PostgresEnv, err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, stmt); err != nil {
			tb.Fatalf("%s: %v", stmt, err)
		}
	}
	exec("CREATE DATABASE " + name)
	tb.Cleanup(func() { exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

// RestartPostgres restarts the test server (pg_ctl restart -m fast), for
// tests of what writers do while the server goes away. It needs the cluster
// scripts/pg-cluster started (SESSIONDB_PG_DIR and SESSIONDB_PG_BINDIR);
// without it the test skips, or fails under CI.
func RestartPostgres(tb testing.TB) {
	tb.Helper()
	dir, bin := os.Getenv("SESSIONDB_PG_DIR"), os.Getenv("SESSIONDB_PG_BINDIR")
	if dir == "" || bin == "" {
		Missing(tb, "restarting PostgreSQL needs the throw-away cluster of scripts/pg-cluster (SESSIONDB_PG_DIR, SESSIONDB_PG_BINDIR)")
		return
	}
	cmd := bin + "/pg_ctl -D " + dir + "/data -m fast -w -t 60 restart -l " + dir + "/server.log"
	var c *exec.Cmd
	if os.Geteuid() == 0 {
		user := "postgres"
		if _, err := exec.Command("id", user).Output(); err != nil {
			user = "nobody"
		}
		c = exec.Command("su", "-s", "/bin/sh", user, "-c", cmd)
	} else {
		c = exec.Command("sh", "-c", cmd)
	}
	if out, err := c.CombinedOutput(); err != nil {
		tb.Fatalf("pg_ctl restart: %v\n%s", err, out)
	}
}
