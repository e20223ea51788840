package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// Search finds messages the way Hermes' search_messages does (see
// DESIGN.md, "Search"): the query is sanitised, then answered by the word
// index, or for CJK text by the bigram index, the trigram index or a
// substring scan; tool-role and reasoning searches and a stale index use a
// boolean LIKE scan; a pending backfill is topped up from the rows not yet
// indexed; a Latin query with no hit retries the CJK and trigram indexes.
//
// A query with more than sessiondb.MaxQueryTerms terms (after repeats are
// collapsed) is refused with EINVALID. The search runs under ctx's
// deadline, if any: SQLite is interrupted when it passes, and the error is
// ETIMEOUT, saying how to narrow the query.
func (db *DB) Search(ctx context.Context, query string, o sessiondb.SearchOptions) ([]sessiondb.SearchHit, error) {
	start := time.Now()
	q, fields, o, err := sessiondb.PrepareSearch(query, o)
	if err != nil {
		return nil, err
	}
	if q == "" {
		return []sessiondb.SearchHit{}, nil
	}
	s := &searcher{db: db, o: o}
	hits, err := s.run(ctx, q)
	if table, ok := err.(errDamagedIndex); ok {
		// Search fail-open: rebuild the damaged indexes (gated: search tops
		// up from the rows not yet indexed) and answer again.
		if err := db.resetFTS(ctx, "search: reset damaged index "+string(table)); err != nil {
			return nil, err
		}
		if err := db.autoBackfill(ctx); err != nil {
			return nil, err
		}
		hits, err = (&searcher{db: db, o: o}).run(ctx, q)
	}
	if err != nil {
		return nil, db.searchErr(ctx, start, "search", err)
	}
	if sessiondb.WantsContext(fields) {
		if err := db.addContext(ctx, hits); err != nil {
			return nil, db.searchErr(ctx, start, "search context", err)
		}
	}
	if hits == nil {
		hits = []sessiondb.SearchHit{}
	}
	return hits, nil
}

// searchErr maps a search's error: past ctx's deadline it is ETIMEOUT,
// saying how to narrow the query; any other error is mapped by mapErr.
func (db *DB) searchErr(ctx context.Context, start time.Time, op string, err error) error {
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return db.mapErr(op, err)
	}
	return sessiondb.SearchTimeout(ctx, start, op)
}

// searcher carries one search's options and the index state it read.
type searcher struct {
	db *DB
	o  sessiondb.SearchOptions

	stale          bool  // fts_stale: word and trigram indexes detached
	gapLow, gapHi  int64 // ids (gapLow, gapHi] not yet in the word/trigram indexes
	cjkLive        bool
	trigramPresent bool
}

func (s *searcher) run(ctx context.Context, q string) ([]sessiondb.SearchHit, error) {
	if s.o.IncludeReasoning || slices.Contains(s.o.Roles, sessiondb.RoleTool) {
		return s.likeBoolean(ctx, q)
	}
	if err := s.readState(ctx); err != nil {
		return nil, err
	}
	if s.stale {
		return s.likeBoolean(ctx, q)
	}
	cjk := sessiondb.ContainsCJK(q)
	if cjk {
		hits, err := s.cjk(ctx, q)
		if err != nil {
			return nil, err
		}
		return s.topUp(ctx, q, hits)
	}
	hits, err := s.words(ctx, q)
	if err != nil {
		return nil, err
	}
	if len(hits) == 0 && s.o.Offset > 0 {
		// A page past the last hit: the retry below is for a query the
		// word index finds nothing for, so look at the first page.
		first := *s
		first.o.Offset, first.o.Limit = 0, 1
		if hits, err = first.words(ctx, q); err != nil || len(hits) > 0 {
			return nil, err
		}
	}
	if len(hits) == 0 {
		// Latin glued to CJK ("youer" in "修改youer服务端") is one unicode61
		// token; the bigram and trigram indexes split it.
		fb := sessiondb.QuoteTokens(strings.TrimSpace(strings.Trim(q, `"`)))
		if s.cjkLive {
			if hits, err = s.match(ctx, "messages_fts_cjk", fb); err != nil {
				return nil, err
			}
		}
		if len(hits) == 0 && s.trigramPresent && sessiondb.TrigramEligible(q) {
			if hits, err = s.match(ctx, "messages_fts_trigram", fb); err != nil {
				return nil, err
			}
		}
	}
	return hits, nil
}

// words answers q from the word index, topped up while a backfill is
// pending.
func (s *searcher) words(ctx context.Context, q string) ([]sessiondb.SearchHit, error) {
	hits, err := s.match(ctx, "messages_fts", q)
	if err != nil {
		return nil, err
	}
	return s.topUp(ctx, q, hits)
}

// topUp adds to a short page the hits among the ids not yet indexed.
func (s *searcher) topUp(ctx context.Context, q string, hits []sessiondb.SearchHit) ([]sessiondb.SearchHit, error) {
	if s.gapHi == 0 || len(hits) >= s.o.Limit {
		return hits, nil
	}
	gap, err := s.gap(ctx, q, hits)
	if err != nil {
		return nil, err
	}
	return append(hits, gap...), nil
}

