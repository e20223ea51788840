/*
** fts5cjk.c - the FTS5 tokenizer "cjk_unicode61".
**
** cjk_unicode61 wraps SQLite's built-in unicode61 tokenizer (created with
** the same arguments) and post-processes every token it emits:
**
**   - a token without CJK code points is passed on untouched;
**   - otherwise the token is split into maximal runs of CJK / non-CJK code
**     points. A non-CJK run becomes one token, a CJK run of two or more code
**     points becomes its overlapping bigrams (ABCD -> AB BC CD), and a CJK
**     run of a single code point becomes that unigram.
**
** unicode61 alone keeps a whole CJK sentence as one token (CJK has no
** spaces), so substring searches could never match; bigrams make any
** 2+-character CJK query a phrase of bigrams that FTS5 can find. The token
** stream must stay identical to Hermes Agent's tokenizer of the same name
** because both programs maintain the same index.
*/
#include <stdlib.h>
#include <string.h>

#include "fts5cjk_sqlite.h"
#include "fts5cjk.h"

/* A cjk_unicode61 instance: the wrapped unicode61 methods and instance. */
typedef struct CjkTokenizer {
  fts5_tokenizer inner;
  Fts5Tokenizer *pInner;
  int bFast;  /* created without arguments: cjkTokenize may skip unicode61 */
} CjkTokenizer;

/* Passed through unicode61's xTokenize to cjkToken(): the real consumer.
** iBase is added to the offsets unicode61 reports (it may be given a
** slice of the text). */
typedef struct CjkCtx {
  void *pCtx;
  int (*xToken)(void *, int, const char *, int, int, int);
  int iBase;
  int rcStop;  /* what the consumer returned to stop the tokenizer, or 0 */
} CjkCtx;

/* Hangul, CJK ideographs and Japanese kana; CJK punctuation is excluded. */
static int cjkIsCjk(unsigned int c){
  return (c >= 0xAC00 && c <= 0xD7A3)     /* Hangul syllables */
      || (c >= 0x1100 && c <= 0x11FF)     /* Hangul Jamo */
      || (c >= 0x3130 && c <= 0x318F)     /* Hangul compatibility Jamo */
      || (c >= 0xA960 && c <= 0xA97F)     /* Hangul Jamo extended-A */
      || (c >= 0xD7B0 && c <= 0xD7FF)     /* Hangul Jamo extended-B */
      || (c >= 0x4E00 && c <= 0x9FFF)     /* CJK unified ideographs */
      || (c >= 0x3400 && c <= 0x4DBF)     /* CJK extension A */
      || (c >= 0xF900 && c <= 0xFAFF)     /* CJK compatibility ideographs */
      || (c >= 0x20000 && c <= 0x2FA1F)   /* CJK extensions B.. + compat sup. */
      || (c >= 0x3040 && c <= 0x309F)     /* Hiragana */
      || (c >= 0x30A0 && c <= 0x30FF)     /* Katakana */
      || (c >= 0x31F0 && c <= 0x31FF);    /* Katakana phonetic extensions */
}

/*
** Decodes the code point at z (n>0 bytes available) into *pc and returns its
** length. Deliberately lenient, exactly like Hermes: continuation bytes are
** not validated, and a stray or truncated byte is a 1-byte "code point"
** whose value is the byte itself (never CJK).
*/
static int cjkDecode(const unsigned char *z, int n, unsigned int *pc){
  unsigned int b = z[0];
  if( b < 0x80 ){
    *pc = b;
    return 1;
  }
  if( (b & 0xE0) == 0xC0 && n >= 2 ){
    *pc = ((b & 0x1F) << 6) | (z[1] & 0x3F);
    return 2;
  }
  if( (b & 0xF0) == 0xE0 && n >= 3 ){
    *pc = ((b & 0x0F) << 12) | ((z[1] & 0x3F) << 6) | (z[2] & 0x3F);
    return 3;
  }
  if( (b & 0xF8) == 0xF0 && n >= 4 ){
    *pc = ((b & 0x07) << 18) | ((z[1] & 0x3F) << 12) | ((z[2] & 0x3F) << 6)
        | (z[3] & 0x3F);
    return 4;
  }
  *pc = b;
  return 1;
}

