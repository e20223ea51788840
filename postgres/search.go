package postgres

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite/fts5cjk"
)

// Search finds messages with the SQLite backend's query language, routing
// and match sets (see DESIGN.md, "Search"): the query is sanitised, then
// answered from the word tsvector, or for CJK text from the bigram
// tsvector, the trigram (pg_trgm) index or a substring scan; tool-role and
// reasoning searches use a boolean LIKE scan; a Latin query with no hit
// retries the bigram and trigram indexes.
//
// A query with more than sessiondb.MaxQueryTerms terms is refused with
// EINVALID. The search runs under ctx's deadline: past it the statement is
// cancelled and the error is ETIMEOUT.
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

func (db *DB) searchErr(ctx context.Context, start time.Time, op string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return sessiondb.SearchTimeout(ctx, start, op)
	}
	return db.mapErr(op, err)
}

// searchIndex is one of the three FTS5 indexes as PostgreSQL holds it.
type searchIndex struct {
	name   string // for errors
	column string // the tsvector column; "" for the trigram index
	tok    func() (*fts5cjk.Tokenizer, error)
	texts  func(role string, content, toolName, toolCalls *string) []*string
}

var (
	trigramOnce sync.Once
	trigramTok  *fts5cjk.Tokenizer
	trigramErr  error
)

var (
	wordIndex = &searchIndex{name: "word", column: "tsv",
		tok: func() (*fts5cjk.Tokenizer, error) { w, _, err := tokenizers(); return w, err },
		texts: func(role string, content, toolName, toolCalls *string) []*string {
			if role == sessiondb.RoleTool {
				c := sqliteSubstr(deref(content), toolPrefixChars)
				content = &c
			}
			return []*string{content, toolName, toolCalls}
		}}
	cjkIndex = &searchIndex{name: "cjk", column: "tsv_cjk",
		tok: func() (*fts5cjk.Tokenizer, error) { _, c, err := tokenizers(); return c, err },
		texts: func(_ string, content, toolName, toolCalls *string) []*string {
			return []*string{content, toolName, toolCalls}
		}}
	trigramIndex = &searchIndex{name: "trigram",
		tok: func() (*fts5cjk.Tokenizer, error) {
			trigramOnce.Do(func() { trigramTok, trigramErr = fts5cjk.NewTokenizer("trigram") })
			return trigramTok, trigramErr
		},
		texts: func(_ string, content, toolName, _ *string) []*string {
			return []*string{content, toolName}
		}}
)

// searchHook, when set (by tests), sees every statement that reads hits.
var searchHook func(stmt string, args []any)

// query runs a statement that reads hits.
func (db *DB) query(ctx context.Context, stmt string, args ...any) (pgx.Rows, error) {
	if searchHook != nil {
		searchHook(stmt, args)
	}
	return db.pool.Query(ctx, stmt, args...)
}

type searcher struct {
	db *DB
	o  sessiondb.SearchOptions
}

func (s *searcher) run(ctx context.Context, q string) ([]sessiondb.SearchHit, error) {
	if s.o.IncludeReasoning || slices.Contains(s.o.Roles, sessiondb.RoleTool) {
		return s.likeBoolean(ctx, q)
	}
	cjk := sessiondb.ContainsCJK(q)
	var hits []sessiondb.SearchHit
	var err error
	if cjk {
		hits, err = s.cjk(ctx, q)
	} else {
		hits, err = s.match(ctx, wordIndex, q)
	}
	if err != nil || len(hits) > 0 || cjk {
		return hits, err
	}
	if s.o.Offset > 0 {
		// A page past the last hit: the retry below is for a query the
		// word index finds nothing for, so look at the first page.
		first := *s
		first.o.Offset, first.o.Limit = 0, 1
		if hits, err = first.match(ctx, wordIndex, q); err != nil || len(hits) > 0 {
			return nil, err
		}
	}
	// Latin glued to CJK ("youer" in "修改youer服务端") is one unicode61
	// token; the bigram and trigram indexes split it.
	fb := sessiondb.QuoteTokens(strings.TrimSpace(strings.Trim(q, `"`)))
	if hits, err = s.match(ctx, cjkIndex, fb); err != nil || len(hits) > 0 {
		return hits, err
	}
	if sessiondb.TrigramEligible(q) {
		return s.match(ctx, trigramIndex, fb)
	}
	return nil, nil
}

