package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// scaleSize is one size of --scale: a generated database of messages
// messages at path.
type scaleSize struct {
	messages int
	path     string
}

// parseScale parses --scale: SIZE[=PATH] items separated by commas; a size
// without a path lives in dir as bench-SIZE.db.
func parseScale(list, dir string) ([]scaleSize, error) {
	var out []scaleSize
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		size, path, _ := strings.Cut(item, "=")
		n, err := strconv.Atoi(strings.ReplaceAll(size, "_", ""))
		if err != nil || n < 100 {
			return nil, usagef("--scale: %q is not a size of at least 100 messages (want SIZE or SIZE=PATH, separated by commas)", item)
		}
		if path == "" {
			if dir == "" {
				return nil, usagef("--scale: size %d has no PATH; give SIZE=PATH or --scale-dir DIR", n)
			}
			path = filepath.Join(dir, fmt.Sprintf("bench-%d.db", n))
		}
		out = append(out, scaleSize{n, path})
	}
	return out, nil
}

// scaleReport is the result of --scale: each size's report, then the
// growth of its p50s over the first size's.
type scaleReport struct {
	Mode   string        `json:"mode"` // "scale"
	Sizes  []sizeReport  `json:"sizes"`
	Growth []scaleGrowth `json:"growth"`
}

type sizeReport struct {
	Messages int          `json:"size"`
	Path     string       `json:"path"`
	Report   *benchReport `json:"report"`
}

// scaleGrowth divides each p50 at size To by the same p50 at size From.
type scaleGrowth struct {
	From    int                `json:"from"`
	To      int                `json:"to"`
	Queries map[string]float64 `json:"queries"` // the --searches classes
	List    float64            `json:"list"`
	Reads   map[string]float64 `json:"reads,omitempty"`
	Cold    map[string]float64 `json:"bands_cold"`
	Warm    map[string]float64 `json:"bands_warm"`
}

func ratio(a, b float64) float64 {
	if a <= 0 {
		return 0
	}
	return round3(b / a)
}

func growth(from, to sizeReport) scaleGrowth {
	g := scaleGrowth{From: from.Messages, To: to.Messages, Queries: map[string]float64{},
		Cold: map[string]float64{}, Warm: map[string]float64{}}
	a, b := from.Report, to.Report
	for i, q := range a.Queries {
		if i < len(b.Queries) && b.Queries[i].label == q.label {
			g.Queries[q.label] = ratio(q.P50, b.Queries[i].P50)
		}
	}
	g.List = ratio(a.List.P50, b.List.P50)
	for i, x := range a.Reads {
		if i < len(b.Reads) && b.Reads[i].Read == x.Read {
			if g.Reads == nil {
				g.Reads = map[string]float64{}
			}
			g.Reads[x.Read] = ratio(x.P50, b.Reads[i].P50)
		}
	}
	for i, x := range a.Bands {
		if i < len(b.Bands) && b.Bands[i].band == x.band {
			g.Cold[x.band] = ratio(x.Cold.P50, b.Bands[i].Cold.P50)
			g.Warm[x.band] = ratio(x.Warm.P50, b.Bands[i].Warm.P50)
		}
	}
	return g
}

// runScale is --scale: build or reuse one database per size, measure the
// reads on each, and report the growth.
func (o *benchOptions) runScale(ctx context.Context, e *env) error {
	sizes, err := parseScale(o.scale, o.scaleDir)
	if err != nil {
		return err
	}
	for _, sz := range sizes {
		if sessions := max(1, sz.messages/100); o.writers*(o.procs+1) > sessions {
			return usagef("--scale %d: %d writers in %d processes need at least as many sessions (%d)", sz.messages, o.writers*(o.procs+1), o.procs+1, sessions)
		}
	}
	rep := &scaleReport{Mode: "scale"}
	for _, sz := range sizes {
		reuse, err := reusable(ctx, sz)
		if err != nil {
			return err
		}
		if !reuse {
			if err := os.MkdirAll(filepath.Dir(sz.path), 0o755); err != nil {
				return err
			}
		}
		one := *o
		one.sessions, one.messages = max(1, sz.messages/100), sz.messages
		at := *e
		at.dbPath = sz.path
		r, err := one.measure(ctx, &at, reuse)
		if err != nil {
			return fmt.Errorf("--scale %d (%s): %w", sz.messages, sz.path, err)
		}
		rep.Sizes = append(rep.Sizes, sizeReport{sz.messages, sz.path, r})
		if err := r.failed(); err != nil {
			return err
		}
	}
	for _, s := range rep.Sizes[1:] {
		rep.Growth = append(rep.Growth, growth(rep.Sizes[0], s))
	}
	if o.asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	}
	return rep.print(e.stdout)
}

