/*
** rank.c - the FTS5 auxiliary function sessiondb_bm25(tbl, K).
**
** It returns exactly what FTS5's built-in bm25(tbl) returns (same formula,
** same constants, same floating-point operations, all column weights 1.0)
** for every row that can still be among the K best rows of the query, and
** +1e300 for a row that provably cannot. Used as FTS5's rank,
**
**   ... WHERE tbl MATCH ? AND tbl.rank MATCH 'sessiondb_bm25(K)'
**   ORDER BY rank LIMIT n OFFSET m                         -- K >= n + m
**
** it orders the first K rows exactly as ORDER BY bm25(tbl) (that is,
** ORDER BY rank) does, while skipping most of bm25's cost on frequent
** terms: bm25 needs each row's length in tokens, one lookup in the
** %_docsize table per row, and that lookup is most of the work. The upper
** bound used instead takes the row length as small as the phrase positions
** allow (every instance at offset o of a phrase of s tokens proves its
** column holds at least o + s tokens); BM25 decreases as the length grows,
** so the bound is never below the true score. Once K rows have been scored,
** a row whose bound is below the K-th best score so far is out.
**
** The function must see the matching rows in order, each once or
** several times in a row (as in WHERE f(...) < 1e300 ORDER BY f(...),
** which evaluates it twice per row and gets the same value twice).
**
** sessiondb_bm25(tbl, K, 'name') - name is the FTS5 table's, in the main
** schema, with its name_docsize (columnsize=1, the default) - does better
** when the query is one phrase (one word, "a quoted phrase", pre*): on its
** first row it reads the phrase's rows once (xQueryPhrase, which bm25 runs
** anyway to count them), bounds each from its positions, and looks up row
** lengths in name_docsize in order of falling bound until no bound left
** reaches the K-th best score: the threshold algorithm, which looks up far
** fewer rows than bounding in rowid order (82 instead of 192 of 714 for one
** frequent bigram, K = 28). Every row scoring at least that K-th best
** score (ties included) gets its exact bm25; every other row is ranked
** last, without further work.
**
** sessiondb_bm25(tbl, K, 'name', 'place') is the row's place among those
** rows in the order of ORDER BY sessiondb_bm25(...), ties in rowid order:
** 0 for the best; NULL when it is not known (a row ranked last, or rows
** not read ahead). Called in the same statement as the score, it shares
** the read-ahead, so a query can limit costly columns (snippet()) to the
** rows that make its page:
**
**   CASE WHEN IFNULL(sessiondb_bm25(tbl, K, 'tbl', 'place'), 0) < n
**   THEN snippet(...) END
**
** sessiondb_bm25(tbl, K, 'name', 'top'), called on a query's first row
** (... WHERE tbl MATCH ? LIMIT 1), returns the read-ahead as JSON,
** {"hits":N,"size":S,"us":T,"ids":[...]}: the phrase's rows, its tokens,
** the microseconds the read took, and the ids of the rows scoring at least
** the K-th best (ties included) in rank order, ties by rowid. A caller then
** reads only those rows, and nothing steps over every match (see
** DESIGN.md, "Top-k ranking at scale"). It fails with SQLITE_RANGE when the
** query was not read ahead.
**
** sessiondb_bm25(tbl, K, 'name', 'top', allowed) does the same among the
** rows whose rowid is in allowed, a text of comma-separated rowids in any
** order ('' for none; NULL: every row): the K best of those, with the same
** exact bm25 (hits and the IDF still count every row of the phrase). A
** caller whose filters keep few rows (one rare source) passes the rowids
** they can keep, and needs no second read with a larger K.
**
** sessiondb_bm25(tbl, K, 'name', 'topterm') is 'top' for a caller that
** knows the query is one phrase and not a prefix (FTS5 does not tell a
** prefix apart): when that term, or a token of that phrase, has a range
** summary (below), it reads only the rows that can rank instead of all of
** them, and says so ("seek":1); a phrase of several tokens then has
** "hits":-1 (its rows not counted). When it skipped ranges of rows tying
** with the K-th best (rankTieRowid), "ids" holds exactly the K best.
** sessiondb_bm25(tbl, K, 'name', 'topsum'), for a query of the terms of a
** prefix ORed, ranks them as the prefix's one phrase (rankOr, below).
** With a further argument, a prefix ('topterm', 'topsum' and 'top' take
** it after allowed, which may be NULL), the query is read ahead only when
** its phrases are still the terms beginning with that prefix in the
** statement's snapshot (rankPrefixSame); else 'top' fails.
** sessiondb_bm25(tbl, K, 'name', 'topall', NULL, NULL, query), for a
** query of several terms, each with a summary, ranks it in one read of its
** rows (rankAll, below); query is the MATCH text, read again from inside.
** sessiondb_bm25(tbl, R, 'name', 'ranges', 'lo,hi,...'), on the first row
** of a one-token query, returns the summary of its rows in each rowid span,
** in ranges of R rows (a blob). sessiondb_bm25(tbl, 0, '', 'feed', p) hands the row
** to the C callback p (a pointer of type "sessiondb_rank_feed"): how the
** two read a rowid range of the term.
**
** The read-ahead does not keep every row: while reading, with the IDF not
** yet known, rows are compared by bm25's term without it (rankG), and
** threshold passes over a buffer (rankFlush) raise the K-th best exact
** value; rows below it, by a margin that covers the rounding of the final
** product, are dropped as they are read (RankAhead).
*/
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

/* bm25 is evaluated without fused multiply-adds, as in the amalgamation
** built for a baseline x86-64; fusing would change the last bits. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "fts5cjk_sqlite.h"
#include "fts5cjk.h"

#define RANK_K1 1.2
#define RANK_B 0.75
#define RANK_PRUNED 1e300
#define RANK_MAX_K 100000
#define RANK_MAX_ROWS (1 << 20) /* rows read ahead at most; more: per row */
#define RANK_CHECK_EVERY 1024   /* rows between looks at sqlite3_interrupt() */
#define RANK_TAB 32             /* phrase counts with a length cut-off */

/* RankRow is one row of a one-phrase query. */
typedef struct RankRow {
  sqlite3_int64 iRowid;
  double score;   /* its bound, then its score */
  int nFreq;
  int nTok;       /* its length in tokens once looked up, else -1 */
  union {
    int nMinLen;  /* while bounded: the length its positions prove */
    int iPlace;   /* once kept: its place in rank order, from 0 */
  } u;
  int iInst;      /* where its nFreq instances start in the read-ahead's aInst */
} RankRow;

typedef struct RankData {
  int nPhrase, nCol;
  double avgdl;
  double *aIDF;   /* per phrase */
  double *aFreq;  /* per phrase, current row */
  int *aSize;     /* per phrase: tokens */
  int *aColMin;   /* per column, current row: proven minimum length */
  int k, nTop;
  double *aTop;   /* min-heap of the best nTop (<= k) scores so far */
  int bLast;      /* iLast is the last row seen, dLast its value */
  sqlite3_int64 iLast;
  double dLast;
  int bAhead;     /* rows read ahead: aRow decides every row */
  int nRow;
  RankRow *aRow;  /* read ahead: the rows that can be in the K best, by rowid */
  int iHint;      /* where the last rankAheadRow search ended */
  sqlite3_int64 nHit; /* rows of the phrase (one-phrase queries) */
  sqlite3_int64 nReadUs; /* microseconds the read-ahead took */
  int bSummary;   /* the rows came from the term's range summary */
  struct RankConn *pConn; /* its kept lengths, when this statement may use them */
  int *aInst;     /* read ahead for 'top': each kept row's instances, else 0 */
  int nRowAlloc, nInstAlloc; /* aRow's and aInst's room, for rankSpareGive */
  struct RankConn *pSpare;   /* the connection, which keeps them when freed */
} RankData;

static double rankScore(const RankData *p, double D);
static void rankKeep(RankData *p, double score);

static void rankSpareGive(struct RankConn *c, int i, void *a, int nAlloc, size_t sz);

static void rankDataFree(void *pData){
  RankData *p = (RankData *)pData;
  rankSpareGive(p->pSpare, 0, p->aRow, p->nRowAlloc, sizeof(RankRow));
  rankSpareGive(p->pSpare, 1, p->aInst, p->nInstAlloc, sizeof(int));
  sqlite3_free(p);
}

/* RANK_SIFT defines NAME(a, n, i), which restores the max-heap a[0..n) of
** TYPE below a[i], BEFORE(x, y) telling whether *x goes before *y. */
#define RANK_SIFT(NAME, TYPE, BEFORE) \
static void NAME(TYPE *a, int n, int i){ \
  TYPE x = a[i]; \
  for(;;){ \
    int c = 2 * i + 1; \
    if( c >= n ) break; \
    if( c + 1 < n && BEFORE(&a[c + 1], &a[c]) ) c++; \
    if( !BEFORE(&a[c], &x) ) break; \
    a[i] = a[c]; \
    i = c; \
  } \
  a[i] = x; \
}

#define RANK_BY_SCORE(x, y) ((x)->score > (y)->score)

/* rankSiftDown restores the max-heap (by score) a[0..n) below a[i]. */
RANK_SIFT(rankSiftDown, RankRow, RANK_BY_SCORE)

static int rankByRowid(const void *pA, const void *pB){
  sqlite3_int64 a = ((const RankRow *)pA)->iRowid, b = ((const RankRow *)pB)->iRowid;
  return a < b ? -1 : (a > b ? 1 : 0);
}

/* rankByRank orders rows as the query does: best score first, ties by rowid. */
static int rankByRank(const void *pA, const void *pB){
  const RankRow *a = (const RankRow *)pA, *b = (const RankRow *)pB;
  if( a->score != b->score ) return a->score > b->score ? -1 : 1;
  return rankByRowid(pA, pB);
}

/* RankSizes reads row lengths from the table's %_docsize (one record of a
** varint per column) through one blob handle: opened on the first row,
** moved to each next one, which skips compiling and stepping a statement
** for every lookup. */
typedef struct RankSizes {
  sqlite3 *db;
  char *zTable;        /* name_docsize */
  sqlite3_blob *pBlob; /* 0 until the first lookup */
  struct RankLens *pLens; /* lengths kept on the connection, 0 for none */
  sqlite3_int64 through;  /* rows at most this id are kept */
  sqlite3_int64 nKept;    /* lengths read from pLens */
} RankSizes;

/* RankLens holds the lengths of one table's rows looked up or read in on
** this connection (DESIGN.md, "Row lengths kept in memory"): a[id] is the
** length of row id plus one, 0 when not known; ids 1 to n - 1. */
typedef struct RankLens {
  char *zTable;        /* name_docsize */
  unsigned short *a;
  sqlite3_int64 n;
  sqlite3_int64 iLoaded; /* every length of ids up to it was read in */
  int nUse;              /* read-aheads that used it */
} RankLens;

#define RANK_LENS_TABLES 4   /* tables whose lengths a connection keeps */
#define RANK_LENS_LOG 4096   /* logged changes forgotten one by one at most */
#define RANK_LENS_FROM 3     /* the statement of a connection that keeps first */
#define RANK_DIGESTS 4       /* sources' digests a connection keeps */

/* After fts5cjk_rank_lens_load read-aheads on a table, a connection reads
** in every length up to through (rankLensLoad): a connection that serves
** many searches then looks none up; one that serves a single search (the
** command line) never pays for it. Kept lengths take at most
** fts5cjk_rank_lens_max bytes in the process, on every connection. */
int fts5cjk_rank_lens_load = 8;
long long fts5cjk_rank_lens_max = 64 << 20;
static long long rankLensBytes = 0;

/* RankConn is sessiondb_bm25's state on one connection (its user data):
** the kept lengths, exact for the snapshot whose data version is iVersion.
** A length is kept only for a row whose id is at most state_meta's
** sessiondb_rank_through: every later insert, delete or update of such a
** row is logged in sessiondb_rank_dirty, whose seq only grows, and seen is
** the last seq applied. */
typedef struct RankConn {
  int nStmt;               /* statements that asked, up to RANK_LENS_FROM */
  int bChecked;            /* iVersion, iSchema, through and seen are set */
  unsigned int iVersion;   /* SQLITE_FCNTL_DATA_VERSION when checked */
  sqlite3_int64 iSchema;   /* the schema cookie when checked */
  sqlite3_int64 through;   /* 0: no log runs, nothing is kept */
  sqlite3_int64 seen;
  RankLens aLens[RANK_LENS_TABLES];
  /* the digests of sources' ids (rankConnDigest) in that data version */
  struct RankDigest {
    char *zSource;
    sqlite3_int64 through, digest;
  } aDigest[RANK_DIGESTS];
  int iDigest;  /* the slot to fill next */
  /* the largest row (0) and instance (1) buffers a ranking freed, and their
  ** room in elements (rankSpareGive) */
  void *aSpare[2];
  int nSpare[2];
} RankConn;

/* A connection keeps the largest row and instance buffers its rankings
** freed, up to RANK_SPARE_MAX bytes each, for the next ranking to fill. A
** buffer freed at the top of the heap is handed back to the OS by glibc,
** and allocated again it is faulted in page by page: 0.3 ms of a 1.5 ms
** search that reads 5,000 rows. */
#define RANK_SPARE_MAX (1 << 20)

/* buffers handed over by rankSpareTake in this process (a test aid) */
long long fts5cjk_rank_spares_taken = 0;

/* rankSpareTake hands over the connection's spare buffer i (0 rows, 1
** instances), setting *pnAlloc to its room; 0 when it has none. */
static void *rankSpareTake(RankConn *c, int i, int *pnAlloc){
  void *a = c ? c->aSpare[i] : 0;
  if( a ){
    *pnAlloc = c->nSpare[i];
    c->aSpare[i] = 0;
    c->nSpare[i] = 0;
    __atomic_fetch_add(&fts5cjk_rank_spares_taken, 1, __ATOMIC_RELAXED);
  }
  return a;
}

/* rankSpareGive keeps buffer a, of room for nAlloc elements of sz bytes,
** as the connection's spare i when it is larger than the one kept and at
** most RANK_SPARE_MAX bytes; otherwise it frees it. */
static void rankSpareGive(RankConn *c, int i, void *a, int nAlloc, size_t sz){
  if( a && c && nAlloc > c->nSpare[i] && (unsigned long long)nAlloc * sz <= RANK_SPARE_MAX ){
    sqlite3_free(c->aSpare[i]);
    c->aSpare[i] = a;
    c->nSpare[i] = nAlloc;
  }else{
    sqlite3_free(a);
  }
}

/* rankConnDigestClear forgets the digests. */
static void rankConnDigestClear(RankConn *c){
  int i;
  for(i = 0; i < RANK_DIGESTS; i++) sqlite3_free(c->aDigest[i].zSource);
  memset(c->aDigest, 0, sizeof(c->aDigest));
}

/* rankConnClear forgets every kept length. */
static void rankConnClear(RankConn *c){
  int i;
  for(i = 0; i < RANK_LENS_TABLES; i++){
    RankLens *l = &c->aLens[i];
    __atomic_fetch_sub(&rankLensBytes, (long long)l->n * (long long)sizeof(*l->a), __ATOMIC_RELAXED);
    free(l->a);
    l->a = 0;
    l->n = 0;
    l->iLoaded = 0;
  }
}

static void rankConnFree(void *pArg){
  RankConn *c = (RankConn *)pArg;
  int i;
  rankConnClear(c);
  rankConnDigestClear(c);
  for(i = 0; i < RANK_LENS_TABLES; i++) sqlite3_free(c->aLens[i].zTable);
  sqlite3_free(c->aSpare[0]);
  sqlite3_free(c->aSpare[1]);
  free(c);
}

/* rankConnForget forgets the lengths of the rows logged after seq seen, up
** to seq: SQLITE_CORRUPT when the log no longer holds each of them (it was
** trimmed past seen, or emptied with the summaries). */
static int rankConnForget(RankConn *c, sqlite3 *db, sqlite3_int64 seq){
  sqlite3_stmt *pStmt = 0;
  sqlite3_int64 n = 0;
  int rc = sqlite3_prepare_v2(db, "SELECT id FROM sessiondb_rank_dirty WHERE seq > ?1 AND seq <= ?2", -1, &pStmt, 0);
  if( rc == SQLITE_OK ){
    sqlite3_bind_int64(pStmt, 1, c->seen);
    sqlite3_bind_int64(pStmt, 2, seq);
  }
  while( rc == SQLITE_OK && (rc = sqlite3_step(pStmt)) == SQLITE_ROW ){
    sqlite3_int64 id = sqlite3_column_int64(pStmt, 0);
    int i;
    for(i = 0; i < RANK_LENS_TABLES; i++){
      if( id > 0 && id < c->aLens[i].n ) c->aLens[i].a[id] = 0;
    }
    n++;
    rc = SQLITE_OK;
  }
  sqlite3_finalize(pStmt);
  if( rc == SQLITE_DONE ) rc = n == seq - c->seen ? SQLITE_OK : SQLITE_CORRUPT;
  return rc;
}

/* rankConnSync makes the kept lengths exact for the statement's snapshot
** and tells whether they may be used: not in a write transaction (its
** changes may yet roll back) nor without summaries' log. When the data
** version moved, the log's changes since seen are forgotten; all is
** forgotten when the schema changed (an index made again), the log has
** a gap or restarted, through went down (or away: the log stopped), or
** more than RANK_LENS_LOG changes came. */
static int rankConnSync(RankConn *c, sqlite3 *db){
  sqlite3_stmt *pStmt = 0;
  sqlite3_int64 through = 0, seq = 0, schema = 0;
  unsigned int v = 0;
  int i, bKept = 0;
  if( c == 0 || sqlite3_txn_state(db, "main") != SQLITE_TXN_READ ) return 0;
  /* a connection that serves one search (the command line: one or two
  ** ranked statements) keeps nothing, and pays nothing for it */
  if( c->nStmt < RANK_LENS_FROM && ++c->nStmt < RANK_LENS_FROM ) return 0;
  if( sqlite3_file_control(db, "main", SQLITE_FCNTL_DATA_VERSION, &v) != SQLITE_OK ){
    rankConnClear(c);
    rankConnDigestClear(c);
    c->bChecked = 0;
    return 0;
  }
  if( c->bChecked && v == c->iVersion ) return c->through > 0;
  rankConnDigestClear(c);
  if( sqlite3_prepare_v2(db, "SELECT (SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = 'sessiondb_rank_through'),"
                         " (SELECT seq FROM sqlite_sequence WHERE name = 'sessiondb_rank_dirty'),"
                         " (SELECT schema_version FROM pragma_schema_version)", -1, &pStmt, 0) == SQLITE_OK
      && sqlite3_step(pStmt) == SQLITE_ROW ){
    through = sqlite3_column_int64(pStmt, 0);
    seq = sqlite3_column_int64(pStmt, 1);
    schema = sqlite3_column_int64(pStmt, 2);
  }
  sqlite3_finalize(pStmt);
  for(i = 0; i < RANK_LENS_TABLES; i++) bKept |= c->aLens[i].a != 0;
  if( bKept && (through < c->through || schema != c->iSchema
                || seq < c->seen || seq - c->seen > RANK_LENS_LOG
                || (seq > c->seen && rankConnForget(c, db, seq) != SQLITE_OK)) ){
    rankConnClear(c);
  }
  c->bChecked = 1;
  c->iVersion = v;
  c->iSchema = schema;
  c->through = through > 0 ? through : 0;
  c->seen = seq;
  return c->through > 0;
}

