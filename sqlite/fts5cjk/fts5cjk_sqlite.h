/*
** fts5cjk_sqlite.h - the small slice of SQLite's public C API (sqlite3.h and
** fts5.h) that the cjk_unicode61 tokenizer uses.
**
** The machine has no sqlite3.h and this package deliberately does not depend
** on one: the functions below are provided at link time by the amalgamation
** bundled in github.com/mattn/go-sqlite3 (global symbols), which the Go side
** of this package imports. Types are kept opaque where SQLite keeps them
** opaque; the FTS5 structs copy the exact layouts of the public, stable
** fts5.h v1 tokenizer API (still supported by SQLite 3.54).
*/
#ifndef FTS5CJK_SQLITE_H
#define FTS5CJK_SQLITE_H

/* Result codes (sqlite3.h). */
#define SQLITE_OK     0
#define SQLITE_ERROR  1
#define SQLITE_NOMEM  7
#define SQLITE_INTERRUPT 9
#define SQLITE_CORRUPT 11
#define SQLITE_NOTFOUND 12
#define SQLITE_MISMATCH 20
#define SQLITE_RANGE  25
#define SQLITE_ROW    100
#define SQLITE_DONE   101

/* Opaque handles (sqlite3.h). */
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
typedef struct sqlite3_context sqlite3_context;
typedef struct sqlite3_value sqlite3_value;
typedef struct sqlite3_blob sqlite3_blob;
typedef long long int sqlite3_int64;

int sqlite3_auto_extension(void (*xEntryPoint)(void));
int sqlite3_config(int op, ...);
#define SQLITE_CONFIG_PAGECACHE 7
int sqlite3_busy_timeout(sqlite3 *db, int ms);
int sqlite3_db_config(sqlite3 *db, int op, ...);
#define SQLITE_DBCONFIG_ENABLE_QPSG 1007
int sqlite3_create_function(sqlite3 *db, const char *zFunctionName, int nArg,
                            int eTextRep, void *pApp,
                            void (*xFunc)(sqlite3_context *, int, sqlite3_value **),
                            void (*xStep)(sqlite3_context *, int, sqlite3_value **),
                            void (*xFinal)(sqlite3_context *));
#define SQLITE_UTF8 1
#define SQLITE_DETERMINISTIC 0x000000800
#define SQLITE_INTEGER 1
#define SQLITE_BLOB 4
#define SQLITE_NULL 5
int sqlite3_open(const char *zFilename, sqlite3 **ppDb);
int sqlite3_close(sqlite3 *db);
int sqlite3_prepare_v2(sqlite3 *db, const char *zSql, int nByte,
                       sqlite3_stmt **ppStmt, const char **pzTail);
int sqlite3_bind_pointer(sqlite3_stmt *pStmt, int iCol, void *pPtr,
                         const char *zPtrType, void (*xDestructor)(void *));
int sqlite3_step(sqlite3_stmt *pStmt);
int sqlite3_finalize(sqlite3_stmt *pStmt);
void *sqlite3_malloc(int n);
void sqlite3_free(void *p);
const char *sqlite3_errstr(int rc);
sqlite3_int64 sqlite3_value_int64(sqlite3_value *v);
int sqlite3_value_int(sqlite3_value *v);
const unsigned char *sqlite3_value_text(sqlite3_value *v);
int sqlite3_value_type(sqlite3_value *v);
int sqlite3_value_bytes(sqlite3_value *v);
sqlite3 *sqlite3_context_db_handle(sqlite3_context *ctx);
int sqlite3_is_interrupted(sqlite3 *db);
char *sqlite3_mprintf(const char *zFormat, ...);
void *sqlite3_realloc64(void *p, unsigned long long n);
int sqlite3_bind_int64(sqlite3_stmt *pStmt, int iCol, sqlite3_int64 v);
int sqlite3_bind_text(sqlite3_stmt *pStmt, int iCol, const char *z, int n,
                      void (*xDel)(void *));
