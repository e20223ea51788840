/*
** fts5cjk.h - C functions of package fts5cjk called from its Go code.
*/
#ifndef FTS5CJK_H
#define FTS5CJK_H

/* Adds the cjk_unicode61 registration to SQLite's auto-extension list. */
int fts5cjk_auto_register(void);
int fts5cjk_configure(void);

/* Registers the auxiliary function sessiondb_bm25 (rank.c). */
int fts5cjk_register_rank(struct fts5_api *pApi);
int fts5cjk_register_idset(struct sqlite3 *db);

/* Registers the SQL function sessiondb_prefix_terms (terms.c). */
int fts5cjk_register_terms(struct sqlite3 *db);

/* A term of an FTS5 index: z[0..n) (terms.c). */
typedef struct fts5cjk_term {
  unsigned char *z;
  int n;
} fts5cjk_term;

/* The terms of table zTbl's main index beginning with zPre[0..nPre), in
** order (terms.c); *pn is -1 when more than nMax or not readable so. */
int fts5cjk_prefix_terms(struct sqlite3 *db, const char *zTbl, const unsigned char *zPre, int nPre,
                         int nMax, fts5cjk_term **pa, int *pn);
void fts5cjk_terms_free(fts5cjk_term *a, int n);

/* Registers the auxiliary function sessiondb_snippet (snippet.c). */
int fts5cjk_register_snippet(struct fts5_api *pApi);

/* Test aids: the code point lists of cjk_unicode61's plain-CJK shortcut. */
int fts5cjk_is_plain(unsigned int c);
int fts5cjk_is_break(unsigned int c);

/* One token collected by fts5cjk_tokens(): bytes text[off, off+len). */
typedef struct fts5cjk_token {
  int off, len;     /* slice of fts5cjk_buf.text holding the token bytes */
  int start, end;   /* byte offsets in the tokenized input */
  int tflags;       /* FTS5_TOKEN_* flags as passed to xToken */
} fts5cjk_token;

/* Growable output buffer of fts5cjk_tokens(); release with fts5cjk_buf_free. */
typedef struct fts5cjk_buf {
  char *text;
  int nText, nTextAlloc;
  fts5cjk_token *aTok;
  int nTok, nTokAlloc;
} fts5cjk_buf;

/*
** Test/debug aid: tokenizes pText with a cjk_unicode61 instance created with
** azArg on a private in-memory connection. Returns an SQLite result code; on
** failure *pzStage names the step that failed.
*/
int fts5cjk_tokens(const char **azArg, int nArg, const char *pText, int nText,
                   fts5cjk_buf *pBuf, const char **pzStage);
void fts5cjk_buf_free(fts5cjk_buf *pBuf);

/*
** A reusable tokenizer (tokenizer.go): one private in-memory connection
** holding the named FTS5 tokenizer's methods; instances are created from it
** and each tokenizes on one thread at a time.
*/
typedef struct fts5cjk_tk fts5cjk_tk;
int fts5cjk_tk_open(const char *zName, const char **azArg, int nArg,
                    fts5cjk_tk **pp, const char **pzStage);
int fts5cjk_tk_instance(fts5cjk_tk *p, void **ppInst);
void fts5cjk_tk_instance_free(fts5cjk_tk *p, void *pInst);
/* Tokenizes pText into pBuf (emptied first) as FTS5 indexes document text:
** tokens longer than FTS5_MAX_TOKEN_SIZE bytes are cut to it. */
int fts5cjk_tk_run(fts5cjk_tk *p, void *pInst, const char *pText, int nText,
                   fts5cjk_buf *pBuf);
void fts5cjk_tk_close(fts5cjk_tk *p);

#endif /* FTS5CJK_H */