/*
** Emits bytes [a,b) of the (case-folded) parent token. Offsets into the
** original text are approximated as iStart + position in the folded token,
** clamped to iEnd since folding may change the byte length.
*/
static int cjkEmit(CjkCtx *p, int tflags, const char *pTok, int a, int b,
                   int iStart, int iEnd){
  int s = iStart + a < iEnd ? iStart + a : iEnd;
  int e = iStart + b < iEnd ? iStart + b : iEnd;
  return p->xToken(p->pCtx, tflags, pTok + a, b - a, s, e);
}

/* cjkSplit re-splits a token of unicode61 (see the top of the file). */
static int cjkSplit(void *pCtx, int tflags, const char *pToken, int nToken,
                    int iStart, int iEnd){
  CjkCtx *p = (CjkCtx *)pCtx;
  const unsigned char *z = (const unsigned char *)pToken;
  unsigned int c;
  int i = 0, n, rc = SQLITE_OK;

  iStart += p->iBase;
  iEnd += p->iBase;

  /* Common case: no CJK at all -> forward the token exactly as received. */
  while( i < nToken ){
    n = cjkDecode(z + i, nToken - i, &c);
    if( cjkIsCjk(c) ) break;
    i += n;
  }
  if( i >= nToken ) return p->xToken(p->pCtx, tflags, pToken, nToken,
                                     iStart, iEnd);

  i = 0;
  while( i < nToken && rc == SQLITE_OK ){
    int a = i;                      /* start of the current run */
    n = cjkDecode(z + i, nToken - i, &c);
    i += n;
    if( !cjkIsCjk(c) ){
      /* Non-CJK run: extend to the next CJK code point, emit as one. */
      while( i < nToken ){
        n = cjkDecode(z + i, nToken - i, &c);
        if( cjkIsCjk(c) ) break;
        i += n;
      }
      rc = cjkEmit(p, tflags, pToken, a, i, iStart, iEnd);
    }else{
      /* CJK run: emit [previous, current] bigrams while it continues. */
      int prev = a, nCp = 1;
      while( i < nToken && rc == SQLITE_OK ){
        n = cjkDecode(z + i, nToken - i, &c);
        if( !cjkIsCjk(c) ) break;
        rc = cjkEmit(p, tflags, pToken, prev, i + n, iStart, iEnd);
        prev = i;
        i += n;
        nCp++;
      }
      if( nCp == 1 ) rc = cjkEmit(p, tflags, pToken, a, i, iStart, iEnd);
    }
  }
  return rc;
}

/* xToken callback given to unicode61. unicode61 ends early, returning
** SQLITE_OK, when the consumer returns SQLITE_DONE; rcStop keeps that
** known to cjkTokenize, which may have more of the text to go. */
static int cjkToken(void *pCtx, int tflags, const char *pToken, int nToken,
                    int iStart, int iEnd){
  int rc = cjkSplit(pCtx, tflags, pToken, nToken, iStart, iEnd);
  if( rc != SQLITE_OK ) ((CjkCtx *)pCtx)->rcStop = rc;
  return rc;
}

/* xCreate: pUserData is the connection's fts5_api (see cjkAutoInit). */
static int cjkCreate(void *pUserData, const char **azArg, int nArg,
                     Fts5Tokenizer **ppOut){
  fts5_api *pApi = (fts5_api *)pUserData;
  void *pInnerData = 0;
  CjkTokenizer *p;
  int rc;

  *ppOut = 0;
  p = (CjkTokenizer *)sqlite3_malloc((int)sizeof(*p));
  if( p == 0 ) return SQLITE_NOMEM;
  memset(p, 0, sizeof(*p));
  rc = pApi->xFindTokenizer(pApi, "unicode61", &pInnerData, &p->inner);
  /* All our arguments belong to unicode61 (remove_diacritics, ...). */
  if( rc == SQLITE_OK ){
    rc = p->inner.xCreate(pInnerData, azArg, nArg, &p->pInner);
  }
  if( rc != SQLITE_OK ){
    sqlite3_free(p);
    return rc;
  }
  p->bFast = nArg == 0;
  *ppOut = (Fts5Tokenizer *)p;
  return SQLITE_OK;
}

static void cjkDelete(Fts5Tokenizer *pTok){
  CjkTokenizer *p = (CjkTokenizer *)pTok;
  if( p == 0 ) return;
  if( p->pInner ) p->inner.xDelete(p->pInner);
  sqlite3_free(p);
}