sqlite3_int64 sqlite3_column_int64(sqlite3_stmt *pStmt, int iCol);
int sqlite3_column_type(sqlite3_stmt *pStmt, int iCol);
void *sqlite3_value_pointer(sqlite3_value *v, const char *zType);
void sqlite3_result_blob(sqlite3_context *ctx, const void *z, int n,
                         void (*xDel)(void *));
int sqlite3_reset(sqlite3_stmt *pStmt);
int sqlite3_bind_int(sqlite3_stmt *pStmt, int iCol, int v);
int sqlite3_bind_blob(sqlite3_stmt *pStmt, int iCol, const void *z, int n,
                      void (*xDel)(void *));
int sqlite3_file_control(sqlite3 *db, const char *zDbName, int op, void *pArg);
int sqlite3_create_function_v2(sqlite3 *db, const char *zFunctionName, int nArg,
                               int eTextRep, void *pApp,
                               void (*xFunc)(sqlite3_context *, int, sqlite3_value **),
                               void (*xStep)(sqlite3_context *, int, sqlite3_value **),
                               void (*xFinal)(sqlite3_context *),
                               void (*xDestroy)(void *));
void *sqlite3_user_data(sqlite3_context *ctx);
int sqlite3_bind_value(sqlite3_stmt *pStmt, int iCol, const sqlite3_value *v);
#define SQLITE_FCNTL_DATA_VERSION 35
int sqlite3_txn_state(sqlite3 *db, const char *zSchema);
#define SQLITE_TXN_READ 1
int sqlite3_column_int(sqlite3_stmt *pStmt, int iCol);
void *sqlite3_malloc64(unsigned long long n);
void sqlite3_result_error_nomem(sqlite3_context *ctx);
void sqlite3_result_error(sqlite3_context *ctx, const char *z, int n);
void *sqlite3_aggregate_context(sqlite3_context *ctx, int nBytes);
const void *sqlite3_value_blob(sqlite3_value *v);
typedef struct sqlite3_str sqlite3_str;
sqlite3_str *sqlite3_str_new(sqlite3 *db);
char *sqlite3_str_finish(sqlite3_str *p);
void sqlite3_str_appendf(sqlite3_str *p, const char *zFormat, ...);
void sqlite3_str_appendall(sqlite3_str *p, const char *z);
void sqlite3_str_appendchar(sqlite3_str *p, int n, char c);
int sqlite3_str_errcode(sqlite3_str *p);
int sqlite3_str_length(sqlite3_str *p);
const void *sqlite3_column_blob(sqlite3_stmt *pStmt, int iCol);
int sqlite3_column_bytes(sqlite3_stmt *pStmt, int iCol);
int sqlite3_blob_open(sqlite3 *db, const char *zDb, const char *zTable,
                      const char *zColumn, sqlite3_int64 iRow, int flags,
                      sqlite3_blob **ppBlob);
int sqlite3_blob_reopen(sqlite3_blob *pBlob, sqlite3_int64 iRow);
int sqlite3_blob_bytes(sqlite3_blob *pBlob);
int sqlite3_blob_read(sqlite3_blob *pBlob, void *z, int n, int iOffset);
int sqlite3_blob_close(sqlite3_blob *pBlob);
void sqlite3_result_double(sqlite3_context *ctx, double d);
void sqlite3_result_int(sqlite3_context *ctx, int v);
void sqlite3_result_null(sqlite3_context *ctx);
void sqlite3_result_error_code(sqlite3_context *ctx, int rc);
void sqlite3_result_text(sqlite3_context *ctx, const char *z, int n,
                         void (*xDel)(void *));

/* FTS5 tokenizer API, version 1 (fts5.h). */
typedef struct Fts5Tokenizer Fts5Tokenizer; /* opaque per-instance state */

typedef struct fts5_tokenizer fts5_tokenizer;
struct fts5_tokenizer {
  int (*xCreate)(void *pUserData, const char **azArg, int nArg,
                 Fts5Tokenizer **ppOut);
  void (*xDelete)(Fts5Tokenizer *pTok);
  int (*xTokenize)(Fts5Tokenizer *pTok, void *pCtx, int flags,
                   const char *pText, int nText,
                   int (*xToken)(void *pCtx, int tflags, const char *pToken,
                                 int nToken, int iStart, int iEnd));
};

