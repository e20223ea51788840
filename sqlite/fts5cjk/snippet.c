/*
** snippet.c - the FTS5 auxiliary function
**
**   sessiondb_snippet(tbl, iCol, zOpen, zClose, zEllipsis, nToken)
**
** It returns what FTS5's built-in snippet() returns for the same arguments
** (same fragment choice, same highlighting, same text), for less work:
**
**   - snippet() tokenizes every column it may choose from to find where
**     sentences start, then tokenizes the chosen column a second time to
**     copy the fragment out. Here each column is tokenized once, recording
**     the byte range of every token, and the fragment is cut from those
**     ranges.
**   - A column without any phrase instance cannot be chosen (its score is
**     0 whatever its sentences), so it is not tokenized at all.
**   - Tokenizing stops after the last token a column's instances and
**     fragment can involve, instead of running to the end of a long text.
**   - The column lengths the fragment rules need come from that
**     tokenizing (its count, or a bound the rules cannot tell from the
**     length), not from a lookup in the table's %_docsize.
**
** The texts of the row's columns may follow the arguments
** (sessiondb_snippet(tbl, iCol, zOpen, zClose, zEllipsis, nToken, text0,
** text1, ...), one per column): they are used instead of asking FTS5 for
** them, which runs a query on the table's content table (for an external
** content table over a view, the view's query) for every row. They must
** be exactly the texts the row was indexed from, or the fragment and its
** highlights come out wrong.
**
** Differences remain on a damaged index only: an instance past the end of
** its column is SQLITE_CORRUPT_VTAB here whenever the text ends before it,
** while snippet() compares with the length in %_docsize, and can lose that
** error when a later column reads fine.
**
** The fragment rules it follows (FTS5's): every instance of a phrase in a
** column is scored by the instances in the nToken tokens from it (1000 for
** a phrase's first instance there, 1 for each repeat), centred on the
** instances, and so is the start of the sentence holding it (a token after
** '.' or ':' and whitespace, or the column's first token) with a bonus of
** 100 (120 at the first token); the best score wins, the first of equals.
** Overlapping instances are highlighted as one; text outside the fragment
** becomes zEllipsis; pieces of text are cut at a NUL byte, as SQLite's
** printf cuts them.
*/
#include <stdlib.h>
#include <string.h>

#include "fts5cjk_sqlite.h"
#include "fts5cjk.h"

#define SNIP_CORRUPT (SQLITE_CORRUPT | (1 << 8)) /* SQLITE_CORRUPT_VTAB */
#define SNIP_STOP SQLITE_DONE                   /* ends a tokenization early */
#define SNIP_CHECK_EVERY 65536  /* tokens between looks at sqlite3_interrupt() */

/* SnipInst is one phrase instance of the row (xInst), in xInst order. */
typedef struct SnipInst {
  int iPhrase, iCol, iOff, nSize;
} SnipInst;

/* SnipCol is one column of the row, tokenized from its start. */
typedef struct SnipCol {
  sqlite3 *db;    /* polled for sqlite3_interrupt() while tokenizing */
  const char *zDoc;
  int nDoc;
  int bRead;      /* zDoc and nDoc are set */
  int bDone;      /* tokenized to the end */
  int iNeed;      /* while tokenizing: stop after this position (-1: never) */
  int nTok, nTokAlloc;
  int *aOff;      /* per token: start and end byte offsets */
  int nFirst, nFirstAlloc;
  int *aFirst;    /* positions of the first tokens of sentences */
} SnipCol;

static int snipGrow(int **pa, int *pnAlloc, int nNeed){
  int n;
  int *a;
  if( nNeed <= *pnAlloc ) return SQLITE_OK;
  n = *pnAlloc ? *pnAlloc * 2 : 64;
  while( n < nNeed ) n *= 2;
  a = (int *)sqlite3_realloc64(*pa, (unsigned long long)n * sizeof(int));
  if( a == 0 ) return SQLITE_NOMEM;
  *pa = a;
  *pnAlloc = n;
  return SQLITE_OK;
}

