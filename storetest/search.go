package storetest

import "testing"

func testSearch(t *testing.T, s *suite) {}