// cjk routes a query holding CJK text (sessiondb.RouteCJK); PostgreSQL's
// indexes are always current.
func (s *searcher) cjk(ctx context.Context, q string) ([]sessiondb.SearchHit, error) {
	raw := strings.TrimSpace(strings.Trim(q, `"`))
	indexed := !sessiondb.WantsUnindexed(s.o)
	switch sessiondb.RouteCJK(raw, indexed, indexed, fts5cjk.IsCJK) {
	case sessiondb.RouteBigram:
		return s.match(ctx, cjkIndex, sessiondb.QuoteTokens(raw))
	case sessiondb.RouteOneChar:
		return s.oneCJK(ctx, []rune(raw)[0])
	case sessiondb.RouteTrigram:
		return s.match(ctx, trigramIndex, sessiondb.QuoteTokens(raw))
	}
	return s.likeAny(ctx, raw)
}

// hitColumns are the columns every route selects; scanHit reads them.
const hitColumns = "m.id, m.session_id, m.role, m.timestamp, m.tool_name, s.source, s.model, s.started_at"

// filters returns the WHERE clauses every route shares, with placeholders
// numbered from len(args)+1, and args extended.
func (s *searcher) filters(args []any) ([]string, []any) {
	var where []string
	if !s.o.IncludeInactive {
		where = append(where, "(m.active = 1 OR m.compacted = 1)")
	}
	where = append(where, "COALESCE(m.display_kind, '') <> 'hidden'")
	if s.o.Sources != nil {
		args = append(args, texts(s.o.Sources))
		where = append(where, "s.source = ANY($"+strconv.Itoa(len(args))+")")
	}
	if s.o.ExcludeSources != nil {
		args = append(args, texts(s.o.ExcludeSources))
		where = append(where, "s.source <> ALL($"+strconv.Itoa(len(args))+")")
	}
	if len(s.o.Roles) > 0 {
		args = append(args, texts(s.o.Roles))
		where = append(where, "m.role = ANY($"+strconv.Itoa(len(args))+")")
	}
	return where, args
}

func texts(vals []string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = text(v)
	}
	return out
}

// arg appends v to args and returns its placeholder.
func arg(args *[]any, v any) string {
	*args = append(*args, v)
	return "$" + strconv.Itoa(len(*args))
}

// row is a hit with the texts its snippet is made from.
type row struct {
	hit                         sessiondb.SearchHit
	content, toolName, toolCall *string
	state, doclen               int
}