/*
** The plain-CJK shortcut. unicode61 (with its default options) keeps each
** code point below as a token character of its own bytes (no case, no
** diacritic to fold), and always breaks tokens at the code points of
** cjkIsBreak. So a run of plain CJK code points with a break (or the end
** of the text) on each side is exactly one unicode61 token, whose bigrams
** cjkToken can make straight from the text, while the rest of the text goes
** through unicode61 in slices that start and end at such runs. The token
** stream is the same; for CJK text most of the per-character work of
** unicode61 (category, case folding, diacritics: three table searches) is
** skipped. TestPlainRanges checks both lists against unicode61 code point
** by code point, and TestTokensShortcut the streams on random text.
*/
static int cjkIsPlain(unsigned int c){
  return (c >= 0x4E00 && c <= 0x9FFF)     /* CJK unified ideographs */
      || (c >= 0x3400 && c <= 0x4DBF)     /* CJK extension A */
      || (c >= 0xAC00 && c <= 0xD7A3)     /* Hangul syllables */
      || (c >= 0x3041 && c <= 0x3096)     /* Hiragana letters */
      || (c >= 0x30A1 && c <= 0x30FA);    /* Katakana letters */
}

static int cjkIsBreak(unsigned int c){
  if( c < 0x80 ){
    return !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
  }
  return (c >= 0x3000 && c <= 0x3004)     /* ideographic space, 、。〃〄 */
      || (c >= 0x3008 && c <= 0x3011)     /* CJK brackets */
      || (c >= 0x3014 && c <= 0x301F)
      || (c >= 0xFF01 && c <= 0xFF0F)     /* fullwidth punctuation */
      || (c >= 0xFF1A && c <= 0xFF20)
      || (c >= 0xFF3B && c <= 0xFF40)
      || (c >= 0xFF5B && c <= 0xFF65);
}

/* Exported for the tests of the two lists. */
int fts5cjk_is_plain(unsigned int c){ return cjkIsPlain(c); }
int fts5cjk_is_break(unsigned int c){ return cjkIsBreak(c); }

/* cjkChar3 decodes a well-formed 3-byte UTF-8 sequence at z[i] that the
** next byte (if any) does not continue (unicode61 would take it into the
** code point), into *pc; returns 0 for anything else. */
static int cjkChar3(const unsigned char *z, int n, int i, unsigned int *pc){
  if( i + 3 > n || (z[i] & 0xF0) != 0xE0 || (z[i + 1] & 0xC0) != 0x80
   || (z[i + 2] & 0xC0) != 0x80 || (i + 3 < n && (z[i + 3] & 0xC0) == 0x80) ){
    return 0;
  }
  *pc = ((z[i] & 0x0F) << 12) | ((z[i + 1] & 0x3F) << 6) | (z[i + 2] & 0x3F);
  return 1;
}

/* cjkBreakAt reports whether a break code point starts at z[i]. */
static int cjkBreakAt(const unsigned char *z, int n, int i){
  unsigned int c;
  if( z[i] < 0x80 ) return cjkIsBreak(z[i]);
  return cjkChar3(z, n, i, &c) && cjkIsBreak(c);
}

/* cjkSlice tokenizes text[iFrom, iTo) with unicode61. */
static int cjkSlice(CjkTokenizer *p, CjkCtx *pCtx, int flags, const char *pText,
                    int iFrom, int iTo){
  if( iTo <= iFrom ) return SQLITE_OK;
  pCtx->iBase = iFrom;
  return p->inner.xTokenize(p->pInner, pCtx, flags, pText + iFrom, iTo - iFrom, cjkToken);
}

