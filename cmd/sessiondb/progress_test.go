package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// drawn returns a progress that draws on a buffer as if it were a
// terminal.
func drawn(label string) (*progress, *bytes.Buffer) {
	var b bytes.Buffer
	p := newProgress(&b, label)
	p.on = true
	return p, &b
}

func TestProgressOffWhenNotATerminal(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "indexing")
	p.spin()
	p.update(5, 10)
	r := p.reader(strings.NewReader("data"), 4)
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	p.done()
	if b.Len() > 0 {
		t.Errorf("progress wrote to a writer that is not a terminal: %q", b.String())
	}
}

func TestProgressBar(t *testing.T) {
	p, b := drawn("indexing")
	p.update(5, 10)
	if out := b.String(); !strings.Contains(out, "indexing") || !strings.Contains(out, "50%") || !strings.Contains(out, "(5/10") {
		t.Errorf("update(5, 10) drew %q", out)
	}
	p.done()
	// The line is wiped at the end: the last thing written is spaces
	// between two carriage returns.
	out := b.String()
	if i := strings.LastIndexByte(out[:len(out)-1], '\r'); i < 0 || strings.Trim(out[i:], "\r ") != "" {
		t.Errorf("done left the bar on the line: %q", out)
	}
}

func TestProgressSpinnerBetweenPhases(t *testing.T) {
	p, b := drawn("rebuilding")
	p.spin()
	if !p.spinning || !strings.Contains(b.String(), "rebuilding") {
		t.Fatalf("spin drew %q", b.String())
	}
	p.update(1, 4) // the first counted chunk replaces the spinner by a bar
	if p.spinning || p.max != 4 {
		t.Fatalf("after update(1, 4): spinning %v, max %d", p.spinning, p.max)
	}
	p.update(4, 4) // done counting: a spinner until the command ends
	if !p.spinning {
		t.Fatal("update(4, 4) did not go back to a spinner")
	}
	p.update(4, 4) // a repeated last count keeps the spinner
	if !p.spinning {
		t.Fatal("a repeated update(4, 4) replaced the spinner")
	}
	p.update(2, 8) // a second phase gets a bar of its own
	if p.spinning || p.max != 8 {
		t.Fatalf("second phase: spinning %v, max %d", p.spinning, p.max)
	}
	p.done()
	if p.bar != nil || p.spinning {
		t.Error("done left a bar running")
	}
}

func TestProgressReader(t *testing.T) {
	data := strings.Repeat("x", 4000)
	for _, size := range []int64{int64(len(data)), -1} {
		p, b := drawn("importing")
		got, err := io.ReadAll(p.reader(strings.NewReader(data), size))
		p.done()
		if err != nil || string(got) != data {
			t.Fatalf("size %d: read %d bytes, %v", size, len(got), err)
		}
		if !strings.Contains(b.String(), "importing") || !strings.Contains(b.String(), "kB") {
			t.Errorf("size %d: drew %q, want the label and a count of bytes", size, b.String())
		}
	}
}
