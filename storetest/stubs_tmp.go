package storetest

import "testing"

func testTitles(t *testing.T, s *suite)        {}
func testListSessions(t *testing.T, s *suite)  {}
func testLineage(t *testing.T, s *suite)       {}
func testDeleteSession(t *testing.T, s *suite) {}
func testPrune(t *testing.T, s *suite)         {}
func testFlags(t *testing.T, s *suite)         {}
func testClearMessages(t *testing.T, s *suite) {}
func testSearch(t *testing.T, s *suite)        {}
