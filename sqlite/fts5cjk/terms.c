/*
** terms.c - the SQL function
**
**   sessiondb_prefix_terms(tbl, prefix, nMax)
**
** It returns the terms of FTS5 table tbl's main index that begin with the
** bytes of prefix (a token as the table's tokenizer makes it), as a JSON
** array of strings in the index's order, without repeats; NULL when there
** are more than nMax of them, or when the index cannot be read this way
** (the caller then leaves the prefix to FTS5).
**
** Why: FTS5 answers a prefix query (doc*) by merging the doclists of every
** term with the prefix into one, each time a cursor opens on it, whatever
** rowids the cursor is limited to (15 ms for doc* on a million messages).
** A query of those terms ORed opens at once, and a cursor limited to a few
** rowids seeks instead of merging. But listing the terms through fts5vocab
** also reads their whole doclists, to count them. This function reads
** only the pages of the index where the terms start.
**
** How, following the file format described in FTS5's fts5_index.c (stable
** across SQLite versions: newer versions read older files):
**
**   - Each segment of the index is a run of leaf pages, rows of %_data
**     whose rowid is (segid << 37) + page number. %_idx(segid, term, pgno)
**     holds one row for each leaf page that holds the start of a term: a
**     prefix of that term (empty for the segment's first page), greater
**     than the last term before it, and (page << 1) + a flag.
**   - Keys of the main index are the term's bytes after a '0' (prefix
**     indexes, which this function does not read, use '1', '2', ...).
**   - A leaf page starts with two big-endian 16-bit fields, the second the
**     offset of its footer: one varint per term starting on the page, the
**     offset of the first and then the difference to the previous one. The
**     page's first term is stored whole (varint size, bytes); each later
**     one as (varint bytes shared with the previous term, varint size of
**     the rest, the rest).
**
** For each segment (the distinct segids of %_idx) it reads the page %_idx
** names for the last key at or below '0'+prefix, takes the terms on it,
** and steps to the next page holding a term (%_idx: the first key above
** the page's last term), until a term sorts past every term with the
** prefix. An incremental merge deletes the leading pages of a segment it
** has read from, leaving their %_idx rows: a missing page is skipped to
** the segment's first page still present (rewritten to start with a whole
** term). Pages and %_idx rows of segments FTS5 no longer reads can only add
** terms that match no row, which cost the caller nothing but an OR branch.
*/
#include <stdlib.h>
#include <string.h>

#include "fts5cjk_sqlite.h"
#include "fts5cjk.h"

#define TERMS_MAX_BYTES 4096 /* a longer key is not FTS5's: give up */

typedef struct Terms {
  fts5cjk_term *a;        /* the terms found (with repeats across segments) */
  int n, nAlloc;
  int nMax;       /* more than this many (with repeats): bMany */
  int bMany;
} Terms;

static void termsFree(Terms *t){
  int i;
  for(i = 0; i < t->n; i++) sqlite3_free(t->a[i].z);
  sqlite3_free(t->a);
}

static int termsAdd(Terms *t, const unsigned char *z, int n){
  if( t->n >= t->nMax ){
    t->bMany = 1;
    return SQLITE_OK;
  }
  if( t->n == t->nAlloc ){
    int m = t->nAlloc ? t->nAlloc * 2 : 16;
    fts5cjk_term *a = (fts5cjk_term *)sqlite3_realloc64(t->a, (unsigned long long)m * sizeof(fts5cjk_term));
    if( a == 0 ) return SQLITE_NOMEM;
    t->a = a;
    t->nAlloc = m;
  }
  t->a[t->n].z = (unsigned char *)sqlite3_malloc(n + 1);
  if( t->a[t->n].z == 0 ) return SQLITE_NOMEM;
  memcpy(t->a[t->n].z, z, (size_t)n);
  t->a[t->n].n = n;
  t->n++;
  return SQLITE_OK;
}

/* termsCmp orders keys as FTS5 does: by bytes, then the shorter first. */
static int termsCmp(const unsigned char *a, int na, const unsigned char *b, int nb){
  int c = memcmp(a, b, (size_t)(na < nb ? na : nb));
  return c ? c : na - nb;
}