static int cjkTokenize(Fts5Tokenizer *pTok, void *pCtx, int flags,
                       const char *pText, int nText,
                       int (*xToken)(void *, int, const char *, int, int, int)){
  CjkTokenizer *p = (CjkTokenizer *)pTok;
  const unsigned char *z = (const unsigned char *)pText;
  CjkCtx ctx;
  int i = 0, iSlice = 0, bAfterBreak = 1, rc = SQLITE_OK;
  ctx.pCtx = pCtx;
  ctx.xToken = xToken;
  ctx.iBase = 0;
  ctx.rcStop = SQLITE_OK;
  if( !p->bFast ){
    return p->inner.xTokenize(p->pInner, &ctx, flags, pText, nText, cjkToken);
  }
  while( i < nText && rc == SQLITE_OK && ctx.rcStop == SQLITE_OK ){
    unsigned int c;
    int j;
    if( bAfterBreak && cjkChar3(z, nText, i, &c) && cjkIsPlain(c) ){
      for(j = i + 3; j < nText && cjkChar3(z, nText, j, &c) && cjkIsPlain(c); j += 3){}
      if( j == nText || cjkBreakAt(z, nText, j) ){
        rc = cjkSlice(p, &ctx, flags, pText, iSlice, i);
        if( rc == SQLITE_OK && ctx.rcStop == SQLITE_OK ){
          ctx.iBase = 0;
          rc = cjkToken(&ctx, 0, pText + i, j - i, i, j);
        }
        iSlice = j;
      }
      i = j;  /* a break follows (the next turn sees it), or the run goes
              ** on in a longer unicode61 token */
      bAfterBreak = 0;
    }else if( z[i] < 0x80 ){
      bAfterBreak = cjkIsBreak(z[i]);
      i++;
    }else if( cjkChar3(z, nText, i, &c) ){
      bAfterBreak = cjkIsBreak(c);
      i += 3;
    }else{
      bAfterBreak = 0;
      i++;
    }
  }
  if( rc == SQLITE_OK && ctx.rcStop == SQLITE_OK ){
    rc = cjkSlice(p, &ctx, flags, pText, iSlice, nText);
  }
  return rc == SQLITE_DONE ? SQLITE_OK : rc;  /* as unicode61 does */
}

static fts5_tokenizer cjkMethods = { cjkCreate, cjkDelete, cjkTokenize };

/*
** Returns the connection's fts5_api, or NULL without FTS5, using the trick
** documented in fts5.h / the FTS5 docs. If "fts5" is no function here the
** failed prepare leaves an error code on db, and sqlite3_open() treats any
** error left by an auto extension as fatal; a successful prepare clears it.
*/
static fts5_api *cjkFts5Api(sqlite3 *db){
  fts5_api *pApi = 0;
  sqlite3_stmt *pStmt = 0;
  if( sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &pStmt, 0) == SQLITE_OK ){
    sqlite3_bind_pointer(pStmt, 1, (void *)&pApi, "fts5_api_ptr", 0);
    sqlite3_step(pStmt);
  }else if( sqlite3_prepare_v2(db, "SELECT 1", -1, &pStmt, 0) != SQLITE_OK ){
    pStmt = 0;
  }
  sqlite3_finalize(pStmt);
  return pApi;
}

/*
** sessiondb_stable_plans(onoff): sets (1) or clears (0) the query planner
** stability guarantee (SQLITE_DBCONFIG_ENABLE_QPSG) of the calling
** connection, or only reads it (-1); returns whether it is on. With it the
** planner never re-prepares a statement because a bound value changed. FTS5
** needs that: it looks up segment pages with a cached statement whose
** "segid=?" SQLite re-prepares whenever the bound id moves to or from 0 or
** 1 (a small-integer plan heuristic), and segment 1 is common, so without
** it a search re-parses that SQL several times. Stores opt in per
** connection; other connections in the process are left as they are.
*/
static void cjkStablePlans(sqlite3_context *pCtx, int nVal, sqlite3_value **apVal){
  int on = 0;
  (void)nVal;
  sqlite3_db_config(sqlite3_context_db_handle(pCtx), SQLITE_DBCONFIG_ENABLE_QPSG,
                    sqlite3_value_int(apVal[0]), &on);
  sqlite3_result_int(pCtx, on);
}

