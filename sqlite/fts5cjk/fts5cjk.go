// Package fts5cjk provides the SQLite FTS5 tokenizer "cjk_unicode61".
//
// cjk_unicode61 wraps FTS5's built-in unicode61 tokenizer (all tokenizer
// arguments, e.g. "remove_diacritics 2", are passed to unicode61) and splits
// every token that contains CJK code points (Han, Hiragana, Katakana, Hangul)
// into runs: non-CJK runs stay whole, CJK runs of two or more code points
// become overlapping bigrams (大别山项目 → 大别 别山 山项 项目) and a lone CJK
// code point stays a unigram. Its output is token-for-token identical to
// Hermes Agent's tokenizer of the same name, so both programs can maintain
// the same FTS5 index:
//
//	CREATE VIRTUAL TABLE t USING fts5(c, tokenize='cjk_unicode61')
//
// The package also registers the FTS5 auxiliary function sessiondb_bm25(K)
// (rank.c): bm25 for the K best rows of a query, skipping most of bm25's
// per-row cost for the others, which it ranks last. Given the table's name
// as well, sessiondb_bm25(K, 'name'), a one-phrase query looks up the
// lengths of only about K rows, and sessiondb_bm25(K, 'name', 'place') tells
// each of the K best rows its place in rank order, and sessiondb_bm25(K,
// 'name', 'top') returns the ids of the K best at once. And it registers
// sessiondb_snippet (snippet.c), which returns what FTS5's snippet() does
// for the same arguments while tokenizing less.
//
// The tokenizer is written in C and registered on every SQLite connection of
// the process through sqlite3_auto_extension, using the SQLite amalgamation
// that github.com/mattn/go-sqlite3 links in. FTS5 exists only when building
// with -tags sqlite_fts5; without it, registration is silently skipped.
package fts5cjk

/*
#cgo CFLAGS: -O2
#cgo LDFLAGS: -lm
#include <stdlib.h>
#include "fts5cjk_sqlite.h"
#include "fts5cjk.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	// Provides the sqlite3_* symbols the C code is linked against.
	_ "github.com/mattn/go-sqlite3"
)

var registerOnce sync.Once

// Register adds cjk_unicode61 to SQLite's auto-extension list, so that every
// connection opened afterwards in this process (through database/sql with the
// "sqlite3" driver or otherwise) has the tokenizer. It must be called before
// the first connection that needs the tokenizer is opened: connections that
// already exist (including idle ones in a database/sql pool) do not get it.
// Calling it more than once is harmless.
//
// sqlite3_auto_extension fails only if SQLite cannot initialize itself or
// allocate a few bytes; Register panics in that case.
func Register() {
	registerOnce.Do(func() {
		if rc := C.fts5cjk_auto_register(); rc != 0 {
			panic(fmt.Sprintf("fts5cjk: sqlite3_auto_extension: %s (code %d)",
				C.GoString(C.sqlite3_errstr(rc)), int(rc)))
		}
	})
}

// Configure makes the process-wide settings of SQLite that searches rely
// on (fts5cjk.c, fts5cjk_configure), and reports whether SQLite took them:
// it does only before it initializes, so call Configure before anything in
// the process opens a connection or registers an extension or a VFS.
func Configure() bool { return C.fts5cjk_configure() == 0 }

// Token is one token emitted by cjk_unicode61.
type Token struct {
	Text       string // token bytes (case-folded by unicode61)
	Start, End int    // byte offsets of the token in the input text
	Colocated  bool   // FTS5_TOKEN_COLOCATED was set
}

// Tokens runs cjk_unicode61, created with the tokenizer arguments args (as
// they would follow the name in tokenize='cjk_unicode61 ...'), over text as
// FTS5 does for document text, and returns the token stream. It is a
// debugging and test aid: it calls Register and uses a private in-memory
// connection for each call, so it is not meant for hot paths.
func Tokens(text string, args ...string) ([]Token, error) {
	Register()
	cArgs := cStrings(args)
	defer freeCStrings(cArgs)
	cText := C.CString(text)
	defer C.free(unsafe.Pointer(cText))

	var buf C.fts5cjk_buf
	defer C.fts5cjk_buf_free(&buf)
	var stage *C.char
	rc := C.fts5cjk_tokens(&cArgs[0], C.int(len(args)), cText, C.int(len(text)), &buf, &stage)
	if rc != 0 {
		return nil, fmt.Errorf("fts5cjk: %s: %s (code %d)",
			C.GoString(stage), C.GoString(C.sqlite3_errstr(rc)), int(rc))
	}
	toks := make([]Token, 0, int(buf.nTok))
	for _, t := range unsafe.Slice(buf.aTok, int(buf.nTok)) {
		toks = append(toks, Token{
			Text:      C.GoStringN((*C.char)(unsafe.Add(unsafe.Pointer(buf.text), int(t.off))), t.len),
			Start:     int(t.start),
			End:       int(t.end),
			Colocated: t.tflags&C.FTS5_TOKEN_COLOCATED != 0,
		})
	}
	return toks, nil
}

// cStrings is argv for xCreate, to be freed with freeCStrings; the extra
// slot keeps &argv[0] valid without args.
func cStrings(args []string) []*C.char {
	argv := make([]*C.char, len(args)+1)
	for i, a := range args {
		argv[i] = C.CString(a)
	}
	return argv
}

func freeCStrings(argv []*C.char) {
	for _, p := range argv {
		C.free(unsafe.Pointer(p))
	}
}

// shortcutLists reports whether r is in the plain-CJK or the break list
// of cjk_unicode61's shortcut (fts5cjk.c). A test aid.
func shortcutLists(r rune) (plain, brk bool) {
	return C.fts5cjk_is_plain(C.uint(r)) != 0, C.fts5cjk_is_break(C.uint(r)) != 0
}

// IsCJK reports whether cjk_unicode61 splits r into bigrams: Hangul,
// CJK ideographs and Japanese kana (CJK punctuation is not).
func IsCJK(r rune) bool {
	return r >= 0xAC00 && r <= 0xD7A3 || r >= 0x1100 && r <= 0x11FF || r >= 0x3130 && r <= 0x318F ||
		r >= 0xA960 && r <= 0xA97F || r >= 0xD7B0 && r <= 0xD7FF || r >= 0x4E00 && r <= 0x9FFF ||
		r >= 0x3400 && r <= 0x4DBF || r >= 0xF900 && r <= 0xFAFF || r >= 0x20000 && r <= 0x2FA1F ||
		r >= 0x3040 && r <= 0x309F || r >= 0x30A0 && r <= 0x30FF || r >= 0x31F0 && r <= 0x31FF
}