static int termsByKey(const void *x, const void *y){
  const fts5cjk_term *a = (const fts5cjk_term *)x, *b = (const fts5cjk_term *)y;
  return termsCmp(a->z, a->n, b->z, b->n);
}

/* termsVarint reads a varint (SQLite's format) of at most 32 bits at
** a[*pi], below n; -1 past n. */
static int termsVarint(const unsigned char *a, int n, int *pi){
  unsigned int v = 0;
  int i = *pi, k;
  for(k = 0; k < 5; k++){
    if( i >= n ) return -1;
    v = (v << 7) | (a[i] & 0x7f);
    if( (a[i++] & 0x80) == 0 ){
      *pi = i;
      return v > 0x7fffffff ? -1 : (int)v;
    }
  }
  return -1;
}

/* The statements of one call. */
typedef struct TermsStmts {
  sqlite3_stmt *pSeg;   /* the next segid */
  sqlite3_stmt *pStart; /* a segment's page for a key: last at or below */
  sqlite3_stmt *pNext;  /* a segment's next page holding a term */
  sqlite3_stmt *pPage;  /* a leaf page, or the first present at or after */
} TermsStmts;

#define TERMS_ROWID(seg, pg) (((sqlite3_int64)(seg) << 37) + (sqlite3_int64)(pg))

/* termsPage reads the terms of leaf page pg of segment seg into *pKey
** (each in turn) and t (those with the key's prefix): *pbEnd is set when a
** term sorts past them; *pnPg is set to the page read (a later one when pg
** is gone). *pbCorrupt is set for a page it cannot parse. */
static int termsPage(TermsStmts *s, int seg, int pg, const unsigned char *zKey, int nKey,
                     unsigned char *aTerm, int *pnTerm, Terms *t,
                     int *pnPg, int *pbEnd, int *pbCorrupt){
  const unsigned char *a;
  int n, rc, iFoot, iOff = 0, iPrev = -1, i;
  sqlite3_bind_int64(s->pPage, 1, TERMS_ROWID(seg, pg));
  sqlite3_bind_int64(s->pPage, 2, TERMS_ROWID(seg, 0x7fffffff));  /* leaves, not dlidx */
  rc = sqlite3_step(s->pPage);
  if( rc != SQLITE_ROW ){
    sqlite3_reset(s->pPage);
    if( rc == SQLITE_DONE ) *pbEnd = 1;  /* the segment's pages end */
    return rc == SQLITE_DONE ? SQLITE_OK : sqlite3_reset(s->pPage);
  }
  *pnPg = (int)(sqlite3_column_int64(s->pPage, 0) - TERMS_ROWID(seg, 0));
  a = (const unsigned char *)sqlite3_column_blob(s->pPage, 1);
  n = sqlite3_column_bytes(s->pPage, 1);
  if( n < 4 || (iFoot = (a[2] << 8) | a[3]) < 4 || iFoot > n ){
    *pbCorrupt = 1;
    return sqlite3_reset(s->pPage);
  }
  i = iFoot;
  while( i < n && !*pbEnd ){
    int d = termsVarint(a, n, &i), nShared = 0, nNew;
    int j;
    if( d < 0 || (iPrev >= 0 && d == 0) ){
      *pbCorrupt = 1;
      break;
    }
    iOff += d;
    j = iOff;
    if( j >= iFoot ){
      *pbCorrupt = 1;
      break;
    }
    if( iPrev >= 0 ){
      nShared = termsVarint(a, iFoot, &j);
    }
    nNew = termsVarint(a, iFoot, &j);
    if( nShared < 0 || nNew < 0 || nShared > *pnTerm || j + nNew > iFoot
        || nShared + nNew > TERMS_MAX_BYTES ){
      *pbCorrupt = 1;
      break;
    }
    memcpy(&aTerm[nShared], &a[j], (size_t)nNew);
    *pnTerm = nShared + nNew;
    iPrev = iOff;
    if( termsCmp(aTerm, *pnTerm, zKey, nKey) < 0 ) continue;
    if( *pnTerm < nKey || memcmp(aTerm, zKey, (size_t)nKey) != 0 ){
      *pbEnd = 1;  /* past every key with the prefix */
      break;
    }
    rc = termsAdd(t, aTerm + 1, *pnTerm - 1);
    if( rc != SQLITE_OK || t->bMany ) break;
  }
  if( iPrev < 0 && !*pbCorrupt ) *pbCorrupt = 1;  /* %_idx named a page without a term */
  if( rc == SQLITE_ROW ) rc = SQLITE_OK;
  if( rc == SQLITE_OK ) return sqlite3_reset(s->pPage);
  sqlite3_reset(s->pPage);
  return rc;
}