/* Auto-extension entry point, run by SQLite for every new connection. */
static int cjkAutoInit(sqlite3 *db, char **pzErrMsg, const void *pThunk){
  fts5_api *pApi;
  int rc;
  /* This runs inside sqlite3_open, before the driver sets its own busy
  ** timeout: without one, the statement below fails at once with
  ** "database is locked" while another process holds a lock. The driver
  ** replaces this timeout right after the open. */
  sqlite3_busy_timeout(db, 5000);
  (void)pzErrMsg;
  (void)pThunk;
  rc = sqlite3_create_function(db, "sessiondb_stable_plans", 1, SQLITE_UTF8, 0,
                               cjkStablePlans, 0, 0);
  if( rc == SQLITE_OK ) rc = fts5cjk_register_terms(db);
  if( rc == SQLITE_OK ) rc = fts5cjk_register_idset(db);
  if( rc != SQLITE_OK ) return rc;
  pApi = cjkFts5Api(db);
  if( pApi == 0 ) return SQLITE_OK;  /* no FTS5: the Go store reports it */
  rc = pApi->xCreateTokenizer(pApi, "cjk_unicode61", pApi, &cjkMethods, 0);
  if( rc == SQLITE_OK ) rc = fts5cjk_register_rank(pApi);
  if( rc == SQLITE_OK ) rc = fts5cjk_register_snippet(pApi);
  return rc;
}

/* fts5cjk_configure turns off the bulk allocation of 20 pages that each new
** page cache makes (SQLITE_CONFIG_PAGECACHE with no memory and no lines).
** A search's statements make and free several ephemeral tables (a window's
** sort, a materialized CTE), each with its own page cache, and glibc handed
** their freed memory back to the OS at the top of its heap, to fault it in
** again on the next search: 50 page faults and 0.4 ms of a 1.5 ms search.
** Pages are allocated one by one instead, as SQLite does when a cache
** outgrows its bulk. SQLITE_MISUSE once SQLite has initialized: the bulk
** then stays, which costs time and nothing else. */
int fts5cjk_configure(void){
  return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}

int fts5cjk_auto_register(void){
  return sqlite3_auto_extension((void (*)(void))cjkAutoInit);
}

/* ---- Test/debug aid: collect the token stream into an fts5cjk_buf. ---- */

static int cjkCollect(void *pCtx, int tflags, const char *pToken, int nToken,
                      int iStart, int iEnd){
  fts5cjk_buf *b = (fts5cjk_buf *)pCtx;
  fts5cjk_token *t;
  if( b->nTok == b->nTokAlloc ){
    int nNew = b->nTokAlloc ? b->nTokAlloc * 2 : 16;
    void *a = realloc(b->aTok, (size_t)nNew * sizeof(*b->aTok));
    if( a == 0 ) return SQLITE_NOMEM;
    b->aTok = (fts5cjk_token *)a;
    b->nTokAlloc = nNew;
  }
  if( b->nText + nToken > b->nTextAlloc ){
    int nNew = (b->nTextAlloc ? b->nTextAlloc * 2 : 256) + nToken;
    void *a = realloc(b->text, (size_t)nNew);
    if( a == 0 ) return SQLITE_NOMEM;
    b->text = (char *)a;
    b->nTextAlloc = nNew;
  }
  t = &b->aTok[b->nTok++];
  t->off = b->nText;
  t->len = nToken;
  t->start = iStart;
  t->end = iEnd;
  t->tflags = tflags;
  if( nToken > 0 ) memcpy(b->text + b->nText, pToken, (size_t)nToken);
  b->nText += nToken;
  return SQLITE_OK;
}

int fts5cjk_tokens(const char **azArg, int nArg, const char *pText, int nText,
                   fts5cjk_buf *pBuf, const char **pzStage){
  sqlite3 *db = 0;
  fts5_api *pApi;
  fts5_tokenizer tok;
  Fts5Tokenizer *pTok = 0;
  void *pData = 0;
  int rc;

  *pzStage = "opening in-memory database";
  rc = sqlite3_open(":memory:", &db);
  if( rc == SQLITE_OK ){
    *pzStage = "FTS5 is not available (build with -tags sqlite_fts5)";
    pApi = cjkFts5Api(db);
    rc = pApi ? SQLITE_OK : SQLITE_ERROR;
  }
  if( rc == SQLITE_OK ){
    *pzStage = "finding tokenizer cjk_unicode61 (Register not effective?)";
    rc = pApi->xFindTokenizer(pApi, "cjk_unicode61", &pData, &tok);
  }
  if( rc == SQLITE_OK ){
    *pzStage = "creating tokenizer";
    rc = tok.xCreate(pData, azArg, nArg, &pTok);
  }
  if( rc == SQLITE_OK ){
    *pzStage = "tokenizing";
    rc = tok.xTokenize(pTok, pBuf, FTS5_TOKENIZE_DOCUMENT, pText, nText,
                       cjkCollect);
    tok.xDelete(pTok);
  }
  sqlite3_close(db);  /* harmless on NULL */
  return rc;
}

