package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// progress draws a one-line progress bar on a terminal and nothing when the
// output is piped or redirected.
type progress struct {
	w     io.Writer
	label string
	on    bool
	drawn bool
}

func newProgress(w io.Writer, label string) *progress {
	return &progress{w: w, label: label, on: isTerminal(w)}
}

func (p *progress) update(done, total int64) {
	if !p.on || total <= 0 {
		return
	}
	const width = 30
	filled := int(done * width / total)
	fmt.Fprintf(p.w, "\r%s [%-*s] %d/%d", p.label, width, string(bar(filled)), done, total)
	p.drawn = true
}

func bar(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = '='
	}
	return b
}

func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w (or r) is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