/* rankConnLens returns the kept lengths of table zTable (name_docsize), 0
** when the connection keeps lengths of RANK_LENS_TABLES others. */
static RankLens *rankConnLens(RankConn *c, const char *zTable){
  int i;
  for(i = 0; i < RANK_LENS_TABLES && c->aLens[i].zTable; i++){
    if( strcmp(c->aLens[i].zTable, zTable) == 0 ) return &c->aLens[i];
  }
  if( i == RANK_LENS_TABLES ) return 0;
  c->aLens[i].zTable = sqlite3_mprintf("%s", zTable);
  return c->aLens[i].zTable ? &c->aLens[i] : 0;
}

/* rankLensGrow grows l's array to hold ids up to through; 0 when it
** cannot, within the process's fts5cjk_rank_lens_max bytes or at all. */
static int rankLensGrow(RankLens *l, sqlite3_int64 through){
  long long more = (long long)(through + 1 - l->n) * (long long)sizeof(*l->a);
  unsigned short *a;
  if( through < l->n ) return 1;
  /* calloc first: its pages are mapped zero, touched only when written */
  if( __atomic_add_fetch(&rankLensBytes, more, __ATOMIC_RELAXED) > fts5cjk_rank_lens_max
      || (a = (unsigned short *)(l->a ? realloc(l->a, (size_t)(through + 1) * sizeof(*a))
                                      : calloc((size_t)(through + 1), sizeof(*a)))) == 0 ){
    __atomic_fetch_sub(&rankLensBytes, more, __ATOMIC_RELAXED);
    return 0;
  }
  if( l->a ) memset(&a[l->n], 0, (size_t)more);
  l->a = a;
  l->n = through + 1;
  return 1;
}

/* rankLensKeep keeps row iRowid's length nTok, when it can. */
static void rankLensKeep(RankLens *l, sqlite3_int64 through, sqlite3_int64 iRowid, int nTok){
  if( iRowid <= 0 || iRowid > through || nTok < 0 || nTok >= 0xffff ) return;
  if( iRowid < l->n || rankLensGrow(l, through) ) l->a[iRowid] = (unsigned short)(nTok + 1);
}

/* rankSizeOf is the length in a %_docsize record (a varint per column). */
static int rankSizeOf(const unsigned char *a, int n){
  sqlite3_int64 nTok = 0;
  int i = 0;
  while( i < n ){
    sqlite3_int64 v = 0;
    int j;
    for(j = 0; j < 8 && i < n; j++){
      v = (v << 7) | (a[i] & 0x7f);
      if( (a[i++] & 0x80) == 0 ) break;
    }
    if( j == 8 && i < n ) v = (v << 8) | a[i++];
    nTok += v;
  }
  return (int)nTok;
}

/* rankLensLoad reads in the lengths of l's rows with ids past l->iLoaded
** up to through, from zTable (name_docsize). */
static void rankLensLoad(RankLens *l, sqlite3 *db, const char *zTable, sqlite3_int64 through){
  sqlite3_stmt *pStmt = 0;
  char *zSql;
  int rc;
  if( !rankLensGrow(l, through) ) return;
  zSql = sqlite3_mprintf("SELECT id, sz FROM \"%w\" WHERE id > ?1 AND id <= ?2", zTable);
  rc = zSql ? sqlite3_prepare_v2(db, zSql, -1, &pStmt, 0) : SQLITE_NOMEM;
  sqlite3_free(zSql);
  if( rc == SQLITE_OK ){
    sqlite3_bind_int64(pStmt, 1, l->iLoaded);
    sqlite3_bind_int64(pStmt, 2, through);
  }
  while( rc == SQLITE_OK && sqlite3_step(pStmt) == SQLITE_ROW ){
    rankLensKeep(l, through, sqlite3_column_int64(pStmt, 0),
                 rankSizeOf((const unsigned char *)sqlite3_column_blob(pStmt, 1), sqlite3_column_bytes(pStmt, 1)));
  }
  /* a step that failed (interrupted) leaves the rest to a later read */
  if( sqlite3_finalize(pStmt) == SQLITE_OK && rc == SQLITE_OK ) l->iLoaded = through;
}

/* rankDocsize reads the length in tokens of a row (all columns), kept on
** the connection or from name_docsize. */
static int rankDocsize(RankSizes *s, sqlite3_int64 iRowid, int *pnTok){
  unsigned char aBuf[128];
  unsigned char *a = aBuf;
  int n, rc;
  RankLens *l = s->pLens;
  if( l && iRowid > 0 && iRowid < l->n && l->a[iRowid] ){
    *pnTok = l->a[iRowid] - 1;
    s->nKept++;
    return SQLITE_OK;
  }
  if( s->pBlob == 0 ){
    rc = sqlite3_blob_open(s->db, "main", s->zTable, "sz", iRowid, 0, &s->pBlob);
  }else{
    rc = sqlite3_blob_reopen(s->pBlob, iRowid);
  }
  /* A matching row without a length: the index and its docsize disagree. */
  if( rc == SQLITE_ERROR ) return SQLITE_CORRUPT;
  if( rc != SQLITE_OK ) return rc;
  n = sqlite3_blob_bytes(s->pBlob);
  if( n > (int)sizeof(aBuf) ){
    a = (unsigned char *)sqlite3_malloc(n);
    if( a == 0 ) return SQLITE_NOMEM;
  }
  rc = sqlite3_blob_read(s->pBlob, a, n, 0);
  *pnTok = rc == SQLITE_OK ? rankSizeOf(a, n) : 0;
  if( a != aBuf ) sqlite3_free(a);
  if( rc == SQLITE_OK && l ) rankLensKeep(l, s->through, iRowid, *pnTok);
  return rc;
}

/* rankSizesOpen readies s for table zTable's lengths, kept on the
** connection when p may use them; rankSizesClose frees it. */
static int rankSizesOpen(RankSizes *s, const RankData *p, sqlite3 *db, const char *zTable){
  memset(s, 0, sizeof(*s));
  s->db = db;
  s->zTable = sqlite3_mprintf("%s_docsize", zTable);
  if( s->zTable == 0 ) return SQLITE_NOMEM;
  if( p->pConn ){
    s->pLens = rankConnLens(p->pConn, s->zTable);
    s->through = p->pConn->through;
  }
  if( s->pLens && ++s->pLens->nUse > fts5cjk_rank_lens_load && s->pLens->iLoaded < s->through ){
    rankLensLoad(s->pLens, db, s->zTable, s->through);
  }
  return SQLITE_OK;
}

/* lengths read from those kept on connections, in this process (tests) */
long long fts5cjk_rank_lens_kept = 0;

static void rankSizesClose(RankSizes *s){
  __atomic_fetch_add(&fts5cjk_rank_lens_kept, s->nKept, __ATOMIC_RELAXED);
  sqlite3_blob_close(s->pBlob);
  sqlite3_free(s->zTable);
}

/* RankAhead collects the rows of a one-phrase query (rankAheadCb) while
** the phrase's rows are read. The phrase's IDF is not known before the
** read ends (it counts them), so while reading, rows are compared by the
** rest of bm25's term, g = (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))
** (the score is 0.0 + IDF * g, and IDF > 0): the buffer aRow holds the rows
** that can still be among the K best, each either bounded (nTok < 0, score
** the bound g of its proven least length) or looked up (score its exact g).
** When the buffer fills, rankFlush runs the threshold algorithm on it,
** which raises the K-th best exact g, aTopG[0]; from then on a row whose
** bound is below aTopG[0] by more than the rounding of the final product
** can tie (rankCut) is dropped as it is read, and never stored.
*/
typedef struct RankAhead {
  RankData *p;
  sqlite3 *db;    /* polled for sqlite3_interrupt(): a read-ahead is long */
  sqlite3_int64 nHit;
  int nRow, nAlloc, nFlush;
  int bCountOnly; /* count the rows only: not one phrase, or too many */
  RankRow *aRow;
  RankSizes sizes;
  int nTopG;
  double *aTopG;  /* min-heap of the best nTopG (<= k) exact g so far */
  double cut;     /* rows below it are out, once nTopG == k */
  /* aMaxLen[f]: the longest proven length at which a row where the phrase
  ** occurs f times still reaches cut (-1: none); valid once nTopG == k */
  int aMaxLen[RANK_TAB];
  int bMaxLen;       /* aMaxLen was computed, for maxLenCut */
  double maxLenCut;
  sqlite3_int64 nLookup; /* lengths looked up (SESSIONDB_RANK_STATS) */
  /* the summary of the range being read (rankFromSummary), 0 for none:
  ** it proves a least length for each frequency (rankFrontLen) */
  const struct RankRange *pFront;
  /* ranges of rows tying with the K-th best were skipped (rankTieRowid):
  ** of the rows tying with it only the first are known, so exactly the K
  ** best are kept */
  int bTiesCut;
  const struct RankAllow *pAllow; /* only rows in it can be kept; 0: any */
  /* With bInst, the (column, offset) of each stored row's instances of the
  ** phrase, in the order FTS5 gives them (RankRow.iInst), so that a page's
  ** snippets need no lookup of its rows in the index (rankTop); more than
  ** fts5cjk_rank_inst_max ints turn it off. */
  int bInst;
  int *aInst;
  int nInst, nInstAlloc;
} RankAhead;

/* ints of instances a read-ahead keeps at most (16 MB); a variable so that
** tests can turn the keeping off */
int fts5cjk_rank_inst_max = 1 << 22;

/* rows buffered before the first threshold pass, and at least between two;
** a variable so that tests can make the passes frequent */
int fts5cjk_rank_flush_min = 4096;

/* rankG is bm25's term without the IDF factor, operation for operation. */
static double rankG(const RankData *p, double f, double D){
  const double k1 = RANK_K1, b = RANK_B;
  return ( f * (k1 + 1.0) ) / ( f + k1 * (1 - b + b * D / p->avgdl) );
}