/* termsSegment adds the terms of segment seg with the key's prefix. */
static int termsSegment(TermsStmts *s, int seg, const unsigned char *zKey, int nKey,
                        Terms *t, int *pbCorrupt){
  unsigned char aTerm[TERMS_MAX_BYTES];
  int nTerm = 0, rc, pg, bEnd = 0;
  sqlite3_bind_int(s->pStart, 1, seg);
  sqlite3_bind_blob(s->pStart, 2, zKey, nKey, 0);
  rc = sqlite3_step(s->pStart);
  pg = rc == SQLITE_ROW ? (int)(sqlite3_column_int64(s->pStart, 0) >> 1) : 1;
  rc = sqlite3_reset(s->pStart);
  while( rc == SQLITE_OK && !bEnd && !*pbCorrupt ){
    int pgRead = pg;
    rc = termsPage(s, seg, pg, zKey, nKey, aTerm, &nTerm, t, &pgRead, &bEnd, pbCorrupt);
    if( rc != SQLITE_OK || bEnd || *pbCorrupt || t->bMany ) break;
    /* the next page holding a term: the first key above this page's last */
    sqlite3_bind_int(s->pNext, 1, seg);
    sqlite3_bind_blob(s->pNext, 2, aTerm, nTerm, 0);
    rc = sqlite3_step(s->pNext);
    if( rc == SQLITE_ROW ){
      pg = (int)(sqlite3_column_int64(s->pNext, 0) >> 1);
      if( pg <= pgRead ) *pbCorrupt = 1;
      rc = SQLITE_OK;
    }else if( rc == SQLITE_DONE ){
      bEnd = 1;
      rc = SQLITE_OK;
    }
    if( rc == SQLITE_OK ) rc = sqlite3_reset(s->pNext);
    else sqlite3_reset(s->pNext);
  }
  return rc;
}

/* fts5cjk_prefix_terms lists the terms of table zTbl's main index that
** begin with zPre[0..nPre) into *pa, *pn of them, in order and without
** repeats (free with fts5cjk_terms_free); *pn is -1 when there are more
** than nMax or the index cannot be read this way (see above). */
int fts5cjk_prefix_terms(sqlite3 *db, const char *zTbl, const unsigned char *zPre, int nPre,
                         int nMax, fts5cjk_term **pa, int *pn){
  TermsStmts s;
  Terms t;
  unsigned char *zKey = 0;
  int rc = SQLITE_OK, seg = -1, bCorrupt = 0, i, n = 0;
  *pa = 0;
  *pn = -1;
  if( nPre + 1 > TERMS_MAX_BYTES || nMax < 0 ) return SQLITE_OK;
  memset(&s, 0, sizeof(s));
  memset(&t, 0, sizeof(t));
  t.nMax = nMax * 8;  /* repeats across segments: far more, give up */
  zKey = (unsigned char *)sqlite3_malloc(nPre + 1);
  if( zKey == 0 ) rc = SQLITE_NOMEM;
  if( rc == SQLITE_OK ){
    zKey[0] = '0';
    memcpy(&zKey[1], zPre, (size_t)nPre);
  }
#define TERMS_PREPARE(p, fmt) \
  if( rc == SQLITE_OK ){ \
    char *zSql = sqlite3_mprintf(fmt, zTbl); \
    rc = zSql ? sqlite3_prepare_v2(db, zSql, -1, &(p), 0) : SQLITE_NOMEM; \
    sqlite3_free(zSql); \
  }
  TERMS_PREPARE(s.pSeg, "SELECT segid FROM main.\"%w_idx\" WHERE segid > ?1 ORDER BY segid LIMIT 1")
  TERMS_PREPARE(s.pStart, "SELECT pgno FROM main.\"%w_idx\" WHERE segid = ?1 AND term <= ?2 ORDER BY term DESC LIMIT 1")
  TERMS_PREPARE(s.pNext, "SELECT pgno FROM main.\"%w_idx\" WHERE segid = ?1 AND term > ?2 ORDER BY term LIMIT 1")
  TERMS_PREPARE(s.pPage, "SELECT id, block FROM main.\"%w_data\" WHERE id >= ?1 AND id <= ?2 ORDER BY id LIMIT 1")
#undef TERMS_PREPARE
  while( rc == SQLITE_OK && !bCorrupt && !t.bMany ){
    sqlite3_bind_int(s.pSeg, 1, seg);
    rc = sqlite3_step(s.pSeg);
    if( rc != SQLITE_ROW ){
      if( rc == SQLITE_DONE ) rc = sqlite3_reset(s.pSeg);
      else sqlite3_reset(s.pSeg);
      break;
    }
    seg = sqlite3_column_int(s.pSeg, 0);
    rc = sqlite3_reset(s.pSeg);
    if( rc == SQLITE_OK && (seg <= 0 || seg > 0xffff) ) bCorrupt = 1;
    if( rc == SQLITE_OK && !bCorrupt ) rc = termsSegment(&s, seg, zKey, nPre + 1, &t, &bCorrupt);
  }
  sqlite3_finalize(s.pSeg);
  sqlite3_finalize(s.pStart);
  sqlite3_finalize(s.pNext);
  sqlite3_finalize(s.pPage);
  sqlite3_free(zKey);
  if( rc == SQLITE_OK && !bCorrupt && !t.bMany ){
    qsort(t.a, (size_t)t.n, sizeof(fts5cjk_term), termsByKey);
    for(i = 0; i < t.n; i++){
      if( n > 0 && termsByKey(&t.a[i], &t.a[n - 1]) == 0 ){
        sqlite3_free(t.a[i].z);
      }else{
        t.a[n++] = t.a[i];
      }
    }
    t.n = n;
    if( n <= nMax ){
      *pa = t.a;
      *pn = n;
      return SQLITE_OK;
    }
  }
  termsFree(&t);
  return rc;
}

