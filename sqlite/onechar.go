package sqlite

import (
	"context"

	"github.com/sessiondb/sessiondb"
)

// oneCJK answers a query of the single CJK character c, which is no phrase
// of any index: the bigram index holds 库 alone only where it stands alone
// and otherwise inside bigrams (数据库 → 数据 据库), the word index inside
// whole runs (数据库迁移). Hermes scans the table with LIKE; sessiondb reads
// the indexes' vocabularies (fts5vocab) instead: the word index's terms
// that begin with a CJK character and contain c (every CJK character sorts
// above U+10FF, so this is one range of the term list), plus the bigram
// index's terms that begin with c, which add the CJK part of a word that
// begins with Latin letters (通 in Agent通信). Newest first, as the scan.
//
// What the scan finds and this does not: c ending the CJK part of a word
// that begins with Latin letters (信 in Agent通信), and c beyond the first
// 8192 characters of a tool result (the word index stops there).
func (s *searcher) oneCJK(ctx context.Context, c rune) ([]sessiondb.SearchHit, error) {
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
	ch := string(c)
	return s.newestFirst(ctx, conn, "messages m", `m.id IN (
		SELECT doc FROM temp.sessiondb_words WHERE term >= ? AND instr(term, ?) > 0
		UNION SELECT doc FROM temp.sessiondb_bigrams WHERE term >= ? AND term < ?)`,
		[]any{ch, "\u1100", ch, ch, string(c + 1)})
}
