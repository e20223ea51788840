/*
** walbuf.c - the SQLite VFS "sessiondb_walbuf": the default VFS with writes
** to a WAL file gathered into one write per commit.
**
** SQLite appends a WAL frame with two writes, its 24-byte header and then
** the page, so a commit of N pages costs 2N write system calls. This VFS
** passes every call on to the default VFS, except that writes to a WAL
** file that continue the previous one are collected in a buffer and go to
** the file in one write: before the file is synced, read, truncated,
** sized, controlled or closed, before a write elsewhere in it, when the
** buffer is full, and when the database's wal-index is about to publish
** new frames (the xShmBarrier of its database file, called between the two
** copies of the wal-index header). Other connections read frames only once
** the header names them, so they always find them in the file.
**
** It is meant for connections with synchronous=FULL, where every commit
** syncs the WAL (and so writes the buffer out, reporting any error) before
** the header names the commit's frames. The barrier flush is a safety net
** that cannot report an error, so sessiondb opens its writer on this VFS
** only with synchronous=FULL.
*/
#include <stdlib.h>
#include <string.h>

#include "walbuf.h"

#define WB_MAX (1 << 20)     /* bytes gathered at most */
#define WB_PIECE (120 << 10) /* bytes written by one system call at most */

typedef struct WbFile WbFile;
struct WbFile {
  sqlite3_file base;    /* pMethods = &wbMethods */
  sqlite3_file *pReal;  /* the default VFS's file, allocated after this */
  WbFile *pWal;         /* a database file: its open WAL file, or 0 */
  WbFile *pDb;          /* a WAL file: its database file, or 0 */
  int bWal;             /* a WAL file: writes are gathered */
  char *aBuf;           /* gathered bytes, to go at iBuf */
  int nBuf, nAlloc;
  sqlite3_int64 iBuf;
};

static sqlite3_vfs *wbParent;

/* Test aids: writes SQLite asked of WAL files, writes that reached them,
** and barriers that found bytes not yet written (none with
** synchronous=FULL, where the commit's sync writes them first). */
static sqlite3_int64 wbAsked, wbDone, wbLate;

void walbuf_counts(sqlite3_int64 *pAsked, sqlite3_int64 *pDone, sqlite3_int64 *pLate){
  *pAsked = __atomic_load_n(&wbAsked, __ATOMIC_RELAXED);
  *pDone = __atomic_load_n(&wbDone, __ATOMIC_RELAXED);
  *pLate = __atomic_load_n(&wbLate, __ATOMIC_RELAXED);
}

/* wbFlush writes the gathered bytes out, in pieces of at most WB_PIECE:
** the unix VFS writes no more than 128 KiB - 1 bytes per system call and
** treats a write of a multiple of 128 KiB as a full disk. */
static int wbFlush(WbFile *p){
  int rc = SQLITE_OK, i;
  for(i = 0; rc == SQLITE_OK && i < p->nBuf; i += WB_PIECE){
    int n = p->nBuf - i < WB_PIECE ? p->nBuf - i : WB_PIECE;
    rc = p->pReal->pMethods->xWrite(p->pReal, p->aBuf + i, n, p->iBuf + i);
    __atomic_add_fetch(&wbDone, 1, __ATOMIC_RELAXED);
  }
  p->nBuf = 0;
  return rc;
}

static int wbClose(sqlite3_file *pFile){
  WbFile *p = (WbFile *)pFile;
  int rc = wbFlush(p), rc2;
  if( p->pDb && p->pDb->pWal == p ) p->pDb->pWal = 0;
  if( p->pWal && p->pWal->pDb == p ) p->pWal->pDb = 0;
  sqlite3_free(p->aBuf);
  p->aBuf = 0;
  rc2 = p->pReal->pMethods->xClose(p->pReal);
  return rc != SQLITE_OK ? rc : rc2;
}

