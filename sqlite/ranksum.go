package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// Range summaries of the frequent terms of the word and CJK indexes
// (DESIGN.md, "Top-k ranking from range summaries"; rank.c reads them).

var ddlRank = schemaSQL("rank.sql")

const (
	// keyRankThrough is the largest id whose changes the dirty log records.
	keyRankThrough = "sessiondb_rank_through"
	// keyRankGone is the seq up to which the dirty log was emptied.
	keyRankGone = "sessiondb_rank_gone"
	// rankRec is the size of an encoded range (rank.c's RANK_REC).
	rankRec = 8 + 4 + 8*8
)

var (
	// rankRangeRows is how many rows of a term a range summarizes.
	rankRangeRows = 64
	// rankCountOnly is how many times more rows a range of a Latin word of
	// the CJK index summarizes: such a word is searched in the word index,
	// and on the CJK index only beside CJK text ("docker 部署"), where its
	// summary spares counting its rows (bm25's IDF) in a pass.
	rankCountOnly = 64
	// rankMinDocs is the least number of rows a term is in for a summary
	// (and at least one in rankMinShare of the rows).
	rankMinDocs  int64 = 6000
	rankMinShare int64 = 200
	// rankRepairMax is how many changed rows a term's summary is mended
	// range by range; past it, the term is summarized again whole.
	rankRepairMax = 20000
)

// hasTable reports whether the file has table name: the summaries' tables
// (the sources' came after the terms': a file may have only those).
func hasTable(ctx context.Context, q querier, name string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", name).Scan(&n)
	return n > 0, err
}

// rankKey names a summary: an index (its FTS5 table) and a term of it.
type rankKey struct{ fts, term string }

func (k rankKey) String() string { return k.fts + " " + strconv.Quote(k.term) }

// rangeRows is how many rows of the term a range of its summary holds.
func (k rankKey) rangeRows() int {
	if countOnly(k.fts, k.term) {
		return rankRangeRows * rankCountOnly
	}
	return rankRangeRows
}

// countOnly reports whether the summary of term in index fts is made to
// count its rows: a Latin word of the CJK index, whose ranges are
// rankCountOnly times longer and bound little (they still cut the spans
// of "A B" when the other word has a summary too).
func countOnly(fts, term string) bool {
	r, _ := utf8.DecodeRuneInString(term)
	return fts == "messages_fts_cjk" && !fts5cjk.IsCJK(r)
}

// SummarizeTerms makes (or brings up to date) the range summaries of every
// term of the word and CJK indexes found in at least rankMinDocs rows: it
// creates the tables and triggers when missing, reads the indexes'
// vocabularies and refreshes each term (refreshRank), and returns how many
// terms it summarized. It does nothing on a legacy layout, while a
// backfill is pending (the index lacks rows then), or when no term is that
// frequent.
func (db *DB) SummarizeTerms(ctx context.Context, progress Progress) (int, error) {
	if db.legacy() {
		return 0, nil
	}
	if pending, err := db.PendingBackfill(ctx); err != nil || pending > 0 {
		return 0, err
	}
	tables, err := presentFTS(ctx, db.read)
	if err != nil {
		return 0, db.mapErr("read the index's vocabulary", err)
	}
	var terms []rankKey
	for _, t := range tables {
		if t == "messages_fts_trigram" {
			continue // queried by substrings, never one token
		}
		words, err := db.frequentTerms(ctx, t)
		if err != nil {
			return 0, db.mapErr("read the vocabulary of "+t, err)
		}
		for _, w := range words {
			terms = append(terms, rankKey{t, w})
		}
	}
	if len(terms) == 0 {
		return 0, nil // a small file: one pass over a term's rows is cheap
	}
	if err := db.writeTx(ctx, 0, "create term summaries", func(tx *sql.Tx) error {
		return exec(ctx, tx, ddlRank)
	}); err != nil {
		return 0, err
	}
	if err := db.refreshRank(ctx, terms, progress); err != nil {
		return 0, err
	}
	return len(terms), db.summarizeSources(ctx, terms)
}

// rankSourcesMax is how many rare sources get summaries of their own.
const rankSourcesMax = 16

