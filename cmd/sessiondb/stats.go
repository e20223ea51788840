package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/sessiondb/sessiondb"
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
			case sessiondb.UsageByTotal, sessiondb.UsageByModel, sessiondb.UsageBySource, sessiondb.UsageByDay:
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
			db, err := e.openRead(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			u, ok := db.(sessiondb.UsageReporter)
			if !ok {
				return e.lacks("usage totals")
			}
			rows, err := u.UsageStats(ctx, by, cutoff)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(e.stdout, rows)
			}
			// Every column aligns right; the empty last one pads the
			// numbers' column.
			t := &table{}
			head := map[string][]string{sessiondb.UsageByModel: {"Model", "Provider", "Task"}, sessiondb.UsageBySource: {"Source"}, sessiondb.UsageByDay: {"Day"}, sessiondb.UsageByTotal: {""}}[by]
			st := e.styles()
			var hcells []cell
			for _, h := range append(head, "Sessions", "Messages", "API calls", "Input", "Output", "Cache read", "Cache write", "Reasoning", "Est. $", "Actual $", "") {
				hcells = append(hcells, cell{h, st.faint})
			}
			t.add(hcells...)
			for _, r := range rows {
				key := []string{r.Key}
				switch by {
				case sessiondb.UsageByTotal:
					key = []string{"total"}
				case sessiondb.UsageByModel:
					key = append(key, r.Provider, r.Task)
				}
				t.addText(append(key, fmt.Sprint(r.Sessions), fmt.Sprint(r.Messages), fmt.Sprint(r.APICalls),
					fmt.Sprint(r.InputTokens), fmt.Sprint(r.OutputTokens), fmt.Sprint(r.CacheReadTokens), fmt.Sprint(r.CacheWriteTokens),
					fmt.Sprint(r.ReasoningTokens), fmt.Sprintf("%.4f", r.EstimatedCostUSD), fmt.Sprintf("%.4f", r.ActualCostUSD), "")...)
			}
			t.align = make([]align, len(t.rows[0]))
			for i := range t.align {
				t.align[i] = alignRight
			}
			return t.write(e.stdout)
		},
	}
}