static int wbRead(sqlite3_file *pFile, void *z, int n, sqlite3_int64 iOff){
  WbFile *p = (WbFile *)pFile;
  int rc = wbFlush(p);
  if( rc != SQLITE_OK ) return rc;
  return p->pReal->pMethods->xRead(p->pReal, z, n, iOff);
}

/* wbWriteThrough writes the gathered bytes out, then z itself. */
static int wbWriteThrough(WbFile *p, const void *z, int n, sqlite3_int64 iOff){
  int rc = wbFlush(p);
  if( rc != SQLITE_OK ) return rc;
  __atomic_add_fetch(&wbDone, 1, __ATOMIC_RELAXED);
  return p->pReal->pMethods->xWrite(p->pReal, z, n, iOff);
}

static int wbWrite(sqlite3_file *pFile, const void *z, int n, sqlite3_int64 iOff){
  WbFile *p = (WbFile *)pFile;
  int rc;
  if( !p->bWal ) return p->pReal->pMethods->xWrite(p->pReal, z, n, iOff);
  __atomic_add_fetch(&wbAsked, 1, __ATOMIC_RELAXED);
  if( n > WB_PIECE ) return wbWriteThrough(p, z, n, iOff);
  if( p->nBuf > 0 && (iOff != p->iBuf + p->nBuf || p->nBuf + n > WB_MAX) ){
    rc = wbFlush(p);
    if( rc != SQLITE_OK ) return rc;
  }
  if( p->nBuf + n > p->nAlloc ){
    int nNew = p->nAlloc ? p->nAlloc : 64 * 1024;
    char *aNew;
    while( nNew < p->nBuf + n ) nNew *= 2;
    aNew = (char *)sqlite3_realloc64(p->aBuf, (unsigned long long)nNew);
    if( aNew == 0 ) return wbWriteThrough(p, z, n, iOff);
    p->aBuf = aNew;
    p->nAlloc = nNew;
  }
  if( p->nBuf == 0 ) p->iBuf = iOff;
  memcpy(p->aBuf + p->nBuf, z, (size_t)n);
  p->nBuf += n;
  return SQLITE_OK;
}

static int wbTruncate(sqlite3_file *pFile, sqlite3_int64 size){
  WbFile *p = (WbFile *)pFile;
  int rc = wbFlush(p);
  if( rc != SQLITE_OK ) return rc;
  return p->pReal->pMethods->xTruncate(p->pReal, size);
}

static int wbSync(sqlite3_file *pFile, int flags){
  WbFile *p = (WbFile *)pFile;
  int rc = wbFlush(p);
  if( rc != SQLITE_OK ) return rc;
  return p->pReal->pMethods->xSync(p->pReal, flags);
}

static int wbFileSize(sqlite3_file *pFile, sqlite3_int64 *pSize){
  WbFile *p = (WbFile *)pFile;
  int rc = wbFlush(p);
  if( rc != SQLITE_OK ) return rc;
  return p->pReal->pMethods->xFileSize(p->pReal, pSize);
}

static int wbLock(sqlite3_file *pFile, int e){
  WbFile *p = (WbFile *)pFile;
  return p->pReal->pMethods->xLock(p->pReal, e);
}

static int wbUnlock(sqlite3_file *pFile, int e){
  WbFile *p = (WbFile *)pFile;
  return p->pReal->pMethods->xUnlock(p->pReal, e);
}

static int wbCheckReservedLock(sqlite3_file *pFile, int *pRes){
  WbFile *p = (WbFile *)pFile;
  return p->pReal->pMethods->xCheckReservedLock(p->pReal, pRes);
}

static int wbFileControl(sqlite3_file *pFile, int op, void *pArg){
  WbFile *p = (WbFile *)pFile;
  int rc = wbFlush(p);
  if( rc != SQLITE_OK ) return rc;
  return p->pReal->pMethods->xFileControl(p->pReal, op, pArg);
}

static int wbSectorSize(sqlite3_file *pFile){
  WbFile *p = (WbFile *)pFile;
  return p->pReal->pMethods->xSectorSize(p->pReal);
}