// summarizeSources makes, for each rare source (the sources whose sessions
// hold at most an eighth of the messages, as fewSourceRows decides, the
// rankSourcesMax largest) and each term of terms, the summary of the
// term's rows in that source (DESIGN.md, "Summaries of a rare source's
// rows"), and deletes the source summaries of other terms and sources.
// Only here, on an explicit optimize: the live upkeep (refreshRank) leaves
// them as they are, and a search stops using one once the log no longer
// holds every change since it was made.
func (db *DB) summarizeSources(ctx context.Context, terms []rankKey) error {
	sources, err := collect(ctx, db.read, "SELECT source FROM sessions WHERE source IS NOT NULL GROUP BY source"+
		" HAVING SUM(message_count) * 8 <= (SELECT MAX(id) FROM messages) ORDER BY SUM(message_count) DESC, source LIMIT ?", rankSourcesMax)
	if err != nil {
		return db.mapErr("read the sources", err)
	}
	var summed []rankKey
	for _, k := range terms {
		if !countOnly(k.fts, k.term) {
			summed = append(summed, k)
		}
	}
	want := map[string]bool{}
	for _, src := range sources {
		for _, k := range summed {
			want[k.fts+"\x00"+k.term+"\x00"+src] = true
		}
		if err := db.refreshSource(ctx, summed, src); err != nil {
			return db.mapErr("summarize terms in source "+strconv.Quote(src), err)
		}
	}
	return db.writeTx(ctx, 0, "drop other source summaries", func(tx *sql.Tx) error {
		const key = "fts || char(0) || term || char(0) || source"
		keys, err := collect(ctx, tx, "SELECT "+key+" FROM sessiondb_rank_sources")
		if err != nil {
			return err
		}
		for _, k := range keys {
			if !want[k] {
				if _, err := tx.ExecContext(ctx, "DELETE FROM sessiondb_rank_sources WHERE "+key+" = ?", k); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// refreshSource makes the summaries of terms' rows in source src in one
// read snapshot (the source's ids read once), through the log's through
// and seeing its last change, and writes them in one short transaction,
// each only if its term's own summary did not change meanwhile (emptied
// summaries stop the log: one made before that is never written after
// it); those are made again, twice at most.
func (db *DB) refreshSource(ctx context.Context, terms []rankKey, src string) error {
	type made struct {
		k      rankKey
		term   rankSummary // the term's own through and seen when made
		digest int64
		ranges []byte
	}
	for attempt := 0; attempt < 3 && len(terms) > 0; attempt++ {
		var through, seen int64
		var all []made
		err := func() error {
			tx, err := db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				return err
			}
			defer tx.Rollback()
			// seen: the log's last seq ever (it may be empty, trimmed past
			// it), as a search asks the log to hold every change after it.
			if err := tx.QueryRowContext(ctx, "SELECT CAST(value AS INTEGER), COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'sessiondb_rank_dirty'), 0)"+
				" FROM state_meta WHERE key = ?", keyRankThrough).Scan(&through, &seen); err != nil {
				return err
			}
			for _, k := range terms {
				m := made{k: k}
				err := tx.QueryRowContext(ctx, "SELECT through, seen FROM sessiondb_rank_terms WHERE fts = ? AND term = ?", k.fts, k.term).Scan(&m.term.through, &m.term.seen)
				var b []byte
				if err == nil {
					err = tx.QueryRowContext(ctx, fmt.Sprintf("SELECT sessiondb_bm25(%[1]s, ?, '%[1]s', 'ranges', ?, sessiondb_source_ids(?)) FROM %[1]s WHERE %[1]s MATCH ? LIMIT 1", k.fts),
						k.rangeRows(), fmt.Sprintf("%d,%d", int64(math.MinInt64), through), src, quoteTerm(k.term)).Scan(&b)
				}
				if errors.Is(err, sql.ErrNoRows) {
					continue // the term has no summary, or no row holds it
				}
				if err != nil {
					return err
				}
				if len(b) < 8 || (len(b)-8)%rankRec != 0 {
					return fmt.Errorf("%s: a source summary of %d bytes", k, len(b))
				}
				m.digest, m.ranges = int64(binary.LittleEndian.Uint64(b)), b[8:]
				all = append(all, m)
			}
			return nil
		}()
		if errors.Is(err, sql.ErrNoRows) {
			return nil // no log runs: no summaries
		}
		if err != nil {
			return err
		}
		var moved []rankKey
		err = db.writeTx(ctx, 0, "summarize terms in source "+strconv.Quote(src), func(tx *sql.Tx) error {
			moved = moved[:0]
			for _, m := range all {
				var now rankSummary
				err := tx.QueryRowContext(ctx, "SELECT through, seen FROM sessiondb_rank_terms WHERE fts = ? AND term = ?", m.k.fts, m.k.term).Scan(&now.through, &now.seen)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return err
				}
				if err != nil || now.through != m.term.through || now.seen != m.term.seen {
					moved = append(moved, m.k) // another process changed it
					continue
				}
				if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO sessiondb_rank_sources (fts, term, source, through, seen, digest, ranges) VALUES (?, ?, ?, ?, ?, ?, ?)",
					m.k.fts, m.k.term, src, through, seen, m.digest, m.ranges); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		terms = moved
	}
	return nil
}

// frequentTerms lists the terms of index fts in at least
// max(rankMinDocs, rows/rankMinShare) rows, read from its vocabulary.
func (db *DB) frequentTerms(ctx context.Context, fts string) ([]string, error) {
	conn, err := db.read.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS temp.sessiondb_terms"); err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "CREATE VIRTUAL TABLE temp.sessiondb_terms USING fts5vocab(main, "+fts+", row)"); err != nil {
		return nil, err
	}
	defer conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS temp.sessiondb_terms")
	var rows int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+fts+"_docsize").Scan(&rows); err != nil {
		return nil, err
	}
	// A term in more than half of the rows is left out: its best rows tie
	// or nearly tie across most ranges, and one pass over them costs less.
	return collect(ctx, conn, "SELECT term FROM temp.sessiondb_terms WHERE doc >= ? AND doc <= ? ORDER BY term",
		max(rankMinDocs, rows/rankMinShare), rows/2)
}

// refreshRank brings the summaries of terms (every summarized term when
// nil) up to date: it raises keyRankThrough to the largest id, then for
// each term, mends the ranges holding rows changed since it was made and
// extends it to that id, and last empties the dirty log below what every
// summary has seen. Each term is computed in a read snapshot and written
// in a short transaction that checks nothing moved meanwhile, so Hermes
// writes between terms.
func (db *DB) refreshRank(ctx context.Context, terms []rankKey, progress Progress) error {
	if err := db.writeTx(ctx, 0, "refresh term summaries", func(tx *sql.Tx) error {
		var top sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT MAX(id) FROM messages").Scan(&top); err != nil {
			return err
		}
		cur, _, err := metaInt(ctx, tx, keyRankThrough)
		if err != nil || top.Int64 <= cur {
			return err
		}
		return setMeta(ctx, tx, keyRankThrough, strconv.FormatInt(top.Int64, 10))
	}); err != nil {
		return err
	}
	if terms == nil {
		rows, err := db.read.QueryContext(ctx, "SELECT fts, term FROM sessiondb_rank_terms ORDER BY fts, term")
		if err != nil {
			return db.mapErr("read term summaries", err)
		}
		for rows.Next() {
			var k rankKey
			if err := rows.Scan(&k.fts, &k.term); err != nil {
				rows.Close()
				return err
			}
			terms = append(terms, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return db.mapErr("read term summaries", err)
		}
	}
	for i, t := range terms {
		if err := db.refreshTerm(ctx, t); err != nil {
			return err
		}
		if progress != nil {
			progress(int64(i+1), int64(len(terms)))
		}
	}
	return db.writeTx(ctx, 0, "trim term summaries' log", func(tx *sql.Tx) error {
		var seen sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT MIN(seen) FROM sessiondb_rank_terms").Scan(&seen); err != nil || !seen.Valid {
			return err
		}
		gone, _, err := metaInt(ctx, tx, keyRankGone)
		if err != nil || seen.Int64 <= gone {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM sessiondb_rank_dirty WHERE seq <= ?", seen.Int64); err != nil {
			return err
		}
		return setMeta(ctx, tx, keyRankGone, strconv.FormatInt(seen.Int64, 10))
	})
}

// rankSummary is one row of sessiondb_rank_terms.
type rankSummary struct {
	found         bool
	through, seen int64
	ranges        []byte
}

// changed returns the ids, ascending, of the rows at or below the
// summary's through logged as changed after it was made (at most limit;
// -1: all).
func (s *rankSummary) changed(ctx context.Context, q querier, limit int) ([]int64, error) {
	return collectOf[int64](ctx, q, "SELECT DISTINCT id FROM sessiondb_rank_dirty WHERE seq > ? AND id <= ? ORDER BY id LIMIT ?",
		s.seen, s.through, limit)
}

// changedIn reports whether one of the ascending ids lies in [lo, hi].
func changedIn(ids []int64, lo, hi int64) bool {
	j := sort.Search(len(ids), func(k int) bool { return ids[k] >= lo })
	return j < len(ids) && ids[j] <= hi
}

// rangeHi is the last id an encoded range covers.
func rangeHi(rec []byte) int64 { return int64(binary.LittleEndian.Uint64(rec)) }

// refreshTerm brings one term's summary up to date (refreshRank).
func (db *DB) refreshTerm(ctx context.Context, k rankKey) error {
	for attempt := 0; attempt < 3; attempt++ {
		old, next, err := db.nextSummary(ctx, k)
		if err != nil {
			return db.mapErr("summarize "+k.String(), err)
		}
		if next == nil {
			return nil
		}
		if rankRefreshHook != nil {
			rankRefreshHook(k.term)
		}
		moved := false
		err = db.writeTx(ctx, 0, "summarize "+k.String(), func(tx *sql.Tx) error {
			var now rankSummary
			err := tx.QueryRowContext(ctx, "SELECT through, seen FROM sessiondb_rank_terms WHERE fts = ? AND term = ?", k.fts, k.term).Scan(&now.through, &now.seen)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			now.found = err == nil
			gone, _, err := metaInt(ctx, tx, keyRankGone)
			if err != nil {
				return err
			}
			// Another process changed it, or emptied the log past what
			// this one has seen: compute it again.
			if moved = now.found != old.found || now.through != old.through || now.seen != old.seen || gone > next.seen; moved {
				return nil
			}
			_, err = tx.ExecContext(ctx, "INSERT OR REPLACE INTO sessiondb_rank_terms (fts, term, through, seen, ranges) VALUES (?, ?, ?, ?, ?)",
				k.fts, k.term, next.through, next.seen, next.ranges)
			return err
		})
		if err != nil || !moved {
			return err
		}
	}
	return nil
}

// rankRefreshHook, when set (by tests), runs between refreshTerm's
// computing a term's next summary and its writing it: where another
// process may change the summary.
var rankRefreshHook func(term string)

// nextSummary reads k's summary and computes its next one, in one read
// snapshot; next is nil when it is up to date.
func (db *DB) nextSummary(ctx context.Context, k rankKey) (old, next *rankSummary, err error) {
	tx, err := db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	old = &rankSummary{}
	err = tx.QueryRowContext(ctx, "SELECT through, seen, ranges FROM sessiondb_rank_terms WHERE fts = ? AND term = ?", k.fts, k.term).Scan(&old.through, &old.seen, &old.ranges)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, nil, err
	}
	old.found = err == nil
	next = &rankSummary{}
	var target int64
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = ?), 0),"+
		" COALESCE((SELECT MAX(seq) FROM sessiondb_rank_dirty), 0)", keyRankThrough).Scan(&target, &next.seen); err != nil {
		return nil, nil, err
	}
	dirty, err := old.changed(ctx, tx, rankRepairMax+1)
	if err != nil {
		return nil, nil, err
	}
	if old.found && len(dirty) == 0 && old.through >= target {
		return old, nil, nil
	}
	next.through = max(target, old.through)
	ranges := func(spans []int64) ([]byte, error) {
		text := make([]string, len(spans))
		for i, v := range spans {
			text[i] = strconv.FormatInt(v, 10)
		}
		var b []byte
		err := tx.QueryRowContext(ctx, fmt.Sprintf("SELECT sessiondb_bm25(%[1]s, ?, '%[1]s', 'ranges', ?) FROM %[1]s WHERE %[1]s MATCH ? LIMIT 1", k.fts),
			k.rangeRows(), strings.Join(text, ","), quoteTerm(k.term)).Scan(&b)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil // no row holds it
		}
		return b, err
	}
	if !old.found || len(dirty) > rankRepairMax || len(old.ranges)%rankRec != 0 {
		next.ranges, err = ranges([]int64{math.MinInt64, next.through})
		return old, next, err
	}
	next.ranges, err = mendRanges(old.ranges, old.through, next.through, dirty, ranges)
	return old, next, err
}

