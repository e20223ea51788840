package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows long work on standard error with
// github.com/schollz/progressbar, and nothing when standard error is not a
// terminal. Work that reports done of total (update) gets a bar with the
// count, rate and time left; work that cannot (spin), and the moments
// between two counted phases, get a spinner with the elapsed time. Every
// bar is wiped when it ends, so the command's own output follows on a
// clean line.
type progress struct {
	w        io.Writer
	label    string
	on       bool
	bar      *progressbar.ProgressBar
	max      int64 // the bar's total; -1 for a spinner
	bytes    bool  // count in bytes
	spinning bool
}

// newProgress returns a progress labelled label that draws on w when w is
// a terminal.
func newProgress(w io.Writer, label string) *progress {
	return &progress{w: w, label: label, on: isTerminal(w)}
}

func (p *progress) options(max int64) []progressbar.Option {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(p.label),
		progressbar.OptionSetWidth(30), // narrowed to fit the terminal
		progressbar.OptionClearOnFinish(),
		progressbar.OptionShowBytes(p.bytes),
		progressbar.OptionSpinnerType(14),
	}
	if max >= 0 || p.bytes {
		opts = append(opts, progressbar.OptionShowCount())
	}
	if max >= 0 {
		opts = append(opts, progressbar.OptionThrottle(100*time.Millisecond))
	}
	return opts
}

// update shows done of total units, the signature of sqlite.Progress.
// Reaching total starts a spinner until done (or the next phase's first
// update): the command may still have work that it cannot count.
func (p *progress) update(done, total int64) {
	if !p.on || total <= 0 || p.spinning && done >= total {
		return
	}
	if p.bar == nil || p.spinning || p.max != total {
		p.stop()
		p.bar, p.max, p.spinning = progressbar.NewOptions64(total, p.options(total)...), total, false
	}
	_ = p.bar.Set64(min(done, total)) // drawing errors are not the command's
	if done >= total {
		p.spin()
	}
}

// spin shows a spinner with the elapsed time, for work that reports no
// progress (one SQLite statement or transaction, such as VACUUM or a prune);
// the library redraws it every 100 ms until done.
func (p *progress) spin() {
	if !p.on || p.spinning {
		return
	}
	p.stop()
	p.bar, p.max, p.spinning = progressbar.NewOptions64(-1, p.options(-1)...), -1, true
	_ = p.bar.RenderBlank()
}

// add counts n more units of a spinner (bytes read by reader).
func (p *progress) add(n int64) {
	if p.on && p.spinning {
		_ = p.bar.Add64(n)
	}
}

// reader returns r counting what is read on a bar of size bytes, or on a
// spinner when size is unknown (-1).
func (p *progress) reader(r io.Reader, size int64) io.Reader {
	if !p.on {
		return r
	}
	p.bytes = true
	return &countingReader{r: r, p: p, size: size}
}

type countingReader struct {
	r    io.Reader
	p    *progress
	size int64
	n    int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	if c.size > 0 {
		c.p.update(min(c.n, c.size), c.size)
	} else {
		c.p.spin()
		c.p.add(int64(n))
	}
	return n, err
}

// stop wipes the current bar or spinner and stops its redrawing.
func (p *progress) stop() {
	if p.bar != nil {
		_ = p.bar.Finish() // with OptionClearOnFinish: wipes the line
		p.bar = nil
	}
	p.spinning = false
}

// done ends the progress display.
func (p *progress) done() { p.stop() }

// isTerminal reports whether w (or r) is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
