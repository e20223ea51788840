package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/sessiondb/sessiondb/sqlite"
)

func newStatsCommand() *command {
	var by, since string
	var asJSON bool
	return &command{
		name:     "stats",
		synopsis: "token, API-call and cost totals, by model, source or day",
		usage: `Usage: sessiondb [--db PATH] stats [--by model|source|day] [--since AGE] [--json]

Totals of input, output, cache read/write and reasoning tokens, API calls,
estimated and actual cost, sessions and messages. Without --by, one total.

Options:
  --by KEY      group by model (per model, provider and task), source or day
  --since AGE   only sessions started within AGE (90d, 12h, 2w) or since a date
  --json        print the rows as JSON

Examples:
  sessiondb stats
  sessiondb stats --by model --since 30d
`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&by, "by", "", "")
			fs.StringVar(&since, "since", "", "")
			fs.BoolVar(&asJSON, "json", false, "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("stats takes no arguments")
			}
			switch by {
			case sqlite.ByTotal, sqlite.ByModel, sqlite.BySource, sqlite.ByDay:
			default:
				return usagef("--by %q: want model, source or day", by)
			}
			var cutoff float64
			if since != "" {
				var err error
				if cutoff, err = parseAge(since, time.Now()); err != nil {
					return err
				}
			}
			db, err := e.openRead()
			if err != nil {
				return err
			}
			defer db.Close()
			rows, err := db.UsageStats(ctx, by, cutoff)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(e.stdout, rows)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
			head := map[string]string{sqlite.ByModel: "Model", sqlite.BySource: "Source", sqlite.ByDay: "Day", sqlite.ByTotal: ""}[by]
			if by == sqlite.ByModel {
				head += "\tProvider\tTask"
			}
			fmt.Fprintf(tw, "%s\tSessions\tMessages\tAPI calls\tInput\tOutput\tCache read\tCache write\tReasoning\tEst. $\tActual $\t\n", head)
			for _, r := range rows {
				key := r.Key
				if by == sqlite.ByTotal {
					key = "total"
				}
				if by == sqlite.ByModel {
					key += "\t" + r.Provider + "\t" + r.Task
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.4f\t%.4f\t\n", key, r.Sessions, r.Messages, r.APICalls,
					r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, r.ReasoningTokens,
					r.EstimatedCostUSD, r.ActualCostUSD)
			}
			return tw.Flush()
		},
	}
}