void fts5cjk_terms_free(fts5cjk_term *a, int n){
  Terms t;
  t.a = a;
  t.n = n;
  termsFree(&t);
}

static void termsFunction(sqlite3_context *pCtx, int nVal, sqlite3_value **apVal){
  const char *zTbl = (const char *)sqlite3_value_text(apVal[0]);
  const unsigned char *zPre = sqlite3_value_text(apVal[1]);
  fts5cjk_term *a = 0;
  int n = 0, i, j, rc;
  sqlite3_str *pOut;
  (void)nVal;
  if( zTbl == 0 || zPre == 0 ) return;  /* NULL */
  rc = fts5cjk_prefix_terms(sqlite3_context_db_handle(pCtx), zTbl, zPre, sqlite3_value_bytes(apVal[1]),
                            sqlite3_value_int(apVal[2]), &a, &n);
  if( rc != SQLITE_OK ){
    sqlite3_result_error_code(pCtx, rc);
    return;
  }
  if( n < 0 ) return;  /* NULL: too many, or not read this way */
  pOut = sqlite3_str_new(sqlite3_context_db_handle(pCtx));
  sqlite3_str_appendchar(pOut, 1, '[');
  for(i = 0; i < n; i++){
    sqlite3_str_appendall(pOut, i ? ",\"" : "\"");
    for(j = 0; j < a[i].n; j++){
      unsigned char c = a[i].z[j];
      if( c == '"' || c == '\\' ) sqlite3_str_appendf(pOut, "\\%c", c);
      else if( c < 0x20 ) sqlite3_str_appendf(pOut, "\\u%04x", c);
      else sqlite3_str_appendchar(pOut, 1, (char)c);
    }
    sqlite3_str_appendchar(pOut, 1, '"');
  }
  sqlite3_str_appendchar(pOut, 1, ']');
  fts5cjk_terms_free(a, n);
  if( sqlite3_str_errcode(pOut) != SQLITE_OK ){
    sqlite3_free(sqlite3_str_finish(pOut));
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  sqlite3_result_text(pCtx, sqlite3_str_finish(pOut), -1, sqlite3_free);
}

int fts5cjk_register_terms(sqlite3 *db){
  return sqlite3_create_function(db, "sessiondb_prefix_terms", 3, SQLITE_UTF8, 0,
                                 termsFunction, 0, 0);
}