func scanRows(rows pgx.Rows, withTexts bool) ([]row, error) {
	defer rows.Close()
	var out []row
	for rows.Next() {
		var r row
		h := &r.hit
		dest := []any{&h.ID, &h.SessionID, &h.Role, &h.Timestamp, &h.ToolName, &h.Source, &h.Model, &h.SessionStarted}
		if withTexts {
			dest = append(dest, &r.content, &r.toolName, &r.toolCall, &r.state, &r.doclen)
		} else {
			dest = append(dest, &h.Snippet)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		h.SessionID, h.Role, h.Source = fromPG(h.SessionID), fromPG(h.Role), fromPG(h.Source)
		h.ToolName, h.Model, h.Snippet = fromPGPtr(h.ToolName), fromPGPtr(h.Model), fromPGPtr(h.Snippet)
		r.content, r.toolName, r.toolCall = fromPGPtr(r.content), fromPGPtr(r.toolName), fromPGPtr(r.toolCall)
		out = append(out, r)
	}
	return out, rows.Err()
}

// match answers an FTS5 query on one index: PostgreSQL finds the rows
// (tsquery on the tsvector, or ILIKE on the trigram index), rows with a
// lossy tsvector are checked in Go on their tokens, and each hit's snippet
// is made in Go. A query FTS5 could not parse finds nothing.
func (s *searcher) match(ctx context.Context, ix *searchIndex, q string) ([]sessiondb.SearchHit, error) {
	tok, err := ix.tok()
	if err != nil {
		return nil, err
	}
	root, phrases, ok, err := parseFTS(q, tok)
	if err != nil || !ok {
		return nil, err
	}
	if root = simplify(root); root == eof {
		return nil, nil
	}
	m := &matcher{s: s, ix: ix, tok: tok, root: root, nPhrase: len(phrases)}
	sort := strings.ToLower(strings.TrimSpace(s.o.Sort))
	if ix.column != "" && sort != "newest" && sort != "oldest" && root.op == "phrase" && len(root.tokens) == 1 {
		if lex, cut := lexeme(root.tokens[0]); !cut && len(lex)+3 <= maxLexemeBytes {
			return m.rankTiers(ctx, lex, root.prefix)
		}
	}
	var args []any
	var cond, rank string
	if ix.column != "" {
		tq := arg(&args, tsquery(root, false))
		col := "m." + ix.column
		cond = "(" + col + " @@ " + tq + "::tsquery OR m.tsv_state = 2"
		if !exactOnLossy(root) {
			cond += " OR (m.tsv_state = 1 AND " + col + " @@ " + arg(&args, tsquery(root, true)) + "::tsquery)"
		}
		cond += ")"
		rank = "ts_rank(" + col + ", " + tq + "::tsquery, 1) DESC, m.id"
	} else {
		cond = "m.trigram AND " + trigramCond(root, &args)
		rank = "m.timestamp DESC, m.id DESC"
	}
	order := rank
	switch sort {
	case "newest":
		order = "m.timestamp DESC, " + rank
	case "oldest":
		order = "m.timestamp ASC, " + rank
	}
	rows, err := m.fetch(ctx, cond, order, args, s.o.Offset+s.o.Limit)
	if err != nil {
		return nil, err
	}
	return m.page(rows), nil
}

// matcher runs one query tree on one index.
type matcher struct {
	s       *searcher
	ix      *searchIndex
	tok     *fts5cjk.Tokenizer
	root    *qnode
	nPhrase int
}

// found is a row that matches, with its tokens.
type found struct {
	row
	rd rowDoc
	d  doc
}

// fetch returns up to n rows meeting cond (and the search's filters) in
// order, each tokenized; rows whose tsvector is lossy (tsv_state > 0) are
// kept only when the query tree matches their tokens, and more are read
// when that leaves fewer than n.
func (m *matcher) fetch(ctx context.Context, cond, order string, args []any, n int) ([]found, error) {
	where, args := m.s.filters(args)
	doclen := "m.doclen"
	if m.ix == cjkIndex {
		doclen = "m.doclen_cjk"
	}
	stmt := "SELECT " + hitColumns + ", m.content, m.tool_name, m.tool_calls, m.tsv_state, " + doclen +
		" FROM messages m JOIN sessions s ON s.id = m.session_id WHERE " + cond + " AND " + strings.Join(where, " AND ")
	if order != "" {
		stmt += " ORDER BY " + order
	}
	stmt += " LIMIT "
	check := m.ix.column != "" // the trigram route's ILIKE is exact
	for limit := max(n, 1); ; limit *= 2 {
		rs, err := m.s.db.query(ctx, stmt+strconv.Itoa(limit), args...)
		if err != nil {
			return nil, err
		}
		rows, err := scanRows(rs, true)
		if err != nil {
			return nil, err
		}
		var out []found
		for _, r := range rows {
			rd, err := tokenizeRow(m.tok, m.ix.texts(r.hit.Role, r.content, r.toolName, r.toolCall))
			if err != nil {
				return nil, err
			}
			f := found{row: r, rd: rd, d: rd.doc()}
			if check && r.state != stateExact && !m.root.matches(f.d) {
				continue
			}
			if out = append(out, f); len(out) == n {
				break
			}
		}
		if len(out) == n || len(rows) < limit {
			return out, nil
		}
	}
}

// page returns the hits of rows from the search's offset, with snippets.
func (m *matcher) page(rows []found) []sessiondb.SearchHit {
	if len(rows) <= m.s.o.Offset {
		return nil
	}
	rows = rows[m.s.o.Offset:min(len(rows), m.s.o.Offset+m.s.o.Limit)]
	hits := make([]sessiondb.SearchHit, len(rows))
	for i, f := range rows {
		hits[i] = f.hit
		hits[i].Snippet = makeSnippet(f.rd, instances(m.root, f.d), m.nPhrase)
	}
	return hits
}

// rankTiers ranks the matches of a one-word query (lex, or with prefix the
// words beginning with lex) by bm25's weight of the word in the row without
// idf, which orders one-word queries as bm25 does: by impact tier
// (impactStep wide, refAvgDocLen for the average length; for a prefix, the
// highest tier of the words it matches in the row), then shorter rows
// first, then by id; rows below minImpactTier, and rows whose tsvector lost
// lexemes, come last in the same order within.
// A few matches are read whole and ranked in Go from their tokens; more
// are read tier by tier from the highest, each tier found by its impact
// markers (GIN), so a frequent word reads about a page of rows instead of
// every match.
func (m *matcher) rankTiers(ctx context.Context, lex string, prefix bool) ([]sessiondb.SearchHit, error) {
	want := m.s.o.Offset + m.s.o.Limit
	col := "m." + m.ix.column
	doclen := "m.doclen"
	if m.ix == cjkIndex {
		doclen = "m.doclen_cjk"
	}
	order := doclen + ", m.id"
	quoted := func(l string) string {
		var b strings.Builder
		writeQuoted(&b, l)
		if prefix {
			b.WriteString(":*")
		}
		return b.String()
	}
	word := quoted(lex)
	// A count of the matches, stopped past probe, says which way to rank.
	probe := max(want, 64)
	var n int
	if err := m.s.db.pool.QueryRow(ctx, "SELECT count(*) FROM (SELECT 1 FROM messages m WHERE "+col+
		" @@ $1::tsquery OR m.tsv_state = 2 LIMIT $2) c", word, probe+1).Scan(&n); err != nil {
		return nil, err
	}
	if n <= probe {
		rows, err := m.fetch(ctx, "("+col+" @@ $1::tsquery OR m.tsv_state = 2)", "", []any{word}, probe)
		if err != nil {
			return nil, err
		}
		tiers := make(map[int64]int, len(rows))
		for _, f := range rows {
			tiers[f.hit.ID] = -1
			if f.state == stateIncomplete {
				continue
			}
			tf := map[string]int{}
			for _, c := range f.d {
				for _, t := range c {
					if l, _ := lexeme(t); l == lex || prefix && strings.HasPrefix(l, lex) {
						tf[l]++
					}
				}
			}
			for l, n := range tf {
				if t := impactTier(n, f.doclen); t >= minImpactTier && t > tiers[f.hit.ID] && len(l)+3 <= maxLexemeBytes {
					tiers[f.hit.ID] = t
				}
			}
		}
		sortFound(rows, func(a, b found) bool {
			if ta, tb := tiers[a.hit.ID], tiers[b.hit.ID]; ta != tb {
				return ta > tb
			}
			if a.doclen != b.doclen {
				return a.doclen < b.doclen
			}
			return a.hit.ID < b.hit.ID
		})
		return m.page(rows), nil
	}
	// Tiers from the highest, where a frequent word's best rows are few:
	// one statement a tier (the top ones, often empty, in one, a CASE
	// telling each row's tier).
	var all []found
	var markers []string
	top := impactTier(1<<30, 0)
	for hi := top; hi >= minImpactTier && len(all) < want; {
		lo := hi // one tier a statement, but the top ones (often empty) together
		if hi == top {
			lo = max(hi-5, minImpactTier)
		}
		var args []any
		var whens, batch []string
		cond := "m.tsv_state <> 2"
		if prefix && len(markers) > 0 {
			// a row whose words reach several tiers belongs to its highest
			cond += " AND NOT " + col + " @@ " + arg(&args, strings.Join(markers, " | ")) + "::tsquery"
		}
		for t := hi; t >= lo; t-- {
			marker := quoted(impactLexeme(t, lex))
			markers, batch = append(markers, marker), append(batch, marker)
			whens = append(whens, "WHEN "+col+" @@ "+arg(&args, marker)+"::tsquery THEN "+strconv.Itoa(t))
		}
		cond = col + " @@ " + arg(&args, strings.Join(batch, " | ")) + "::tsquery AND " + cond
		rows, err := m.fetch(ctx, cond, "CASE "+strings.Join(whens, " ")+" END DESC, "+order, args, want-len(all))
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
		hi = lo - 1
	}
	if len(all) < want {
		rest, err := m.fetch(ctx, "(("+col+" @@ $1::tsquery AND NOT "+col+" @@ $2::tsquery AND m.tsv_state <> 2) OR m.tsv_state = 2)",
			order, []any{word, strings.Join(markers, " | ")}, want-len(all))
		if err != nil {
			return nil, err
		}
		all = append(all, rest...)
	}
	return m.page(all), nil
}

func sortFound(rows []found, less func(a, b found) bool) {
	sort.SliceStable(rows, func(i, j int) bool { return less(rows[i], rows[j]) })
}

// trigramCond is the SQL condition of a trigram-index query: a phrase is
// a case-insensitive substring of content or tool_name (pg_trgm serves
// ILIKE); a phrase under three characters finds nothing, as in FTS5.
func trigramCond(n *qnode, args *[]any) string {
	switch n.op {
	case "phrase":
		p := arg(args, "%"+escapeLike(text(n.text))+"%")
		return "(m.content ILIKE " + p + " OR m.tool_name ILIKE " + p + ")"
	case "AND", "OR":
		parts := make([]string, len(n.kids))
		for i, k := range n.kids {
			parts[i] = trigramCond(k, args)
		}
		return "(" + strings.Join(parts, " "+n.op+" ") + ")"
	case "NOT":
		return "(" + trigramCond(n.kids[0], args) + " AND NOT COALESCE(" + trigramCond(n.kids[1], args) + ", false))"
	}
	return "false"
}

// likeSnippet is the SQLite backend's snippet on the substring routes,
// substr(content, max(1, instr(content, term) - 40), 120), made in Go on
// the unescaped content with SQLite's rules: characters are a byte and the
// continuation bytes after it, instr finds the term anywhere, and substr
// ends at a NUL byte (so encoded content, which starts with one, gives "").
func likeSnippet(content *string, term string) *string {
	if content == nil {
		return nil
	}
	c := *content
	n := 0 // instr: 1-based character index of the first occurrence, or 0
	if i := strings.Index(c, term); i >= 0 {
		n = 1
		for j := 0; j < i; j++ {
			if c[j]&0xC0 != 0x80 {
				n++
			}
		}
		// a term starting inside a character is found by SQLite at the
		// next character boundary only; Go's index is byte-exact, and
		// valid UTF-8 (all stored text is) makes both the same.
	}
	start := max(1, n-40)
	i := 0
	for p := start - 1; i < len(c) && c[i] != 0 && p > 0; p-- {
		i = skipChar(c, i)
	}
	j := i
	for k := 120; j < len(c) && c[j] != 0 && k > 0; k-- {
		j = skipChar(c, j)
	}
	out := c[i:j]
	return &out
}

// skipChar is SQLITE_SKIP_UTF8: past the byte at i and, for a lead byte,
// its continuation bytes.
func skipChar(s string, i int) int {
	c := s[i]
	i++
	if c >= 0xC0 {
		for i < len(s) && s[i]&0xC0 == 0x80 {
			i++
		}
	}
	return i
}

// likeText is what SQLite's LIKE reads of the text column expr: the
// text up to its first NUL byte (stored escaped, text.go), with ASCII
// letters folded to lower case.
func likeText(expr string) string {
	return "translate(split_part(" + expr + ", '" + escNUL + "', 1), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
}

// likePattern is %term% for a LIKE against asciiLower'd text.
func likePattern(term string) string {
	return "%" + escapeLike(strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, text(term))) + "%"
}