// mendRanges returns the ranges of a summary made through `through`, with
// every range holding a dirty id (or the ids past the last range holding
// one) summarized again, and extended to target: the last range is
// summarized again together with the ids above through, so that the ranges
// a refresh adds do not stay small. ranges summarizes spans (lo, hi, lo,
// hi, ...) in one call.
func mendRanges(old []byte, through, target int64, dirty []int64, ranges func(spans []int64) ([]byte, error)) ([]byte, error) {
	n := len(old) / rankRec
	his := make([]int64, n)
	for i := range his {
		his[i] = rangeHi(old[i*rankRec:])
	}
	// slot i covers (his[i-1], his[i]]; slot n the ids after the last
	// range up to through. redo[i]: slot i is summarized again.
	var spans []int64
	redo := make([]bool, n+1)
	lo := int64(math.MinInt64)
	for i := 0; i <= n; i++ {
		hi := through
		if i < n {
			hi = his[i]
		}
		// The last range (or, with none, the ids up to through) takes the
		// new ids.
		grow := target > through && i >= n-1
		if grow {
			hi = target
		}
		if grow || changedIn(dirty, lo, hi) {
			redo[i] = true
			spans = append(spans, lo, hi)
		}
		if grow {
			redo = redo[:i+1]
			break
		}
		lo = hi + 1
	}
	fresh, err := ranges(spans)
	if err != nil || len(spans) == 0 {
		return old, err
	}
	out := make([]byte, 0, len(old)+len(fresh))
	for i, s := range redo {
		if !s {
			if i < n { // slot n is no range
				out = append(out, old[i*rankRec:(i+1)*rankRec]...)
			}
			continue
		}
		hi := spans[1]
		spans = spans[2:]
		for len(fresh) >= rankRec && rangeHi(fresh) <= hi {
			out = append(out, fresh[:rankRec]...)
			fresh = fresh[rankRec:]
		}
	}
	return out, nil
}

