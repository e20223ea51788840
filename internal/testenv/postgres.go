package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// PrivatePostgres starts a PostgreSQL cluster of the test's own
// (scripts/pg-cluster), stopped and removed when the test ends, for tests
// that restart the server: the shared test server must not go away under
// other packages' tests, which run at the same time. It returns the URL of
// the cluster's postgres database and a function that restarts the server
// (pg_ctl restart -m fast). Without PostgreSQL's programs the test skips,
// or fails under CI.
func PrivatePostgres(tb testing.TB) (url string, restart func()) {
	tb.Helper()
	if os.Getenv(PostgresEnv) == "" {
		Missing(tb, "PostgreSQL is not available: set "+PostgresEnv+` (eval "$(scripts/pg-cluster start)"), which also says its programs are installed`)
		return "", nil
	}
	script := filepath.Join(moduleRoot(), "scripts", "pg-cluster")
	out, err := exec.Command(script, "start").Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		tb.Fatalf("scripts/pg-cluster start: %s", msg)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok {
			vars[k] = strings.Trim(v, "'")
		}
	}
	dir, bin := vars["SESSIONDB_PG_DIR"], vars["SESSIONDB_PG_BINDIR"]
	tb.Cleanup(func() { exec.Command(script, "stop", dir).Run() })
	return vars[PostgresEnv], func() {
		tb.Helper()
		cmd := bin + "/pg_ctl -D " + dir + "/data -m fast -w -t 60 restart -l " + dir + "/server.log"
		c := exec.Command("sh", "-c", cmd)
		if os.Geteuid() == 0 {
			user := "postgres"
			if exec.Command("id", user).Run() != nil {
				user = "nobody"
			}
			c = exec.Command("su", "-s", "/bin/sh", user, "-c", cmd)
		}
		if out, err := c.CombinedOutput(); err != nil {
			tb.Fatalf("pg_ctl restart: %v\n%s", err, out)
		}
	}
}