/* snipTokenCb records a token's byte range and whether it starts a sentence. */
static int snipTokenCb(void *pCtx, int tflags, const char *pToken, int nToken,
                       int iStart, int iEnd){
  SnipCol *c = (SnipCol *)pCtx;
  int iPos = c->nTok, rc;
  (void)pToken;
  (void)nToken;
  if( tflags & FTS5_TOKEN_COLOCATED ) return SQLITE_OK;
  if( iPos % SNIP_CHECK_EVERY == SNIP_CHECK_EVERY - 1 && sqlite3_is_interrupted(c->db) ){
    return SQLITE_INTERRUPT;
  }
  if( iPos == 0 ){
    rc = snipGrow(&c->aFirst, &c->nFirstAlloc, c->nFirst + 1);
    if( rc != SQLITE_OK ) return rc;
    c->aFirst[c->nFirst++] = 0;
  }else{
    int i;
    char ch = 0;
    for(i = iStart - 1; i >= 0; i--){
      ch = c->zDoc[i];
      if( ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r' ) break;
    }
    if( i != iStart - 1 && (ch == '.' || ch == ':') ){
      rc = snipGrow(&c->aFirst, &c->nFirstAlloc, c->nFirst + 1);
      if( rc != SQLITE_OK ) return rc;
      c->aFirst[c->nFirst++] = iPos;
    }
  }
  rc = snipGrow(&c->aOff, &c->nTokAlloc, 2 * (c->nTok + 1));
  if( rc != SQLITE_OK ) return rc;
  c->aOff[2 * iPos] = iStart;
  c->aOff[2 * iPos + 1] = iEnd;
  c->nTok++;
  return c->iNeed >= 0 && iPos >= c->iNeed ? SNIP_STOP : SQLITE_OK;
}

/* snipTokens tokenizes column iCol until position iNeed is recorded (all
** of it when iNeed < 0) or the text ends. */
static int snipTokens(const Fts5ExtensionApi *pApi, Fts5Context *pFts,
                      SnipCol *c, int iCol, int iNeed){
  int rc = SQLITE_OK;
  if( !c->bRead ){  /* (texts given as arguments are read already) */
    rc = pApi->xColumnText(pFts, iCol, &c->zDoc, &c->nDoc);
    if( rc != SQLITE_OK ) return rc;
    c->bRead = 1;
  }
  if( c->bDone || (iNeed >= 0 && iNeed < c->nTok) ) return SQLITE_OK;
  c->nTok = 0;
  c->nFirst = 0;
  c->iNeed = iNeed;
  if( c->zDoc ){
    rc = pApi->xTokenize(pFts, c->zDoc, c->nDoc, (void *)c, snipTokenCb);
  }
  if( rc == SNIP_STOP || (rc == SQLITE_OK && iNeed >= 0 && c->nTok > iNeed) ){
    return SQLITE_OK;
  }
  if( rc == SQLITE_OK ) c->bDone = 1;
  return rc;
}

/* snipFrom returns where a scan for the instances of column iCol from
** offset iPos may start: with the instances in position order (bSorted),
** the first one at or after it, found by a binary search, so that scoring
** every instance of a long text costs n log n instead of n squared;
** otherwise 0. */
static int snipFrom(const SnipInst *a, int nInst, int bSorted, int iCol, int iPos){
  int lo = 0, hi = nInst;
  if( !bSorted ) return 0;
  while( lo < hi ){
    int mid = lo + (hi - lo) / 2;
    if( a[mid].iCol < iCol || (a[mid].iCol == iCol && a[mid].iOff < iPos) ){
      lo = mid + 1;
    }else{
      hi = mid;
    }
  }
  return lo;
}

/* snipScore scores the fragment of nToken tokens from iPos in column iCol
** and, when piPos is given, where a fragment centred on its instances
** starts. bSorted: the instances are in position order, so the scan starts
** at the first one in the fragment and stops after the last. */
static void snipScore(const SnipInst *a, int nInst, int bSorted, int nDocsize,
                      unsigned char *aSeen, int iCol, int iPos, int nToken,
                      int *pnScore, int *piPos){
  int i, iFirst = -1, iLast = 0, nScore = 0;
  sqlite3_int64 iEnd = (sqlite3_int64)iPos + nToken;
  for(i = snipFrom(a, nInst, bSorted, iCol, iPos); i < nInst; i++){
    if( bSorted && (a[i].iCol != iCol || a[i].iOff >= iEnd) ) break;
    if( a[i].iCol == iCol && a[i].iOff >= iPos && a[i].iOff < iEnd ){
      nScore += aSeen[a[i].iPhrase] ? 1 : 1000;
      aSeen[a[i].iPhrase] = 1;
      if( iFirst < 0 ) iFirst = a[i].iOff;
      iLast = a[i].iOff + a[i].nSize;
    }
  }
  *pnScore = nScore;
  if( piPos ){
    sqlite3_int64 iAdj = iFirst - (nToken - (iLast - iFirst)) / 2;
    if( iAdj + nToken > nDocsize ) iAdj = nDocsize - nToken;
    if( iAdj < 0 ) iAdj = 0;
    *piPos = (int)iAdj;
  }
}

/* SnipOut is the growing result. */
typedef struct SnipOut {
  char *z;
  int n, nAlloc;
  int rc;
} SnipOut;

/* snipAppend appends n bytes of z (up to a NUL byte; n < 0: all of it). */
static void snipAppend(SnipOut *o, const char *z, int n){
  const char *zNul;
  if( o->rc != SQLITE_OK ) return;
  if( n < 0 ) n = (int)strlen(z);
  if( n > 0 && (zNul = memchr(z, 0, (size_t)n)) != 0 ) n = (int)(zNul - z);
  if( o->n + n + 1 > o->nAlloc ){
    int nNew = o->nAlloc ? o->nAlloc : 128;
    char *zNew;
    while( nNew < o->n + n + 1 ) nNew *= 2;
    zNew = (char *)sqlite3_realloc64(o->z, (unsigned long long)nNew);
    if( zNew == 0 ){
      o->rc = SQLITE_NOMEM;
      return;
    }
    o->z = zNew;
    o->nAlloc = nNew;
  }
  memcpy(o->z + o->n, z, (size_t)n);
  o->n += n;
  o->z[o->n] = 0;
}

/* SnipRun walks the instances of one column, overlapping ones joined into
** one run [iStart, iEnd] (they are highlighted as one). */
typedef struct SnipRun {
  const SnipInst *a;
  int nInst, iInst, iCol;
  int iStart, iEnd;  /* the current run; -1 when there is none */
} SnipRun;

static void snipRunNext(SnipRun *r){
  r->iStart = -1;
  r->iEnd = -1;
  for(; r->iInst < r->nInst; r->iInst++){
    const SnipInst *x = &r->a[r->iInst];
    int iEnd;
    if( x->iCol != r->iCol ) continue;
    iEnd = x->iOff - 1 + x->nSize;
    if( r->iStart < 0 ){
      r->iStart = x->iOff;
      r->iEnd = iEnd;
    }else if( x->iOff <= r->iEnd ){
      if( iEnd > r->iEnd ) r->iEnd = iEnd;
    }else{
      break;
    }
  }
}

/* snipCut writes the fragment [iFrom, iTo] of column c (every token when
** iTo < 0), highlighting the instances, as FTS5's highlight callback does
** token by token, and returns the offset in the text it copied up to. */
static int snipCut(SnipOut *o, const SnipCol *c, SnipRun *r, int iFrom,
                    int iTo, const char *zOpen, const char *zClose){
  int iPos, iOff = 0, bOpen = 0;
  const char *zIn = c->zDoc;
  for(iPos = 0; iPos < c->nTok; iPos++){
    int iStartOff = c->aOff[2 * iPos], iEndOff = c->aOff[2 * iPos + 1];
    if( iTo >= 0 ){
      if( iPos < iFrom ) continue;
      if( iPos > iTo ) break;
      if( iFrom && iPos == iFrom ) iOff = iStartOff;
    }
    if( bOpen && (iPos <= r->iStart || r->iStart < 0) && iStartOff > iOff ){
      snipAppend(o, zClose, -1);
      bOpen = 0;
    }
    if( iPos == r->iStart && !bOpen ){
      snipAppend(o, &zIn[iOff], iStartOff - iOff);
      snipAppend(o, zOpen, -1);
      iOff = iStartOff;
      bOpen = 1;
    }
    if( iPos == r->iEnd ){
      if( !bOpen ){
        snipAppend(o, zOpen, -1);
        bOpen = 1;
      }
      snipAppend(o, &zIn[iOff], iEndOff - iOff);
      iOff = iEndOff;
      snipRunNext(r);
    }
    if( iPos == iTo ){
      if( bOpen ){
        if( r->iStart >= 0 && iPos >= r->iStart ){
          snipAppend(o, &zIn[iOff], iEndOff - iOff);
          iOff = iEndOff;
        }
        snipAppend(o, zClose, -1);
        bOpen = 0;
      }
      snipAppend(o, &zIn[iOff], iEndOff - iOff);
      iOff = iEndOff;
    }
  }
  if( bOpen ) snipAppend(o, zClose, -1);
  return iOff;
}

static const char *snipText(sqlite3_value *v){
  const char *z = (const char *)sqlite3_value_text(v);
  return z ? z : "";
}

static int snipOne = 1;
static int snipAt = 2;

/* snipInstAt reads sessiondb_snippet_at's instances: "c o c o ...", the
** column and offset of each instance of a phrase of nSize tokens, into
** *paInst (nInst of them). Anything else is SQLITE_MISMATCH. */
static int snipInstAt(const char *z, sqlite3_int64 nSize, int nCol, SnipInst **paInst, int *pnInst){
  int n = 0, nAlloc = 0, v[2], iv = 0;
  SnipInst *a = 0;
  if( z == 0 || nSize < 1 || nSize > 0x7fffffff ) return SQLITE_MISMATCH;
  while( *z ){
    sqlite3_int64 x = 0;
    if( *z == ' ' && iv + n > 0 ){ z++; continue; }
    if( *z < '0' || *z > '9' ) break;
    while( *z >= '0' && *z <= '9' && x <= 0x7fffffff ) x = x * 10 + (*z++ - '0');
    if( x > 0x7fffffff || (iv == 0 && x >= nCol) ) break;
    v[iv++] = (int)x;
    if( iv < 2 ) continue;
    if( n == nAlloc ){
      SnipInst *aNew;
      nAlloc = nAlloc ? nAlloc * 2 : 16;
      aNew = (SnipInst *)sqlite3_realloc64(a, (unsigned long long)nAlloc * sizeof(SnipInst));
      if( aNew == 0 ){
        sqlite3_free(a);
        return SQLITE_NOMEM;
      }
      a = aNew;
    }
    a[n].iPhrase = 0;
    a[n].iCol = v[0];
    a[n].iOff = v[1];
    a[n].nSize = (int)nSize;
    n++;
    iv = 0;
  }
  if( *z || iv || n == 0 ){
    sqlite3_free(a);
    return SQLITE_MISMATCH;
  }
  *paInst = a;
  *pnInst = n;
  return SQLITE_OK;
}

static void snippetFunction(const Fts5ExtensionApi *pApi, Fts5Context *pFts,
                            sqlite3_context *pCtx, int nVal,
                            sqlite3_value **apVal){
  int bAt = pApi->xUserData(pFts) == &snipAt;
  int nArg = bAt ? 7 : 5;  /* the arguments before the texts */
  int nCol = pApi->xColumnCount(pFts), nPhrase = bAt ? 1 : pApi->xPhraseCount(pFts);
  int iCol, nToken, nInst = 0, i, rc, bSorted = 1;
  int iBestCol, iBestStart = 0, nBestScore = 0;
  const char *zOpen, *zClose, *zEllips;
  SnipInst *aInst = 0;
  SnipCol *aCol = 0;
  unsigned char *aSeen = 0;
  SnipOut out;
  sqlite3_int64 iCol64, nToken64;

  memset(&out, 0, sizeof(out));
  if( nVal != nArg + nCol && (bAt || nVal != 5) ){
    sqlite3_result_error_code(pCtx, SQLITE_ERROR);
    return;
  }
  iCol64 = sqlite3_value_int64(apVal[0]);
  iCol = iCol64 < -1 ? -1 : (iCol64 > 0x7FFFFFFF ? 0x7FFFFFFF : (int)iCol64);
  zOpen = snipText(apVal[1]);
  zClose = snipText(apVal[2]);
  zEllips = snipText(apVal[3]);
  nToken64 = sqlite3_value_int64(apVal[4]);
  nToken = nToken64 < 0 ? 0 : (nToken64 > 64 ? 64 : (int)nToken64);
  iBestCol = iCol >= 0 ? iCol : 0;

  if( bAt ){
    rc = snipInstAt((const char *)sqlite3_value_text(apVal[5]), sqlite3_value_int64(apVal[6]), nCol, &aInst, &nInst);
  }else{
    rc = pApi->xInstCount(pFts, &nInst);
    if( rc == SQLITE_OK ){
      aInst = (SnipInst *)sqlite3_malloc((int)sizeof(SnipInst) * (nInst + 1));
      if( aInst == 0 ) rc = SQLITE_NOMEM;
    }
  }
  if( rc == SQLITE_OK ){
    aCol = (SnipCol *)sqlite3_malloc((int)sizeof(SnipCol) * (nCol + 1));
    aSeen = (unsigned char *)sqlite3_malloc(nPhrase + 1);
    if( aCol == 0 || aSeen == 0 ) rc = SQLITE_NOMEM;
  }
  if( rc == SQLITE_OK ){
    memset(aCol, 0, sizeof(SnipCol) * (size_t)(nCol + 1));
    for(i = 0; i < nCol; i++) aCol[i].db = sqlite3_context_db_handle(pCtx);
    for(i = 0; nVal > nArg && i < nCol; i++){
      aCol[i].zDoc = (const char *)sqlite3_value_text(apVal[nArg + i]);
      aCol[i].nDoc = sqlite3_value_bytes(apVal[nArg + i]);
      aCol[i].bRead = 1;
    }
  }
  for(i = 0; rc == SQLITE_OK && i < nInst; i++){
    SnipInst *x = &aInst[i];
    if( !bAt ) rc = pApi->xInst(pFts, i, &x->iPhrase, &x->iCol, &x->iOff);
    if( rc == SQLITE_OK && !bAt ) x->nSize = pApi->xPhraseSize(pFts, x->iPhrase);
    if( pApi->xUserData(pFts) == &snipOne ) x->iPhrase = 0;
    if( i > 0 && (x[-1].iCol > x->iCol || (x[-1].iCol == x->iCol && x[-1].iOff > x->iOff)) ){
      bSorted = 0;  /* FTS5 gives them in position order; never assumed */
    }
  }

  /* Score every instance, and the start of its sentence. */
  for(i = 0; rc == SQLITE_OK && i < nCol; i++){
    SnipCol *c = &aCol[i];
    int ii, iLastOff = -1, nMaxSize = 0, nDocsize;
    if( iCol >= 0 && iCol != i ) continue;
    for(ii = 0; ii < nInst; ii++){
      if( aInst[ii].iCol != i ) continue;
      if( aInst[ii].iOff > iLastOff ) iLastOff = aInst[ii].iOff;
      if( aInst[ii].nSize > nMaxSize ) nMaxSize = aInst[ii].nSize;
    }
    if( iLastOff < 0 ) continue;  /* no instance: it cannot win */
    /* The column's length in tokens, or, when the text goes on, a lower
    ** bound past every position the rules below compare it with (a fragment
    ** centred on an instance ends before iLastOff + nToken + nMaxSize):
    ** either way they decide as with FTS5's length (xColumnSize), which
    ** would cost a lookup in %_docsize. */
    rc = snipTokens(pApi, pFts, c, i, iLastOff + nToken + nMaxSize);
    nDocsize = c->nTok;
    for(ii = 0; rc == SQLITE_OK && ii < nInst; ii++){
      int io = aInst[ii].iOff, iAdj = 0, nScore = 0, jj;
      if( aInst[ii].iCol != i ) continue;
      if( io > nDocsize ){
        rc = SNIP_CORRUPT;
        break;
      }
      memset(aSeen, 0, (size_t)nPhrase);
      snipScore(aInst, nInst, bSorted, nDocsize, aSeen, i, io, nToken, &nScore, &iAdj);
      if( nScore > nBestScore ){
        nBestScore = nScore;
        iBestCol = i;
        iBestStart = iAdj;
      }
      if( c->nFirst && nDocsize > nToken ){
        /* the last sentence start at or before io (aFirst ascends) */
        int hi = c->nFirst - 1;
        jj = 0;
        while( jj < hi ){
          int mid = jj + (hi - jj) / 2;
          if( c->aFirst[mid + 1] > io ) hi = mid; else jj = mid + 1;
        }
        if( c->aFirst[jj] < io ){
          memset(aSeen, 0, (size_t)nPhrase);
          snipScore(aInst, nInst, bSorted, nDocsize, aSeen, i, c->aFirst[jj], nToken, &nScore, 0);
          nScore += c->aFirst[jj] == 0 ? 120 : 100;
          if( nScore > nBestScore ){
            nBestScore = nScore;
            iBestCol = i;
            iBestStart = c->aFirst[jj];
          }
        }
      }
    }
  }

  /* Cut the fragment out of the best column. Tokenizing one token past
  ** it tells whether it ends the column. */
  if( rc == SQLITE_OK && iBestCol >= nCol ) rc = SQLITE_RANGE;  /* as xColumnSize */
  if( rc == SQLITE_OK ){
    SnipCol *c = &aCol[iBestCol];
    int iTo = iBestStart + nToken - 1, iOff;
    rc = snipTokens(pApi, pFts, c, iBestCol, iTo + 1);
    if( rc == SQLITE_OK && c->zDoc ){
      SnipRun r;
      memset(&r, 0, sizeof(r));
      r.a = aInst;
      r.nInst = nInst;
      r.iCol = iBestCol;
      snipRunNext(&r);
      if( iBestStart > 0 ) snipAppend(&out, zEllips, -1);
      while( r.iStart >= 0 && r.iStart < iBestStart ) snipRunNext(&r);
      iOff = snipCut(&out, c, &r, iBestStart, iTo, zOpen, zClose);
      if( iTo >= c->nTok - 1 ){
        snipAppend(&out, &c->zDoc[iOff], c->nDoc - iOff);
      }else{
        snipAppend(&out, zEllips, -1);
      }
      rc = out.rc;
    }
  }

  if( rc == SQLITE_OK ){
    sqlite3_result_text(pCtx, out.z, out.z ? out.n : -1, sqlite3_free);
    out.z = 0;
  }else{
    sqlite3_result_error_code(pCtx, rc);
  }
  sqlite3_free(out.z);
  if( aCol ){
    for(i = 0; i < nCol; i++){
      sqlite3_free(aCol[i].aOff);
      sqlite3_free(aCol[i].aFirst);
    }
  }
  sqlite3_free(aCol);
  sqlite3_free(aInst);
  sqlite3_free(aSeen);
}

/* sessiondb_snippet_one(...) is sessiondb_snippet(...) for a query whose
** phrases stand for one: the terms of a prefix, ORed (rank.c's 'topsum').
** Every instance counts as the first phrase's, so a fragment scores as it
** would for the prefix itself (1000 for its first instance of any term).
**
** sessiondb_snippet_at(tbl, iCol, zOpen, zClose, zEllipsis, nToken, zInst,
** nSize, text0, text1, ...) is sessiondb_snippet(...) of a row of a
** one-phrase query whose instances are given, as sessiondb_bm25's 'top'
** lists them ("c o c o ...", the phrase nSize tokens long), with the row's
** texts: the row needs no lookup in the index, so a query of the table by
** rowid alone serves (a page of ranked rows, each instance read while
** ranking). */
int fts5cjk_register_snippet(fts5_api *pApi){
  int rc = pApi->xCreateFunction(pApi, "sessiondb_snippet", 0, snippetFunction, 0);
  if( rc == SQLITE_OK ) rc = pApi->xCreateFunction(pApi, "sessiondb_snippet_one", &snipOne, snippetFunction, 0);
  if( rc == SQLITE_OK ) rc = pApi->xCreateFunction(pApi, "sessiondb_snippet_at", &snipAt, snippetFunction, 0);
  return rc;
}
