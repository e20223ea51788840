package main

import (
	"context"
	"fmt"
	"strings"
)

func newRenameCommand() *command {
	return &command{
		name:     "rename",
		synopsis: "set a session's title (titles are unique)",
		usage: `Usage: sessiondb [--db PATH] rename SESSION TITLE...

Sets the title of SESSION (an id, a unique id prefix or a title). The words
of TITLE are joined with spaces; control characters are removed and the
title is at most 100 characters. An empty title clears it. Titles are
unique: a title used by another session is refused, except one held by a
compression ancestor of SESSION, which moves to it.

Examples:
  sessiondb rename 20260501_120000_abcdef Kubernetes migration
  sessiondb rename "Kubernetes migration" k8s migration
`,
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) < 1 {
				return usagef("missing SESSION")
			}
			db, id, err := e.openSessionWrite(ctx, args[0], false)
			if err != nil {
				return err
			}
			defer db.Close()
			title := strings.Join(args[1:], " ")
			if err := db.SetTitle(ctx, id, title); err != nil {
				return err
			}
			s, err := db.Session(ctx, id)
			if err != nil {
				return err
			}
			if s.Title == nil {
				_, err = fmt.Fprintf(e.stdout, "%s: title cleared\n", id)
				return err
			}
			_, err = fmt.Fprintf(e.stdout, "%s: %s\n", id, *s.Title)
			return err
		},
	}
}