// reusable reports whether sz.path already holds the size's database: true
// when it holds exactly sz.messages messages, false when there is no file,
// and an error for any other file, which bench will not append to.
func reusable(ctx context.Context, sz scaleSize) (bool, error) {
	if _, err := os.Stat(sz.path); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	db, err := sqlite.Open(sz.path, sqlite.Options{ReadOnly: true})
	if err != nil {
		return false, fmt.Errorf("--scale %d: %w", sz.messages, err)
	}
	defer db.Close()
	in, err := db.Info(ctx)
	if err != nil {
		return false, err
	}
	if n := in.Rows["messages"]; n != int64(sz.messages) {
		return false, sessiondb.Errorf(sessiondb.EINVALID,
			"--scale %d: %s holds %d messages, not %d; remove it or name another file (SIZE=PATH or --scale-dir)", sz.messages, sz.path, n, sz.messages)
	}
	return true, nil
}

// reusedReport describes a database --scale measures as it is.
func reusedReport(ctx context.Context, db sessiondb.Store) (*benchReport, error) {
	rep := &benchReport{Mode: "reused", Writers: 0, Processes: 0}
	d, ok := db.(*sqlite.DB)
	if !ok {
		return rep, nil
	}
	in, err := d.Info(ctx)
	if err != nil {
		return nil, err
	}
	rep.Messages, rep.Sessions = int(in.Rows["messages"]), int(in.Rows["sessions"])
	return rep, nil
}

func (r *scaleReport) print(w io.Writer) error {
	for _, s := range r.Sizes {
		if _, err := fmt.Fprintf(w, "== %d messages: %s\n", s.Messages, s.Path); err != nil {
			return err
		}
		if err := s.Report.print(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	first := r.Sizes[0]
	for i, g := range r.Growth {
		to := r.Sizes[i+1]
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(w, "growth of p50 from %d to %d messages\n", g.From, g.To)
		fmt.Fprintf(tw, "read\tp50 ms at %d\tp50 ms at %d\tgrowth\t\n", g.From, g.To)
		for j, q := range first.Report.Queries {
			if v, ok := g.Queries[q.label]; ok {
				fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.2f×\t\n", q.label, q.P50, to.Report.Queries[j].P50, v)
			}
		}
		fmt.Fprintf(tw, "list-%d\t%.3f\t%.3f\t%.2f×\t\n", benchListLimit, first.Report.List.P50, to.Report.List.P50, g.List)
		for j, x := range first.Report.Reads {
			if v, ok := g.Reads[x.Read]; ok {
				fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.2f×\t\n", x.Read, x.P50, to.Report.Reads[j].P50, v)
			}
		}
		for j, b := range first.Report.Bands {
			if _, ok := g.Warm[b.band]; !ok {
				continue
			}
			c := to.Report.Bands[j]
			fmt.Fprintf(tw, "%s (cold)\t%.3f\t%.3f\t%.2f×\t\n", b.band, b.Cold.P50, c.Cold.P50, g.Cold[b.band])
			fmt.Fprintf(tw, "%s (warm)\t%.3f\t%.3f\t%.2f×\t\n", b.band, b.Warm.P50, c.Warm.P50, g.Warm[b.band])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
