package fts5cjk

/*
extern int fts5cjk_rank_flush_min;
*/
import "C"

// setRankFlushMin sets how many rows sessiondb_bm25 buffers, at least,
// between two threshold passes of its read-ahead (rank.c), and returns the
// previous value. Tests set it low to run many passes on small tables;
// not safe while a query runs.
func setRankFlushMin(n int) int {
	old := int(C.fts5cjk_rank_flush_min)
	C.fts5cjk_rank_flush_min = C.int(n)
	return old
}
