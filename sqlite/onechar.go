package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// idx_messages_newest orders the messages by time, so that a one-character
// CJK search can read the newest messages first and stop at the page
// (oneCJK). Hermes ignores it; an append adds one entry (a timestamp and
// a rowid).
const (
	newestIndex       = "idx_messages_newest"
	createNewestIndex = `CREATE INDEX IF NOT EXISTS ` + newestIndex + ` ON messages(timestamp)`
)

// oneCharWalk is how many of the newest messages oneCJK reads before it
// gives up on the walk: at least this many, or a 64th of the messages on a
// larger file, so that a walk that fails costs a small part of the
// vocabulary read that follows it.
var oneCharWalk = 4096

// oneCJK answers a query of the single CJK character c, which is no phrase
// of any index: the bigram index holds 库 alone only where it stands alone
// and otherwise inside bigrams (数据库 → 数据 据库), the word index inside
// whole runs (数据库迁移). Hermes scans the table with LIKE, newest first.
//
// sessiondb first walks the newest messages on idx_messages_newest, looks
// for c in the columns Hermes' scan reads (walkContent) and stops at the
// page: a character in one message of a hundred fills a page of 20 within
// some 2,000 messages, however long the history. The walk is bounded to the messages at least as new as the
// oneCharWalk-th newest one; when the page does not fill within them (a
// rare character, filters that reject most rows, no such index on a file
// opened read-only), the indexes' vocabularies (fts5vocab) answer instead:
// the word index's terms that begin with a CJK character and contain c
// (every CJK character sorts above U+10FF, so this is one range of the term
// list), plus the bigram index's terms that begin with c, which add the CJK
// part of a word that begins with Latin letters (通 in Agent通信). That read
// costs the CJK text held, whatever the character.
//
// What the scan (and so the walk) finds and the vocabulary read does not:
// c ending the CJK part of a word that begins with Latin letters (信 in
// Agent通信), and c beyond the first 8192 characters of a tool result (the
// word index stops there), unless a bigram begins with it. The walk finds
// c in structured content, as the indexes do (LIKE stops at its NUL).
func (s *searcher) oneCJK(ctx context.Context, c rune) ([]sessiondb.SearchHit, error) {
	ch := string(c)
	hits, full, err := s.newestWalk(ctx, ch)
	if err != nil || full {
		return hits, err
	}
	conn, err := s.db.read.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	for _, v := range []string{
		`CREATE VIRTUAL TABLE IF NOT EXISTS temp.sessiondb_words USING fts5vocab(main, messages_fts, instance)`,
		`CREATE VIRTUAL TABLE IF NOT EXISTS temp.sessiondb_bigrams USING fts5vocab(main, messages_fts_cjk, instance)`,
	} {
		if _, err := conn.ExecContext(ctx, v); err != nil {
			return nil, err
		}
	}
	return s.newestFirst(ctx, conn, "messages m", `m.id IN (
		SELECT doc FROM temp.sessiondb_words WHERE term >= ? AND instr(term, ?) > 0
		UNION SELECT doc FROM temp.sessiondb_bigrams WHERE term >= ? AND term < ?)`,
		[]any{ch, "\u1100", ch, ch, string(c + 1)})
}

// walkContent is the content the walk looks for the character in: all of
// it, as Hermes' scan does, except structured content ("\x00json:…") of a
// tool row, which no index holds (the word index takes a tool row's first
// 8192 characters with substr, which stops at the NUL). Unlike LIKE, which
// stops at that NUL too, instr reads structured content past it, as the
// indexes do.
const walkContent = `CASE WHEN m.role = 'tool' AND substr(CAST(m.content AS BLOB), 1, 6) = x'006a736f6e3a' THEN NULL ELSE m.content END`

// newestWalk is oneCJK's walk: a substring scan for ch over the messages
// at least as new as the walk's bound, newest first. full reports a page
// that filled, which is then the scan's page: every message past the bound
// comes after all of those read, in the order of newestFirst (time, then
// id, both descending; SQLite puts a NULL time last).
func (s *searcher) newestWalk(ctx context.Context, ch string) (hits []sessiondb.SearchHit, full bool, err error) {
	where, fargs := s.filters()
	stmt := "SELECT " + fmt.Sprintf(hitColumns, likeSnippet) +
		" FROM messages m INDEXED BY " + newestIndex + " JOIN sessions s ON s.id = m.session_id" +
		" WHERE m.timestamp >= COALESCE((SELECT timestamp FROM messages INDEXED BY " + newestIndex +
		" ORDER BY timestamp DESC LIMIT 1 OFFSET max(?, (SELECT MAX(id) FROM messages) / 64)), -1e308)" +
		" AND (instr(" + walkContent + ", ?) > 0 OR instr(m.tool_name, ?) > 0 OR instr(m.tool_calls, ?) > 0) AND " + strings.Join(where, " AND ") +
		" ORDER BY m.timestamp DESC, m.id DESC LIMIT ? OFFSET ?"
	args := []any{ch, oneCharWalk, ch, ch, ch}
	hits, err = s.query(ctx, stmt, append(append(args, fargs...), s.o.Limit, s.o.Offset)...)
	if noSuchIndex(err) {
		return nil, false, nil // a file Hermes rebuilt, or opened read-only before sessiondb wrote to it
	}
	return hits, len(hits) == s.o.Limit, err
}

// noSuchIndex reports the error of an INDEXED BY naming one of ownIndexes
// that the file lacks: Hermes rebuilt the table, or sessiondb has only read
// the file so far. The caller answers without the index.
func noSuchIndex(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such index")
}