// quoteTerm makes a term an FTS5 string.
func quoteTerm(t string) string {
	return `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
}

// clearRank deletes the summaries of index fts ("" for every index), when
// the file has them, for an index about to be rebuilt: nothing in them
// would hold for the new one.
func clearRank(ctx context.Context, tx *sql.Tx, fts string) error {
	if ok, err := hasTable(ctx, tx, "sessiondb_rank_terms"); err != nil || !ok {
		return err
	}
	if sources, err := hasTable(ctx, tx, "sessiondb_rank_sources"); err != nil {
		return err
	} else if sources {
		if _, err := tx.ExecContext(ctx, "DELETE FROM sessiondb_rank_sources WHERE fts = ? OR ? = ''", fts, fts); err != nil {
			return err
		}
	}
	if fts != "" {
		_, err := tx.ExecContext(ctx, "DELETE FROM sessiondb_rank_terms WHERE fts = ?", fts)
		return err
	}
	// No summary left: the log stops (no through) and is emptied, its seq
	// moved on by one: a connection that kept row lengths through the log
	// (rank.c, RankConn) finds a gap and forgets them, as rows changed
	// from now until summaries are made again are not logged.
	return exec(ctx, tx, "DELETE FROM sessiondb_rank_terms", "DELETE FROM sessiondb_rank_dirty",
		"INSERT INTO sessiondb_rank_dirty(id) VALUES (0)", "DELETE FROM sessiondb_rank_dirty",
		"DELETE FROM state_meta WHERE key IN ('"+keyRankThrough+"', '"+keyRankGone+"')")
}

// rankLag is how far the summaries may fall behind before the live upkeep
// (upkeepRank) refreshes them: rows changed below their through (each
// costs a search one more range to read) and new rows (one pass over the
// new rows' matches), at least rankLagRows and a rankLagShare-th of the
// summarized rows.
var (
	rankLagDirty       = 32
	rankLagRows  int64 = 1000
	rankLagShare int64 = 50
)

// upkeepRank refreshes the summaries after mergeFTS, when they lag
// (rankLag). Like mergeFTS it reports nothing: the next pass tries again.
func (db *DB) upkeepRank(ctx context.Context) {
	var through, top sql.NullInt64
	var dirty int
	err := db.write.QueryRowContext(ctx, "SELECT (SELECT MIN(through) FROM sessiondb_rank_terms), (SELECT MAX(id) FROM messages),"+
		" (SELECT count(*) FROM (SELECT 1 FROM sessiondb_rank_dirty WHERE seq > (SELECT MIN(seen) FROM sessiondb_rank_terms) LIMIT ?))",
		rankLagDirty).Scan(&through, &top, &dirty)
	if err != nil || !through.Valid {
		return // no summaries
	}
	if dirty < rankLagDirty && top.Int64-through.Int64 < max(rankLagRows, through.Int64/rankLagShare) {
		return
	}
	_ = db.refreshRank(ctx, nil, nil)
}

// rankCheck is doctor's check of the term summaries: every range without a
// logged change must count the rows the index holds there (a source's
// summary counts every source's rows too). It checks the three largest
// summaries, every one when full; not a source's summary that searches no
// longer use (the log was trimmed past it).
func rankCheck(ctx context.Context, db *sql.DB, full bool) (name, status, detail, fix string) {
	name, fix = "term summaries", "sessiondb optimize"
	limit := 3
	if full {
		limit = -1
	}
	type summary struct {
		rankKey
		rankSummary
		source string
	}
	stmt := "SELECT fts, term, NULL, through, seen, ranges FROM sessiondb_rank_terms"
	sources, err := hasTable(ctx, db, "sessiondb_rank_sources")
	if err != nil {
		return name, CheckFail, err.Error(), fix
	}
	// A source's summary that searches no longer use: the log was trimmed
	// past it (a refresh of the terms' summaries) or stopped.
	const unused = "seen < COALESCE((SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = '" + keyRankGone + "'), 0)" +
		" OR through > COALESCE((SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = '" + keyRankThrough + "'), -1)"
	stale := 0
	if sources {
		stmt += " UNION ALL SELECT fts, term, source, through, seen, ranges FROM sessiondb_rank_sources WHERE NOT (" + unused + ")"
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sessiondb_rank_sources WHERE "+unused).Scan(&stale); err != nil {
			return name, CheckFail, err.Error(), fix
		}
	}
	var all []summary
	rows, err := db.QueryContext(ctx, "SELECT * FROM ("+stmt+") ORDER BY length(ranges) DESC LIMIT ?", limit)
	if err != nil {
		return name, CheckFail, err.Error(), fix
	}
	for rows.Next() {
		var s summary
		var src sql.NullString
		if err := rows.Scan(&s.fts, &s.term, &src, &s.through, &s.seen, &s.ranges); err != nil {
			rows.Close()
			return name, CheckFail, err.Error(), fix
		}
		if src.Valid {
			s.source = " in source " + strconv.Quote(src.String)
		}
		all = append(all, s)
	}
	rows.Close()
	ranges := 0
	for _, s := range all {
		if len(s.ranges)%rankRec != 0 {
			return name, CheckFail, fmt.Sprintf("%s%s: %d bytes, not whole ranges", s.rankKey, s.source, len(s.ranges)), fix
		}
		dirty, err := s.changed(ctx, db, -1)
		if err != nil {
			return name, CheckFail, err.Error(), fix
		}
		lo := int64(math.MinInt64)
		for b := s.ranges; len(b) > 0; b = b[rankRec:] {
			hi := rangeHi(b)
			n := int64(int32(binary.LittleEndian.Uint32(b[8:])))
			if !changedIn(dirty, lo, hi) {
				var got int64
				err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+s.fts+" WHERE "+s.fts+" MATCH ? AND rowid BETWEEN ? AND ?",
					quoteTerm(s.term), lo, hi).Scan(&got)
				if err != nil {
					return name, CheckFail, err.Error(), fix
				}
				if got != n {
					return name, CheckFail, fmt.Sprintf("%s%s: ids %d to %d counted %d rows, the index holds %d (searches for it would rank wrongly)", s.rankKey, s.source, lo, hi, n, got), fix
				}
				ranges++
			}
			lo = hi + 1
		}
	}
	detail = fmt.Sprintf("%d ranges of %d summaries agree with the index", ranges, len(all))
	if stale > 0 {
		// Not a fault: those searches pass over every row, as without.
		return name, CheckOK, fmt.Sprintf("%s; %d summaries of rare sources no longer used since the file changed (sessiondb optimize makes them again)", detail, stale), ""
	}
	return name, CheckOK, detail, ""
}
