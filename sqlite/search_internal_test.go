package sqlite

import "testing"

// TestSpacedPhrase: a quoted phrase of several words (or bigrams) is told
// apart from quoted single words side by side, doubled quotes included.
func TestSpacedPhrase(t *testing.T) {
	for q, want := range map[string]bool{
		`docker error`:              false,
		`"docker" "error"`:          false,
		`"docker" OR "error" "x"`:   false,
		`"docker deployment" error`: true,
		`error "docker deployment"`: true,
		`"say ""hi"" there"`:        true,
		`"say""hi" x`:               false,
		`"service" "デー ータ ベー ース"`:   true,
	} {
		if got := spacedPhrase(q); got != want {
			t.Errorf("spacedPhrase(%s) = %v, want %v", q, got, want)
		}
	}
}