static int wbDeviceCharacteristics(sqlite3_file *pFile){
  WbFile *p = (WbFile *)pFile;
  return p->pReal->pMethods->xDeviceCharacteristics(p->pReal);
}

static int wbShmMap(sqlite3_file *pFile, int iPg, int pgsz, int bExtend,
                    void volatile **pp){
  WbFile *p = (WbFile *)pFile;
  return p->pReal->pMethods->xShmMap(p->pReal, iPg, pgsz, bExtend, pp);
}

static int wbShmLock(sqlite3_file *pFile, int iOff, int n, int flags){
  WbFile *p = (WbFile *)pFile;
  return p->pReal->pMethods->xShmLock(p->pReal, iOff, n, flags);
}

/* The wal-index is about to name new frames: they must be in the file. */
static void wbShmBarrier(sqlite3_file *pFile){
  WbFile *p = (WbFile *)pFile;
  if( p->pWal && p->pWal->nBuf > 0 ){
    __atomic_add_fetch(&wbLate, 1, __ATOMIC_RELAXED);
    (void)wbFlush(p->pWal);
  }
  p->pReal->pMethods->xShmBarrier(p->pReal);
}

static int wbShmUnmap(sqlite3_file *pFile, int bDelete){
  WbFile *p = (WbFile *)pFile;
  return p->pReal->pMethods->xShmUnmap(p->pReal, bDelete);
}

static int wbFetch(sqlite3_file *pFile, sqlite3_int64 iOff, int n, void **pp){
  WbFile *p = (WbFile *)pFile;
  return p->pReal->pMethods->xFetch(p->pReal, iOff, n, pp);
}

static int wbUnfetch(sqlite3_file *pFile, sqlite3_int64 iOff, void *pPage){
  WbFile *p = (WbFile *)pFile;
  return p->pReal->pMethods->xUnfetch(p->pReal, iOff, pPage);
}

static sqlite3_io_methods wbMethods = {
  3, wbClose, wbRead, wbWrite, wbTruncate, wbSync, wbFileSize, wbLock,
  wbUnlock, wbCheckReservedLock, wbFileControl, wbSectorSize,
  wbDeviceCharacteristics, wbShmMap, wbShmLock, wbShmBarrier, wbShmUnmap,
  wbFetch, wbUnfetch
};

static int wbOpen(sqlite3_vfs *pVfs, sqlite3_filename zName, sqlite3_file *pFile,
                  int flags, int *pOutFlags){
  WbFile *p = (WbFile *)pFile;
  int rc;
  (void)pVfs;
  memset(p, 0, sizeof(*p));
  p->pReal = (sqlite3_file *)&p[1];
  rc = wbParent->xOpen(wbParent, zName, p->pReal, flags, pOutFlags);
  if( p->pReal->pMethods == 0 ){
    p->base.pMethods = 0;
    return rc;
  }
  p->base.pMethods = &wbMethods;
  if( rc == SQLITE_OK && (flags & SQLITE_OPEN_WAL) && zName ){
    sqlite3_file *pDb = sqlite3_database_file_object(zName);
    p->bWal = 1;
    if( pDb && pDb->pMethods == &wbMethods ){
      p->pDb = (WbFile *)pDb;
      p->pDb->pWal = p;
    }
  }
  return rc;
}

static sqlite3_vfs wbVfs;

int walbuf_stmt_spill(int nByte){
  return sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, nByte);
}

int walbuf_register(void){
  wbParent = sqlite3_vfs_find(0);
  if( wbParent == 0 ) return SQLITE_ERROR;
  if( wbParent->iVersion < 3 ) return SQLITE_ERROR;
  wbVfs = *wbParent;
  wbVfs.pNext = 0;
  wbVfs.zName = "sessiondb_walbuf";
  wbVfs.szOsFile = (int)sizeof(WbFile) + wbParent->szOsFile;
  wbVfs.xOpen = wbOpen;
  return sqlite3_vfs_register(&wbVfs, 0);
}
