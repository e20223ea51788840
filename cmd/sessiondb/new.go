package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/sessiondb/sessiondb"
)

func newNewCommand() *command {
	var ns sessiondb.NewSession
	return &command{
		name:     "new",
		synopsis: "create a session and print its id",
		usage: `Usage: sessiondb [--db PATH] new --source SOURCE [--id ID] [--model M] [--parent ID] [--user U]

Creates a session and prints its id. Without --id the id is Hermes-style,
YYYYMMDD_HHMMSS_xxxxxx. Creating an id that exists keeps the existing values
(the first writer wins).

Options:
  --source SOURCE  where the session comes from: cli, telegram, cron, … (required)
  --id ID          the session id
  --model M        the model name
  --parent ID      the parent session (a compression or branch predecessor)
  --user U         the user id

Examples:
  sessiondb new --source cli
  sessiondb new --source telegram --id 20260501_120000_abcdef --model gpt-5
`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&ns.Source, "source", "", "")
			fs.StringVar(&ns.ID, "id", "", "")
			fs.StringVar(&ns.Model, "model", "", "")
			fs.StringVar(&ns.ParentSessionID, "parent", "", "")
			fs.StringVar(&ns.UserID, "user", "", "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("new takes no arguments")
			}
			if ns.Source == "" {
				return usagef("--source is required")
			}
			db, err := e.openWrite(ctx, true)
			if err != nil {
				return err
			}
			defer db.Close()
			if ns.ParentSessionID != "" {
				if ns.ParentSessionID, err = resolve(ctx, db, ns.ParentSessionID); err != nil {
					return err
				}
			}
			id, err := db.CreateSession(ctx, ns)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(e.stdout, id)
			return err
		},
	}
}
