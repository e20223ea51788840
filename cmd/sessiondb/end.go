package main

import (
	"context"
	"flag"
)

func newEndCommand() *command {
	var reason string
	return &command{
		name:     "end",
		synopsis: "end a session with a reason (the first reason wins)",
		usage: `Usage: sessiondb [--db PATH] end SESSION --reason REASON

Ends a session. SESSION is an id or a unique id prefix. Ending a session that
already ended changes nothing: the first end reason wins.

Options:
  --reason REASON  why the session ended, e.g. user_exit, compression (required)

Examples:
  sessiondb end 20260501_120000_abcdef --reason user_exit
`,
		flags: func(fs *flag.FlagSet) { fs.StringVar(&reason, "reason", "", "") },
		run: func(ctx context.Context, e *env, args []string) error {
			arg, err := oneArg(args, "SESSION")
			if err != nil {
				return err
			}
			if reason == "" {
				return usagef("--reason is required")
			}
			db, id, err := e.openSessionWrite(ctx, arg, false)
			if err != nil {
				return err
			}
			defer db.Close()
			return db.EndSession(ctx, id, reason)
		},
	}
}

func newReopenCommand() *command {
	return &command{
		name:     "reopen",
		synopsis: "clear a session's end so it can be continued",
		usage: `Usage: sessiondb [--db PATH] reopen SESSION

Clears ended_at and end_reason of a session. SESSION is an id or a unique id
prefix.

Examples:
  sessiondb reopen 20260501_120000_abcdef
`,
		run: func(ctx context.Context, e *env, args []string) error {
			arg, err := oneArg(args, "SESSION")
			if err != nil {
				return err
			}
			db, id, err := e.openSessionWrite(ctx, arg, false)
			if err != nil {
				return err
			}
			defer db.Close()
			return db.ReopenSession(ctx, id)
		},
	}
}
