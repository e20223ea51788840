package fts5cjk

/*
extern int fts5cjk_rank_flush_min;
extern int fts5cjk_rank_range_rows;
extern long long fts5cjk_rank_ranges_read;
extern long long fts5cjk_rank_lens_kept;
extern int fts5cjk_rank_lens_load;
extern long long fts5cjk_rank_lens_max;
extern long long fts5cjk_rank_src_kept;
extern int fts5cjk_rank_inst_max;
extern long long fts5cjk_rank_spares_taken;
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

// SetRangeReadCost sets what sessiondb_bm25 reckons reading one range of a
// term's summary costs, in rows of a pass over all of them (rank.c), and
// returns the previous value. With 0 a summary always answers; tests on
// small tables use it. Not safe while a query runs.
func SetRangeReadCost(rows int) int {
	old := int(C.fts5cjk_rank_range_rows)
	C.fts5cjk_rank_range_rows = C.int(rows)
	return old
}

// SetInstMax sets how many ints of phrase instances a read-ahead of
// sessiondb_bm25's 'top' keeps at most for the page's snippets (rank.c),
// and returns the previous value. With 0 it keeps none: the JSON has no
// "inst", and callers look the page's rows up. Not safe while a query runs.
func SetInstMax(n int) int {
	old := int(C.fts5cjk_rank_inst_max)
	C.fts5cjk_rank_inst_max = C.int(n)
	return old
}

// rangesRead is how many ranges of one-phrase summaries sessiondb_bm25 has
// read in this process (rank.c): tests tell from it how far a query read.
func rangesRead() int64 { return int64(C.fts5cjk_rank_ranges_read) }

// lensKept is how many row lengths sessiondb_bm25 has read from those kept
// in memory on connections, in this process (rank.c).
func lensKept() int64 { return int64(C.fts5cjk_rank_lens_kept) }

// setLensLoad sets after how many read-aheads on a table a connection
// reads in all its lengths, and the bytes kept lengths may take in the
// process (rank.c), and returns the previous values. Not safe while a
// query runs.
func setLensLoad(after int, maxBytes int64) (int, int64) {
	a, m := int(C.fts5cjk_rank_lens_load), int64(C.fts5cjk_rank_lens_max)
	C.fts5cjk_rank_lens_load, C.fts5cjk_rank_lens_max = C.int(after), C.longlong(maxBytes)
	return a, m
}

// srcKept is how many calls of sessiondb_source_ids were answered from the
// sets kept on their connection, in this process (rank.c).
func srcKept() int64 { return int64(C.fts5cjk_rank_src_kept) }

// sparesTaken is how many row and instance buffers sessiondb_bm25's
// rankings have taken over from an earlier ranking on their connection,
// in this process (rank.c, rankSpareTake).
func sparesTaken() int64 { return int64(C.fts5cjk_rank_spares_taken) }
