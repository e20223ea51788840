package sqlite

// SetRankSeekHits sets rankSeekHits (how many matches make matchTop look the
// page's rows up for their snippets) and returns the previous value.
func SetRankSeekHits(n int) int {
	old := rankSeekHits
	rankSeekHits = n
	return old
}
