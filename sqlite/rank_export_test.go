package sqlite

// SetRankSeekMicros sets rankSeekMicros (matchTop's reckoning of a page
// row's lookup, per token: 0 makes it look the page's rows up for their
// snippets, a large value makes it pass over the matches) and returns the
// previous value.
func SetRankSeekMicros(n int) int {
	old := rankSeekMicros
	rankSeekMicros = n
	return old
}
