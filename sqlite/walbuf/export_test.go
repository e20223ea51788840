package walbuf

// Counts exposes the write counters to the tests.
var Counts = counts
