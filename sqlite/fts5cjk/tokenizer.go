package fts5cjk

/*
#include <stdlib.h>
#include "fts5cjk_sqlite.h"
#include "fts5cjk.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// MaxTokenSize is the longest token FTS5 stores, in bytes
// (FTS5_MAX_TOKEN_SIZE): a longer one is cut to it, in documents and in
// queries alike.
const MaxTokenSize = 32768

// Tokenizer runs an FTS5 tokenizer ("unicode61", "cjk_unicode61", or any
// other one registered on SQLite connections) outside any table, producing
// exactly the token stream FTS5 indexes for a document: the same tokens,
// cut to MaxTokenSize bytes, in the same order. It keeps one private
// in-memory connection and a free list of tokenizer instances, one per
// concurrent caller, so it is safe for concurrent use and costs no
// allocation in C per call once warm. Close releases it.
type Tokenizer struct {
	mu     sync.Mutex
	c      *C.fts5cjk_tk
	free   []*instance
	closed bool
}

// instance is one tokenizer instance with its reusable output buffer;
// it is used by one goroutine at a time.
type instance struct {
	tok unsafe.Pointer
	buf C.fts5cjk_buf
}

// ErrClosed is returned by a Tokenizer used after Close.
var ErrClosed = errors.New("fts5cjk: tokenizer closed")

// NewTokenizer returns a Tokenizer for the FTS5 tokenizer name created
// with the tokenizer arguments args (as they follow the name in
// tokenize='name ...'). It calls Register, so cjk_unicode61 is known.
func NewTokenizer(name string, args ...string) (*Tokenizer, error) {
	Register()
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	cArgs := cStrings(args)
	defer freeCStrings(cArgs)
	var c *C.fts5cjk_tk
	var stage *C.char
	if rc := C.fts5cjk_tk_open(cName, &cArgs[0], C.int(len(args)), &c, &stage); rc != 0 {
		return nil, fmt.Errorf("fts5cjk: tokenizer %q: %s: %s (code %d)", name,
			C.GoString(stage), C.GoString(C.sqlite3_errstr(rc)), int(rc))
	}
	t := &Tokenizer{c: c}
	// Creating one instance now reports bad arguments at once.
	in, err := t.get()
	if err != nil {
		C.fts5cjk_tk_close(c)
		return nil, fmt.Errorf("fts5cjk: tokenizer %q %q: %w", name, args, err)
	}
	t.put(in)
	return t, nil
}

func (t *Tokenizer) get() (*instance, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	if n := len(t.free); n > 0 {
		in := t.free[n-1]
		t.free = t.free[:n-1]
		return in, nil
	}
	in := &instance{}
	if rc := C.fts5cjk_tk_instance(t.c, &in.tok); rc != 0 {
		return nil, fmt.Errorf("creating an instance: %s (code %d)", C.GoString(C.sqlite3_errstr(rc)), int(rc))
	}
	return in, nil
}

func (t *Tokenizer) put(in *instance) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		in.release(t.c)
		return
	}
	t.free = append(t.free, in)
}

func (in *instance) release(c *C.fts5cjk_tk) {
	C.fts5cjk_tk_instance_free(c, in.tok)
	C.fts5cjk_buf_free(&in.buf)
}

// Close releases the tokenizer's instances and connection. Calls still
// running finish first; later calls return ErrClosed.
func (t *Tokenizer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	for _, in := range t.free {
		in.release(t.c)
	}
	t.free = nil
	// Instances still in use are released by put. They do not refer to the
	// connection (it only served to find the tokenizer's methods).
	C.fts5cjk_tk_close(t.c)
	return nil
}

// AppendTokens tokenizes text as FTS5 does a document's column and appends
// its tokens to dst. Token texts share one allocation per call. Offsets
// are byte offsets in text, as the tokenizer reports them.
func (t *Tokenizer) AppendTokens(dst []Token, text string) ([]Token, error) {
	if len(text) > 1<<31-1 {
		return dst, fmt.Errorf("fts5cjk: text of %d bytes is longer than SQLite takes", len(text))
	}
	in, err := t.get()
	if err != nil {
		return dst, err
	}
	defer t.put(in)
	var p *C.char
	if len(text) > 0 {
		p = (*C.char)(unsafe.Pointer(unsafe.StringData(text)))
	}
	if rc := C.fts5cjk_tk_run(t.c, in.tok, p, C.int(len(text)), &in.buf); rc != 0 {
		return dst, fmt.Errorf("fts5cjk: tokenizing: %s (code %d)", C.GoString(C.sqlite3_errstr(rc)), int(rc))
	}
	n := int(in.buf.nTok)
	if n == 0 {
		return dst, nil
	}
	all := C.GoStringN(in.buf.text, in.buf.nText)
	for _, tk := range unsafe.Slice(in.buf.aTok, n) {
		dst = append(dst, Token{
			Text:      all[int(tk.off) : int(tk.off)+int(tk.len)],
			Start:     int(tk.start),
			End:       int(tk.end),
			Colocated: tk.tflags&C.FTS5_TOKEN_COLOCATED != 0,
		})
	}
	return dst, nil
}

// Tokens is AppendTokens into a new slice.
func (t *Tokenizer) Tokens(text string) ([]Token, error) {
	return t.AppendTokens(nil, text)
}