void fts5cjk_buf_free(fts5cjk_buf *pBuf){
  free(pBuf->text);
  free(pBuf->aTok);
  memset(pBuf, 0, sizeof(*pBuf));
}

/* ---- A reusable tokenizer: one connection, instances made from it. ---- */

#define FTS5CJK_MAX_TOKEN_SIZE 32768  /* FTS5_MAX_TOKEN_SIZE (fts5Int.h) */

struct fts5cjk_tk {
  sqlite3 *db;
  fts5_tokenizer methods;
  void *pData;
  const char **azArg;  /* copies, owned */
  int nArg;
};

/* cjkCollectIndexed is cjkCollect for what FTS5 stores: a token is cut
** to FTS5_MAX_TOKEN_SIZE bytes, as sqlite3Fts5IndexWrite's callers do. */
static int cjkCollectIndexed(void *pCtx, int tflags, const char *pToken,
                             int nToken, int iStart, int iEnd){
  if( nToken > FTS5CJK_MAX_TOKEN_SIZE ) nToken = FTS5CJK_MAX_TOKEN_SIZE;
  return cjkCollect(pCtx, tflags, pToken, nToken, iStart, iEnd);
}

void fts5cjk_tk_close(fts5cjk_tk *p){
  int i;
  if( p == 0 ) return;
  sqlite3_close(p->db);  /* harmless on NULL */
  for(i = 0; i < p->nArg; i++) free((void *)p->azArg[i]);
  free(p->azArg);
  free(p);
}

int fts5cjk_tk_open(const char *zName, const char **azArg, int nArg,
                    fts5cjk_tk **pp, const char **pzStage){
  fts5cjk_tk *p;
  fts5_api *pApi = 0;
  int rc, i;

  *pp = 0;
  *pzStage = "allocating";
  p = (fts5cjk_tk *)calloc(1, sizeof(*p));
  if( p == 0 ) return SQLITE_NOMEM;
  p->azArg = (const char **)calloc((size_t)nArg + 1, sizeof(char *));
  if( p->azArg == 0 ){
    free(p);
    return SQLITE_NOMEM;
  }
  for(i = 0; i < nArg; i++){
    p->azArg[i] = strdup(azArg[i]);
    if( p->azArg[i] == 0 ){
      fts5cjk_tk_close(p);
      return SQLITE_NOMEM;
    }
    p->nArg++;
  }
  *pzStage = "opening in-memory database";
  rc = sqlite3_open(":memory:", &p->db);
  if( rc == SQLITE_OK ){
    *pzStage = "FTS5 is not available (build with -tags sqlite_fts5)";
    pApi = cjkFts5Api(p->db);
    rc = pApi ? SQLITE_OK : SQLITE_ERROR;
  }
  if( rc == SQLITE_OK ){
    *pzStage = "finding the tokenizer (unknown name, or Register not effective?)";
    rc = pApi->xFindTokenizer(pApi, zName, &p->pData, &p->methods);
  }
  if( rc != SQLITE_OK ){
    fts5cjk_tk_close(p);
    return rc;
  }
  *pp = p;
  return SQLITE_OK;
}

int fts5cjk_tk_instance(fts5cjk_tk *p, void **ppInst){
  Fts5Tokenizer *pTok = 0;
  int rc = p->methods.xCreate(p->pData, p->azArg, p->nArg, &pTok);
  *ppInst = rc == SQLITE_OK ? (void *)pTok : 0;
  return rc;
}

void fts5cjk_tk_instance_free(fts5cjk_tk *p, void *pInst){
  if( pInst ) p->methods.xDelete((Fts5Tokenizer *)pInst);
}

int fts5cjk_tk_run(fts5cjk_tk *p, void *pInst, const char *pText, int nText,
                   fts5cjk_buf *pBuf){
  pBuf->nTok = 0;
  pBuf->nText = 0;
  if( nText == 0 ) return SQLITE_OK;
  return p->methods.xTokenize((Fts5Tokenizer *)pInst, pBuf, FTS5_TOKENIZE_DOCUMENT,
                              pText, nText, cjkCollectIndexed);
}
