/*
** rank.c - the FTS5 auxiliary function sessiondb_bm25(tbl, K).
**
** It returns exactly what FTS5's built-in bm25(tbl) returns (same formula,
** same constants, same floating-point operations, all column weights 1.0)
** for every row that can still be among the K best rows of the query, and
** +1e300 for a row that provably cannot. Used as
**
**   ... ORDER BY sessiondb_bm25(tbl, K) LIMIT n OFFSET m   -- K = n + m
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
** The function must only see rows that reach the ORDER BY: SQLite evaluates
** ORDER BY terms after every WHERE term of the join, which is what keeps the
** K best scores so far real.
*/
#include <math.h>
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

typedef struct RankData {
  int nPhrase, nCol;
  double avgdl;
  double *aIDF;   /* per phrase */
  double *aFreq;  /* per phrase, current row */
  int *aSize;     /* per phrase: tokens */
  int *aColMin;   /* per column, current row: proven minimum length */
  int k, nTop;
  double *aTop;   /* min-heap of the best nTop (<= k) scores so far */
} RankData;

static int rankCountCb(const Fts5ExtensionApi *pApi, Fts5Context *pFts,
                       void *pUserData){
  (void)pApi;
  (void)pFts;
  (*(sqlite3_int64 *)pUserData)++;
  return SQLITE_OK;
}

/* rankData returns the per-query state, creating it on the first row. */
static int rankData(const Fts5ExtensionApi *pApi, Fts5Context *pFts, int k,
                    RankData **pp){
  RankData *p = (RankData *)pApi->xGetAuxdata(pFts, 0);
  sqlite3_int64 nRow = 0, nToken = 0;
  int i, rc = SQLITE_OK, nPhrase, nCol;
  if( p ){
    *pp = p;
    return SQLITE_OK;
  }
  nPhrase = pApi->xPhraseCount(pFts);
  nCol = pApi->xColumnCount(pFts);
  p = (RankData *)sqlite3_malloc((int)(sizeof(RankData)
        + (size_t)nPhrase * (2 * sizeof(double) + sizeof(int))
        + (size_t)k * sizeof(double) + (size_t)nCol * sizeof(int)));
  if( p == 0 ) return SQLITE_NOMEM;
  memset(p, 0, sizeof(RankData));
  p->nPhrase = nPhrase;
  p->nCol = nCol;
  p->k = k;
  p->aIDF = (double *)&p[1];
  p->aFreq = &p->aIDF[nPhrase];
  p->aTop = &p->aFreq[nPhrase];
  p->aSize = (int *)&p->aTop[k];
  p->aColMin = &p->aSize[nPhrase];

  rc = pApi->xRowCount(pFts, &nRow);
  if( rc == SQLITE_OK ) rc = pApi->xColumnTotalSize(pFts, -1, &nToken);
  if( rc == SQLITE_OK ) p->avgdl = (double)nToken / (double)nRow;
  for(i = 0; rc == SQLITE_OK && i < nPhrase; i++){
    sqlite3_int64 nHit = 0;
    rc = pApi->xQueryPhrase(pFts, i, (void *)&nHit, rankCountCb);
    if( rc == SQLITE_OK ){
      double idf = log((nRow - nHit + 0.5) / (nHit + 0.5));
      if( idf <= 0.0 ) idf = 1e-6;
      p->aIDF[i] = idf;
      p->aSize[i] = pApi->xPhraseSize(pFts, i);
    }
  }
  if( rc == SQLITE_OK ) rc = pApi->xSetAuxdata(pFts, p, sqlite3_free);
  if( rc != SQLITE_OK ){
    sqlite3_free(p);
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
  double *h = p->aTop;
  int i = 0, n;
  if( p->nTop < p->k ){
    i = p->nTop++;
    while( i > 0 && h[(i - 1) / 2] > score ){
      h[i] = h[(i - 1) / 2];
      i = (i - 1) / 2;
    }
    h[i] = score;
    return;
  }
  if( score <= h[0] ) return;
  n = p->nTop;
  for(;;){
    int c = 2 * i + 1;
    if( c >= n ) break;
    if( c + 1 < n && h[c + 1] < h[c] ) c++;
    if( h[c] >= score ) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = score;
}

static void rankFunction(const Fts5ExtensionApi *pApi, Fts5Context *pFts,
                         sqlite3_context *pCtx, int nVal,
                         sqlite3_value **apVal){
  RankData *p = 0;
  int i, nInst = 0, nTok = 0, rc;
  sqlite3_int64 k64 = nVal > 0 ? sqlite3_value_int64(apVal[0]) : 0;
  int k = k64 > 0 && k64 <= RANK_MAX_K ? (int)k64 : 0;  /* 0: score all */
  double minLen = 0.0, score;

  rc = rankData(pApi, pFts, k, &p);
  if( rc == SQLITE_OK ){
    memset(p->aFreq, 0, sizeof(double) * (size_t)p->nPhrase);
    memset(p->aColMin, 0, sizeof(int) * (size_t)p->nCol);
    rc = pApi->xInstCount(pFts, &nInst);
  }
  for(i = 0; rc == SQLITE_OK && i < nInst; i++){
    int ip, ic, io;
    rc = pApi->xInst(pFts, i, &ip, &ic, &io);
    if( rc == SQLITE_OK ){
      p->aFreq[ip] += 1.0;
      if( ic >= 0 && ic < p->nCol && io + p->aSize[ip] > p->aColMin[ic] ){
        p->aColMin[ic] = io + p->aSize[ip];
      }
    }
  }
  if( rc != SQLITE_OK ){
    sqlite3_result_error_code(pCtx, rc);
    return;
  }
  if( p->k > 0 && p->nTop == p->k ){
    for(i = 0; i < p->nCol; i++) minLen += (double)p->aColMin[i];
    if( rankScore(p, minLen) < p->aTop[0] ){
      sqlite3_result_double(pCtx, RANK_PRUNED);
      return;
    }
  }
  rc = pApi->xColumnSize(pFts, -1, &nTok);
  if( rc != SQLITE_OK ){
    sqlite3_result_error_code(pCtx, rc);
    return;
  }
  score = rankScore(p, (double)nTok);
  if( p->k > 0 ) rankKeep(p, score);
  sqlite3_result_double(pCtx, -1.0 * score);
}

int fts5cjk_register_rank(fts5_api *pApi){
  return pApi->xCreateFunction(pApi, "sessiondb_bm25", 0, rankFunction, 0);
}