/* rankHeapKeep records v among the k best of the min-heap h of *pn values. */
static void rankHeapKeep(double *h, int *pn, int k, double v){
  int i = 0, n;
  if( *pn < k ){
    i = (*pn)++;
    while( i > 0 && h[(i - 1) / 2] > v ){
      h[i] = h[(i - 1) / 2];
      i = (i - 1) / 2;
    }
    h[i] = v;
    return;
  }
  if( v <= h[0] ) return;
  n = *pn;
  for(;;){
    int c = 2 * i + 1;
    if( c >= n ) break;
    if( c + 1 < n && h[c + 1] < h[c] ) c++;
    if( h[c] >= v ) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = v;
}

/* rankCut is the g below which a row cannot reach the K-th best score: a
** row with g < t * (1 - 1e-13) has IDF * g < IDF * t after rounding both
** products (each off by at most 2^-53 of its value), so it cannot even tie
** with a row of g >= t. */
static double rankCut(double t){
  return t - t * 1e-13;
}

/* rankMaxLens computes aMaxLen for the current cut: rankG falls (or stays)
** as the length grows, every operation being monotonic, so a row whose
** phrase occurs f < RANK_TAB times is below the cut exactly when its proven
** length exceeds aMaxLen[f], which saves rankAheadCb two divisions a row.
** It runs after every threshold pass (one per range read from a summary),
** so it starts from the length solving rankG = cut in exact arithmetic and
** steps from there with rankG itself, which rounding moves by a few
** tokens at most; and does nothing when the cut has not moved. */
static void rankMaxLens(RankAhead *a){
  const double k1 = RANK_K1, b = RANK_B;
  int f;
  if( a->bMaxLen && a->maxLenCut == a->cut ) return;
  a->bMaxLen = 1;
  a->maxLenCut = a->cut;
  a->aMaxLen[0] = -1;
  for(f = 1; f < RANK_TAB; f++){
    const sqlite3_int64 top = 0x7fffffff;
    double d = ((double)f * (k1 + 1.0) / a->cut - (double)f - k1 * (1 - b)) * a->p->avgdl / (k1 * b);
    sqlite3_int64 lo;   /* the longest length with g(lo) >= cut, -1: none */
    if( d != d ) d = -1.0;  /* NaN: a zero cut and avgdl, say; stepping decides */
    lo = d >= (double)top ? top : (d < -1.0 ? -1 : (sqlite3_int64)d);
    while( lo >= 0 && rankG(a->p, (double)f, (double)lo) < a->cut ) lo--;
    while( lo < top && rankG(a->p, (double)f, (double)(lo + 1)) >= a->cut ) lo++;
    a->aMaxLen[f] = (int)lo;
  }
}

/* rankFlush runs the threshold algorithm on the buffered rows (in g): it
** looks up lengths in order of falling bound until no bound left reaches
** the K-th best exact g, then keeps only the rows at or above rankCut of
** it. */
static int rankFlush(RankAhead *a){
  RankData *p = a->p;
  int i, m, n = 0, rc = SQLITE_OK;
  for(i = a->nRow / 2 - 1; i >= 0; i--) rankSiftDown(a->aRow, a->nRow, i);
  for(m = a->nRow; m > 0; m--){
    RankRow r = a->aRow[0];
    if( a->nTopG == p->k && r.score < a->cut ) break;
    if( r.nTok < 0 ){
      rc = rankDocsize(&a->sizes, r.iRowid, &r.nTok);
      if( rc != SQLITE_OK ) return rc;
      a->nLookup++;
      r.score = rankG(p, (double)r.nFreq, (double)r.nTok);
      rankHeapKeep(a->aTopG, &a->nTopG, p->k, r.score);
      if( a->nTopG == p->k ) a->cut = rankCut(a->aTopG[0]);
    }
    a->aRow[0] = a->aRow[m - 1];
    a->aRow[m - 1] = r;
    rankSiftDown(a->aRow, m - 1, 0);
  }
  if( a->nTopG == p->k ) rankMaxLens(a);
  /* rows [0, m) are below the cut; of [m, nRow), keep those at or above it */
  for(i = m; i < a->nRow; i++){
    if( a->nTopG < p->k || a->aRow[i].score >= a->cut ) a->aRow[n++] = a->aRow[i];
  }
  a->nRow = n;
  a->nFlush = n * 2 > fts5cjk_rank_flush_min ? n * 2 : fts5cjk_rank_flush_min;
  if( a->nFlush < 4 * p->k && fts5cjk_rank_flush_min > 1 ) a->nFlush = 4 * p->k;
  return SQLITE_OK;
}

/* rankAllowed reports whether iRowid is in the ascending array a[0..n). */
static int rankAllowed(const sqlite3_int64 *a, int n, sqlite3_int64 iRowid){
  int lo = 0, hi = n;
  while( lo < hi ){
    int mid = lo + (hi - lo) / 2;
    if( a[mid] < iRowid ) lo = mid + 1; else hi = mid;
  }
  return lo < n && a[lo] == iRowid;
}

static int rankCmpRowid(const void *pA, const void *pB){
  sqlite3_int64 a = *(const sqlite3_int64 *)pA, b = *(const sqlite3_int64 *)pB;
  return (a > b) - (a < b);
}

/* rankRowidPush appends v to the array (*pa, *pn) of *pnAlloc slots,
** doubling it when full; SQLITE_NOMEM leaves the array as it was. */
static int rankRowidPush(sqlite3_int64 **pa, int *pn, int *pnAlloc, sqlite3_int64 v){
  if( *pn == *pnAlloc ){
    int m = *pnAlloc ? *pnAlloc * 2 : 64;
    sqlite3_int64 *aNew = (sqlite3_int64 *)sqlite3_realloc64(*pa, (unsigned long long)m * sizeof(sqlite3_int64));
    if( aNew == 0 ) return SQLITE_NOMEM;
    *pa = aNew;
    *pnAlloc = m;
  }
  (*pa)[(*pn)++] = v;
  return SQLITE_OK;
}

/* rankParseAllowed reads a text of comma-separated rowids into an array
** (*pa, *pn), sorted when bSort, which the caller frees; anything but
** digits, an optional minus sign and commas is SQLITE_MISMATCH. */
static int rankParseAllowed(const char *z, int bSort, sqlite3_int64 **pa, int *pn){
  int n = 0, nAlloc = 0;
  sqlite3_int64 *a = 0;
  *pa = 0;
  *pn = 0;
  while( *z ){
    char *zEnd;
    long long v;
    if( !(*z == '-' || (*z >= '0' && *z <= '9')) ) goto mismatch;
    v = strtoll(z, &zEnd, 10);
    if( zEnd == z || (*zEnd != ',' && *zEnd != 0) ) goto mismatch;
    if( rankRowidPush(&a, &n, &nAlloc, (sqlite3_int64)v) != SQLITE_OK ){
      sqlite3_free(a);
      return SQLITE_NOMEM;
    }
    z = *zEnd ? zEnd + 1 : zEnd;
  }
  if( n > 1 && bSort ) qsort(a, (size_t)n, sizeof(*a), rankCmpRowid);
  *pa = a;
  *pn = n;
  return SQLITE_OK;
mismatch:
  sqlite3_free(a);
  return SQLITE_MISMATCH;
}

/* RankAllow is the set of rowids a narrowed query may keep (a rare
** source's messages): a bitmap of the ids from lo on when they are dense,
** which spares sorting them (about a seventh of such a query at 1M, for
** 50,000-120,000 ids) and a binary search a row, else their ascending
** array. */
typedef struct RankAllow {
  sqlite3_int64 *a;    /* ascending, when aBit is 0 */
  int n;
  unsigned char *aBit; /* bit i: rowid lo + i */
  sqlite3_int64 lo, nBit;
} RankAllow;

/* rankAllowHas reports whether iRowid is in p. */
static int rankAllowHas(const RankAllow *p, sqlite3_int64 iRowid){
  if( p->aBit ){
    unsigned long long i = (unsigned long long)iRowid - (unsigned long long)p->lo;
    return i < (unsigned long long)p->nBit && ((p->aBit[i >> 3] >> (i & 7)) & 1);
  }
  return rankAllowed(p->a, p->n, iRowid);
}

static void rankAllowFree(RankAllow *p){
  sqlite3_free(p->a);
  sqlite3_free(p->aBit);
}

/* rankMix scatters a rowid's bits (splitmix64's finalizer). */
static unsigned long long rankMix(sqlite3_int64 v){
  unsigned long long x = (unsigned long long)v;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* rankAllowDigest sums rankMix over the rowids of p at or below through
** (modulo 2^64): a source's summary holds the digest of the source's
** message ids it was made from, and is used only while they are the
** same (a session moved to another source, a message deleted: another
** digest). */
static sqlite3_int64 rankAllowDigest(const RankAllow *p, sqlite3_int64 through){
  unsigned long long d = 0;
  sqlite3_int64 i;
  if( p->aBit ){
    for(i = 0; i < (p->nBit + 7) / 8 && p->lo + 8 * i <= through; i++){
      unsigned int b = p->aBit[i];
      while( b ){
        sqlite3_int64 v = p->lo + 8 * i + __builtin_ctz(b);
        if( v > through ) break;
        d += rankMix(v);
        b &= b - 1;
      }
    }
  }else{
    for(i = 0; i < p->n && p->a[i] <= through; i++) d += rankMix(p->a[i]);
  }
  return (sqlite3_int64)d;
}

/* rankConnDigest is rankAllowDigest(p, through), p the ids of source
** zSource, kept on connection c (0: none) while its data version stays
** the same (rankConnSync forgets them): the searches of a source compute
** it once. */
static sqlite3_int64 rankConnDigest(RankConn *c, const char *zSource, sqlite3_int64 through,
                                    const RankAllow *p){
  struct RankDigest *d;
  sqlite3_int64 v;
  char *z;
  int i;
  for(i = 0; c && i < RANK_DIGESTS; i++){
    d = &c->aDigest[i];
    if( d->zSource && d->through == through && strcmp(d->zSource, zSource) == 0 ) return d->digest;
  }
  v = rankAllowDigest(p, through);
  if( c && (z = sqlite3_mprintf("%s", zSource)) != 0 ){
    d = &c->aDigest[c->iDigest++ % RANK_DIGESTS];
    sqlite3_free(d->zSource);
    d->zSource = z;
    d->through = through;
    d->digest = v;
  }
  return v;
}

/* rankAllowBuild turns p's array of rowids (p->a, p->n, in any order) into
** a bitmap when they span fewer than 64 times their number (no more bytes
** than the array), else sorts it. */
static int rankAllowBuild(RankAllow *p){
  sqlite3_int64 lo, hi;
  int i;
  if( p->n == 0 ) return SQLITE_OK;
  lo = hi = p->a[0];
  for(i = 1; i < p->n; i++){
    if( p->a[i] < lo ) lo = p->a[i];
    if( p->a[i] > hi ) hi = p->a[i];
  }
  if( (unsigned long long)hi - (unsigned long long)lo >= (unsigned long long)p->n * 64 ){
    qsort(p->a, (size_t)p->n, sizeof(*p->a), rankCmpRowid);
    return SQLITE_OK;
  }
  p->lo = lo;
  p->nBit = hi - lo + 1;
  p->aBit = (unsigned char *)sqlite3_realloc64(0, (unsigned long long)p->nBit / 8 + 1);
  if( p->aBit == 0 ) return SQLITE_NOMEM;
  memset(p->aBit, 0, (size_t)(p->nBit / 8 + 1));
  for(i = 0; i < p->n; i++){
    unsigned long long b = (unsigned long long)(p->a[i] - lo);
    p->aBit[b >> 3] |= (unsigned char)(1 << (b & 7));
  }
  sqlite3_free(p->a);
  p->a = 0;
  p->n = 0;
  return SQLITE_OK;
}

/* The blob of sessiondb_idset: 'B', lo in 8 bytes (little-endian), then
** the bitmap (bit i: rowid lo + i); or 'A' and the rowids ascending, 8
** bytes each; 'A' alone is the empty set. */
static void rankPut64(unsigned char *z, sqlite3_int64 v){
  int i;
  for(i = 0; i < 8; i++) z[i] = (unsigned char)((unsigned long long)v >> (8 * i));
}
static sqlite3_int64 rankGet64(const unsigned char *z){
  unsigned long long v = 0;
  int i;
  for(i = 7; i >= 0; i--) v = (v << 8) | z[i];
  return (sqlite3_int64)v;
}

/* rankAllowMake reads the allowed rowids v into p: a blob of
** sessiondb_idset, or a text of comma-separated rowids. Anything else, or
** a malformed blob, is SQLITE_MISMATCH. rankAllowFree frees it. */
static int rankAllowMake(sqlite3_value *v, RankAllow *p){
  const unsigned char *z;
  int n, i, rc;
  memset(p, 0, sizeof(*p));
  if( sqlite3_value_type(v) != SQLITE_BLOB ){
    const char *zText = (const char *)sqlite3_value_text(v);
    if( zText == 0 ) return SQLITE_NOMEM;
    rc = rankParseAllowed(zText, 0, &p->a, &p->n);
    return rc == SQLITE_OK ? rankAllowBuild(p) : rc;
  }
  z = (const unsigned char *)sqlite3_value_blob(v);
  n = sqlite3_value_bytes(v);
  if( n >= 9 && z[0] == 'B' ){
    p->lo = rankGet64(&z[1]);
    p->nBit = (sqlite3_int64)(n - 9) * 8;
    p->aBit = (unsigned char *)sqlite3_malloc64((unsigned long long)(n - 9) + 1);
    if( p->aBit == 0 ) return SQLITE_NOMEM;
    memcpy(p->aBit, &z[9], (size_t)(n - 9));
    return SQLITE_OK;
  }
  if( n < 1 || z[0] != 'A' || (n - 1) % 8 != 0 ) return SQLITE_MISMATCH;
  p->n = (n - 1) / 8;
  p->a = (sqlite3_int64 *)sqlite3_malloc64((unsigned long long)p->n * sizeof(*p->a) + 1);
  if( p->a == 0 ) return SQLITE_NOMEM;
  for(i = 0; i < p->n; i++){
    p->a[i] = rankGet64(&z[1 + 8 * i]);
    if( i > 0 && p->a[i] < p->a[i - 1] ) return SQLITE_MISMATCH;
  }
  return SQLITE_OK;
}

/* sessiondb_idset(id), an aggregate: its integer arguments (NULLs left
** out) as the blob above, which sessiondb_bm25 takes for the rowids it
** may keep; a rare source's message ids handed over without a text to
** write and parse (a fifth of such a search at 1M: 120,000 ids). */
typedef struct RankIdSet {
  RankAllow set;  /* its array, until the final call */
  int nAlloc;
} RankIdSet;

static void rankIdSetStep(sqlite3_context *pCtx, int nArg, sqlite3_value **apVal){
  RankIdSet *pSet = (RankIdSet *)sqlite3_aggregate_context(pCtx, sizeof(RankIdSet));
  RankAllow *p = pSet ? &pSet->set : 0;
  (void)nArg;
  if( p == 0 ){
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  if( sqlite3_value_type(apVal[0]) == SQLITE_NULL ) return;
  if( sqlite3_value_type(apVal[0]) != SQLITE_INTEGER ){
    sqlite3_result_error(pCtx, "sessiondb_idset: not an integer", -1);
    return;
  }
  if( rankRowidPush(&p->a, &p->n, &pSet->nAlloc, sqlite3_value_int64(apVal[0])) != SQLITE_OK ){
    sqlite3_result_error_nomem(pCtx);
  }
}

static void rankIdSetFinal(sqlite3_context *pCtx){
  RankIdSet *pSet = (RankIdSet *)sqlite3_aggregate_context(pCtx, 0);
  RankAllow *p = pSet ? &pSet->set : 0, empty;
  unsigned char *z;
  sqlite3_int64 nByte;
  int i;
  if( p == 0 ){
    memset(&empty, 0, sizeof(empty));
    p = &empty;  /* no row: the empty set */
  }
  if( rankAllowBuild(p) != SQLITE_OK ){
    sqlite3_result_error_nomem(pCtx);
    rankAllowFree(p);
    return;
  }
  nByte = p->aBit ? 9 + p->nBit / 8 + 1 : 1 + 8 * (sqlite3_int64)p->n;
  z = nByte <= 0x7fffffff ? (unsigned char *)sqlite3_malloc64((unsigned long long)nByte) : 0;
  if( z == 0 ){
    sqlite3_result_error_nomem(pCtx);
    rankAllowFree(p);
    return;
  }
  if( p->aBit ){
    z[0] = 'B';
    rankPut64(&z[1], p->lo);
    memcpy(&z[9], p->aBit, (size_t)(nByte - 9));
  }else{
    z[0] = 'A';
    for(i = 0; i < p->n; i++) rankPut64(&z[1 + 8 * i], p->a[i]);
  }
  rankAllowFree(p);
  sqlite3_result_blob(pCtx, z, (int)nByte, sqlite3_free);
}

static int rankFrontLen(const struct RankRange *r, int f);

/* rankAheadRestart forgets the rows read, to read them again from the
** start (nFlush: rows buffered before the first threshold pass). */
static void rankAheadRestart(RankAhead *a, int nFlush){
  a->nHit = 0;
  a->nRow = 0;
  a->nTopG = 0;
  a->nFlush = nFlush;
  a->bCountOnly = 0;
  a->nInst = 0;
}

/* rankInstKeep appends the current row's nFreq instances of the phrase to
** a->aInst, or turns bInst off past fts5cjk_rank_inst_max. */
static int rankInstKeep(const Fts5ExtensionApi *pApi, Fts5Context *pFts, RankAhead *a, int nFreq){
  Fts5PhraseIter it;
  int rc, iCol, iOff, n = a->nInst;
  if( n + 2 * nFreq > fts5cjk_rank_inst_max ){
    a->bInst = 0;
    return SQLITE_OK;
  }
  if( n + 2 * nFreq > a->nInstAlloc ){
    int m = a->nInstAlloc ? a->nInstAlloc * 2 : 1024;
    int *aNew;
    while( m < n + 2 * nFreq ) m *= 2;
    if( m > fts5cjk_rank_inst_max ) m = fts5cjk_rank_inst_max;
    aNew = (int *)sqlite3_realloc64(a->aInst, (unsigned long long)m * sizeof(int));
    if( aNew == 0 ) return SQLITE_NOMEM;
    a->aInst = aNew;
    a->nInstAlloc = m;
  }
  rc = pApi->xPhraseFirst(pFts, 0, &it, &iCol, &iOff);
  for(; rc == SQLITE_OK && iCol >= 0 && n < a->nInst + 2 * nFreq; pApi->xPhraseNext(pFts, &it, &iCol, &iOff)){
    a->aInst[n++] = iCol;
    a->aInst[n++] = iOff;
  }
  if( rc == SQLITE_OK && n != a->nInst + 2 * nFreq ) rc = SQLITE_CORRUPT;
  a->nInst = n;
  return rc;
}

/* rankAheadCb records a row of the phrase that can still be among the K
** best: its rowid, how often the phrase occurs, the length its positions
** prove, and (bInst) its instances. */
static int rankAheadCb(const Fts5ExtensionApi *pApi, Fts5Context *pFts,
                       void *pUserData){
  RankAhead *a = (RankAhead *)pUserData;
  RankData *p = a->p;
  Fts5PhraseIter it;
  int rc, iCol, iOff, i, nFreq = 0, nMinLen = 0;
  double g;
  a->nHit++;
  if( a->nHit % RANK_CHECK_EVERY == 0 && a->db && sqlite3_is_interrupted(a->db) ){
    return SQLITE_INTERRUPT;
  }
  if( a->bCountOnly ) return SQLITE_OK;
  if( a->pAllow && !rankAllowHas(a->pAllow, pApi->xRowid(pFts)) ){
    return SQLITE_OK;
  }
  for(i = 0; i < p->nCol; i++) p->aColMin[i] = 0;
  rc = pApi->xPhraseFirst(pFts, 0, &it, &iCol, &iOff);
  if( rc != SQLITE_OK ) return rc;
  for(; iCol >= 0; pApi->xPhraseNext(pFts, &it, &iCol, &iOff)){
    nFreq++;
    if( iCol < p->nCol && iOff + p->aSize[0] > p->aColMin[iCol] ){
      p->aColMin[iCol] = iOff + p->aSize[0];
    }
  }
  for(i = 0; i < p->nCol; i++) nMinLen += p->aColMin[i];
  if( a->pFront ){
    int nLen = rankFrontLen(a->pFront, nFreq);
    if( nLen > nMinLen ) nMinLen = nLen;
  }
  if( a->nTopG == p->k && nFreq < RANK_TAB && nMinLen > a->aMaxLen[nFreq] ){
    return SQLITE_OK;
  }
  g = rankG(p, (double)nFreq, (double)nMinLen);
  if( a->nTopG == p->k && g < a->cut ) return SQLITE_OK;
  if( a->nRow == a->nAlloc ){
    int n = a->nAlloc ? a->nAlloc * 2 : 256;
    RankRow *aNew;
    if( a->nRow >= RANK_MAX_ROWS ){
      a->bCountOnly = 1;
      return SQLITE_OK;
    }
    aNew = (RankRow *)sqlite3_realloc64(a->aRow, (unsigned long long)n * sizeof(RankRow));
    if( aNew == 0 ) return SQLITE_NOMEM;
    a->aRow = aNew;
    a->nAlloc = n;
  }
  if( a->bInst ){
    rc = rankInstKeep(pApi, pFts, a, nFreq);
    if( rc != SQLITE_OK ) return rc;
  }
  a->aRow[a->nRow].iRowid = pApi->xRowid(pFts);
  a->aRow[a->nRow].nFreq = nFreq;
  a->aRow[a->nRow].nTok = -1;
  a->aRow[a->nRow].u.nMinLen = nMinLen;
  a->aRow[a->nRow].score = g;
  a->aRow[a->nRow].iInst = a->nInst - 2 * nFreq;
  a->nRow++;
  if( a->nRow >= a->nFlush ) return rankFlush(a);
  return SQLITE_OK;
}

/* rankInst reads the current row's phrase instances: p->aFreq[i], how
** often phrase i occurs (every instance counted as phrase iAs when iAs >=
** 0: a query of that phrase alone), and *pnMinLen, the length its
** positions prove (an instance at offset o of a phrase of s tokens proves
** its column holds o + s tokens or more). */
static int rankInst(const Fts5ExtensionApi *pApi, Fts5Context *pFts, RankData *p,
                    int iAs, int *pnMinLen){
  int i, nInst = 0, rc;
  memset(p->aFreq, 0, sizeof(double) * (size_t)p->nPhrase);
  memset(p->aColMin, 0, sizeof(int) * (size_t)p->nCol);
  rc = pApi->xInstCount(pFts, &nInst);
  for(i = 0; rc == SQLITE_OK && i < nInst; i++){
    int ip, ic, io;
    rc = pApi->xInst(pFts, i, &ip, &ic, &io);
    if( rc == SQLITE_OK ){
      if( iAs >= 0 ) ip = iAs;
      p->aFreq[ip] += 1.0;
      if( ic >= 0 && ic < p->nCol && io + p->aSize[ip] > p->aColMin[ic] ){
        p->aColMin[ic] = io + p->aSize[ip];
      }
    }
  }
  *pnMinLen = 0;
  for(i = 0; i < p->nCol; i++) *pnMinLen += p->aColMin[i];
  return rc;
}

/* RANK_RETRY: rankAhead cannot vouch for an order without the IDF */
#define RANK_RETRY (-1)

/* rankAhead scores the rows a one-phrase query kept (see the top of the
** file) with the phrase's IDF, now known, and keeps in p->aRow those whose
** score reaches the K best: the threshold algorithm again, on the rows
** rankAheadCb left, looking up the lengths not yet known.
**
** With bOrderOnly the IDF is not known (a phrase read from a summary: its
** rows were not counted) and p->aIDF[0] is 1.0, so each score is the
** row's g. IDF * g rounds monotonically, so that order is bm25's, except
** that two rows of different g could round to one score, a tie bm25
** breaks by rowid: when two rows at or near the K best differ by less than
** the rounding margin of rankCut, it returns RANK_RETRY (the caller reads
** every row) instead. */
static int rankAhead(RankData *p, RankAhead *a, int bOrderOnly){
  int i, m, n = 0, rc = SQLITE_OK;
  for(i = 0; i < a->nRow; i++){
    RankRow *r = &a->aRow[i];
    p->aFreq[0] = (double)r->nFreq;
    r->score = rankScore(p, (double)(r->nTok >= 0 ? r->nTok : r->u.nMinLen));
  }
  /* Take rows by falling bound (a max-heap); scored rows move behind it. */
  for(i = a->nRow / 2 - 1; i >= 0; i--) rankSiftDown(a->aRow, a->nRow, i);
  for(m = a->nRow; rc == SQLITE_OK && m > 0; m--){
    RankRow r = a->aRow[0];
    if( p->nTop == p->k && r.score < (bOrderOnly ? rankCut(p->aTop[0]) : p->aTop[0]) ) break;
    if( m % RANK_CHECK_EVERY == 0 && sqlite3_is_interrupted(a->db) ){
      rc = SQLITE_INTERRUPT;
      break;
    }
    if( r.nTok < 0 ){
      rc = rankDocsize(&a->sizes, r.iRowid, &r.nTok);
      a->nLookup++;
      p->aFreq[0] = (double)r.nFreq;
      r.score = rankScore(p, (double)r.nTok);
    }
    rankKeep(p, r.score);
    a->aRow[0] = a->aRow[m - 1];
    a->aRow[m - 1] = r;
    rankSiftDown(a->aRow, m - 1, 0);
  }
  if( rc != SQLITE_OK ) return rc;
  /* rows [m, nRow) are scored; keep those reaching the K-th best */
  for(i = m; i < a->nRow; i++){
    if( p->nTop < p->k || a->aRow[i].score >= p->aTop[0] ){
      a->aRow[n++] = a->aRow[i];
    }else if( bOrderOnly && a->aRow[i].score >= rankCut(p->aTop[0]) ){
      return RANK_RETRY;  /* just below the K-th best: might tie with it */
    }
  }
  qsort(a->aRow, (size_t)n, sizeof(RankRow), rankByRank);
  for(i = 1; bOrderOnly && i < n; i++){
    const RankRow *x = &a->aRow[i - 1], *y = &a->aRow[i];
    if( x->score != y->score && y->score >= rankCut(x->score) ) return RANK_RETRY;
  }
  if( a->bTiesCut && n > p->k ) n = p->k;
  for(i = 0; i < n; i++) a->aRow[i].u.iPlace = i;
  qsort(a->aRow, (size_t)n, sizeof(RankRow), rankByRowid);
  p->aRow = a->aRow;
  p->nRowAlloc = a->nAlloc;
  p->nRow = n;
  p->bAhead = 1;
  a->aRow = 0;
  if( a->bInst ){
    p->aInst = a->aInst;
    p->nInstAlloc = a->nInstAlloc;
    a->aInst = 0;
  }
  return SQLITE_OK;
}

/*
** Range summaries (DESIGN.md, "Top-k ranking from range summaries").
**
** For a frequent term, sessiondb_rank_terms(term, through, seen, ranges)
** keeps a summary of the term's rows with rowid <= through, cut in
** consecutive rowid ranges: a range covers (the previous range's hi, hi]
** and holds (hi, n, a frontier of (frequency, length) points, rankFrontAdd).
** n is exact; the frontier bounds bm25's term g of every row of the range
** from above. Rows changed (inserted, deleted, updated) with rowid <= the
** file's through are logged in sessiondb_rank_dirty (triggers, which
** Hermes' process runs too); a summary reflects the log up to its seen.
**
** A query of that one term then counts its rows (bm25's IDF) as the sum of
** the clean ranges' n plus what FTS5 finds in the ranges holding a dirty
** rowid and above through, and reads rows only from those ranges and from
** clean ranges in order of falling bound, until no bound left reaches the
** K-th best g: each read is a statement of the same connection (one
** snapshot) running FTS5 over that rowid range, whose rows go through
** rankAheadCb as if xQueryPhrase had read them.
*/
#define RANK_NPOINT 8
#define RANK_REC (8 + 4 + 8 * RANK_NPOINT) /* bytes of an encoded range */
#define RANK_MAX_DIRTY 64    /* more changed rows: read every row (xQueryPhrase) */
#define RANK_FEED "sessiondb_rank_feed"
#define RANK_GIVE_UP 4       /* read more than 1/4 of the clean rows: one pass */
#define RANK_PHRASE_MIN 800  /* ranges of a phrase's word summary at least (rankFromSummary) */
#define RANK_SRC_SEEK 10     /* a source's range read costs this many ranges' seeks */
#define RANK_SRC_SPAN 8      /* a source's range holds at most this many ranges' rows */

struct RankRange {
  sqlite3_int64 hi;
  int n;
  int aMaxF[RANK_NPOINT];   /* the frontier's points (rankFrontAdd); */
  int aMinLen[RANK_NPOINT]; /* f = 0: none */
};
typedef struct RankRange RankRange;

/* rankFrontLen is the least length a row of the range holding the term f
** times can have: every row is beaten by a point (no more frequent, no
** shorter), so it is at least as long as the shortest point of frequency
** f or more. It is 0 when none is (a summary that does not hold the row:
** the row's positions alone bound it). In a CJK index the positions prove
** little (a bigram early in a long row), the frontier much more. */
static int rankFrontLen(const RankRange *r, int f){
  int c, n = -1;
  for(c = 0; c < RANK_NPOINT; c++){
    if( r->aMaxF[c] >= f && (n < 0 || r->aMinLen[c] < n) ) n = r->aMinLen[c];
  }
  return n < 0 ? 0 : n;
}

/* rankFrontAdd adds a row holding the term f times in nTok tokens to the
** range's frontier: points (f, length) in ascending f such that every row
** of the range is beaten by one of them (no more frequent, no shorter), so
** that bm25's g of every row is at most the best g of a point (g rises
** with f and falls with the length). Points the row beats are dropped;
** when full, the two neighbours whose union (the larger f, the shorter
** length), a point beating both, has the least g at the file's current
** average length p->avgdl become that point: the bound grows least. */
static void rankFrontAdd(const RankData *p, RankRange *r, int f, int nTok){
  int i, j, n = 0, iMin = 0;
  double gMin = 0.0;
  for(i = 0; i < RANK_NPOINT && r->aMaxF[i] > 0; i++){
    if( r->aMaxF[i] >= f && r->aMinLen[i] <= nTok ) return; /* beaten */
  }
  for(i = 0; i < RANK_NPOINT && r->aMaxF[i] > 0; i++){
    if( !(f >= r->aMaxF[i] && nTok <= r->aMinLen[i]) ){
      r->aMaxF[n] = r->aMaxF[i];
      r->aMinLen[n] = r->aMinLen[i];
      n++;
    }
  }
  if( n == RANK_NPOINT ){
    for(i = 0; i < n - 1; i++){
      int l = r->aMinLen[i] < r->aMinLen[i + 1] ? r->aMinLen[i] : r->aMinLen[i + 1];
      double g = rankG(p, (double)r->aMaxF[i + 1], (double)l);
      if( i == 0 || g < gMin ){
        gMin = g;
        iMin = i;
      }
    }
    if( r->aMinLen[iMin + 1] < r->aMinLen[iMin] ) r->aMinLen[iMin] = r->aMinLen[iMin + 1];
    r->aMaxF[iMin] = r->aMaxF[iMin + 1];
    for(i = iMin + 1; i < n - 1; i++){
      r->aMaxF[i] = r->aMaxF[i + 1];
      r->aMinLen[i] = r->aMinLen[i + 1];
    }
    n--;
  }
  for(i = n; i < RANK_NPOINT; i++) r->aMaxF[i] = r->aMinLen[i] = 0;
  for(i = 0; i < n && r->aMaxF[i] < f; i++){}
  for(j = n; j > i; j--){
    r->aMaxF[j] = r->aMaxF[j - 1];
    r->aMinLen[j] = r->aMinLen[j - 1];
  }
  r->aMaxF[i] = f;
  r->aMinLen[i] = nTok;
}

static void rankPut(unsigned char *a, sqlite3_int64 v, int n){
  int i;
  for(i = 0; i < n; i++) a[i] = (unsigned char)((unsigned long long)v >> (8 * i));
}

/* rankGet4 reads a little-endian signed 32-bit value. */
static int rankGet4(const unsigned char *a){
  return (int)((unsigned int)a[0] | (unsigned int)a[1] << 8 | (unsigned int)a[2] << 16 | (unsigned int)a[3] << 24);
}

static sqlite3_int64 rankGet8(const unsigned char *a){
  return (sqlite3_int64)((unsigned long long)(unsigned int)rankGet4(a)
                         | (unsigned long long)(unsigned int)rankGet4(&a[4]) << 32);
}

/* Ranges are encoded little-endian: hi (8 bytes), n (4), then per class
** the largest frequency (4) and the least length (4). */
static void rankRangeEncode(const RankRange *r, unsigned char *a){
  int c;
  rankPut(a, r->hi, 8);
  rankPut(&a[8], r->n, 4);
  for(c = 0; c < RANK_NPOINT; c++){
    rankPut(&a[12 + 8 * c], r->aMaxF[c], 4);
    rankPut(&a[16 + 8 * c], r->aMinLen[c], 4);
  }
}

static void rankRangeDecode(const unsigned char *a, RankRange *r){
  int c;
  r->hi = rankGet8(a);
  r->n = rankGet4(&a[8]);
  for(c = 0; c < RANK_NPOINT; c++){
    r->aMaxF[c] = rankGet4(&a[12 + 8 * c]);
    r->aMinLen[c] = rankGet4(&a[16 + 8 * c]);
  }
}

/* RankFeed is what sessiondb_bm25(tbl, 0, '', 'feed', ptr) calls on each
** row of its statement: the rows of a rowid range, read on behalf of a
** query or a summary being built. */
typedef struct RankFeed {
  int (*xRow)(const Fts5ExtensionApi *, Fts5Context *, void *);
  void *pArg;
} RankFeed;

/* rankFeedPrepare compiles the statement that feeds a range's rows. */
static int rankFeedPrepare(sqlite3 *db, const char *zTable, sqlite3_stmt **pp){
  char *zSql = sqlite3_mprintf("SELECT sessiondb_bm25(\"%w\", 0, '', 'feed', ?1) FROM \"%w\""
                               " WHERE \"%w\" MATCH ?2 AND rowid BETWEEN ?3 AND ?4",
                               zTable, zTable, zTable);
  int rc;
  if( zSql == 0 ) return SQLITE_NOMEM;
  rc = sqlite3_prepare_v2(db, zSql, -1, pp, 0);
  sqlite3_free(zSql);
  return rc;
}

/* rankFeedRun hands every row matching zQuery with lo <= rowid <= hi to f. */
static int rankFeedRun(sqlite3_stmt *pStmt, RankFeed *f, const char *zQuery,
                       sqlite3_int64 lo, sqlite3_int64 hi){
  int rc;
  sqlite3_bind_pointer(pStmt, 1, f, RANK_FEED, 0);
  sqlite3_bind_text(pStmt, 2, zQuery, -1, 0);
  sqlite3_bind_int64(pStmt, 3, lo);
  sqlite3_bind_int64(pStmt, 4, hi);
  while( (rc = sqlite3_step(pStmt)) == SQLITE_ROW ){}
  if( rc == SQLITE_DONE ) return sqlite3_reset(pStmt);
  rc = sqlite3_reset(pStmt);
  return rc == SQLITE_OK ? SQLITE_ERROR : rc;
}

/* rankPhraseText returns phrase iPhrase of the query as an FTS5 string
** ("a b ..."), made of its tokens; 0 when this SQLite cannot tell its
** tokens or it has none, or (*pRc SQLITE_NOMEM) out of memory. */
static char *rankPhraseText(const Fts5ExtensionApi *pApi, Fts5Context *pFts, int iPhrase, int *pRc){
  int i, nTok = pApi->xPhraseSize(pFts, iPhrase);
  char *zQuery;
  *pRc = SQLITE_OK;
  if( pApi->iVersion < 3 || nTok < 1 ) return 0;
  zQuery = sqlite3_mprintf("\"");
  for(i = 0; zQuery && i < nTok; i++){
    const char *z = 0;
    int n = 0;
    if( pApi->xQueryToken(pFts, iPhrase, i, &z, &n) != SQLITE_OK || z == 0 ){
      sqlite3_free(zQuery);
      return 0;
    }
    zQuery = sqlite3_mprintf("%z%s%.*w", zQuery, i ? " " : "", n, z);
  }
  if( zQuery ) zQuery = sqlite3_mprintf("%z\"", zQuery);
  if( zQuery == 0 ) *pRc = SQLITE_NOMEM;
  return zQuery;
}

/* rankPhraseQuery returns the query's one phrase as an FTS5 string
** (rankPhraseText), *pnTok its tokens; 0 when the query is not one phrase
** or this SQLite cannot tell its tokens (*pRc says why, if it failed). A
** phrase of one token is a term. */
static char *rankPhraseQuery(const Fts5ExtensionApi *pApi, Fts5Context *pFts,
                             int *pnTok, int *pRc){
  char *zQuery;
  *pRc = SQLITE_OK;
  *pnTok = 0;
  if( pApi->xPhraseCount(pFts) != 1 ) return 0;
  zQuery = rankPhraseText(pApi, pFts, 0, pRc);
  if( zQuery ) *pnTok = pApi->xPhraseSize(pFts, 0);
  return zQuery;
}

/* RankBuild accumulates the ranges of a term's rows (rankBuildCb). */
typedef struct RankBuild {
  RankData p;         /* p.avgdl and p.pConn only: the file's average row length */
  RankSizes sizes;    /* the rows' lengths, kept on the connection or looked up */
  int nPer;           /* rows per range */
  RankRange cur;
  unsigned char *a;   /* encoded ranges */
  int n, nAlloc;
  sqlite3 *db;
  sqlite3_int64 nSeen;
  const RankAllow *pAllow; /* only its rows are bounded; 0: every row */
  int nIn;                 /* rows of pAllow in cur */
} RankBuild;

static int rankBuildPush(RankBuild *b){
  if( b->n + RANK_REC > b->nAlloc ){
    int nNew = b->nAlloc * 2 + 64 * RANK_REC;
    unsigned char *aNew = (unsigned char *)sqlite3_realloc64(b->a, (unsigned long long)nNew);
    if( aNew == 0 ) return SQLITE_NOMEM;
    b->a = aNew;
    b->nAlloc = nNew;
  }
  rankRangeEncode(&b->cur, &b->a[b->n]);
  b->n += RANK_REC;
  memset(&b->cur, 0, sizeof(b->cur));
  b->nIn = 0;
  return SQLITE_OK;
}

/* rankBuildCb adds a row of the term to the current range: to its count,
** and to its frontier when it is one of pAllow's. */
static int rankBuildCb(const Fts5ExtensionApi *pApi, Fts5Context *pFts, void *pArg){
  RankBuild *b = (RankBuild *)pArg;
  Fts5PhraseIter it;
  int rc, iCol, iOff, f = 0, nTok = 0;
  if( ++b->nSeen % RANK_CHECK_EVERY == 0 && sqlite3_is_interrupted(b->db) ) return SQLITE_INTERRUPT;
  b->cur.n++;
  b->cur.hi = pApi->xRowid(pFts);
  if( b->pAllow == 0 || rankAllowHas(b->pAllow, b->cur.hi) ){
    rc = pApi->xPhraseFirst(pFts, 0, &it, &iCol, &iOff);
    if( rc != SQLITE_OK ) return rc;
    for(; iCol >= 0; pApi->xPhraseNext(pFts, &it, &iCol, &iOff)) f++;
    rc = rankDocsize(&b->sizes, b->cur.hi, &nTok);
    if( rc != SQLITE_OK ) return rc;
    if( f < 1 ) f = 1;
    rankFrontAdd(&b->p, &b->cur, f, nTok);
    b->nIn++;
  }
  /* a source's range ends after R of its rows, or RANK_SRC_SPAN * R of
  ** every source's: a search reads it whole */
  if( b->nIn >= b->nPer || (b->pAllow && b->cur.n >= RANK_SRC_SPAN * b->nPer) ) return rankBuildPush(b);
  return SQLITE_OK;
}

/* rankRanges answers sessiondb_bm25(tbl, R, 'tbl', 'ranges', spans) on the
** first row of a query of one token, spans a text "lo,hi,lo,hi,..." of
** ascending disjoint rowid spans: the summary of the token's rows in each
** span, in ranges of R rows, a span's last one ending at its hi (nothing
** for a span where no row has it). With a sixth argument, a set of rowids
** (sessiondb_source_ids: a source's summary), a range ends after R of
** those rows or RANK_SRC_SPAN * R rows, its frontier bounds those only
** (none: a range without them) and its n counts every row, and the blob
** starts with their digest up to the last hi (rankAllowDigest, 8
** bytes). */
static void rankRanges(const Fts5ExtensionApi *pApi, Fts5Context *pFts,
                       sqlite3_context *pCtx, int nPer, const char *zTable,
                       const char *zSpans, sqlite3_value *pAllow){
  sqlite3 *db = sqlite3_context_db_handle(pCtx);
  sqlite3_stmt *pStmt = 0;
  RankBuild b;
  RankFeed f;
  RankAllow allow;
  char *zQuery;
  sqlite3_int64 *aSpan = 0;
  int rc, nSpan = 0, i, nTok = 0, nHead = pAllow ? 8 : 0;
  memset(&b, 0, sizeof(b));
  memset(&allow, 0, sizeof(allow));
  b.nPer = nPer;
  b.db = db;
  b.n = b.nAlloc = nHead;  /* the digest's room, filled last */
  b.a = nHead ? (unsigned char *)sqlite3_malloc(nHead) : 0;
  {
    /* for the frontier's merges only (a heuristic): 1.0 if unknown */
    sqlite3_int64 nRow = 0, nToken = 0;
    if( pApi->xRowCount(pFts, &nRow) != SQLITE_OK
        || pApi->xColumnTotalSize(pFts, -1, &nToken) != SQLITE_OK || nRow <= 0 || nToken <= 0 ){
      nRow = nToken = 1;
    }
    b.p.avgdl = (double)nToken / (double)nRow;
  }
  f.xRow = rankBuildCb;
  f.pArg = &b;
  zQuery = rankPhraseQuery(pApi, pFts, &nTok, &rc);
  if( rc == SQLITE_OK && nHead && b.a == 0 ) rc = SQLITE_NOMEM;
  /* the lengths: kept on the connection as for a search (RankConn), so
  ** that optimize, which makes a summary of each frequent term and each
  ** rare source, reads them in once */
  b.p.pConn = (RankConn *)pApi->xUserData(pFts);
  if( !rankConnSync(b.p.pConn, db) ) b.p.pConn = 0;
  if( rc == SQLITE_OK && zTable ) rc = rankSizesOpen(&b.sizes, &b.p, db, zTable);
  if( rc == SQLITE_OK && pAllow ){
    rc = rankAllowMake(pAllow, &allow);
    b.pAllow = &allow;
  }
  if( rc == SQLITE_OK && nTok != 1 ) rc = SQLITE_MISMATCH; /* not one token */
  if( rc == SQLITE_OK && (nPer <= 0 || zTable == 0) ) rc = SQLITE_MISMATCH;
  if( rc == SQLITE_OK ) rc = zSpans ? rankParseAllowed(zSpans, 1, &aSpan, &nSpan) : SQLITE_MISMATCH;
  if( rc == SQLITE_OK && nSpan % 2 != 0 ) rc = SQLITE_MISMATCH;
  if( rc == SQLITE_OK ) rc = rankFeedPrepare(db, zTable, &pStmt);
  for(i = 0; rc == SQLITE_OK && i < nSpan; i += 2){
    int n0 = b.n;
    rc = rankFeedRun(pStmt, &f, zQuery, aSpan[i], aSpan[i + 1]);
    if( rc == SQLITE_OK && b.cur.n > 0 ) rc = rankBuildPush(&b);
    /* a span's last range ends at its hi, so that its ranges cover it */
    if( rc == SQLITE_OK && b.n > n0 ) rankPut(&b.a[b.n - RANK_REC], aSpan[i + 1], 8);
  }
  if( rc == SQLITE_OK && nHead && nSpan > 0 ) rankPut(b.a, rankAllowDigest(&allow, aSpan[nSpan - 1]), 8);
  if( rc == SQLITE_OK && nHead && nSpan == 0 ) rc = SQLITE_MISMATCH;  /* no through */
  rankAllowFree(&allow);
  rankSizesClose(&b.sizes);
  sqlite3_free(aSpan);
  sqlite3_finalize(pStmt);
  sqlite3_free(zQuery);
  if( rc != SQLITE_OK ){
    sqlite3_result_error_code(pCtx, rc);
  }else{
    sqlite3_result_blob(pCtx, b.a ? (const void *)b.a : (const void *)"", b.n, (void (*)(void *))-1);
  }
  sqlite3_free(b.a);
}

/* reading a range costs about as much as a pass over this many rows (a
** variable so that tests on small tables can make summaries answer).
** Measured on the 1M bench file (BENCHMARKS.md): a range read, its length
** lookups included, 15-25 us; a pass, 0.12-0.35 us a row. */
int fts5cjk_rank_range_rows = 200;

/* ranges of one-phrase summaries read (rankFromSummary), by every
** connection (added to atomically): for tests */
long long fts5cjk_rank_ranges_read = 0;

/* RankBound is a clean range and the largest g its rows can have. */
typedef struct RankBound {
  double g;
  sqlite3_int64 lo, hi;
  int iRange;  /* its place in the summary */
} RankBound;

/* rankBoundBefore orders ranges by falling g, equal ones by rowid: rows
** that tie are ranked by rowid, so the first of them are found first, and
** the ranges after them skipped (rankTieRowid). */
static int rankBoundBefore(const RankBound *x, const RankBound *y){
  return x->g > y->g || (x->g == y->g && x->lo < y->lo);
}

/* rankBoundSift restores the max-heap (rankBoundBefore) a[0..n) below a[i]. */
RANK_SIFT(rankBoundSift, RankBound, rankBoundBefore)

/* rankBoundAt returns the range of the i-th largest bound of the n in a,
** a max-heap in a[0..*pnHeap) followed by the ranges taken from it in
** falling order, stored from a[n-1] down: a heap sort done only as far
** as asked (a query reads some 30 of thousands of ranges). */
static const RankBound *rankBoundAt(RankBound *a, int n, int *pnHeap, int i){
  while( n - *pnHeap <= i ){
    int m = --(*pnHeap);
    RankBound t = a[0];
    a[0] = a[m];
    a[m] = t;
    rankBoundSift(a, m, 0);
  }
  return &a[n - 1 - i];
}

/* rankTieRowid is, once K rows were looked up and rankFlush ran, a rowid
** past which no row whose g is at most the K-th best g can rank: the K-th
** of the looked-up rows of g at least the K-th best's, those above its
** rounding margin (rankCut) first, then the others by rowid. Each of them
** scores at least as much as such a row x: those above the margin more,
** the others perhaps as much, and then they come first when their rowid
** is smaller. So when K of them come before x, x cannot rank. (It reorders
** a->aRow, which rankFlush and rankAhead heap again.) */
static sqlite3_int64 rankTieRowid(RankAhead *a){
  double t = a->aTopG[0];
  int i, m = a->p->k;
  for(i = 0; i < a->nRow; i++){
    if( a->aRow[i].nTok >= 0 && a->aRow[i].score > t + t * 1e-13 ) m--;
  }
  qsort(a->aRow, (size_t)a->nRow, sizeof(RankRow), rankByRowid);
  for(i = 0; i < a->nRow; i++){
    const RankRow *r = &a->aRow[i];
    if( r->nTok >= 0 && r->score >= t && r->score <= t + t * 1e-13 && --m == 0 ) return r->iRowid;
  }
  return 0x7fffffffffffffffLL;  /* fewer than K (not reached: rankFlush keeps them) */
}

/* rankRangeG is the best g of a range's frontier: no row of it has more. */
static double rankRangeG(const RankData *p, const RankRange *r){
  double g = 0.0;
  int c;
  for(c = 0; c < RANK_NPOINT; c++){
    if( r->aMaxF[c] > 0 ){
      double gc = rankG(p, (double)r->aMaxF[c], (double)r->aMinLen[c]);
      if( gc > g ) g = gc;
    }
  }
  return g;
}

/* rankSummaryRead loads the term's summary and the rowids at or below its
** through that changed after it was made (dirty rows past its seen),
** ascending. *pbFound is 0 when there is no usable
** summary: no such table or term, or too many dirty rows. With zSource,
** the summary of the term's rows in that source (sessiondb_rank_sources),
** found while the log still holds every change since its seen, and
** *piDigest the digest of the source's ids it was made from. */
static int rankSummaryRead(sqlite3 *db, const char *zTable, const char *zTerm,
                           const char *zSource, sqlite3_int64 *piDigest, int *pbFound,
                           sqlite3_int64 *piThrough, unsigned char **pa, int *pn,
                           sqlite3_int64 **paDirty, int *pnDirty){
  sqlite3_stmt *pStmt = 0;
  char *zSql;
  int rc, nAlloc = 0, bCJK;
  sqlite3_int64 iSeen = 0;
  *pbFound = 0;
  *pa = 0;
  *pn = 0;
  *paDirty = 0;
  *pnDirty = 0;
  zSql = sqlite3_mprintf("SELECT through, ranges, seen, (SELECT count(*) FROM (SELECT 1 FROM sessiondb_rank_dirty"
                         " WHERE seq > t.seen LIMIT %d)), %s FROM %s AS t WHERE fts = ?2 AND term = ?1%s"
                         /* a backfill or a stale index: the index lacks rows */
                         " AND NOT EXISTS (SELECT 1 FROM state_meta WHERE key IN (?3, ?4))",
                         RANK_MAX_DIRTY + 1, zSource ? "digest" : "0",
                         zSource ? "sessiondb_rank_sources" : "sessiondb_rank_terms",
                         zSource ? " AND source = ?5 AND t.seen >= COALESCE((SELECT CAST(value AS INTEGER)"
                                   " FROM state_meta WHERE key = 'sessiondb_rank_gone'), 0)"
                                   " AND EXISTS (SELECT 1 FROM state_meta WHERE key = 'sessiondb_rank_through'"
                                   " AND CAST(value AS INTEGER) >= t.through)" : "");
  if( zSql == 0 ) return SQLITE_NOMEM;
  rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, 0);
  sqlite3_free(zSql);
  if( rc == SQLITE_NOMEM || rc == SQLITE_INTERRUPT ) return rc;
  if( rc != SQLITE_OK ) return SQLITE_OK;  /* no summaries in this file */
  sqlite3_bind_text(pStmt, 1, zTerm, -1, 0);
  sqlite3_bind_text(pStmt, 2, zTable, -1, 0);
  bCJK = strcmp(zTable, "messages_fts_cjk") == 0;
  sqlite3_bind_text(pStmt, 3, bCJK ? "fts_cjk_rebuild_high_water" : "fts_rebuild_high_water", -1, 0);
  sqlite3_bind_text(pStmt, 4, bCJK ? "fts_cjk_stale" : "fts_stale", -1, 0);
  if( zSource ) sqlite3_bind_text(pStmt, 5, zSource, -1, 0);
  rc = sqlite3_step(pStmt);
  if( rc == SQLITE_ROW && sqlite3_column_int64(pStmt, 3) <= RANK_MAX_DIRTY
      && sqlite3_column_bytes(pStmt, 1) % RANK_REC == 0 ){
    int n = sqlite3_column_bytes(pStmt, 1);
    *piThrough = sqlite3_column_int64(pStmt, 0);
    iSeen = sqlite3_column_int64(pStmt, 2);
    if( zSource ) *piDigest = sqlite3_column_int64(pStmt, 4);
    *pa = (unsigned char *)sqlite3_malloc(n > 0 ? n : 1);
    if( *pa == 0 ){
      sqlite3_finalize(pStmt);
      return SQLITE_NOMEM;
    }
    if( n > 0 ) memcpy(*pa, sqlite3_column_blob(pStmt, 1), (size_t)n);
    *pn = n;
    *pbFound = 1;
  }
  rc = sqlite3_finalize(pStmt);
  if( rc != SQLITE_OK || !*pbFound ) return rc;
  rc = sqlite3_prepare_v2(db, "SELECT DISTINCT id FROM sessiondb_rank_dirty WHERE seq > ?1 AND id <= ?2 ORDER BY id",
                          -1, &pStmt, 0);
  if( rc != SQLITE_OK ) return rc;
  sqlite3_bind_int64(pStmt, 1, iSeen);
  sqlite3_bind_int64(pStmt, 2, *piThrough);
  while( (rc = sqlite3_step(pStmt)) == SQLITE_ROW ){
    if( rankRowidPush(paDirty, pnDirty, &nAlloc, sqlite3_column_int64(pStmt, 0)) != SQLITE_OK ){
      sqlite3_finalize(pStmt);
      return SQLITE_NOMEM;
    }
  }
  rc = sqlite3_finalize(pStmt);
  return rc;
}

/* rankSummaryCount sets *pnHit to the rows of index zTable holding zTerm
** (zQuery, its FTS5 string), counted from its range summary: each clean
** range's n, and FTS5's count of the rows of a range holding a changed row
** and of those past the summary's through. *pbDone is 0 when the term has
** no usable summary. What counting a term of a query of several phrases
** (bm25's IDF) costs: a few hundred ranges read instead of every row. */
static int rankSummaryCount(sqlite3 *db, const char *zTable, const char *zTerm, const char *zQuery,
                            sqlite3_int64 *pnHit, int *pbDone){
  const sqlite3_int64 iMax = 0x7fffffffffffffffLL;
  unsigned char *aSum = 0;
  sqlite3_int64 *aDirty = 0, iThrough = 0, lo = -iMax - 1, n = 0;
  sqlite3_stmt *pCount = 0;
  int rc, nSum = 0, nDirty = 0, iDirty = 0, j, nR;
  *pbDone = 0;
  rc = rankSummaryRead(db, zTable, zTerm, 0, 0, pbDone, &iThrough, &aSum, &nSum, &aDirty, &nDirty);
  if( rc == SQLITE_OK && *pbDone ){
    char *zSql = sqlite3_mprintf("SELECT count(*) FROM \"%w\" WHERE \"%w\" MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
                                 zTable, zTable);
    rc = zSql ? sqlite3_prepare_v2(db, zSql, -1, &pCount, 0) : SQLITE_NOMEM;
    sqlite3_free(zSql);
  }
  nR = nSum / RANK_REC;
  for(j = 0; rc == SQLITE_OK && *pbDone && j <= nR + 1; j++){
    RankRange r;
    int bRead = j == nR + 1;  /* past through */
    memset(&r, 0, sizeof(r));
    if( j < nR ){
      rankRangeDecode(&aSum[j * RANK_REC], &r);
    }else{
      r.hi = bRead ? iMax : iThrough;  /* after the last range: no row had it */
    }
    if( lo > r.hi ) continue;  /* the last range ends at through */
    while( !bRead && iDirty < nDirty && aDirty[iDirty] <= r.hi ){
      if( aDirty[iDirty] >= lo ) bRead = 1;
      iDirty++;
    }
    if( bRead ){
      sqlite3_bind_text(pCount, 1, zQuery, -1, 0);
      sqlite3_bind_int64(pCount, 2, lo);
      sqlite3_bind_int64(pCount, 3, r.hi);
      if( sqlite3_step(pCount) == SQLITE_ROW ) n += sqlite3_column_int64(pCount, 0);
      rc = sqlite3_reset(pCount);
    }else{
      n += r.n;
    }
    if( r.hi == iMax ) break;
    lo = r.hi + 1;
  }
  if( rc == SQLITE_OK && *pbDone ) *pnHit = n;
  sqlite3_finalize(pCount);
  sqlite3_free(aSum);
  sqlite3_free(aDirty);
  return rc;
}

/* rankSummaryTerm returns, of the query's one phrase of nTok tokens, the
** token whose summary is the smallest (the fewest rows), and in *pnRange
** the ranges of the largest (what a pass over the phrase merges); 0 when
** none has one (*pRc says why, if it failed), and for a run of CJK
** characters (the CJK index) unless every bigram has one. A term is
** returned as it is, and *pnRange left alone. */
static char *rankSummaryTerm(const Fts5ExtensionApi *pApi, Fts5Context *pFts, sqlite3 *db,
                             const char *zTable, int nTok, sqlite3_int64 *pnRange, int *pRc){
  sqlite3_stmt *pStmt = 0;
  char *zBest = 0;
  sqlite3_int64 nBest = -1, nMax = 0;
  int i, rc, nFound = 0;
  *pRc = SQLITE_OK;
  if( nTok == 1 ){
    /* a term: itself, without a look at the summaries (rankSummaryRead's) */
    const char *z = 0;
    int n = 0;
    if( pApi->xQueryToken(pFts, 0, 0, &z, &n) != SQLITE_OK || z == 0 ) return 0;
    zBest = sqlite3_mprintf("%.*s", n, z);
    if( zBest == 0 ) *pRc = SQLITE_NOMEM;
    return zBest;
  }
  rc = sqlite3_prepare_v2(db, "SELECT length(ranges) FROM sessiondb_rank_terms WHERE fts = ?1 AND term = ?2",
                          -1, &pStmt, 0);
  if( rc == SQLITE_NOMEM || rc == SQLITE_INTERRUPT ) *pRc = rc;
  if( rc != SQLITE_OK ) return 0;  /* no summaries in this file */
  sqlite3_bind_text(pStmt, 1, zTable, -1, 0);
  for(i = 0; i < nTok && *pRc == SQLITE_OK; i++){
    const char *z = 0;
    int n = 0;
    if( pApi->xQueryToken(pFts, 0, i, &z, &n) != SQLITE_OK || z == 0 ) break;
    sqlite3_bind_text(pStmt, 2, z, n, 0);
    if( sqlite3_step(pStmt) == SQLITE_ROW ){
      sqlite3_int64 nLen = sqlite3_column_int64(pStmt, 0);
      nFound++;
      if( nLen > nMax ) nMax = nLen;
      if( nBest < 0 || nLen < nBest ){
        nBest = nLen;
        sqlite3_free(zBest);
        zBest = sqlite3_mprintf("%.*s", n, z);
        if( zBest == 0 ) *pRc = SQLITE_NOMEM;
      }
    }
    rc = sqlite3_reset(pStmt);
    if( rc == SQLITE_NOMEM || rc == SQLITE_INTERRUPT ) *pRc = rc;
  }
  sqlite3_finalize(pStmt);
  /* A run of CJK characters with a bigram in too few rows for a summary
  ** has at most that many rows, a small share of any summarized bigram's:
  ** its ranges would find them late (セッション at 1M from ッシ: 8.9 ms, the
  ** pass 5.0; バージョン from バー 9.8, the pass 6.4). With every bigram
  ** summarized, each is in thousands of rows and the least holds mostly
  ** the run's (数据库迁移 at 1M: 8,484 rows, 库迁 8,576). */
  if( *pRc != SQLITE_OK || (strcmp(zTable, "messages_fts_cjk") == 0 && (i < nTok || nFound < nTok)) ){
    sqlite3_free(zBest);
    return 0;
  }
  *pnRange = nMax / RANK_REC;
  return zBest;
}

/* rankFromSummary reads a one-phrase query's rows as described above, into
** a (rankAheadCb's state), instead of reading all of them with
** xQueryPhrase. *pbUsed is 0 when no token of the phrase has a usable
** summary, and nothing was read; 1 for a query of one token, a->nHit
** then its row count; 2 for a phrase of several, whose rows are not
** counted (rankData ranks them by g, rankAhead's bOrderOnly): every row
** of the phrase holds each of its tokens at least as often as the phrase,
** so the summary of one token bounds the phrase's rows in each range as
** it bounds the token's.
**
** With zSource (a query of one token limited to that source, a->pAllow its
** rows), the summary is that of the term in the source
** (sessiondb_rank_sources; DESIGN.md, "Summaries of a rare source's
** rows"): its frontiers bound the source's rows only, its counts are of
** every row (bm25's IDF counts every source's rows). */
static int rankFromSummary(const Fts5ExtensionApi *pApi, Fts5Context *pFts,
                           RankData *p, RankAhead *a, const char *zTable,
                           const char *zSource, sqlite3 *db, int *pbUsed){
  char *zTerm = 0, *zQuery;
  unsigned char *aSum = 0;
  sqlite3_int64 *aDirty = 0, iThrough = 0, lo = -0x7fffffffffffffffLL - 1, nClean = 0, nCleanRead = 0, nRead;
  sqlite3_int64 nRange = 0, iDigest = 0, nBounded = 0;
  sqlite3_stmt *pFeed = 0;
  RankBound *aBound = 0;
  RankRange front;
  RankFeed f;
  int rc, nSum = 0, nDirty = 0, bFound = 0, i, iDirty = 0, nBound = 0, nTok = 0, nRangeRead = 0, nGiveUp;
  int bCJK = strcmp(zTable, "messages_fts_cjk") == 0;
  int nFlush0 = a->nFlush;
  *pbUsed = 0;
  zQuery = rankPhraseQuery(pApi, pFts, &nTok, &rc);
  if( zQuery == 0 ) return rc;
  zTerm = rankSummaryTerm(pApi, pFts, db, zTable, nTok, &nRange, &rc);
  /* A phrase of words whose largest summary is small: the pass over the
  ** phrase costs a few ms, and reading ranges as much or more (at 100k,
  ** "unit test": 5.5 ms from the summary of test's 393 ranges, 3.1 by
  ** the pass). A run of CJK characters merges a doclist per bigram over
  ** longer rows, and gains from the summaries' least size up (数据库 at
  ** 1M, 数据's 343 ranges: 16 ms by the pass, 3 from the summary). */
  if( (nTok > 1 && fts5cjk_rank_range_rows > 0 && nRange < RANK_PHRASE_MIN && !bCJK) || (zSource && nTok != 1) ){
    sqlite3_free(zTerm);
    zTerm = 0;
  }
  if( rc == SQLITE_OK && zTerm ){
    rc = rankSummaryRead(db, zTable, zTerm, zSource, &iDigest, &bFound, &iThrough, &aSum, &nSum, &aDirty, &nDirty);
  }
  /* a source's summary holds while its ids up to through are those it was
  ** made from (a session moved to another source: another digest) */
  if( rc == SQLITE_OK && bFound && zSource ){
    bFound = iDigest == rankConnDigest(p->pConn, zSource, iThrough, a->pAllow);
  }
  if( rc == SQLITE_OK && bFound ) rc = rankFeedPrepare(db, zTable, &pFeed);
  if( rc == SQLITE_OK && bFound ){
    aBound = (RankBound *)sqlite3_realloc64(0, (unsigned long long)(nSum / RANK_REC + 1) * sizeof(RankBound));
    if( aBound == 0 ) rc = SQLITE_NOMEM;
  }
  f.xRow = rankAheadCb;
  f.pArg = a;
  /* ranges holding a dirty rowid (and the ids after the last range, up to
  ** through, when one of them is dirty) and the rows above through are
  ** read whole and counted; the clean ranges are bounded */
  for(i = 0; rc == SQLITE_OK && bFound && i <= nSum / RANK_REC; i++){
    RankRange r;
    int bDirty = 0;
    if( i < nSum / RANK_REC ){
      rankRangeDecode(&aSum[i * RANK_REC], &r);
    }else{
      memset(&r, 0, sizeof(r));
      r.hi = iThrough;  /* after the last range: no row had the term */
    }
    while( iDirty < nDirty && aDirty[iDirty] <= r.hi ){
      if( aDirty[iDirty] >= lo ) bDirty = 1;
      iDirty++;
    }
    if( bDirty ){
      rc = rankFeedRun(pFeed, &f, zQuery, lo, r.hi);
    }else{
      nClean += r.n;
      if( r.aMaxF[0] > 0 ){  /* a frontier (none: a source's range without its rows) */
        aBound[nBound].g = rankRangeG(p, &r);
        aBound[nBound].lo = lo;
        aBound[nBound].hi = r.hi;
        aBound[nBound].iRange = i;
        nBound++;
        nBounded += r.n;
      }
    }
    lo = r.hi + 1;
  }
  if( rc == SQLITE_OK && bFound && iThrough < 0x7fffffffffffffffLL ){
    rc = rankFeedRun(pFeed, &f, zQuery, iThrough + 1, 0x7fffffffffffffffLL);
  }
  nRead = a->nHit;
  if( rc == SQLITE_OK && bFound ){
    const RankBound *b = 0;
    int nHeap = nBound;
    sqlite3_int64 nBudget;
    for(i = nBound / 2 - 1; i >= 0; i--) rankBoundSift(aBound, nBound, i);
    /* The ranges that will be read are about those whose bound reaches
    ** the K-th best bound: when the rows tie or nearly tie across many
    ** ranges, one pass over all the rows costs less. A range of a source
    ** holds every source's rows between its ends, and its ends lie far
    ** apart: it costs its rows and RANK_SRC_SEEK times a range's seek (at
    ** 1M, "thread" limited to discord, 40,676 rows: 20 ranges of 515 rows
    ** in 2.2 ms, the pass 1.35 ms; "error", 271,964 rows: 27 ranges in
    ** 1.5 ms, the pass 6.4 ms). */
    sqlite3_int64 nPer = fts5cjk_rank_range_rows;
    if( zSource && nBound > 0 ) nPer = nPer * RANK_SRC_SEEK + nBounded / nBound;
    if( nBound >= p->k || (zSource && nBound > 0) ){
      sqlite3_int64 nNeed = nBound < p->k ? nBound : p->k;
      double bk = rankCut(rankBoundAt(aBound, nBound, &nHeap, (int)nNeed - 1)->g);
      while( nNeed < nBound && nNeed * nPer <= nClean
             && rankBoundAt(aBound, nBound, &nHeap, (int)nNeed)->g >= bk ) nNeed++;
      if( nNeed * nPer > nClean ) nBound = -1;
    }
    /* A phrase holds a share of its token's rows, and its K-th best may
    ** lie far down the token's bounds (a rare phrase of frequent words).
    ** Reading a range of it merges its tokens' doclists there, as the pass
    ** does over all their rows: past as many ranges as would cost that
    ** pass, or when the first 16 ranges found the phrase in fewer than an
    ** eighth of the token's rows, the pass answers. */
    nBudget = nTok > 1 && fts5cjk_rank_range_rows > 0 ? nClean / fts5cjk_rank_range_rows : -1;
    /* The share of the clean rows read before one pass answers instead:
    ** a phrase gives up at half of a word's, as its pass is longer, but so
    ** is a range; on the CJK index at twice as many, as its pass looks up
    ** far more lengths (positions prove little there): 1 us a row at 1M
    ** against 0.12-0.35 on the word index, a range 50-65 us on both (搜索:
    ** 25 of its 95 ranges, 1.7 ms; its pass 5.5 ms). */
    nGiveUp = (nTok > 1 ? 2 * RANK_GIVE_UP : RANK_GIVE_UP) / (bCJK ? 2 : 1);
    for(i = 0; rc == SQLITE_OK && i < nBound; i++){
      b = rankBoundAt(aBound, nBound, &nHeap, i);
      if( a->nRow > 0 ) rc = rankFlush(a);
      if( rc != SQLITE_OK || (a->nTopG == p->k && b->g < a->cut) ) break;
      /* Rows tying with the K-th best over many ranges (equal lengths):
      ** taken in rowid order, the ranges after those ties are skipped. */
      if( a->nTopG == p->k && b->g <= a->aTopG[0] && b->lo > rankTieRowid(a) ){
        a->bTiesCut = 1;
        continue;
      }
      /* Ties or near-ties spread over most ranges (a word in most rows):
      ** reading range by range would cost more than one pass. */
      if( nCleanRead * nGiveUp > nClean ) break;
      if( nBudget >= 0 && (nRangeRead > nBudget || (nRangeRead == 16 && (a->nHit - nRead) * 8 < nCleanRead)) ) break;
      rankRangeDecode(&aSum[b->iRange * RANK_REC], &front);
      nRangeRead++;
      __atomic_fetch_add(&fts5cjk_rank_ranges_read, 1, __ATOMIC_RELAXED);
      nCleanRead += front.n;
      a->pFront = &front;
      rc = rankFeedRun(pFeed, &f, zQuery, b->lo, b->hi);
      a->pFront = 0;
    }
    if( getenv("SESSIONDB_RANK_STATS") ){
      fprintf(stderr, "%s from the summary of %s%s%s: %d clean ranges, %d read, %lld rows read, %lld dirty/new, %lld hits\n",
              zQuery, zTerm, zSource ? " in " : "", zSource ? zSource : "",
              nBound, nRangeRead, (long long)nCleanRead, (long long)nRead, (long long)a->nHit);
    }
    if( nBound < 0 || (i < nBound && !(a->nTopG == p->k && b->g < a->cut)) ){
      rankAheadRestart(a, nFlush0);  /* gave up */
    }else{
      if( nTok == 1 ) a->nHit = nRead + nClean;  /* a phrase's rows: not counted */
      *pbUsed = nTok == 1 ? 1 : 2;
    }
  }
  sqlite3_finalize(pFeed);
  sqlite3_free(aBound);
  sqlite3_free(aSum);
  sqlite3_free(aDirty);
  sqlite3_free(zTerm);
  sqlite3_free(zQuery);
  return rc;
}

/*
** Two phrases ORed (DESIGN.md, "Two phrases ORed"), sessiondb_bm25(tbl, K,
** 'tbl', 'topor'): the caller knows the query is A OR B, neither a prefix.
** bm25 sums IDF_A * g(f_A, D) and IDF_B * g(f_B, D), a term being 0 in a
** row without its phrase. The rows holding both are read first, all of
** them (FTS5's A AND B). Every other row holds one phrase, and scores that
** phrase's term alone: for a one-token phrase with a usable summary, each
** clean range bounds its rows by IDF times its best g, so its ranges are
** read (the phrase alone, rowid BETWEEN) only while that bound reaches the
** K-th best exact score found; its dirty ranges and the rows past through
** are read whole, and counted. A phrase without a summary is read whole
** (xQueryPhrase). A row read is looked up only while its bound (its
** positions' length) reaches that K-th best: the threshold algorithm, over
** rows and ranges in one order. Each score is computed in bm25's own
** operations, and every bound with the same monotonic operations, so they
** are compared exactly: no margin.
**
** sessiondb_bm25(tbl, K, 'tbl', 'topand'), for A B (DESIGN.md, "Two
** phrases ANDed"): every matching row holds both; the summaries only
** count each word's rows. With a summary for each word, the rowids are cut
** at every range end of both, and a span's rows are bounded by the sum of
** its two ranges' terms; spans are read (A AND B, rowid BETWEEN) while that
** bound reaches the K-th best, or, past a budget, every row holding both
** is read instead. With one summary, every row holding both is read.
**
** sessiondb_bm25(tbl, K, 'tbl', 'topsum'), for a prefix (DESIGN.md, "A
** prefix"): the query is the terms the prefix stands for, ORed, each one
** token, and bm25 is that of one phrase holding them all: IDF * g(f, D),
** f the row's instances of every term, the IDF from the rows holding any.
** The rows holding two terms or more are read first, all of them (t1 AND
** (t2 OR ... OR tm), then t2 AND (t3 OR ... OR tm), ...); every other row
** holds one term, and is bounded and read as for an OR. The rows holding
** any are counted as the terms' rows less, for each row holding j terms,
** j - 1.
*/
#define RANK_SUM_MAX 16  /* terms of a 'topsum' query at most */

typedef struct RankOrRow {
  sqlite3_int64 iRowid;
  double score;  /* its bound, then (nTok >= 0) its exact score */
  int nTok;      /* -1 until looked up */
  int nMinLen;   /* the length its positions prove */
  int aF[2];
} RankOrRow;

/* RankOrUnit is a clean range of a phrase's summary, [lo, hi], or for A
** AND B a span inside one range of each (iTerm -1). */
typedef struct RankOrUnit {
  double score;  /* the bound of its rows */
  sqlite3_int64 lo, hi;
  int iTerm;
  int bDirty;    /* (a range of A AND B's) read whole */
} RankOrUnit;

typedef struct RankOr {
  RankData *p;
  sqlite3 *db;
  int iTerm;    /* the phrase being read alone, -1: both (A AND B) */
  int bCount;   /* count the rows read (aCount[iTerm]) */
  int bAnd;     /* A AND B: a row read alone is only counted */
  int bSum;     /* a prefix's terms: one phrase, f the sum (aF[0]) */
  sqlite3_int64 aCount[RANK_SUM_MAX];
  sqlite3_int64 nShared; /* bSum: the sum of j - 1 over rows holding j > 1 terms */
  sqlite3_int64 *aBoth; /* the rows holding both (bSum: two or more), ascending */
  int nBoth, nBothAlloc;
  int nBothSorted; /* bSum: aBoth's ascending part, from earlier reads */
  int bBuffer;  /* the IDFs are not known yet: append, no heap */
  RankOrRow *aRow;  /* a max-heap by score once bBuffer is 0 */
  int nRow, nAlloc;
  sqlite3_int64 nSeen;
} RankOr;

RANK_SIFT(rankOrSift, RankOrRow, RANK_BY_SCORE)
RANK_SIFT(rankOrUnitSift, RankOrUnit, RANK_BY_SCORE)

/* rankOrScore is bm25's sum for the row's frequencies and a length D
** (bSum: of one phrase, whose IDF is p->aIDF[0]). */
static double rankOrScore(RankData *p, const RankOr *o, const RankOrRow *r, double D){
  if( o->bSum ) return 0.0 + p->aIDF[0] * rankG(p, (double)r->aF[0], D);
  p->aFreq[0] = (double)r->aF[0];
  p->aFreq[1] = (double)r->aF[1];
  return rankScore(p, D);
}

/* rankOrRowCb keeps a row read: its frequencies, its proven length, and,
** once the IDFs are known, its bound (dropped when below the K-th best
** score so far). Reading one phrase alone, a row holding both is left
** out (read already) after being counted. */
static int rankOrRowCb(const Fts5ExtensionApi *pApi, Fts5Context *pFts, void *pArg){
  RankOr *o = (RankOr *)pArg;
  RankData *p = o->p;
  RankOrRow r;
  int rc, i;
  if( ++o->nSeen % RANK_CHECK_EVERY == 0 && sqlite3_is_interrupted(o->db) ) return SQLITE_INTERRUPT;
  memset(&r, 0, sizeof(r));
  r.iRowid = pApi->xRowid(pFts);
  r.nTok = -1;
  if( o->iTerm >= 0 ){
    if( o->bCount ) o->aCount[o->iTerm]++;
    if( o->bAnd || rankAllowed(o->aBoth, o->nBoth, r.iRowid) ) return SQLITE_OK;
  }else if( o->bSum && rankAllowed(o->aBoth, o->nBothSorted, r.iRowid) ){
    return SQLITE_OK;  /* holds an earlier term too: read already */
  }
  rc = rankInst(pApi, pFts, p, o->iTerm, &r.nMinLen);
  if( rc != SQLITE_OK ) return rc;
  if( o->bSum ){
    int nTerm = 0;
    for(i = 0; i < p->nPhrase; i++){
      r.aF[0] += (int)p->aFreq[i];
      nTerm += p->aFreq[i] > 0.0;
    }
    if( o->iTerm < 0 ) o->nShared += nTerm - 1;
  }else{
    r.aF[0] = (int)p->aFreq[0];
    r.aF[1] = (int)p->aFreq[1];
  }
  if( o->iTerm < 0 && !o->bAnd ){
    /* ascending: FTS5 reads in rowid order */
    if( rankRowidPush(&o->aBoth, &o->nBoth, &o->nBothAlloc, r.iRowid) != SQLITE_OK ) return SQLITE_NOMEM;
  }
  if( !o->bBuffer ){
    r.score = rankOrScore(p, o, &r, (double)r.nMinLen);
    if( p->nTop == p->k && r.score < p->aTop[0] ) return SQLITE_OK;
  }
  if( o->nRow == o->nAlloc ){
    int m = o->nAlloc ? o->nAlloc * 2 : 256;
    RankOrRow *aNew;
    if( o->nRow >= RANK_MAX_ROWS ) return SQLITE_RANGE;
    aNew = (RankOrRow *)sqlite3_realloc64(o->aRow, (unsigned long long)m * sizeof(RankOrRow));
    if( aNew == 0 ) return SQLITE_NOMEM;
    o->aRow = aNew;
    o->nAlloc = m;
  }
  o->aRow[o->nRow] = r;
  if( !o->bBuffer ){
    int j = o->nRow;  /* sift up */
    while( j > 0 && o->aRow[(j - 1) / 2].score < r.score ){
      o->aRow[j] = o->aRow[(j - 1) / 2];
      j = (j - 1) / 2;
    }
    o->aRow[j] = r;
  }
  o->nRow++;
  return SQLITE_OK;
}

/* rankOrHeap bounds the rows buffered (the IDFs now known) and makes
** them a heap. */
static void rankOrHeap(RankData *p, RankOr *o){
  int j;
  for(j = 0; j < o->nRow; j++) o->aRow[j].score = rankOrScore(p, o, &o->aRow[j], (double)o->aRow[j].nMinLen);
  for(j = o->nRow / 2 - 1; j >= 0; j--) rankOrSift(o->aRow, o->nRow, j);
}

/* rankOr ranks A OR B as described above, into p (p->aRow, as rankAhead
** leaves it); with bAnd, A AND B, whose rows all hold both: only those
** are read, and the summaries only count the rows of each word; with
** bSum, a prefix's terms as one phrase. *pbDone is 0 when no phrase has a
** usable summary, or when reading range by range would cost more than a
** pass over every row: nothing is ranked then. */
static int rankOr(const Fts5ExtensionApi *pApi, Fts5Context *pFts, RankData *p,
                  const char *zTable, sqlite3 *db, int bAnd, int bSum, int *pbDone){
  const sqlite3_int64 iMax = 0x7fffffffffffffffLL, iMin = -iMax - 1;
  unsigned char *aSum[RANK_SUM_MAX] = {0};
  sqlite3_int64 *aDirty[RANK_SUM_MAX] = {0}, aThrough[RANK_SUM_MAX] = {0}, nRowTable = 0, nClean = 0;
  char *azPhrase[RANK_SUM_MAX] = {0}, *zBoth = 0;
  int anSum[RANK_SUM_MAX] = {0}, anDirty[RANK_SUM_MAX] = {0}, abSum[RANK_SUM_MAX] = {0};
  int nTerm = bSum ? p->nPhrase : 2, bAnySum = 0;
  sqlite3_int64 nUnitMax = 4;
  RankOrUnit *aUnit = 0, *aRng[2] = {0, 0};
  RankOr o;
  RankSizes sizes;
  RankFeed f;
  RankRow *aOut = 0;
  sqlite3_stmt *pFeed = 0;
  int rc = SQLITE_OK, i, j, nUnit = 0, nRead = 0, nOut = 0, nOutAlloc = 0, bGaveUp = 0;
  int anRng[2] = {0, 0}, bSpans;
  sqlite3_int64 nSpanBudget = 0;
  *pbDone = 0;
  if( p->nPhrase != nTerm || nTerm < 1 || nTerm > RANK_SUM_MAX || pApi->iVersion < 3 || zTable == 0 ){
    return SQLITE_OK;
  }
  memset(&o, 0, sizeof(o));
  memset(&sizes, 0, sizeof(sizes));
  o.p = p;
  o.db = db;
  o.bAnd = bAnd;
  o.bSum = bSum;
  for(i = 0; rc == SQLITE_OK && i < nTerm; i++){
    p->aSize[i] = pApi->xPhraseSize(pFts, i);
    if( bSum && p->aSize[i] != 1 ) goto done;  /* a prefix's terms are tokens */
    azPhrase[i] = rankPhraseText(pApi, pFts, i, &rc);
    if( rc == SQLITE_OK && azPhrase[i] == 0 ) goto done;  /* tokens not told */
    if( rc == SQLITE_OK && p->aSize[i] == 1 ){
      const char *z = 0;
      char *zTerm;
      int n = 0;
      rc = pApi->xQueryToken(pFts, i, 0, &z, &n);
      zTerm = rc == SQLITE_OK ? sqlite3_mprintf("%.*s", n, z ? z : "") : 0;
      if( rc == SQLITE_OK && zTerm == 0 ) rc = SQLITE_NOMEM;
      if( rc == SQLITE_OK ){
        rc = rankSummaryRead(db, zTable, zTerm, 0, 0, &abSum[i], &aThrough[i], &aSum[i], &anSum[i],
                             &aDirty[i], &anDirty[i]);
      }
      sqlite3_free(zTerm);
    }
  }
  for(i = 0; i < nTerm; i++){
    bAnySum |= abSum[i];
    nUnitMax += anSum[i] / RANK_REC;
  }
  if( rc != SQLITE_OK || !bAnySum ) goto done;
  if( !bSum ){
    zBoth = sqlite3_mprintf("%s AND %s", azPhrase[0], azPhrase[1]);
    if( zBoth == 0 ) rc = SQLITE_NOMEM;
  }
  if( rc == SQLITE_OK ) rc = rankFeedPrepare(db, zTable, &pFeed);
  f.xRow = rankOrRowCb;
  f.pArg = &o;
  o.bBuffer = 1;
  /* the rows holding both: all of them, but for A AND B with two
  ** summaries, whose rows are read span by span (below) */
  bSpans = bAnd && abSum[0] && abSum[1];
  o.iTerm = -1;
  for(i = 0; bSum && rc == SQLITE_OK && i + 1 < nTerm; i++){
    /* a prefix's terms: the rows holding term i and a later one, but for
    ** those read already (they hold an earlier term) */
    char *zMany = sqlite3_mprintf("%s AND (", azPhrase[i]);
    for(j = i + 1; zMany && j < nTerm; j++) zMany = sqlite3_mprintf("%z%s%s", zMany, j > i + 1 ? " OR " : "", azPhrase[j]);
    if( zMany ) zMany = sqlite3_mprintf("%z)", zMany);
    if( zMany == 0 ){
      rc = SQLITE_NOMEM;
      break;
    }
    qsort(o.aBoth, (size_t)o.nBoth, sizeof(sqlite3_int64), rankCmpRowid);
    o.nBothSorted = o.nBoth;
    rc = rankFeedRun(pFeed, &f, zMany, iMin, iMax);
    sqlite3_free(zMany);
  }
  if( bSum ) qsort(o.aBoth, (size_t)o.nBoth, sizeof(sqlite3_int64), rankCmpRowid);
  if( rc == SQLITE_OK && !bSpans && !bSum ) rc = rankFeedRun(pFeed, &f, zBoth, iMin, iMax);
  /* a phrase without a summary: every row, counted */
  for(i = 0; rc == SQLITE_OK && i < nTerm; i++){
    if( abSum[i] ) continue;
    o.iTerm = i;
    o.bCount = 1;
    rc = pApi->xQueryPhrase(pFts, i, (void *)&o, rankOrRowCb);
  }
  /* a summary: its dirty ranges and the rows past through read whole and
  ** counted, its clean ranges kept as units */
  if( rc == SQLITE_OK ){
    /* room for every range of both (A OR B), or every span (A AND B: at
    ** most one per range end of either, and the last) */
    aUnit = (RankOrUnit *)sqlite3_realloc64(0, (unsigned long long)nUnitMax * sizeof(RankOrUnit));
    if( aUnit == 0 ) rc = SQLITE_NOMEM;
  }
  for(i = 0; rc == SQLITE_OK && i < nTerm; i++){
    int nR = anSum[i] / RANK_REC, iDirty = 0;
    sqlite3_int64 lo = iMin;
    if( !abSum[i] ) continue;
    if( bSpans ){
      aRng[i] = (RankOrUnit *)sqlite3_realloc64(0, (unsigned long long)(nR + 1) * sizeof(RankOrUnit));
      if( aRng[i] == 0 ){
        rc = SQLITE_NOMEM;
        break;
      }
    }
    o.iTerm = i;
    o.bCount = 1;
    for(j = 0; rc == SQLITE_OK && j <= nR; j++){
      RankRange r;
      int bDirty = 0;
      if( j < nR ){
        rankRangeDecode(&aSum[i][j * RANK_REC], &r);
      }else{
        memset(&r, 0, sizeof(r));
        r.hi = aThrough[i];  /* after the last range: no row had it */
      }
      if( lo > r.hi ) break;
      while( iDirty < anDirty[i] && aDirty[i][iDirty] <= r.hi ){
        if( aDirty[i][iDirty] >= lo ) bDirty = 1;
        iDirty++;
      }
      if( bDirty ){
        rc = rankFeedRun(pFeed, &f, azPhrase[i], lo, r.hi);
      }else if( r.n > 0 && !bAnd ){
        aUnit[nUnit].score = rankRangeG(p, &r);  /* times the IDF below */
        aUnit[nUnit].lo = lo;
        aUnit[nUnit].hi = r.hi;
        aUnit[nUnit].iTerm = i;
        nUnit++;
      }
      if( bSpans ){
        aRng[i][anRng[i]].score = rankRangeG(p, &r);
        aRng[i][anRng[i]].hi = r.hi;
        aRng[i][anRng[i]].bDirty = bDirty;
        anRng[i]++;
      }
      if( !bDirty ){
        o.aCount[i] += r.n;
        nClean += r.n;
      }
      lo = r.hi + 1;
    }
    if( rc == SQLITE_OK && aThrough[i] < iMax ) rc = rankFeedRun(pFeed, &f, azPhrase[i], aThrough[i] + 1, iMax);
  }
  if( rc == SQLITE_OK ) rc = pApi->xRowCount(pFts, &nRowTable);
  for(i = 0; rc == SQLITE_OK && i < (bSum ? 1 : 2); i++){
    sqlite3_int64 n = o.aCount[i];
    double idf;
    if( bSum ){
      /* the rows holding any term: each row holding j of them is in j
      ** terms' counts */
      for(n = -o.nShared, j = 0; j < nTerm; j++) n += o.aCount[j];
    }
    idf = log((nRowTable - n + 0.5) / (n + 0.5));
    if( idf <= 0.0 ) idf = 1e-6;
    p->aIDF[i] = idf;
  }
  /* bounds, in bm25's operations: 0.0 + IDF_A * g_A + IDF_B * g_B, the
  ** absent phrase's term 0 */
  o.bBuffer = 0;
  o.bCount = 0;
  rankOrHeap(p, &o);
  for(j = 0; j < nUnit; j++){
    double g = aUnit[j].score, score = 0.0;
    if( bSum ){
      score += p->aIDF[0] * g;
    }else{
      for(i = 0; i < 2; i++) score += p->aIDF[i] * (i == aUnit[j].iTerm ? g : 0.0);
    }
    aUnit[j].score = score;
  }
  if( bSpans && rc == SQLITE_OK ){
    /* A AND B: the rowids cut at every range end of both, each span
    ** inside one range of each (past a summary's ranges, or in a range
    ** holding a changed row: read whole now); a span's rows are bounded
    ** by 0.0 + IDF_A * g_A + IDF_B * g_B of its two ranges' best g */
    int a = 0, b = 0;
    sqlite3_int64 lo = iMin;
    o.iTerm = -1;
    while( rc == SQLITE_OK ){
      sqlite3_int64 ha = a < anRng[0] ? aRng[0][a].hi : iMax, hb = b < anRng[1] ? aRng[1][b].hi : iMax;
      sqlite3_int64 hi = ha < hb ? ha : hb;
      if( a >= anRng[0] || b >= anRng[1] || aRng[0][a].bDirty || aRng[1][b].bDirty ){
        rc = rankFeedRun(pFeed, &f, zBoth, lo, hi);
      }else if( aRng[0][a].score > 0.0 && aRng[1][b].score > 0.0 ){
        double score = 0.0;
        score += p->aIDF[0] * aRng[0][a].score;
        score += p->aIDF[1] * aRng[1][b].score;
        aUnit[nUnit].score = score;
        aUnit[nUnit].lo = lo;
        aUnit[nUnit].hi = hi;
        aUnit[nUnit].iTerm = -1;
        nUnit++;
      }
      if( hi == iMax ) break;
      lo = hi + 1;
      if( ha == hi ) a++;
      if( hb == hi ) b++;
    }
  }
  if( bSpans && fts5cjk_rank_range_rows > 0 && nRowTable > 0 ){
    /* reading every row holding both costs about 0.4 us a row (as many
    ** rows as the words would share were they independent), a span 20 us
    ** (a range reckoned as fts5cjk_rank_range_rows rows of 0.1 us): spans
    ** up to half that cost */
    double nEst = (double)o.aCount[0] * (double)o.aCount[1] / (double)nRowTable;
    nSpanBudget = (sqlite3_int64)(nEst * 2.0 / fts5cjk_rank_range_rows);
  }
  for(j = nUnit / 2 - 1; j >= 0; j--) rankOrUnitSift(aUnit, nUnit, j);
  if( rc == SQLITE_OK ) rc = rankSizesOpen(&sizes, p, db, zTable);
  /* the best bound or exact score first; a row's exact score taken before
  ** every bound below it is final, and comes out in falling order */
  p->nTop = 0;
  while( rc == SQLITE_OK && (o.nRow > 0 || nUnit > 0) ){
    double cb = o.nRow > 0 ? o.aRow[0].score : -1.0, ub = nUnit > 0 ? aUnit[0].score : -1.0;
    if( p->nTop == p->k && (cb > ub ? cb : ub) < p->aTop[0] ) break;
    if( o.nRow > 0 && cb >= ub ){
      RankOrRow r = o.aRow[0];
      if( r.nTok < 0 ){
        rc = rankDocsize(&sizes, r.iRowid, &r.nTok);
        r.score = rankOrScore(p, &o, &r, (double)r.nTok);
        o.aRow[0] = r;
        rankOrSift(o.aRow, o.nRow, 0);
        continue;
      }
      o.aRow[0] = o.aRow[--o.nRow];
      rankOrSift(o.aRow, o.nRow, 0);
      rankKeep(p, r.score);
      if( nOut == nOutAlloc ){
        int m = nOutAlloc ? nOutAlloc * 2 : 64;
        RankRow *aNew = (RankRow *)sqlite3_realloc64(aOut, (unsigned long long)m * sizeof(RankRow));
        if( aNew == 0 ){
          rc = SQLITE_NOMEM;
          break;
        }
        aOut = aNew;
        nOutAlloc = m;
      }
      memset(&aOut[nOut], 0, sizeof(RankRow));
      aOut[nOut].iRowid = r.iRowid;
      aOut[nOut].score = r.score;
      aOut[nOut].nTok = r.nTok;
      nOut++;
    }else{
      RankOrUnit u = aUnit[0];
      aUnit[0] = aUnit[--nUnit];
      rankOrUnitSift(aUnit, nUnit, 0);
      /* ties or near-ties spread over most ranges: one pass costs less */
      nRead++;
      if( bSpans && fts5cjk_rank_range_rows > 0 && (nRead > nSpanBudget
          || (nRead >= 32 && (nRead & (nRead - 1)) == 0
              && (nOut == 0 || (sqlite3_int64)nRead * p->k / nOut > nSpanBudget))) ){
        /* A AND B: the spans read would cost, or at the rate rows came
        ** out so far (looked at after 32, 64, 128... spans) will cost,
        ** half of reading every row holding both (words that do not go
        ** together: their rows holding both are spread over most spans,
        ** and few score near their spans' bounds): read those instead,
        ** from the start */
        bSpans = 0;
        nUnit = nOut = o.nRow = p->nTop = 0;
        o.iTerm = -1;
        o.bBuffer = 1;
        rc = rankFeedRun(pFeed, &f, zBoth, iMin, iMax);
        o.bBuffer = 0;
        rankOrHeap(p, &o);
        continue;
      }
      if( !bSpans && fts5cjk_rank_range_rows > 0 && (sqlite3_int64)nRead * fts5cjk_rank_range_rows > nClean ){
        bGaveUp = 1;
        break;
      }
      o.iTerm = u.iTerm;
      rc = rankFeedRun(pFeed, &f, u.iTerm < 0 ? zBoth : azPhrase[u.iTerm], u.lo, u.hi);
    }
    if( rc == SQLITE_OK && sqlite3_is_interrupted(db) ) rc = SQLITE_INTERRUPT;
  }
  if( getenv("SESSIONDB_RANK_STATS") ){
    fprintf(stderr, "%s %s %s%s: summaries %d %d, %d both, %d ranges or spans left, %d read (budget %lld)%s, %d rows kept\n",
            azPhrase[0], bSum ? "SUM" : bAnd ? "AND" : "OR", nTerm > 1 ? azPhrase[1] : "", nTerm > 2 ? " ..." : "", abSum[0], abSum[1], o.nBoth, nUnit, nRead,
            (long long)nSpanBudget, bGaveUp ? " (gave up)" : "", nOut);
  }
  if( rc == SQLITE_RANGE ){
    rc = SQLITE_OK;  /* too many rows: the statement's pass */
    bGaveUp = 1;
  }
  if( rc == SQLITE_OK && !bGaveUp ){
    /* the rows reaching the K-th best, ties included: placed as the query
    ** orders them, ties by rowid */
    qsort(aOut, (size_t)nOut, sizeof(RankRow), rankByRank);
    for(j = 0; j < nOut; j++) aOut[j].u.iPlace = j;
    qsort(aOut, (size_t)nOut, sizeof(RankRow), rankByRowid);
    p->aRow = aOut;
    p->nRow = nOut;
    p->bAhead = 1;
    p->nHit = -1;
    p->bSummary = 1;
    aOut = 0;
    *pbDone = 1;
  }
done:
  for(i = 0; i < RANK_SUM_MAX; i++){
    sqlite3_free(aSum[i]);
    sqlite3_free(aDirty[i]);
    sqlite3_free(azPhrase[i]);
  }
  rankSizesClose(&sizes);
  sqlite3_finalize(pFeed);
  sqlite3_free(zBoth);
  sqlite3_free(aUnit);
  sqlite3_free(aRng[0]);
  sqlite3_free(aRng[1]);
  sqlite3_free(aOut);
  sqlite3_free(o.aRow);
  sqlite3_free(o.aBoth);
  return rc;
}

/*
** Any query of several phrases, sessiondb_bm25(tbl, K, 'tbl', 'topall',
** NULL, NULL, query), query the text of the MATCH (DESIGN.md, "Several
** phrases"): each phrase counted (bm25's IDFs; a term with a summary from
** it), then every matching row read once, by a nested statement of the
** query, and bounded by the length its positions prove; its length is
** looked up only while that bound reaches the K-th best exact score so
** far. Scores and bounds are bm25's own operations, compared exactly.
*/
typedef struct RankAll {
  RankData *p;
  sqlite3 *db;
  RankSizes sizes;
  RankRow *aRow;  /* rows that reached the K best when read */
  int nRow, nAlloc;
  sqlite3_int64 nSeen;
} RankAll;

static int rankAllCb(const Fts5ExtensionApi *pApi, Fts5Context *pFts, void *pArg){
  RankAll *x = (RankAll *)pArg;
  RankData *p = x->p;
  sqlite3_int64 iRowid = pApi->xRowid(pFts);
  int rc, nMinLen = 0, nTok = 0;
  double score;
  if( ++x->nSeen % RANK_CHECK_EVERY == 0 && sqlite3_is_interrupted(x->db) ) return SQLITE_INTERRUPT;
  rc = rankInst(pApi, pFts, p, -1, &nMinLen);
  if( rc != SQLITE_OK ) return rc;
  if( p->nTop == p->k && rankScore(p, (double)nMinLen) < p->aTop[0] ) return SQLITE_OK;
  rc = rankDocsize(&x->sizes, iRowid, &nTok);
  if( rc != SQLITE_OK ) return rc;
  score = rankScore(p, (double)nTok);
  if( p->nTop == p->k && score < p->aTop[0] ) return SQLITE_OK;
  rankKeep(p, score);
  if( x->nRow == x->nAlloc ){
    int j, n = 0;
    for(j = 0; j < x->nRow; j++){
      if( p->nTop < p->k || x->aRow[j].score >= p->aTop[0] ) x->aRow[n++] = x->aRow[j];
    }
    x->nRow = n;  /* those fallen below the K best since */
    if( 2 * n >= x->nAlloc ){
      int m = x->nAlloc ? x->nAlloc * 2 : 256;
      RankRow *aNew;
      if( m > RANK_MAX_ROWS ) return SQLITE_RANGE;
      aNew = (RankRow *)sqlite3_realloc64(x->aRow, (unsigned long long)m * sizeof(RankRow));
      if( aNew == 0 ) return SQLITE_NOMEM;
      x->aRow = aNew;
      x->nAlloc = m;
    }
  }
  memset(&x->aRow[x->nRow], 0, sizeof(RankRow));
  x->aRow[x->nRow].iRowid = iRowid;
  x->aRow[x->nRow].score = score;
  x->aRow[x->nRow].nTok = nTok;
  x->nRow++;
  return SQLITE_OK;
}

/* rankAll ranks the query zQuery, of several phrases whose IDFs p holds,
** as described above, into p (p->aRow, as rankAhead leaves it). Too many
** rows kept (SQLITE_RANGE): nothing is ranked. */
static int rankAll(RankData *p, const char *zTable, const char *zQuery, sqlite3 *db){
  const sqlite3_int64 iMax = 0x7fffffffffffffffLL;
  sqlite3_stmt *pFeed = 0;
  RankFeed f;
  RankAll x;
  int rc, j, n = 0;
  memset(&x, 0, sizeof(x));
  x.p = p;
  x.db = db;
  if( rankSizesOpen(&x.sizes, p, db, zTable) != SQLITE_OK ) return SQLITE_NOMEM;
  f.xRow = rankAllCb;
  f.pArg = &x;
  p->nTop = 0;
  rc = rankFeedPrepare(db, zTable, &pFeed);
  if( rc == SQLITE_OK ) rc = rankFeedRun(pFeed, &f, zQuery, -iMax - 1, iMax);
  if( rc == SQLITE_OK ){
    for(j = 0; j < x.nRow; j++){
      if( p->nTop < p->k || x.aRow[j].score >= p->aTop[0] ) x.aRow[n++] = x.aRow[j];
    }
    /* the rows reaching the K-th best, ties included: placed as the query
    ** orders them, ties by rowid */
    qsort(x.aRow, (size_t)n, sizeof(RankRow), rankByRank);
    for(j = 0; j < n; j++) x.aRow[j].u.iPlace = j;
    qsort(x.aRow, (size_t)n, sizeof(RankRow), rankByRowid);
    p->aRow = x.aRow;
    p->nRow = n;
    p->bAhead = 1;
    p->nHit = -1;
    p->bSummary = 1;
    x.aRow = 0;
  }
  if( rc == SQLITE_RANGE ) rc = SQLITE_OK;  /* not ranked: 'top' fails */
  if( getenv("SESSIONDB_RANK_STATS") ){
    fprintf(stderr, "%s: %lld rows read, %d kept\n", zQuery, (long long)x.nSeen, n);
  }
  sqlite3_finalize(pFeed);
  rankSizesClose(&x.sizes);
  sqlite3_free(x.aRow);
  return rc;
}

/* rankPrefixSame sets *pbSame when the query's phrases are, in order, the
** terms of table zTable beginning with zPrefix, one token each: the terms
** the caller read from the index are still all of them, in this
** statement's snapshot (a write since may have added one). */
static int rankPrefixSame(const Fts5ExtensionApi *pApi, Fts5Context *pFts, sqlite3 *db,
                          const char *zTable, const char *zPrefix, int *pbSame){
  fts5cjk_term *a = 0;
  int n = 0, i, rc;
  *pbSame = 0;
  if( pApi->iVersion < 3 || zTable == 0 ) return SQLITE_OK;
  rc = fts5cjk_prefix_terms(db, zTable, (const unsigned char *)zPrefix, (int)strlen(zPrefix),
                            RANK_SUM_MAX, &a, &n);
  if( rc != SQLITE_OK || n != pApi->xPhraseCount(pFts) ){
    if( n > 0 ) fts5cjk_terms_free(a, n);
    return rc;
  }
  *pbSame = 1;
  for(i = 0; rc == SQLITE_OK && *pbSame && i < n; i++){
    const char *z = 0;
    int nz = 0;
    if( pApi->xPhraseSize(pFts, i) != 1 ){
      *pbSame = 0;
      break;
    }
    rc = pApi->xQueryToken(pFts, i, 0, &z, &nz);
    if( rc == SQLITE_OK && (z == 0 || nz != a[i].n || memcmp(z, a[i].z, (size_t)nz) != 0) ) *pbSame = 0;
  }
  fts5cjk_terms_free(a, n);
  return rc;
}

/* rankData returns the per-query state, creating it on the first row.
** With zPrefix, it reads nothing ahead unless the query's phrases are
** still the terms of that prefix (rankPrefixSame). zSource names the one
** source pAllow's rows are of, when they are: its summaries may answer. */
static int rankData(const Fts5ExtensionApi *pApi, Fts5Context *pFts, int k,
                    const char *zTable, int eTop, int bInst, sqlite3_value *pAllow,
                    const char *zPrefix, const char *zQuery, const char *zSource,
                    sqlite3 *db, RankData **pp){
  RankData *p = (RankData *)pApi->xGetAuxdata(pFts, 0);
  sqlite3_int64 nRow = 0, nToken = 0;
  int i, rc = SQLITE_OK, nPhrase, nCol, bNotAll = 0, nSumCounted = 0;
  int nFlush0 = 4 * k > fts5cjk_rank_flush_min ? 4 * k : fts5cjk_rank_flush_min;
  struct timespec t0, t1;
  RankAllow allow;
  int bAllow = pAllow && sqlite3_value_type(pAllow) != SQLITE_NULL;
  if( p ){
    *pp = p;
    return SQLITE_OK;
  }
  if( fts5cjk_rank_flush_min <= 1 ) nFlush0 = fts5cjk_rank_flush_min;
  memset(&allow, 0, sizeof(allow));
  if( bAllow ){
    rc = rankAllowMake(pAllow, &allow);
    if( rc != SQLITE_OK ){
      rankAllowFree(&allow);
      return rc;
    }
  }
  nPhrase = pApi->xPhraseCount(pFts);
  nCol = pApi->xColumnCount(pFts);
  p = (RankData *)sqlite3_malloc((int)(sizeof(RankData)
        + (size_t)nPhrase * (2 * sizeof(double) + sizeof(int))
        + (size_t)k * sizeof(double) + (size_t)nCol * sizeof(int)));
  if( p == 0 ){
    rankAllowFree(&allow);
    return SQLITE_NOMEM;
  }
  memset(p, 0, sizeof(RankData));
  p->nPhrase = nPhrase;
  p->nCol = nCol;
  p->k = k;
  p->aIDF = (double *)&p[1];
  p->aFreq = &p->aIDF[nPhrase];
  p->aTop = &p->aFreq[nPhrase];
  p->aSize = (int *)&p->aTop[k];
  p->aColMin = &p->aSize[nPhrase];
  p->pConn = p->pSpare = (RankConn *)pApi->xUserData(pFts);
  if( !rankConnSync(p->pConn, db) ) p->pConn = 0;

  rc = pApi->xRowCount(pFts, &nRow);
  if( rc == SQLITE_OK ) rc = pApi->xColumnTotalSize(pFts, -1, &nToken);
  if( rc == SQLITE_OK ) p->avgdl = (double)nToken / (double)nRow;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for(i = 0; eTop == 5 && i < nPhrase; i++){
    if( pApi->xPhraseSize(pFts, i) != 1 ) bNotAll = 1;  /* 'topall': terms only */
  }
  if( bNotAll ) nPhrase = 0;
  if( rc == SQLITE_OK && zPrefix ){
    int bSame = 0;
    rc = rankPrefixSame(pApi, pFts, db, zTable, zPrefix, &bSame);
    if( !bSame ) nPhrase = eTop = 0;  /* not read ahead: 'top' fails */
  }
  if( rc == SQLITE_OK && eTop >= 2 && eTop <= 4 ){
    /* A OR B, A AND B: ranked from summaries, or not read ahead at all
    ** ('top' then fails with SQLITE_RANGE, and the caller sorts) */
    int bDone = 0;
    if( !bAllow && k > 0 ) rc = rankOr(pApi, pFts, p, zTable, db, eTop == 3, eTop == 4, &bDone);
    nPhrase = 0;
  }
  for(i = 0; rc == SQLITE_OK && i < nPhrase; i++){
    RankAhead a;
    int bCounted = 0;
    memset(&a, 0, sizeof(a));
    a.p = p;
    a.db = db;
    a.bCountOnly = !(zTable && nPhrase == 1 && k > 0);
    a.nFlush = nFlush0;
    if( bAllow ) a.pAllow = &allow;
    a.bInst = bInst && !a.bCountOnly;
    if( !a.bCountOnly ){
      a.aRow = (RankRow *)rankSpareTake(p->pSpare, 0, &a.nAlloc);
      if( a.bInst ) a.aInst = (int *)rankSpareTake(p->pSpare, 1, &a.nInstAlloc);
      rc = rankSizesOpen(&a.sizes, p, db, zTable);
      a.aTopG = (double *)sqlite3_realloc64(0, (unsigned long long)k * sizeof(double));
      if( a.aTopG == 0 ) rc = SQLITE_NOMEM;
    }
    p->aSize[i] = pApi->xPhraseSize(pFts, i);
    if( rc == SQLITE_OK && ((eTop == 1 && !bAllow) || (bAllow && zSource)) && !a.bCountOnly ){
      rc = rankFromSummary(pApi, pFts, p, &a, zTable, bAllow ? zSource : 0, db, &p->bSummary);
    }
    if( rc == SQLITE_OK && p->bSummary == 2 ){
      /* a phrase's rows from a summary, not counted: ordered by g */
      p->aIDF[i] = 1.0;
      p->nHit = -1;
      rc = rankAhead(p, &a, 1);
      if( rc == RANK_RETRY ){
        rc = SQLITE_OK;
        p->bSummary = 0;
        p->nTop = 0;
        rankAheadRestart(&a, nFlush0);
      }
    }
    if( rc == SQLITE_OK && eTop == 5 && a.bCountOnly && zTable && p->aSize[i] == 1 && pApi->iVersion >= 3 ){
      /* a term of a query of several phrases ('topall'): counted from its
      ** summary. Never in the statement FTS5 sorts (rank MATCH): a query
      ** of the same table run from inside that one takes its expression.
      ** A term without a summary is counted by a pass, as the statement
      ** counts it (few rows: a frequent term has a summary, but for one
      ** in more than half of the rows); with no term summarized, 'topall'
      ** gives up. A phrase of several tokens: it gives up at once */
      char *zQuery = rankPhraseText(pApi, pFts, i, &rc);
      const char *z = 0;
      int nz = 0;
      if( zQuery && (rc = pApi->xQueryToken(pFts, i, 0, &z, &nz)) == SQLITE_OK && z ){
        char *zTerm = sqlite3_mprintf("%.*s", nz, z);
        rc = zTerm ? rankSummaryCount(db, zTable, zTerm, zQuery, &a.nHit, &bCounted) : SQLITE_NOMEM;
        sqlite3_free(zTerm);
      }
      sqlite3_free(zQuery);
    }
    nSumCounted += bCounted;
    if( rc == SQLITE_OK && !p->bSummary && !bCounted ) rc = pApi->xQueryPhrase(pFts, i, (void *)&a, rankAheadCb);
    if( rc == SQLITE_OK && p->bSummary != 2 ){
      double idf = log((nRow - a.nHit + 0.5) / (a.nHit + 0.5));
      if( idf <= 0.0 ) idf = 1e-6;
      p->aIDF[i] = idf;
      p->nHit = a.nHit;
      if( !a.bCountOnly ) rc = rankAhead(p, &a, 0);
    }
    /* for measurements (BENCHMARKS.md, issue 17): what each read-ahead did */
    if( getenv("SESSIONDB_RANK_STATS") ){
      fprintf(stderr, "sessiondb_bm25: %lld hits, %d kept, %lld lengths looked up\n",
              (long long)a.nHit, p->nRow, (long long)a.nLookup);
    }
    rankSizesClose(&a.sizes);
    sqlite3_free(a.aTopG);
    rankSpareGive(p->pSpare, 0, a.aRow, a.nAlloc, sizeof(RankRow));
    rankSpareGive(p->pSpare, 1, a.aInst, a.nInstAlloc, sizeof(int));
  }
  if( rc == SQLITE_OK && eTop == 5 && !bNotAll && nSumCounted > 0 && nPhrase > 1 && zTable && zQuery && !bAllow && k > 0 ){
    rc = rankAll(p, zTable, zQuery, db);
  }
  rankAllowFree(&allow);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  p->nReadUs = (sqlite3_int64)(t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
  if( rc == SQLITE_OK ) rc = pApi->xSetAuxdata(pFts, p, rankDataFree);
  if( rc != SQLITE_OK ){
    rankDataFree(p);
    return rc;
  }
  *pp = p;
  return SQLITE_OK;
}

/* rankScore is bm25's sum for a row of D tokens, operation for operation. */
static double rankScore(const RankData *p, double D){
  const double k1 = RANK_K1, b = RANK_B;
  double score = 0.0;
  int i;
  for(i = 0; i < p->nPhrase; i++){
    score += p->aIDF[i] * (
        ( p->aFreq[i] * (k1 + 1.0) ) /
        ( p->aFreq[i] + k1 * (1 - b + b * D / p->avgdl) )
    );
  }
  return score;
}

/* rankKeep records score among the k best so far (a min-heap). */
static void rankKeep(RankData *p, double score){
  rankHeapKeep(p->aTop, &p->nTop, p->k, score);
}

/* rankAheadRow finds a row of a read-ahead query among the kept rows. The
** query reads its rows in rowid order, mostly ascending: the search starts
** where the last one ended and steps forward, with a binary search for a
** long step or a step back. */
static const RankRow *rankAheadRow(RankData *p, sqlite3_int64 iRowid){
  int lo = p->iHint, hi = p->nRow, i;
  if( lo > 0 && p->aRow[lo - 1].iRowid >= iRowid ) lo = 0;
  for(i = 0; i < 4 && lo < hi && p->aRow[lo].iRowid < iRowid; i++) lo++;
  if( lo < hi && p->aRow[lo].iRowid < iRowid ){
    while( lo < hi ){
      int mid = (lo + hi) / 2;
      if( p->aRow[mid].iRowid < iRowid ) lo = mid + 1; else hi = mid;
    }
  }
  p->iHint = lo;
  if( lo < p->nRow && p->aRow[lo].iRowid == iRowid ) return &p->aRow[lo];
  return 0;
}

/* rankRowValue scores the current row, or prunes it by its bound. */
static int rankRowValue(const Fts5ExtensionApi *pApi, Fts5Context *pFts,
                        RankData *p, double *pv){
  int nTok = 0, nMinLen = 0, rc;
  double score;
  rc = rankInst(pApi, pFts, p, -1, &nMinLen);
  if( rc != SQLITE_OK ) return rc;
  if( p->k > 0 && p->nTop == p->k ){
    if( rankScore(p, (double)nMinLen) < p->aTop[0] ){
      *pv = RANK_PRUNED;
      return SQLITE_OK;
    }
  }
  rc = pApi->xColumnSize(pFts, -1, &nTok);
  if( rc != SQLITE_OK ) return rc;
  score = rankScore(p, (double)nTok);
  if( p->k > 0 ) rankKeep(p, score);
  *pv = -1.0 * score;
  return SQLITE_OK;
}

/* rankTop returns the rows read ahead as a JSON object: "hits", how many
** rows the phrase has, "size", its tokens, "us", the microseconds reading
** its rows took (a caller's estimate of what another pass over them costs),
** "ids", the rowids of the rows kept, in rank order, and, when the
** read-ahead kept them, "inst": for each of those rows the column and
** offset of each instance of the phrase, "c o c o ...", in FTS5's order
** (what sessiondb_snippet_at takes). It fails with SQLITE_RANGE when the
** rows were not read ahead (not one phrase, no table name, K out of range,
** too many rows). */
static void rankTop(const RankData *p, sqlite3_context *pCtx){
  const RankRow **aRank;
  sqlite3_str *pStr;
  int i, j;
  if( !p->bAhead ){
    sqlite3_result_error_code(pCtx, SQLITE_RANGE);
    return;
  }
  aRank = (const RankRow **)sqlite3_malloc64((unsigned long long)(p->nRow + 1) * sizeof(RankRow *));
  if( aRank == 0 ){
    sqlite3_result_error_code(pCtx, SQLITE_NOMEM);
    return;
  }
  for(i = 0; i < p->nRow; i++) aRank[p->aRow[i].u.iPlace] = &p->aRow[i];
  pStr = sqlite3_str_new(0);
  sqlite3_str_appendf(pStr, "{\"hits\":%lld,\"size\":%d,\"us\":%lld,\"seek\":%d,\"ids\":[",
                      (long long)p->nHit, p->aSize[0], (long long)p->nReadUs, p->bSummary != 0);
  for(i = 0; i < p->nRow; i++){
    sqlite3_str_appendf(pStr, i ? ",%lld" : "%lld", (long long)aRank[i]->iRowid);
  }
  sqlite3_str_appendchar(pStr, 1, ']');
  if( p->aInst ){
    sqlite3_str_appendall(pStr, ",\"inst\":[");
    for(i = 0; i < p->nRow; i++){
      const int *a = &p->aInst[aRank[i]->iInst];
      sqlite3_str_appendall(pStr, i ? ",\"" : "\"");
      for(j = 0; j < 2 * aRank[i]->nFreq; j++){
        sqlite3_str_appendf(pStr, j ? " %d" : "%d", a[j]);
      }
      sqlite3_str_appendchar(pStr, 1, '"');
    }
    sqlite3_str_appendchar(pStr, 1, ']');
  }
  sqlite3_str_appendchar(pStr, 1, '}');
  sqlite3_free(aRank);
  if( sqlite3_str_errcode(pStr) != SQLITE_OK ){
    sqlite3_result_error_code(pCtx, sqlite3_str_errcode(pStr));
    sqlite3_free(sqlite3_str_finish(pStr));
    return;
  }
  i = sqlite3_str_length(pStr);
  sqlite3_result_text(pCtx, sqlite3_str_finish(pStr), i, sqlite3_free);
}

static void rankFunction(const Fts5ExtensionApi *pApi, Fts5Context *pFts,
                         sqlite3_context *pCtx, int nVal,
                         sqlite3_value **apVal){
  RankData *p = 0;
  sqlite3_int64 k64 = nVal > 0 ? sqlite3_value_int64(apVal[0]) : 0;
  int k = k64 > 0 && k64 <= RANK_MAX_K ? (int)k64 : 0;  /* 0: score all */
  const char *zTable = nVal > 1 ? (const char *)sqlite3_value_text(apVal[1]) : 0;
  const char *zMode = nVal > 2 ? (const char *)sqlite3_value_text(apVal[2]) : 0;
  int bTop;
  double v = 0.0;
  int rc;

  /* first: a range read calls this once for each of its rows */
  if( zMode && strcmp(zMode, "feed") == 0 ){
    RankFeed *f = nVal > 3 ? (RankFeed *)sqlite3_value_pointer(apVal[3], RANK_FEED) : 0;
    rc = f ? f->xRow(pApi, pFts, f->pArg) : SQLITE_MISMATCH;
    if( rc != SQLITE_OK ) sqlite3_result_error_code(pCtx, rc);
    return;
  }
  bTop = zMode && (strcmp(zMode, "top") == 0 || strcmp(zMode, "topterm") == 0
                   || strcmp(zMode, "topor") == 0 || strcmp(zMode, "topand") == 0
                   || strcmp(zMode, "topsum") == 0 || strcmp(zMode, "topall") == 0);
  if( zMode && strcmp(zMode, "ranges") == 0 ){
    if( (nVal != 4 && nVal != 5) || k64 <= 0 || k64 > 0x7fffffff ){
      sqlite3_result_error_code(pCtx, SQLITE_MISMATCH);
      return;
    }
    rankRanges(pApi, pFts, pCtx, (int)k64, zTable, (const char *)sqlite3_value_text(apVal[3]),
               nVal == 5 ? apVal[4] : 0);
    return;
  }
  if( zMode && !bTop && strcmp(zMode, "place") != 0 ){
    sqlite3_result_error_code(pCtx, SQLITE_ERROR);
    return;
  }
  if( nVal > 3 && !bTop ){
    sqlite3_result_error_code(pCtx, SQLITE_ERROR); /* allowed rowids: 'top' only */
    return;
  }
  rc = rankData(pApi, pFts, k, zTable, bTop ? (zMode[3] == 't' ? 1 : zMode[3] == 'o' ? 2 : zMode[3] == 'a' ? (zMode[4] == 'l' ? 5 : 3) : zMode[3] == 's' ? 4 : 0) : 0,
                bTop && (zMode[3] == 0 || zMode[3] == 't'),
                nVal > 3 ? apVal[3] : 0, nVal > 4 ? (const char *)sqlite3_value_text(apVal[4]) : 0,
                nVal > 5 ? (const char *)sqlite3_value_text(apVal[5]) : 0,
                nVal > 6 ? (const char *)sqlite3_value_text(apVal[6]) : 0,
                sqlite3_context_db_handle(pCtx), &p);
  if( rc == SQLITE_OK && bTop ){
    rankTop(p, pCtx);
    return;
  }
  if( rc == SQLITE_OK && zMode ){
    const RankRow *r = p->bAhead ? rankAheadRow(p, pApi->xRowid(pFts)) : 0;
    if( r ){
      sqlite3_result_int(pCtx, r->u.iPlace);
    }else{
      sqlite3_result_null(pCtx);
    }
    return;
  }
  if( rc == SQLITE_OK ){
    sqlite3_int64 iRowid = pApi->xRowid(pFts);
    if( p->bLast && p->iLast == iRowid ){
      v = p->dLast;  /* the same row again (WHERE, then ORDER BY): counted once */
    }else if( p->bAhead ){
      const RankRow *r = rankAheadRow(p, iRowid);
      v = r ? -1.0 * r->score : RANK_PRUNED;
    }else{
      rc = rankRowValue(pApi, pFts, p, &v);
    }
    p->bLast = rc == SQLITE_OK;
    p->iLast = iRowid;
    p->dLast = v;
  }
  if( rc != SQLITE_OK ){
    sqlite3_result_error_code(pCtx, rc);
  }else{
    sqlite3_result_double(pCtx, v);
  }
}

int fts5cjk_register_rank(fts5_api *pApi){
  RankConn *c = (RankConn *)calloc(1, sizeof(RankConn));
  int rc;
  if( c == 0 ) return SQLITE_NOMEM;
  rc = pApi->xCreateFunction(pApi, "sessiondb_bm25", c, rankFunction, rankConnFree);
  if( rc != SQLITE_OK ) free(c);
  return rc;
}

/* sessiondb_source_ids(source, ...) is the set of the ids of the messages
** of the sessions of those sources, as sessiondb_idset's blob: what a
** search limited to rare sources hands sessiondb_bm25 (DESIGN.md, "Rare
** sources rank only their own rows"). A connection keeps its last
** RANK_SRC_KEEP answers while its data version (SQLITE_FCNTL_DATA_VERSION,
** which moves with every change to the file, by any connection) stays the
** same, and answers from them; in a write transaction it keeps none. */
#define RANK_SRC_KEEP 8

typedef struct RankSrcSet {
  char *zKey;        /* the sources, each as length:text */
  unsigned char *a;  /* the blob */
  int n;
} RankSrcSet;

typedef struct RankSrcKept {
  int bVersion;            /* iVersion is set */
  unsigned int iVersion;
  int iNext;               /* the slot to fill next */
  RankSrcSet aSet[RANK_SRC_KEEP];
} RankSrcKept;

/* lookups of sessiondb_source_ids answered from those kept (tests) */
long long fts5cjk_rank_src_kept = 0;

static void rankSrcClear(RankSrcKept *c){
  int i;
  for(i = 0; i < RANK_SRC_KEEP; i++){
    sqlite3_free(c->aSet[i].zKey);
    sqlite3_free(c->aSet[i].a);
  }
  memset(c, 0, sizeof(*c));
}

static void rankSrcFree(void *p){
  rankSrcClear((RankSrcKept *)p);
  sqlite3_free(p);
}

static void rankSourceIds(sqlite3_context *pCtx, int nArg, sqlite3_value **apVal){
  RankSrcKept *c = (RankSrcKept *)sqlite3_user_data(pCtx);
  sqlite3 *db = sqlite3_context_db_handle(pCtx);
  sqlite3_stmt *pStmt = 0;
  char *zKey = 0, *zSql;
  unsigned int v = 0;
  int i, rc, bKeep = sqlite3_txn_state(db, "main") == SQLITE_TXN_READ
                     && sqlite3_file_control(db, "main", SQLITE_FCNTL_DATA_VERSION, &v) == SQLITE_OK;
  if( nArg < 1 ){
    sqlite3_result_error(pCtx, "sessiondb_source_ids: no source", -1);
    return;
  }
  if( !bKeep || !c->bVersion || v != c->iVersion ){
    rankSrcClear(c);
    c->bVersion = bKeep;
    c->iVersion = v;
  }
  zSql = sqlite3_mprintf("SELECT sessiondb_idset(am.id) FROM sessions AS a JOIN messages AS am"
                         " ON am.session_id = a.id WHERE a.source IN (?");
  /* the key: each source as its length and text, N for a NULL */
  for(i = 0; zSql && (i == 0 || zKey) && i < nArg; i++){
    char *zMore = sqlite3_value_type(apVal[i]) == SQLITE_NULL ? sqlite3_mprintf("%sN", zKey ? zKey : "")
                : sqlite3_mprintf("%s%d:%s", zKey ? zKey : "", sqlite3_value_bytes(apVal[i]), sqlite3_value_text(apVal[i]));
    sqlite3_free(zKey);
    zKey = zMore;
    zSql = sqlite3_mprintf("%z%s", zSql, i + 1 < nArg ? ", ?" : ")");
  }
  if( zKey == 0 || zSql == 0 ){
    sqlite3_free(zKey);
    sqlite3_free(zSql);
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  for(i = 0; bKeep && i < RANK_SRC_KEEP; i++){
    if( c->aSet[i].zKey && strcmp(c->aSet[i].zKey, zKey) == 0 ){
      __atomic_fetch_add(&fts5cjk_rank_src_kept, 1, __ATOMIC_RELAXED);
      sqlite3_result_blob(pCtx, c->aSet[i].a, c->aSet[i].n, (void (*)(void *))-1);
      sqlite3_free(zKey);
      sqlite3_free(zSql);
      return;
    }
  }
  rc = sqlite3_prepare_v2(db, zSql, -1, &pStmt, 0);
  sqlite3_free(zSql);
  for(i = 0; rc == SQLITE_OK && i < nArg; i++) rc = sqlite3_bind_value(pStmt, i + 1, apVal[i]);
  if( rc == SQLITE_OK && (rc = sqlite3_step(pStmt)) == SQLITE_ROW ){
    int n = sqlite3_column_bytes(pStmt, 0);
    unsigned char *a = (unsigned char *)sqlite3_malloc64((unsigned long long)n + 1);
    rc = SQLITE_NOMEM;
    if( a ){
      memcpy(a, sqlite3_column_blob(pStmt, 0), (size_t)n);
      sqlite3_result_blob(pCtx, a, n, (void (*)(void *))-1);
      rc = SQLITE_OK;
      if( bKeep ){
        RankSrcSet *s = &c->aSet[c->iNext++ % RANK_SRC_KEEP];
        sqlite3_free(s->zKey);
        sqlite3_free(s->a);
        s->zKey = zKey;
        s->a = a;
        s->n = n;
        zKey = 0;
        a = 0;
      }
      sqlite3_free(a);
    }
  }
  sqlite3_finalize(pStmt);
  sqlite3_free(zKey);
  if( rc != SQLITE_OK ) sqlite3_result_error_code(pCtx, rc == SQLITE_DONE ? SQLITE_ERROR : rc);
}

int fts5cjk_register_idset(sqlite3 *db){
  RankSrcKept *c;
  int rc = sqlite3_create_function(db, "sessiondb_idset", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, 0,
                                   0, rankIdSetStep, rankIdSetFinal);
  if( rc != SQLITE_OK ) return rc;
  c = (RankSrcKept *)sqlite3_malloc(sizeof(RankSrcKept));
  if( c == 0 ) return SQLITE_NOMEM;
  memset(c, 0, sizeof(*c));
  /* on failure SQLite calls xDestroy itself */
  return sqlite3_create_function_v2(db, "sessiondb_source_ids", -1, SQLITE_UTF8, c,
                                    rankSourceIds, 0, 0, rankSrcFree);
}
