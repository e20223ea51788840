package servetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

// appendEnv asks the test binary, run again as a child, to append one
// message to the database it names and exit; the session and the text
// come in appendEnv_SESSION and appendEnv_TEXT.
const appendEnv = "SERVETEST_APPEND"

// Main is the TestMain of packages that use AppendFromProcess.
func Main(m *testing.M) {
	if v, ok := os.LookupEnv(appendEnv); ok {
		if err := appendOne(v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func appendOne(path string) error {
	var db sessiondb.Store
	var err error
	if postgres.IsURL(path) {
		db, err = postgres.Open(context.Background(), path, postgres.Options{})
	} else {
		db, err = sqlite.Open(path, sqlite.Options{NoCreate: true})
	}
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.AppendMessage(context.Background(), sessiondb.NewMessage{
		SessionID: os.Getenv(appendEnv + "_SESSION"), Role: "assistant", Content: os.Getenv(appendEnv + "_TEXT")})
	return err
}

// AppendFromProcess appends an assistant message to session in the
// database at path (a SQLite file or a postgres:// URL) from another process (this test binary run again), as
// Hermes writes while the server runs.
func AppendFromProcess(tb testing.TB, path, session, text string) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), appendEnv+"="+path, appendEnv+"_SESSION="+session, appendEnv+"_TEXT="+text)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("append from another process: %v\n%s", err, out)
	}
}