// readState reads which indexes can answer right now, with one statement:
// the index state keys of state_meta, then a row without a key telling
// which of the CJK (2) and trigram (1) tables exist.
func (s *searcher) readState(ctx context.Context) error {
	rows, err := s.db.read.QueryContext(ctx, `SELECT key, value FROM state_meta WHERE key IN (?, ?, ?, ?, ?)
		UNION ALL SELECT NULL, COALESCE(SUM(CASE name WHEN 'messages_fts_cjk' THEN 2 ELSE 1 END), 0) FROM sqlite_master
		WHERE type = 'table' AND name IN ('messages_fts_cjk', 'messages_fts_trigram')`,
		keyStale, keyCJKStale, keyCJKHighWater, keyHighWater, keyProgress)
	if err != nil {
		return err
	}
	defer rows.Close()
	var tables int
	var cjkStale, cjkPending, gap bool
	var highWater, progress string
	for rows.Next() {
		var k, v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		switch k.String {
		case "":
			tables, _ = strconv.Atoi(v.String)
		case keyStale:
			s.stale = true
		case keyCJKStale:
			cjkStale = true
		case keyCJKHighWater:
			cjkPending = true
		case keyHighWater:
			gap, highWater = true, v.String
		case keyProgress:
			progress = v.String
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if gap {
		fmt.Sscan(highWater, &s.gapHi)
		fmt.Sscan(progress, &s.gapLow)
	}
	s.cjkLive = tables&2 != 0 && !cjkStale && !cjkPending && !s.db.legacy()
	s.trigramPresent = tables&1 != 0
	return nil
}

// cjk routes a query holding CJK text (sessiondb.RouteCJK). The first
// index that runs answers, even with nothing.
func (s *searcher) cjk(ctx context.Context, q string) ([]sessiondb.SearchHit, error) {
	raw := strings.TrimSpace(strings.Trim(q, `"`))
	indexed := !sessiondb.WantsUnindexed(s.o)
	switch sessiondb.RouteCJK(raw, s.cjkLive && indexed, s.trigramPresent && indexed, fts5cjk.IsCJK) {
	case sessiondb.RouteBigram:
		return s.match(ctx, "messages_fts_cjk", sessiondb.QuoteTokens(raw))
	case sessiondb.RouteOneChar:
		return s.oneCJK(ctx, []rune(raw)[0])
	case sessiondb.RouteTrigram:
		return s.match(ctx, "messages_fts_trigram", sessiondb.QuoteTokens(raw))
	}
	return s.likeAny(ctx, raw)
}

const hitColumns = "m.id, m.session_id, m.role, %s AS snippet, m.timestamp, m.tool_name, s.source, s.model, s.started_at"

// filters returns the WHERE clauses every route shares.
func (s *searcher) filters() ([]string, []any) {
	var where []string
	var args []any
	if !s.o.IncludeInactive {
		where = append(where, "(m.active = 1 OR m.compacted = 1)")
	}
	where = append(where, "COALESCE(m.display_kind, '') <> 'hidden'")
	in := func(col, op string, vals []string) {
		where = append(where, col+" "+op+" ("+placeholders(len(vals))+")")
		for _, v := range vals {
			args = append(args, v)
		}
	}
	if s.o.Sources != nil {
		in("s.source", "IN", s.o.Sources)
	}
	if s.o.ExcludeSources != nil {
		in("s.source", "NOT IN", s.o.ExcludeSources)
	}
	if len(s.o.Roles) > 0 {
		in("m.role", "IN", s.o.Roles)
	}
	return where, args
}

func placeholders(n int) string {
	if n == 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// match runs an FTS5 MATCH on table. A query FTS5 cannot parse finds
// nothing (as in Hermes), never an error.
func (s *searcher) match(ctx context.Context, table, q string) ([]sessiondb.SearchHit, error) {
	hits, err := s.matchRanked(ctx, table, q, true)
	if err == errSnippets {
		hits, err = s.matchRanked(ctx, table, q, false)
	}
	if err == errIncomplete {
		hits, err = s.matchExact(ctx, table, q)
	}
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrError {
		return nil, nil // fts5 syntax error, unknown column filter, …
	}
	if errors.As(err, &se) && se.Code == sqlite3.ErrCorrupt && s.db.indexDamaged(ctx, table) {
		return nil, errDamagedIndex(table)
	}
	return hits, err
}

// snippetTexts are, for each index of the current layout, the texts its
// content view (schema/*.sql) gives for a row, as expressions over the
// hit's message row m. TestSnippetTexts checks them against the views.
var snippetTexts = map[string]string{
	"messages_fts":         "CASE WHEN m.role = 'tool' THEN substr(COALESCE(m.content, ''), 1, 8192) ELSE m.content END, m.tool_name, m.tool_calls",
	"messages_fts_cjk":     "m.content, m.tool_name, m.tool_calls",
	"messages_fts_trigram": "m.content, m.tool_name",
}

// snippetSQL is a hit's snippet of table: what FTS5's snippet(table, -1,
// '>>>', '<<<', '...', 40) returns, made by fts5cjk's sessiondb_snippet,
// which tokenizes the row's text once instead of twice. On the current
// layout it is handed the row's texts from the message row the search
// joins, instead of FTS5 reading them again through the content view (a
// query per row). The legacy layout's indexes keep their own text.
func (s *searcher) snippetSQL(table string) string { return s.snippetWith("sessiondb_snippet", table) }

// snippetWith is snippetSQL made by fn, sessiondb_snippet or
// sessiondb_snippet_one (a query whose phrases stand for one).
func (s *searcher) snippetWith(fn, table string) string {
	texts := ""
	if t, ok := s.rowTexts(table); ok {
		texts = ", " + t
	}
	return fn + "(" + table + ", -1, '>>>', '<<<', '...', 40" + texts + ")"
}

// rowTexts is table's snippetTexts, when the file's layout has them (not
// the legacy one, whose indexes keep their own text).
func (s *searcher) rowTexts(table string) (string, bool) {
	t, ok := snippetTexts[table]
	return t, ok && !s.db.legacy()
}

// matchSQL selects the hit columns of the rows of table matching q, with
// the filters applied, or (filtered false) returned as a last 0/1 column.
func (s *searcher) matchSQL(table, snippet, q string, filtered bool) (string, []any) {
	where, fargs := s.filters()
	cond := strings.Join(where, " AND ")
	stmt := "SELECT " + fmt.Sprintf(hitColumns, snippet)
	from := " FROM " + table + " JOIN messages m ON m.id = " + table + ".rowid JOIN sessions s ON s.id = m.session_id" +
		" WHERE " + table + " MATCH ?"
	if filtered {
		return stmt + from + " AND " + cond, append([]any{q}, fargs...)
	}
	return stmt + ", CASE WHEN " + cond + " THEN 1 ELSE 0 END" + from, append(fargs, q)
}

// matchExact orders by bm25 (or by time), scoring every match.
func (s *searcher) matchExact(ctx context.Context, table, q string) ([]sessiondb.SearchHit, error) {
	order := " ORDER BY rank"
	switch strings.ToLower(strings.TrimSpace(s.o.Sort)) {
	case "newest":
		order = " ORDER BY m.timestamp DESC, rank"
	case "oldest":
		order = " ORDER BY m.timestamp ASC, rank"
	}
	stmt, args := s.matchSQL(table, s.snippetSQL(table), q, true)
	return s.query(ctx, stmt+order+" LIMIT ? OFFSET ?", append(args, s.o.Limit, s.o.Offset)...)
}

// onePhrase matches an FTS5 query of one phrase: one bare word or one
// quoted string, either one perhaps a prefix.
var onePhrase = regexp.MustCompile(`^` + phraseRE + `\*?$`)

// phraseNotPhrase matches "A NOT B", A and B each one phrase, neither a
// prefix. Its bm25 is A's alone: B's idf is multiplied by B's frequency in
// every matching row, 0, and adding 0 changes no sum; so its page is A's
// ranking without the rows that hold B (matchTop's not). (A prefix B is
// left to FTS5: each row checked against it would merge the doclists of
// all its terms again.)
var phraseNotPhrase = regexp.MustCompile(`^(` + phraseRE + `) NOT (` + phraseRE + `)$`)

// phrasePair matches "A OR B", "A AND B" and "A B", A and B each one
// phrase, neither a prefix.
var phrasePair = regexp.MustCompile(`^(` + phraseRE + `) (?:(OR|AND) )?(` + phraseRE + `)$`)

// twoPhrases returns the sessiondb_bm25 mode for a query of two phrases
// ORed ("topor") or ANDed ("topand"), and its phrases unquoted and in
// lower case (the index's terms, when each is one word); "" for any other
// query.
func twoPhrases(q string) (mode string, terms []string) {
	m := phrasePair.FindStringSubmatch(q)
	if m == nil {
		return "", nil
	}
	mode = "topand"
	if m[2] == "OR" {
		mode = "topor"
	}
	for _, p := range []string{m[1], m[3]} {
		if strings.HasPrefix(p, `"`) {
			p = strings.ReplaceAll(p[1:len(p)-1], `""`, `"`)
		}
		terms = append(terms, strings.ToLower(p))
	}
	return mode, terms
}

// phraseRE is one bare word or one quoted string.
const phraseRE = `(?:"(?:[^"]|"")*"|[\p{L}\p{N}_]+)`

// summarized returns how many of terms (distinct) of index table have a
// range summary, and how many distinct terms there are; none when the file
// has no summaries, or on any error: the other route answers.
func (s *searcher) summarized(ctx context.Context, table string, terms []string) (have, distinct int) {
	seen := map[string]bool{}
	args := []any{table}
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			args = append(args, t)
		}
	}
	if len(seen) == 0 {
		return 0, 0
	}
	err := s.db.read.QueryRowContext(ctx, "SELECT count(*) FROM sessiondb_rank_terms WHERE fts = ? AND term IN ("+
		placeholders(len(seen))+")", args...).Scan(&have)
	if err != nil {
		return 0, len(seen)
	}
	return have, len(seen)
}

// anySummarized reports whether one of terms of index table has a range
// summary.
func (s *searcher) anySummarized(ctx context.Context, table string, terms []string) bool {
	have, _ := s.summarized(ctx, table, terms)
	return have > 0
}

// boundingTerms returns those of terms of index table whose summaries
// bound rows well: on the CJK index a Latin word's summary is made to count
// its rows (countOnly), so a query of a Latin word and a CJK phrase without
// a summary is sorted by the statement, which is faster there.
func boundingTerms(table string, terms []string) []string {
	var out []string
	for _, t := range terms {
		if !countOnly(table, t) {
			out = append(out, t)
		}
	}
	return out
}

// prefixWord matches a prefix query of ASCII letters and digits, which the
// word index's tokenizer (unicode61) makes one token of, in lower case.
var prefixWord = regexp.MustCompile(`^[A-Za-z0-9]+\*$`)

// spacedPhrase reports whether q holds a quoted phrase of several words
// (or bigrams): 'topall' ranks terms only, so the statement answers it.
// (A doubled quote inside a phrase turns the state off and on again.)
func spacedPhrase(q string) bool {
	in := false
	for i := 0; i < len(q); i++ {
		switch {
		case q[i] == '"':
			in = !in
		case in && q[i] == ' ':
			return true
		}
	}
	return false
}

// rankSumMax is rank.c's RANK_SUM_MAX: the most terms a prefix may stand
// for to be ranked from their summaries.
const rankSumMax = 16

// prefixTerms returns the terms of index table that begin with word, in
// the index's order (fts5cjk's sessiondb_prefix_terms reads them from the
// index's pages); nil when more than rankSumMax, or when the index cannot
// be read that way.
func (s *searcher) prefixTerms(ctx context.Context, table, word string) ([]string, error) {
	var js sql.NullString
	if err := s.db.read.QueryRowContext(ctx, "SELECT sessiondb_prefix_terms(?, ?, ?)", table, word, rankSumMax).Scan(&js); err != nil {
		return nil, err
	}
	var terms []string
	if js.Valid {
		if err := json.Unmarshal([]byte(js.String), &terms); err != nil {
			return nil, err
		}
	}
	return terms, nil
}

// bigrams returns the tokens of the CJK index for q, quoted or not, when
// it is a run of two or more CJK characters (a phrase of its bigrams), and
// nil otherwise.
func bigrams(q string) []string {
	r := []rune(strings.Trim(q, `"`))
	if len(r) < 2 || !fts5cjk.IsCJK(r[0]) {
		return nil
	}
	var out []string
	for i := 1; i < len(r); i++ {
		if !fts5cjk.IsCJK(r[i]) {
			return nil
		}
		out = append(out, string(r[i-1:i+1]))
	}
	return out
}

// errIncomplete: matchRanked cannot vouch for its page; score every match.
var errIncomplete = errors.New("ranked page incomplete")

// errSnippets: matchRanked's page holds a row it did not make a snippet
// for; run it again making every snippet.
var errSnippets = errors.New("ranked page lacks snippets")

// rankSlack is how many filtered-out rows (inactive, hidden, other
// sources) matchRanked tolerates among the best matches.
const rankSlack = 8

// matchRanked answers a bm25-ordered page while scoring only the matches
// that can reach it: rows are ordered by sessiondb_bm25(K) (fts5cjk/rank.c),
// which equals bm25 for the K best matches of the index, in the same order,
// and ranks every other match last. The K best are the first K rows of the
// stream; the filters are read per row, so the page is exact when it fills
// within those K rows, and errIncomplete otherwise.
//
// A query of the word index of one phrase that is not a prefix goes to
// matchTop, and so does a run of CJK characters on the CJK index one of
// whose bigrams has a range summary (for runs of bigrams with few matches
// matchTop was slower than the statement below): the function
// finds the K best in one read of the phrase's rows and returns their ids,
// and only those rows are read again. When filtered-out rows leave the
// page short within the K best, matchTop asks again with a larger K, from
// the share of rows that passed the filters (at least twice K, up to
// rankMaxK), before errIncomplete.
//
// A query of two phrases ORed or ANDed, neither a prefix, one of whose
// words has a summary, goes to matchTop once with mode 'topor' or
// 'topand' (rank.c's rankOr); when the function does not rank it, or its
// page does not fill, the statement below answers. Any other query of
// several phrases, none a prefix, goes to matchTop with 'topall' (rank.c's
// rankAll: ranked when each phrase is a term and one has a summary, which
// counts it), and otherwise is sorted by FTS5 (rank MATCH). A prefix of ASCII
// letters and digits standing for one term is searched as that term; for
// 2 to rankSumMax terms, their summaries rank them once ('topsum', see
// prefixTerms and DESIGN.md, "A prefix"). Any other prefix is
// read ahead by the function, which then knows the K best before the first
// row: only those pass the WHERE term, and SQLite sorts them, so joins run
// for about K rows and no sort holds every match (the prefix's rows are
// merged once per FTS5 cursor, so fetching the K rows by id, each a cursor,
// would merge them K times). With pageSnippets, the function also tells
// each row's place in that order, and only the rows placed on the page get
// a snippet (each one tokenizes the row's text again): should
// filtered-out rows push a page row past them, errSnippets asks for a run
// that makes every snippet. Both sorts keep tied rows in rowid order.
func (s *searcher) matchRanked(ctx context.Context, table, q string, pageSnippets bool) ([]sessiondb.SearchHit, error) {
	switch strings.ToLower(strings.TrimSpace(s.o.Sort)) {
	case "newest", "oldest":
		return nil, errIncomplete
	}
	want := s.o.Offset + s.o.Limit
	k := want + rankSlack
	one := onePhrase.MatchString(q)
	pos, not := q, ""
	if m := phraseNotPhrase.FindStringSubmatch(q); m != nil {
		pos, not = m[1], m[2]
	}
	top := table == "messages_fts" && (one || not != "") && !strings.HasSuffix(pos, "*")
	// On the CJK index only a run of CJK characters every bigram of which
	// has a range summary (rank.c then reads it from the least): otherwise
	// the statement below is faster there (a run with a bigram in too few
	// rows for a summary has few rows).
	if table == "messages_fts_cjk" && one {
		if have, n := s.summarized(ctx, table, bigrams(q)); n > 0 && have == n {
			top = true
		}
	}
	// topMode is matchTop's mode when a route below chose one ('topsum',
	// 'topall'); "" leaves it to the source filter ('topterm' or 'top').
	prefix, topMode := "", ""
	if table == "messages_fts" && prefixWord.MatchString(q) {
		// A prefix: the terms it stands for, read from the index's pages.
		// One: the query of that term is the prefix's, row for row. More:
		// ranked as one phrase from their summaries ('topsum'), else by
		// the statement below, as are more than rankSumMax.
		word := strings.ToLower(strings.TrimSuffix(q, "*"))
		terms, err := s.prefixTerms(ctx, table, word)
		if err != nil {
			return nil, err
		}
		if len(terms) > 0 {
			ored := make([]string, len(terms))
			for i, t := range terms {
				ored[i] = quoteTerm(t)
			}
			top, pos, prefix = true, strings.Join(ored, " OR "), word
			if len(terms) > 1 {
				topMode = "topsum" // every source's rows: rankOr takes no allowed ids
			}
		}
	}
	if mode, terms := twoPhrases(q); !top && mode != "" && s.anySummarized(ctx, table, boundingTerms(table, terms)) {
		narrow, err := s.fewSourceRows(ctx)
		if err != nil {
			return nil, err
		}
		if !narrow {
			// One try: when the function did not rank (it gave up, or
			// no phrase had a usable summary) or the page did not fill
			// within the K best, the statement below answers.
			hits, _, err := s.matchTop(ctx, table, q, "", "", k, mode, "")
			if err != errIncomplete {
				return hits, err
			}
		}
	}
	if !top && !one && not == "" && !strings.Contains(q, "*") && !spacedPhrase(q) && table != "messages_fts_trigram" &&
		s.o.Sources == nil && s.o.ExcludeSources == nil && len(s.o.Roles) == 0 {
		// Several terms: counted from their summaries, every matching
		// row read once ('topall'), instead of FTS5 sorting every match by
		// bm25. Not with a source or role filter: asked again for more
		// rows, it would read every matching row again, which costs more
		// than the sort.
		top, topMode = true, "topall"
	}
	if top {
		// The query is one phrase, not a prefix (or a prefix's terms): a
		// one-token one may use a summary. Rare sources rank only their
		// own rows.
		mode, fallback := topMode, topMode != ""
		if !fallback {
			narrow, err := s.fewSourceRows(ctx)
			if err != nil {
				return nil, err
			}
			mode = "topterm"
			if narrow {
				mode = "top"
			}
		}
		maxK, notCond := rankMaxK, ""
		if not != "" {
			// chosen once: the loop below may rank again with a larger K
			maxK, notCond = notMaxK, s.notFilter(ctx, table, pos, not)
		}
		for {
			hits, passed, err := s.matchTop(ctx, table, pos, not, notCond, k, mode, prefix)
			if fallback && err == errIncomplete && passed < 0 {
				break // not ranked: the statement below
			}
			if err != errIncomplete || k >= maxK {
				return hits, err
			}
			// Ask for as many rows again as the share passing the filters
			// suggests (and a fifth more), at least twice as many.
			next := k * 8
			if passed > 0 {
				next = max(2*k, int(float64(want+rankSlack)*float64(k)/float64(passed)*1.2))
			}
			k = min(next, maxK)
		}
	}
	pageSnippets = pageSnippets && one
	snippet := s.snippetSQL(table)
	if pageSnippets {
		place := fmt.Sprintf("IFNULL(sessiondb_bm25(%s, %d, '%s', 'place'), %d)", table, k, table, s.o.Offset)
		snippet = fmt.Sprintf("CASE WHEN %s BETWEEN %d AND %d THEN %s END", place, s.o.Offset, want-1, snippet)
	}
	stmt, args := s.matchSQL(table, snippet, q, false)
	if one {
		score := fmt.Sprintf("sessiondb_bm25(%s, %d, '%s')", table, k, table)
		stmt += " AND " + score + " < 1e300 ORDER BY " + score
	} else {
		stmt += " AND " + table + ".rank MATCH ? ORDER BY rank"
		args = append(args, fmt.Sprintf("sessiondb_bm25(%d, '%s')", k, table))
	}
	return s.rankedPage(ctx, stmt, args, k, pageSnippets)
}

// fewSourceRows reports whether the search is limited to sources that hold
// at most an eighth of the messages (by their sessions' message counts):
// then matchTop ranks only their rows, instead of asking again and again
// for more of the best rows of every source.
func (s *searcher) fewSourceRows(ctx context.Context) (bool, error) {
	if len(s.o.Sources) == 0 {
		return false, nil
	}
	args := make([]any, len(s.o.Sources))
	for i, v := range s.o.Sources {
		args[i] = v
	}
	var rows, all sql.NullInt64
	err := s.db.read.QueryRowContext(ctx, "SELECT (SELECT SUM(message_count) FROM sessions WHERE source IN ("+
		placeholders(len(args))+")), (SELECT MAX(id) FROM messages)", args...).Scan(&rows, &all)
	if err != nil {
		return false, err
	}
	return rows.Int64*8 <= all.Int64, nil
}

// rankMaxK is the largest K matchTop asks for; rank.c scores every row
// past 100,000.
const rankMaxK = 100_000

// notMaxK is the largest K matchTop asks for "A NOT B": each of the K
// rows is looked up in B's rows (a seek in every segment, about 250 µs for
// a frequent B at 1M), so when B holds most of A's best rows FTS5's own
// NOT, one merge of the two doclists, answers instead. "docker NOT docker"
// on the 1M bench file: past the 10 s deadline with rankMaxK, 0.22–0.33 s
// with this (0.09–0.14 s without the route).
const notMaxK = 256

// rankSeekMicros is what matchTop reckons looking one page row up in the
// index costs, per token of the phrase (a seek in each of some 20 segments
// for each token: 40–60 µs measured on 100k and 1M messages). The page's
// snippets come from those lookups when they cost less than another pass
// over the phrase's rows would, which the ranking just timed.
var rankSeekMicros = 40

// matchTop answers a bm25-ordered page for a query of one phrase that is
// not a prefix (mode 'topterm'), or of two phrases ORed or ANDed ('topor',
// 'topand'). With mode 'top' (narrow), the function ranks only the rows of
// the sessions of the chosen sources (their ids, read in the same
// statement).
// One statement (one snapshot) does the ranking:
// sessiondb_bm25(t, K, 't', 'top'), called on the query's first row, reads
// the phrase's rows once and returns their number and the ids of the K best
// (ties with the K-th included, unless ranges of them were skipped) in rank
// order; json_each walks the ids (its key is the row's place), each id is
// joined to its message and session for the filters, and a window numbers
// the rows that pass them; only the page's rows are read in full. SQLite's
// cost is K rows, not every match.
// The first row comes back too, as a marker carrying how many rows the
// array held: a short page is complete when the array held fewer than K
// rows (every match), and errIncomplete otherwise. The function fails with
// SQLITE_RANGE when it did not read the rows ahead (a K past rankMaxK, a
// phrase with over a million rows that can still rank): errIncomplete too.
//
// When looking the page's rows up in the index costs less than reading the
// phrase's rows again (rankSeekMicros), the same statement makes the page's
// snippets that way; otherwise pageSnippets makes them in one pass over the
// matches. passed is how many of the array's rows passed the filters, -1
// when the function did not rank. A non-empty not also rejects the rows
// holding that phrase, by notCond (notFilter's condition, its argument).
func (s *searcher) matchTop(ctx context.Context, table, q, not, notCond string, k int, mode, prefix string) (hits []sessiondb.SearchHit, passed int, err error) {
	narrow := mode == "top"
	where, fargs := s.filters()
	if not != "" {
		where = append(where, notCond)
		fargs = append(fargs, not)
	}
	args := []any{q}
	// The function's arguments after the mode: the ids of a rare source's
	// rows ('top'), the prefix whose terms q must still be in the
	// statement's snapshot, the query's own text, through which 'topall'
	// reads its rows, and the one source those ids are of, whose summaries
	// may answer; NULL when not used.
	allowed, prefixArg, queryArg, sourceArg := "NULL", "NULL", "NULL", "NULL"
	if narrow {
		// Numbered: these come before ?1 in the text, and the filters'
		// plain ? after them take the following numbers.
		nums := make([]string, len(s.o.Sources))
		for i, v := range s.o.Sources {
			nums[i] = fmt.Sprintf("?%d", i+2)
			args = append(args, v)
		}
		allowed = "sessiondb_source_ids(" + strings.Join(nums, ", ") + ")"
		if len(nums) == 1 {
			sourceArg = nums[0]
		}
	}
	if prefix != "" {
		args = append(args, prefix)
		prefixArg = fmt.Sprintf("?%d", len(args))
	}
	if mode == "topall" {
		queryArg = "?1"
	}
	fn := "sessiondb_snippet"
	if mode == "topsum" {
		fn = "sessiondb_snippet_one" // the terms stand for one phrase
	}
	page := fmt.Sprintf("w.ok AND w.n > %d AND w.n <= %d", s.o.Offset, s.o.Offset+s.o.Limit)
	// The function lists each kept row's instances of the phrase ("inst")
	// for a one-phrase query: a page row's snippet is then made from them
	// and the row's texts, with no lookup of the row in the index ("ins").
	// Otherwise, from a term's range summary the function read few rows,
	// so its time says nothing of a pass over all of them: seek ("seek").
	ins := "0"
	texts, ok := s.rowTexts(table)
	if ok && fn == "sessiondb_snippet" {
		ins = "json_type(x, '$.inst') IS NOT NULL"
	}
	seek := fmt.Sprintf("(w.us >= %d * w.size OR w.sk OR w.ins)", s.o.Limit*rankSeekMicros)
	snippet := fmt.Sprintf("CASE WHEN %[1]s AND w.ins THEN (SELECT sessiondb_snippet_at(%[4]s, -1, '>>>', '<<<', '...', 40, json_extract(r.x, '$.inst[' || w.place || ']'), w.size, %[5]s) FROM %[4]s WHERE %[4]s.rowid = m.id)"+
		" WHEN %[1]s AND %[2]s THEN (SELECT %[3]s FROM %[4]s WHERE %[4]s MATCH ?1 AND %[4]s.rowid = m.id) END",
		page, seek, s.snippetWith(fn, table), table, texts)
	stmt := fmt.Sprintf("WITH r0(x) AS MATERIALIZED (SELECT sessiondb_bm25(%[1]s, %[2]d, '%[1]s', '%[3]s', %[4]s, %[5]s, %[6]s, %[7]s) FROM %[1]s WHERE %[1]s MATCH ?1 LIMIT 1),"+
		" r(x, ins) AS MATERIALIZED (SELECT x, %[8]s FROM r0)",
		table, k, mode, allowed, prefixArg, queryArg, sourceArg, ins) +
		" SELECT " + fmt.Sprintf(hitColumns, snippet) + ", " + page + ", w.total, w.passed, " + seek +
		" FROM (SELECT id, place, ok, us, size, sk, ins, sum(ok) OVER (ORDER BY place ROWS UNBOUNDED PRECEDING) AS n," +
		" count(*) OVER () AS total, sum(ok) OVER () AS passed" +
		" FROM (SELECT m.id, top.key AS place, json_extract(r.x, '$.us') AS us, json_extract(r.x, '$.size') AS size, json_extract(r.x, '$.seek') AS sk, r.ins, CASE WHEN " + strings.Join(where, " AND ") + " THEN 1 ELSE 0 END AS ok" +
		" FROM r, json_each(r.x, '$.ids') AS top" +
		" JOIN messages m ON m.id = top.value JOIN sessions s ON s.id = m.session_id)) AS w" +
		" CROSS JOIN r JOIN messages m ON m.id = w.id JOIN sessions s ON s.id = m.session_id" +
		" WHERE (" + page + ") OR w.place = 0 ORDER BY w.place"
	rows, err := runSearch(ctx, s.db.read, stmt, append(args, fargs...)...)
	if err != nil {
		return nil, -1, notRead(err)
	}
	defer rows.Close()
	total, seeked := 0, false
	for rows.Next() {
		var h sessiondb.SearchHit
		var onPage bool
		if err := rows.Scan(&h.ID, &h.SessionID, &h.Role, &h.Snippet, &h.Timestamp, &h.ToolName, &h.Source, &h.Model, &h.SessionStarted, &onPage, &total, &passed, &seeked); err != nil {
			return nil, 0, err
		}
		if onPage {
			hits = append(hits, h)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, -1, notRead(err)
	}
	if len(hits) < s.o.Limit && total >= k {
		return nil, passed, errIncomplete // the array held only the K best
	}
	if !seeked && len(hits) > 0 {
		if err := s.pageSnippets(ctx, fn, table, q, hits); err != nil {
			return nil, 0, err
		}
	}
	return hits, passed, nil
}

// notFilter is matchTop's condition that row m does not hold not, a phrase
// (its one argument), for a query of phrase q. When neither has a word
// with a range summary (each in fewer than several thousand rows, or the
// file has none), q's rows are ranked by a pass over them, and not's rows
// are listed once for the statement: NOT IN (at 20k messages, "kubernetes
// NOT helm" 2.2-3.1 ms before, 0.7-0.8 after). Otherwise each row ranked
// is looked up among not's matches, NOT EXISTS: a new FTS5 query a row,
// but never more than the rows ranked, which a summary keeps few, however
// many rows not is in.
func (s *searcher) notFilter(ctx context.Context, table, q, not string) string {
	words := strings.FieldsFunc(strings.ToLower(q+" "+not), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	if s.anySummarized(ctx, table, words) {
		return "NOT EXISTS (SELECT 1 FROM " + table + " AS x WHERE x." + table + " MATCH ? AND x.rowid = m.id)"
	}
	return "m.id NOT IN (SELECT rowid FROM " + table + " WHERE " + table + " MATCH ?)"
}

// notRead is errIncomplete for the function's SQLITE_RANGE (it did not
// rank), and err otherwise.
func notRead(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrRange {
		return errIncomplete
	}
	return err
}

// pageSnippets makes the snippets of hits, rows of table matching q, in
// one pass over q's matches (a read of the phrase's rows, as ranking made).
// It runs in a statement of its own: should a hit have stopped matching
// meanwhile, errIncomplete sends the search to the exact path.
func (s *searcher) pageSnippets(ctx context.Context, fn, table, q string, hits []sessiondb.SearchHit) error {
	ids := make([]string, len(hits))
	at := make(map[int64]int, len(hits))
	for i, h := range hits {
		ids[i] = strconv.FormatInt(h.ID, 10)
		at[h.ID] = i
	}
	// "+rowid" keeps the id list from becoming rowid lookups: FTS5 steps
	// through the matches once, and SQLite tests each against the list.
	stmt := "SELECT " + table + ".rowid, " + s.snippetWith(fn, table) +
		" FROM " + table + " JOIN messages m ON m.id = " + table + ".rowid" +
		" WHERE " + table + " MATCH ? AND +" + table + ".rowid IN (SELECT value FROM json_each(?))"
	rows, err := runSearch(ctx, s.db.read, stmt, q, "["+strings.Join(ids, ",")+"]")
	if err != nil {
		return err
	}
	defer rows.Close()
	found := 0
	for rows.Next() {
		var id int64
		var snippet sql.NullString
		if err := rows.Scan(&id, &snippet); err != nil {
			return err
		}
		if i, ok := at[id]; ok && snippet.Valid {
			hits[i].Snippet = &snippet.String
			found++
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if found < len(hits) {
		return errIncomplete
	}
	return nil
}

// rankedPage reads the page of a ranked statement whose rows are the K best
// matches in rank order (ties included) and then, perhaps, the rest ranked
// last, each with the filters' verdict as its last column.
func (s *searcher) rankedPage(ctx context.Context, stmt string, args []any, k int, pageSnippets bool) ([]sessiondb.SearchHit, error) {
	want := s.o.Offset + s.o.Limit
	rows, err := runSearch(ctx, s.db.read, stmt, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	hits := make([]sessiondb.SearchHit, 0, min(want, 64))
	seen := 0
	for ; len(hits) < want && rows.Next(); seen++ {
		if seen == k {
			return nil, errIncomplete
		}
		var h sessiondb.SearchHit
		var ok bool
		if err := rows.Scan(&h.ID, &h.SessionID, &h.Role, &h.Snippet, &h.Timestamp, &h.ToolName, &h.Source, &h.Model, &h.SessionStarted, &ok); err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if pageSnippets && h.Snippet == nil && len(hits) >= s.o.Offset {
			return nil, errSnippets // (or a row whose snippet is NULL: the next run returns it)
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(hits) < want && seen >= k {
		// A read-ahead stream holds only the K best (and their ties).
		return nil, errIncomplete
	}
	if len(hits) <= s.o.Offset {
		return nil, nil
	}
	return hits[s.o.Offset:], nil
}

// errDamagedIndex reports a full-text index that failed FTS5's own
// integrity check during a search.
type errDamagedIndex string

func (e errDamagedIndex) Error() string { return "search index " + string(e) + " is damaged" }

// indexDamaged tells an FTS-scoped corruption (the index fails FTS5's
// integrity-check while every problem quick_check finds is inside an FTS
// index) from structural damage elsewhere, which must not be papered over.
func (db *DB) indexDamaged(ctx context.Context, table string) bool {
	if db.readOnly {
		return false // the check writes, and a read-only handle cannot repair
	}
	_, err := db.write.ExecContext(ctx, "INSERT INTO "+table+"("+table+") VALUES('integrity-check')")
	var se sqlite3.Error
	if err == nil || !errors.As(err, &se) || se.Code != sqlite3.ErrCorrupt {
		return false
	}
	rows, err := db.write.QueryContext(ctx, "PRAGMA quick_check(100)")
	if err != nil {
		return false
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if rows.Scan(&line) != nil {
			return false
		}
		if line != "ok" && !strings.Contains(strings.ToLower(line), "fts5") && !strings.Contains(line, "messages_fts") {
			return false
		}
	}
	return rows.Err() == nil
}

func (s *searcher) query(ctx context.Context, stmt string, args ...any) ([]sessiondb.SearchHit, error) {
	return s.queryOn(ctx, s.db.read, stmt, args...)
}

// searchHook, when set (by tests), sees every search statement.
var searchHook func(on querier, stmt string, args []any)

// runSearch runs a search statement.
func runSearch(ctx context.Context, on querier, stmt string, args ...any) (*sql.Rows, error) {
	if searchHook != nil {
		searchHook(on, stmt, args)
	}
	return on.QueryContext(ctx, stmt, args...)
}

func (s *searcher) queryOn(ctx context.Context, on querier, stmt string, args ...any) ([]sessiondb.SearchHit, error) {
	rows, err := runSearch(ctx, on, stmt, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hits []sessiondb.SearchHit
	for rows.Next() {
		var h sessiondb.SearchHit
		if err := rows.Scan(&h.ID, &h.SessionID, &h.Role, &h.Snippet, &h.Timestamp, &h.ToolName, &h.Source, &h.Model, &h.SessionStarted); err != nil {
			return nil, err
		}
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// likeColumns matches one %term% against content, tool_name and tool_calls.
const likeColumns = `(m.content LIKE ? ESCAPE '\' OR m.tool_name LIKE ? ESCAPE '\' OR m.tool_calls LIKE ? ESCAPE '\')`

const likeSnippet = "substr(m.content, max(1, instr(m.content, ?) - 40), 120)"

func likeArgs(term string, n int) []any {
	p := "%" + escapeLike(term) + "%"
	out := make([]any, n)
	for i := range out {
		out[i] = p
	}
	return out
}

// likeAny is the CJK substring scan: any token anywhere, newest first, the
// snippet centred on the first token.
func (s *searcher) likeAny(ctx context.Context, raw string) ([]sessiondb.SearchHit, error) {
	terms := sessiondb.CapTerms(sessiondb.QueryTerms(raw))
	if len(terms) == 0 {
		terms = []string{raw}
	}
	var ors []string
	args := []any{terms[0]}
	for _, t := range terms {
		ors = append(ors, likeColumns)
		args = append(args, likeArgs(t, 3)...)
	}
	return s.newestFirst(ctx, s.db.read, "messages m", "("+strings.Join(ors, " OR ")+")", args)
}

// newestFirst answers the substring routes: the rows of from meeting cond,
// newest first, the snippet centred on the term args[0]; args follow with
// cond's arguments.
func (s *searcher) newestFirst(ctx context.Context, on querier, from, cond string, args []any) ([]sessiondb.SearchHit, error) {
	where, fargs := s.filters()
	stmt := "SELECT " + fmt.Sprintf(hitColumns, likeSnippet) + " FROM " + from + " JOIN sessions s ON s.id = m.session_id" +
		" WHERE " + cond + " AND " + strings.Join(where, " AND ") +
		" ORDER BY m.timestamp DESC, m.id DESC LIMIT ? OFFSET ?"
	return s.queryOn(ctx, on, stmt, append(append(args, fargs...), s.o.Limit, s.o.Offset)...)
}

// likeBoolean answers with a LIKE scan of the canonical columns, keeping the
// query's boolean shape: OR separates groups, terms in a group are ANDed,
// NOT negates the next term. Newest first ("oldest" reverses).
func (s *searcher) likeBoolean(ctx context.Context, q string) ([]sessiondb.SearchHit, error) {
	// Bounded (SQLite's depth limit is 1000): repeated terms count once,
	// and at most sessiondb.MaxLikeTerms terms take part.
	groups := sessiondb.LikeGroups(q)
	col := func(c string) string { return "COALESCE(" + c + ", '') LIKE ? ESCAPE '\\'" }
	perTerm := "(" + col("m.content") + " OR " + col("m.tool_name") + " OR " + col("m.tool_calls")
	binds := 3
	if s.o.IncludeReasoning {
		perTerm += ` OR (m.role = 'assistant' AND (` + col("m.reasoning") + ` OR ` + col("m.reasoning_content") +
			` OR (NOT json_valid(COALESCE(m.reasoning_details, '')) AND ` + col("m.reasoning_details") + `)` +
			` OR EXISTS (SELECT 1 FROM json_tree(CASE WHEN json_valid(COALESCE(m.reasoning_details, '')) THEN m.reasoning_details ELSE '[]' END) AS rd` +
			` WHERE rd.type = 'text' AND CAST(rd.value AS TEXT) LIKE ? ESCAPE '\')))`
		binds = 7
	}
	perTerm += ")"
	var ors []string
	var args []any
	snippetTerm := ""
	for _, g := range groups {
		var ands []string
		var gargs []any
		for _, t := range g {
			clause := perTerm
			if t.Not {
				clause = "NOT " + perTerm
			}
			ands = append(ands, clause)
			gargs = append(gargs, likeArgs(t.Text, binds)...)
		}
		if snippetTerm == "" {
			for _, t := range g {
				if !t.Not {
					snippetTerm = t.Text
					break
				}
			}
		}
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
		args = append(args, gargs...)
	}
	if len(ors) == 0 {
		return nil, nil
	}
	dir := "DESC"
	if strings.ToLower(strings.TrimSpace(s.o.Sort)) == "oldest" {
		dir = "ASC"
	}
	snippet := likeSnippet
	snippetArgs := []any{snippetTerm}
	if s.o.IncludeReasoning {
		// the snippet comes from the first column that matches
		var whens []string
		snippetArgs = nil
		around := func(c string) string { return "substr(" + c + ", max(1, instr(lower(" + c + "), lower(?)) - 40), 120)" }
		pat := likeArgs(snippetTerm, 1)[0]
		for _, c := range []string{"m.content", "m.tool_name", "m.tool_calls", "m.reasoning", "m.reasoning_content"} {
			whens = append(whens, "WHEN "+col(c)+" THEN "+around(c))
			snippetArgs = append(snippetArgs, pat, snippetTerm)
		}
		whens = append(whens, "WHEN m.role = 'assistant' AND NOT json_valid(COALESCE(m.reasoning_details, '')) AND "+
			col("m.reasoning_details")+" THEN "+around("m.reasoning_details"))
		snippetArgs = append(snippetArgs, pat, snippetTerm)
		whens = append(whens, `WHEN m.role = 'assistant' AND json_valid(COALESCE(m.reasoning_details, '')) THEN
			(SELECT `+around("CAST(rd.value AS TEXT)")+` FROM json_tree(m.reasoning_details) AS rd
			 WHERE rd.type = 'text' AND CAST(rd.value AS TEXT) LIKE ? ESCAPE '\' LIMIT 1)`)
		snippetArgs = append(snippetArgs, snippetTerm, pat)
		snippet = "COALESCE(CASE " + strings.Join(whens, " ") + " END, '')"
	}
	where, fargs := s.filters()
	stmt := "SELECT " + fmt.Sprintf(hitColumns, snippet) + " FROM messages m JOIN sessions s ON s.id = m.session_id" +
		" WHERE (" + strings.Join(ors, " OR ") + ") AND " + strings.Join(where, " AND ") +
		" ORDER BY m.timestamp " + dir + ", m.id " + dir + " LIMIT ? OFFSET ?"
	all := append(snippetArgs, args...)
	all = append(all, fargs...)
	return s.query(ctx, stmt, append(all, s.o.Limit, s.o.Offset)...)
}

// gap tops up hits from the rows a pending backfill has not indexed yet
// (ids in (progress, high_water]): every term must match, newest first.
func (s *searcher) gap(ctx context.Context, q string, have []sessiondb.SearchHit) ([]sessiondb.SearchHit, error) {
	var terms []string
	for _, tok := range sessiondb.LikeTokens(q) {
		t := sessiondb.CleanTerm(tok)
		if t == "" || sessiondb.QueryTerms(t) == nil || strings.EqualFold(t, "NEAR") {
			continue
		}
		terms = append(terms, t)
	}
	terms = sessiondb.CapTerms(terms)
	if len(terms) == 0 {
		return nil, nil
	}
	args := []any{terms[0], s.gapLow, s.gapHi}
	var ands []string
	for _, t := range terms {
		ands = append(ands, likeColumns)
		args = append(args, likeArgs(t, 3)...)
	}
	where, fargs := s.filters()
	// NOT INDEXED: the id range, never a walk of idx_messages_newest for
	// the order (which SQLite may prefer for a range open at one end).
	stmt := "SELECT " + fmt.Sprintf(hitColumns, likeSnippet) + " FROM messages m NOT INDEXED JOIN sessions s ON s.id = m.session_id" +
		" WHERE m.id > ? AND m.id <= ? AND " + strings.Join(ands, " AND ") + " AND " + strings.Join(where, " AND ") +
		" ORDER BY m.timestamp DESC LIMIT ?"
	extra, err := s.query(ctx, stmt, append(append(args, fargs...), s.o.Limit-len(have))...)
	if err != nil {
		return nil, err
	}
	seen := map[int64]bool{}
	for _, h := range have {
		seen[h.ID] = true
	}
	var out []sessiondb.SearchHit
	for _, h := range extra {
		if !seen[h.ID] {
			out = append(out, h)
		}
	}
	return out, nil
}

// contextSQL selects a hit's id and the role and content of the previous
// message, the hit and the next message of its session by (timestamp, id):
// one row per hit of the id list that follows it. Plain text is cut to the
// bytes ContextChars characters can take; encoded ("\x00json:") content is
// selected whole, to be decoded.
var contextSQL = func() string {
	content := func(m string) string {
		return "CASE WHEN substr(CAST(" + m + ".content AS BLOB), 1, 6) = x'006a736f6e3a' THEN " + m + ".content" +
			" ELSE CAST(substr(CAST(" + m + ".content AS BLOB), 1, " + strconv.Itoa(4*sessiondb.ContextChars) + ") AS TEXT) END"
	}
	return `SELECT t.id, p.role, ` + content("p") + `, t.role, ` + content("t") + `, n.role, ` + content("n") + `
		FROM messages t
		LEFT JOIN messages p ON p.id = (SELECT id FROM messages WHERE session_id = t.session_id
			AND (timestamp, id) < (t.timestamp, t.id) ORDER BY timestamp DESC, id DESC LIMIT 1)
		LEFT JOIN messages n ON n.id = (SELECT id FROM messages WHERE session_id = t.session_id
			AND (timestamp, id) > (t.timestamp, t.id) ORDER BY timestamp, id LIMIT 1)
		WHERE t.id IN `
}()

// addContext fills every hit's context (previous message, the hit, next
// message) with one query per 500 hits.
func (db *DB) addContext(ctx context.Context, hits []sessiondb.SearchHit) error {
	for start := 0; start < len(hits); start += 500 {
		batch := hits[start:min(start+500, len(hits))]
		index := map[int64]int{}
		args := make([]any, len(batch))
		for i, h := range batch {
			index[h.ID] = start + i
			args[i] = h.ID
			hits[start+i].Context = []sessiondb.ContextMessage{}
		}
		rows, err := db.read.QueryContext(ctx, contextSQL+"("+placeholders(len(batch))+")", args...)
		if err != nil {
			return err
		}
		var id int64
		var roles, contents [3]sql.NullString // previous message, the hit, next message
		for rows.Next() {
			if err := rows.Scan(&id, &roles[0], &contents[0], &roles[1], &contents[1], &roles[2], &contents[2]); err != nil {
				rows.Close()
				return err
			}
			h := &hits[index[id]]
			h.Context = make([]sessiondb.ContextMessage, 0, len(roles))
			for i, role := range roles {
				if !role.Valid {
					continue // no previous or next message
				}
				var text string
				if contents[i].Valid {
					text = sessiondb.ContentText(sessiondb.DecodeContent(&contents[i].String))
				}
				h.Context = append(h.Context, sessiondb.ContextMessage{Role: role.String, Content: sessiondb.ClipText(text, sessiondb.ContextChars)})
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}