/* Flags for xTokenize() and for the xToken() callback (fts5.h). */
#define FTS5_TOKENIZE_QUERY     0x0001
#define FTS5_TOKENIZE_PREFIX    0x0002
#define FTS5_TOKENIZE_DOCUMENT  0x0004
#define FTS5_TOKENIZE_AUX       0x0008
#define FTS5_TOKEN_COLOCATED    0x0001

/*
** Auxiliary-function API (fts5.h): the members up to xQueryToken, in
** SQLite's order. Later members are never touched, so the prefix is
** layout-exact; xQueryToken exists only when iVersion >= 3 (SQLite 3.45).
*/
typedef struct Fts5Context Fts5Context;
typedef struct Fts5PhraseIter Fts5PhraseIter;
struct Fts5PhraseIter { const unsigned char *a, *b; };

typedef struct Fts5ExtensionApi Fts5ExtensionApi;
struct Fts5ExtensionApi {
  int iVersion;
  void *(*xUserData)(Fts5Context *);
  int (*xColumnCount)(Fts5Context *);
  int (*xRowCount)(Fts5Context *, sqlite3_int64 *pnRow);
  int (*xColumnTotalSize)(Fts5Context *, int iCol, sqlite3_int64 *pnToken);
  int (*xTokenize)(Fts5Context *, const char *pText, int nText, void *pCtx,
                   int (*xToken)(void *, int, const char *, int, int, int));
  int (*xPhraseCount)(Fts5Context *);
  int (*xPhraseSize)(Fts5Context *, int iPhrase);
  int (*xInstCount)(Fts5Context *, int *pnInst);
  int (*xInst)(Fts5Context *, int iIdx, int *piPhrase, int *piCol, int *piOff);
  sqlite3_int64 (*xRowid)(Fts5Context *);
  int (*xColumnText)(Fts5Context *, int iCol, const char **pz, int *pn);
  int (*xColumnSize)(Fts5Context *, int iCol, int *pnToken);
  int (*xQueryPhrase)(Fts5Context *, int iPhrase, void *pUserData,
                      int (*)(const Fts5ExtensionApi *, Fts5Context *, void *));
  int (*xSetAuxdata)(Fts5Context *, void *pAux, void (*xDelete)(void *));
  void *(*xGetAuxdata)(Fts5Context *, int bClear);
  int (*xPhraseFirst)(Fts5Context *, int iPhrase, Fts5PhraseIter *, int *, int *);
  void (*xPhraseNext)(Fts5Context *, Fts5PhraseIter *, int *piCol, int *piOff);
  /* iVersion >= 2 */
  int (*xPhraseFirstColumn)(Fts5Context *, int iPhrase, Fts5PhraseIter *, int *);
  void (*xPhraseNextColumn)(Fts5Context *, Fts5PhraseIter *, int *piCol);
  /* iVersion >= 3: xQueryToken only is called (after checking iVersion) */
  int (*xQueryToken)(Fts5Context *, int iPhrase, int iToken,
                     const char **ppToken, int *pnToken);
};

typedef void (*fts5_extension_function)(const Fts5ExtensionApi *pApi,
                                        Fts5Context *pFts,
                                        sqlite3_context *pCtx, int nVal,
                                        sqlite3_value **apVal);

/*
** fts5_api: only the first four members (iVersion and the v1 functions) are
** declared. Later members (the v2 functions of iVersion>=3) follow them in
** SQLite's struct and are never touched here, so this prefix is layout-exact.
*/
typedef struct fts5_api fts5_api;
struct fts5_api {
  int iVersion;
  int (*xCreateTokenizer)(fts5_api *pApi, const char *zName, void *pUserData,
                          fts5_tokenizer *pTokenizer,
                          void (*xDestroy)(void *));
  int (*xFindTokenizer)(fts5_api *pApi, const char *zName, void **ppUserData,
                        fts5_tokenizer *pTokenizer);
  int (*xCreateFunction)(fts5_api *pApi, const char *zName, void *pUserData,
                         fts5_extension_function xFunction,
                         void (*xDestroy)(void *));
};

#endif /* FTS5CJK_SQLITE_H */
