package sqlite

import (
	"context"
	"database/sql"

	"github.com/sessiondb/sessiondb"
)

// SetRankSeekMicros sets rankSeekMicros (matchTop's reckoning of a page
// row's lookup, per token: 0 makes it look the page's rows up for their
// snippets, a large value makes it pass over the matches) and returns the
// previous value.
func SetRankSeekMicros(n int) int {
	old := rankSeekMicros
	rankSeekMicros = n
	return old
}

// FewSourceRows reports whether a search with o ranks only the rows of its
// sources (matchTop's narrowing, a speed choice the results do not show).
func FewSourceRows(db *DB, o sessiondb.SearchOptions) (bool, error) {
	return (&searcher{db: db, o: o}).fewSourceRows(context.Background())
}

// ClearTermSummaries deletes every term summary and stops their log, as
// optimize does before making them again.
func ClearTermSummaries(db *DB) error {
	ctx := context.Background()
	return db.writeTx(ctx, 0, "clear term summaries", func(tx *sql.Tx) error {
		return clearRank(ctx, tx, "")
	})
}

// RefreshTermSummaries brings the terms' summaries up to date and trims
// their log, as the live upkeep does (the sources' summaries untouched).
func RefreshTermSummaries(db *DB) error {
	return db.refreshRank(context.Background(), nil, nil)
}
