package sqlite

import "testing"

// TestDerivedAppID: the application_id Hermes stamps for a
// db_file_generation token (STORAGE.md §4.6): the first 8 hex digits, the
// top bit cleared, 1 when that leaves 0; none for a token shorter than 8
// characters or not hex.
func TestDerivedAppID(t *testing.T) {
	for token, want := range map[string]int64{
		"8badf00d0123456789abcdef01234567": 0x0badf00d,
		"7fffffffffffffff":                 0x7fffffff,
		"00000001":                         1,
		"00000000aaaa":                     1,
		"80000000aaaa":                     1,
		"1234567":                          0,
		"not-a-hex-token":                  0,
		"":                                 0,
	} {
		if got := derivedAppID(token); got != want {
			t.Errorf("derivedAppID(%q) = %#x, want %#x", token, got, want)
		}
	}
}

// TestListNames: up to max names, sorted, then how many more.
func TestListNames(t *testing.T) {
	for _, c := range []struct {
		names []string
		max   int
		want  string
	}{
		{nil, 3, "none"},
		{[]string{"b", "a"}, 2, "a, b"},
		{[]string{"c", "b", "a"}, 2, "a, b and 1 more"},
		{[]string{"e", "d", "c", "b", "a"}, 2, "a, b and 3 more"},
	} {
		if got := listNames(c.names, c.max); got != c.want {
			t.Errorf("listNames(%v, %d) = %q, want %q", c.names, c.max, got, c.want)
		}
	}
}