// reasoningDetailsLike matches pattern p against reasoning_details as
// SQLite's reasoning search does: text that is not JSON as it is, a JSON
// document by its string values (not its keys).
func reasoningDetailsLike(p string) string {
	return "((NOT sessiondb_json_valid(m.reasoning_details) AND " + likeText("COALESCE(m.reasoning_details, '')") + " LIKE " + p + ")" +
		" OR EXISTS (SELECT 1 FROM sessiondb_json_texts(m.reasoning_details) AS t WHERE " + likeText("t") + " LIKE " + p + "))"
}

// likeColumns matches a pattern against content, tool_name and tool_calls
// with SQLite's LIKE (ASCII case folding).
func likeColumns(p string) string {
	var parts []string
	for _, c := range []string{"m.content", "m.tool_name", "m.tool_calls"} {
		parts = append(parts, likeText(c)+" LIKE "+p)
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// newestFirst answers the substring routes: the rows meeting cond, newest
// first; the snippet is the SQL expression snippet or, when that is "",
// likeSnippet of the content around term.
func (s *searcher) newestFirst(ctx context.Context, cond, snippet, term string, args []any, dir string) ([]sessiondb.SearchHit, error) {
	if snippet == "" {
		snippet = "m.content"
	}
	where, args := s.filters(args)
	stmt := "SELECT " + hitColumns + ", " + snippet + " FROM messages m JOIN sessions s ON s.id = m.session_id" +
		" WHERE " + cond + " AND " + strings.Join(where, " AND ") +
		" ORDER BY m.timestamp " + dir + ", m.id " + dir + " LIMIT " + arg(&args, s.o.Limit) + " OFFSET " + arg(&args, s.o.Offset)
	rs, err := s.db.query(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	rows, err := scanRows(rs, false)
	if err != nil {
		return nil, err
	}
	hits := make([]sessiondb.SearchHit, len(rows))
	for i, r := range rows {
		hits[i] = r.hit
		if snippet == "m.content" {
			hits[i].Snippet = likeSnippet(r.hit.Snippet, term)
		}
	}
	return hits, nil
}

// likeAny is the CJK substring scan: any token anywhere, newest first.
func (s *searcher) likeAny(ctx context.Context, raw string) ([]sessiondb.SearchHit, error) {
	terms := sessiondb.CapTerms(sessiondb.QueryTerms(raw))
	if len(terms) == 0 {
		terms = []string{raw}
	}
	var args []any
	var ors []string
	for _, t := range terms {
		ors = append(ors, likeColumns(arg(&args, likePattern(t))))
	}
	return s.newestFirst(ctx, "("+strings.Join(ors, " OR ")+")", "", terms[0], args, "DESC")
}

// oneCJK answers a query of the one CJK character c from the indexes, as
// the SQLite backend reads their vocabularies: the word tsvector's marker
// of c (tokens beginning with CJK that contain c) or a bigram beginning
// with c. Two GIN lookups; newest first.
func (s *searcher) oneCJK(ctx context.Context, c rune) ([]sessiondb.SearchHit, error) {
	var args []any
	ch := string(c)
	var marker, prefix strings.Builder
	writeQuoted(&marker, oneCharMarker+ch)
	writeQuoted(&prefix, ch)
	prefix.WriteString(":*")
	cond := "(m.tsv @@ " + arg(&args, marker.String()) + "::tsquery OR m.tsv_cjk @@ " + arg(&args, prefix.String()) + "::tsquery)"
	// A rare character is read from the two GIN lookups (the subquery
	// keeps the planner from walking the timestamp index instead, which
	// would read the whole table); a frequent one by walking the timestamp
	// index, which meets a page of its rows soon. A count of the GIN
	// lookups' rows, stopped at oneCharWalk, tells which.
	var n int
	if err := s.db.pool.QueryRow(ctx, "SELECT count(*) FROM (SELECT 1 FROM messages m WHERE "+cond+" LIMIT $3) c",
		args[0], args[1], oneCharWalk).Scan(&n); err != nil {
		return nil, err
	}
	if n < oneCharWalk {
		cond = "m.id IN (SELECT id FROM (SELECT id FROM messages m WHERE " + cond + " OFFSET 0) c)"
	}
	return s.newestFirst(ctx, cond, "", ch, args, "DESC")
}

// oneCharWalk is how many rows a one-character query must have for the
// timestamp index walk.
const oneCharWalk = 1000

// likeBoolean answers with a LIKE scan of the canonical columns (and with
// IncludeReasoning the reasoning columns of assistant rows), keeping the
// query's boolean shape (sessiondb.LikeGroups). Newest first ("oldest"
// reverses).
func (s *searcher) likeBoolean(ctx context.Context, q string) ([]sessiondb.SearchHit, error) {
	groups := sessiondb.LikeGroups(q)
	if len(groups) == 0 {
		return nil, nil
	}
	var args []any
	snippetTerm := ""
	var ors []string
	for _, g := range groups {
		var ands []string
		for _, t := range g {
			p := arg(&args, likePattern(t.Text))
			clause := likeColumns(p)
			if s.o.IncludeReasoning {
				var rs []string
				for _, c := range []string{"m.reasoning", "m.reasoning_content"} {
					rs = append(rs, likeText("COALESCE("+c+", '')")+" LIKE "+p)
				}
				rs = append(rs, reasoningDetailsLike(p))
				clause = "(" + clause + " OR (m.role = 'assistant' AND (" + strings.Join(rs, " OR ") + ")))"
			}
			if t.Not {
				clause = "NOT COALESCE(" + clause + ", false)"
			}
			ands = append(ands, clause)
			if snippetTerm == "" && !t.Not {
				snippetTerm = t.Text
			}
		}
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	dir := "DESC"
	if strings.ToLower(strings.TrimSpace(s.o.Sort)) == "oldest" {
		dir = "ASC"
	}
	snippet := ""
	if s.o.IncludeReasoning {
		st := arg(&args, text(snippetTerm))
		around := func(c string) string {
			return "substr(" + c + ", greatest(1, strpos(lower(" + c + "), lower(" + st + ")) - 40), 120)"
		}
		pat := arg(&args, likePattern(snippetTerm))
		var whens []string
		for _, c := range []string{"m.content", "m.tool_name", "m.tool_calls", "m.reasoning", "m.reasoning_content"} {
			whens = append(whens, "WHEN "+likeText(c)+" LIKE "+pat+" THEN "+around(c))
		}
		whens = append(whens, "WHEN NOT sessiondb_json_valid(m.reasoning_details) AND "+likeText("m.reasoning_details")+" LIKE "+pat+
			" THEN "+around("m.reasoning_details"),
			"WHEN m.role = 'assistant' THEN (SELECT "+around("t")+" FROM sessiondb_json_texts(m.reasoning_details) AS t WHERE "+
				likeText("t")+" LIKE "+pat+" LIMIT 1)")
		snippet = "COALESCE(CASE " + strings.Join(whens, " ") + " END, '')"
	}
	return s.newestFirst(ctx, "("+strings.Join(ors, " OR ")+")", snippet, snippetTerm, args, dir)
}

// contextSQL selects, for each hit id of the array $1, the role and
// content of the previous message, the hit and the next message of its
// session by (timestamp, id). Plain text is cut to what ContextChars
// characters can take once unescaped; encoded content is selected whole.
var contextSQL = func() string {
	content := func(m string) string {
		return "CASE WHEN left(" + m + ".content, 7) = '" + escNUL + "json:' THEN " + m + ".content" +
			" ELSE left(" + m + ".content, " + strconv.Itoa(2*sessiondb.ContextChars) + ") END"
	}
	return `SELECT t.id, p.role, ` + content("p") + `, t.role, ` + content("t") + `, n.role, ` + content("n") + `
		FROM messages t
		LEFT JOIN LATERAL (SELECT role, content FROM messages WHERE session_id = t.session_id
			AND (timestamp, id) < (t.timestamp, t.id) ORDER BY timestamp DESC, id DESC LIMIT 1) p ON true
		LEFT JOIN LATERAL (SELECT role, content FROM messages WHERE session_id = t.session_id
			AND (timestamp, id) > (t.timestamp, t.id) ORDER BY timestamp, id LIMIT 1) n ON true
		WHERE t.id = ANY($1)`
}()

// addContext fills every hit's context (previous message, the hit, next
// message) with one query.
func (db *DB) addContext(ctx context.Context, hits []sessiondb.SearchHit) error {
	if len(hits) == 0 {
		return nil
	}
	index := map[int64]int{}
	ids := make([]int64, len(hits))
	for i, h := range hits {
		index[h.ID] = i
		ids[i] = h.ID
		hits[i].Context = []sessiondb.ContextMessage{}
	}
	rows, err := db.pool.Query(ctx, contextSQL, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var roles, contents [3]*string
		if err := rows.Scan(&id, &roles[0], &contents[0], &roles[1], &contents[1], &roles[2], &contents[2]); err != nil {
			return err
		}
		h := &hits[index[id]]
		h.Context = make([]sessiondb.ContextMessage, 0, len(roles))
		for i, role := range roles {
			if role == nil {
				continue
			}
			var t string
			if contents[i] != nil {
				c := fromPG(*contents[i])
				t = sessiondb.ContentText(sessiondb.DecodeContent(&c))
			}
			h.Context = append(h.Context, sessiondb.ContextMessage{Role: fromPG(*role), Content: sessiondb.ClipText(t, sessiondb.ContextChars)})
		}
	}
	return rows.Err()
}
