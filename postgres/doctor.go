package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sessiondb/sessiondb"
)

// MinServerVersion is the oldest PostgreSQL major version the store runs on.
const MinServerVersion = 15

// Diagnose checks the database at url without changing it, for `sessiondb
// doctor`: it connects once (within o.ConnectTimeout), runs no migration
// and takes no lock. The checks: the server answers (its version, at least
// MinServerVersion), the pg_trgm extension is installed in the database
// (or at least available to install), the schema migrations are those this
// build knows (SchemaVersion), and every index of the store's tables is
// valid and ready (a GIN index built by an interrupted CREATE INDEX
// CONCURRENTLY is not). A server that cannot be reached or refuses the
// login is an EUNAVAILABLE error, not a finding.
func Diagnose(ctx context.Context, url string, o Options) (*sessiondb.Diagnosis, error) {
	cfg, err := parseConfig(url, o.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "sessiondb doctor"
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return nil, connectErr(cfg, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	d := &sessiondb.Diagnosis{Path: displayURL(cfg.ConnConfig), Healthy: true}
	for _, check := range []func(context.Context, *pgx.Conn, *sessiondb.Diagnosis) error{
		checkServer, checkTrigram, checkSchema, checkIndexes,
	} {
		if err := check(ctx, conn, d); err != nil {
			return nil, mapDoctorErr(err)
		}
	}
	return d, nil
}

// parseConfig reads a connection URL (or key=value string) and sets the
// connect timeout (0: DefaultConnectTimeout); a URL that does not parse is
// EINVALID, without its password.
func parseConfig(url string, timeout time.Duration) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &sessiondb.Error{Code: sessiondb.EINVALID, Err: err,
			Message: "postgres: cannot read the connection URL (" + redactURL(err.Error()) + "); the form is postgres://user:password@host:port/database?sslmode=…"}
	}
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	cfg.ConnConfig.ConnectTimeout = timeout
	return cfg, nil
}

// displayURL names the database as the report shows it, without a
// password.
func displayURL(c *pgx.ConnConfig) string {
	if strings.HasPrefix(c.Host, "/") { // a Unix socket's directory
		return fmt.Sprintf("postgres://%s@/%s?host=%s", c.User, c.Database, c.Host)
	}
	return fmt.Sprintf("postgres://%s@%s/%s", c.User, net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), c.Database)
}

func checkServer(ctx context.Context, conn *pgx.Conn, d *sessiondb.Diagnosis) error {
	var num int
	var version string
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int, current_setting('server_version')").Scan(&num, &version); err != nil {
		return err
	}
	detail := "PostgreSQL " + version
	if major := num / 10000; major < MinServerVersion {
		d.Add("server", sessiondb.CheckFail, fmt.Sprintf("%s; sessiondb needs %d or newer", detail, MinServerVersion),
			fmt.Sprintf("upgrade the server to PostgreSQL %d or newer", MinServerVersion))
		return nil
	}
	var sync string
	if err := conn.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&sync); err != nil {
		return err
	}
	d.Add("server", sessiondb.CheckOK, detail+" (sessiondb writes with synchronous_commit on; the server's default is "+sync+")", "")
	return nil
}

func checkTrigram(ctx context.Context, conn *pgx.Conn, d *sessiondb.Diagnosis) error {
	var installed, available *string
	if err := conn.QueryRow(ctx, `SELECT (SELECT extversion FROM pg_extension WHERE extname = 'pg_trgm'),
		(SELECT default_version FROM pg_available_extensions WHERE name = 'pg_trgm')`).Scan(&installed, &available); err != nil {
		return err
	}
	switch {
	case installed != nil:
		d.Add("pg_trgm", sessiondb.CheckOK, "installed, version "+*installed, "")
	case available != nil:
		d.Add("pg_trgm", sessiondb.CheckFail, "available (version "+*available+") but not installed in this database; substring search needs it",
			"sessiondb init (as the database owner), or CREATE EXTENSION pg_trgm as a superuser")
	default:
		d.Add("pg_trgm", sessiondb.CheckFail, "not available on the server; substring search needs it",
			"install the server's contrib package (Debian: apt-get install postgresql-contrib), then sessiondb init")
	}
	return nil
}

func checkSchema(ctx context.Context, conn *pgx.Conn, d *sessiondb.Diagnosis) error {
	want := SchemaVersion()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return err
	}
	if !exists {
		d.Add("schema", sessiondb.CheckFail, fmt.Sprintf("no sessiondb schema in this database (sessiondb writes version %d)", want), "sessiondb init")
		return nil
	}
	var have int
	if err := conn.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&have); err != nil {
		return err
	}
	switch {
	case have < want:
		d.Add("schema", sessiondb.CheckFail, fmt.Sprintf("schema version %d; sessiondb writes %d: migrations pending", have, want), "sessiondb init")
	case have > want:
		d.Add("schema", sessiondb.CheckFail, fmt.Sprintf("schema version %d, newer than this sessiondb knows (%d)", have, want), "upgrade sessiondb")
	default:
		d.Add("schema", sessiondb.CheckOK, fmt.Sprintf("schema version %d (sessiondb writes %d)", have, want), "")
	}
	return nil
}

// checkIndexes reports every index of the store's tables that is not
// valid or not ready: what an interrupted CREATE INDEX CONCURRENTLY or
// REINDEX CONCURRENTLY leaves behind, which the planner ignores (a search
// then scans the table).
func checkIndexes(ctx context.Context, conn *pgx.Conn, d *sessiondb.Diagnosis) error {
	rows, err := conn.Query(ctx, `SELECT c.relname, a.amname, i.indisvalid AND i.indisready
		FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_class t ON t.oid = i.indrelid
		JOIN pg_am a ON a.oid = c.relam
		WHERE t.relnamespace = current_schema()::regnamespace
		  AND t.relname IN ('sessions', 'messages', 'system_prompts', 'session_model_usage', 'state_meta')
		ORDER BY c.relname`)
	if err != nil {
		return err
	}
	var total, gin int
	var broken []string
	var name, am string
	var ok bool
	if _, err := pgx.ForEachRow(rows, []any{&name, &am, &ok}, func() error {
		total++
		if am == "gin" {
			gin++
		}
		if !ok {
			broken = append(broken, name)
		}
		return nil
	}); err != nil {
		return err
	}
	if len(broken) > 0 {
		d.Add("indexes", sessiondb.CheckFail, fmt.Sprintf("%d of %d not valid (ignored by searches): %s", len(broken), total, strings.Join(broken, ", ")),
			"REINDEX INDEX CONCURRENTLY "+broken[0]+" (each one listed), as the database owner")
		return nil
	}
	d.Add("indexes", sessiondb.CheckOK, fmt.Sprintf("%d valid, %d of them GIN", total, gin), "")
	return nil
}

// mapDoctorErr gives a failed check query its code: a connection lost
// midway is EUNAVAILABLE, anything else EINTERNAL.
func mapDoctorErr(err error) error {
	var pe *pgconn.PgError
	if isConnErr(err) && !errors.As(err, &pe) {
		return &sessiondb.Error{Code: sessiondb.EUNAVAILABLE, Err: err, Message: "postgres: the connection was lost during the checks: " + err.Error()}
	}
	return &sessiondb.Error{Code: sessiondb.EINTERNAL, Err: err, Message: "postgres doctor: " + err.Error()}
}
