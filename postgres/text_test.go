package postgres

import "testing"

func TestTextEscapeRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain", "\x00json:{}", "a\x00b", "\ue000", "\ue0000", "\ue0001", "\x00\ue000\x00", "\ue000\ue000", "0\ue0001\x00"} {
		enc := toPG(s)
		if containsNUL(enc) {
			t.Errorf("toPG(%q) = %q holds NUL", s, enc)
		}
		if got := fromPG(enc); got != s {
			t.Errorf("fromPG(toPG(%q)) = %q", s, got)
		}
	}
	if got, want := toPG("a\x00b"), "a\ue0000b"; got != want {
		t.Errorf("toPG NUL = %q, want %q", got, want)
	}
	if got, want := toPG("x\ue000y"), "x\ue0001y"; got != want {
		t.Errorf("toPG escape = %q, want %q", got, want)
	}
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}
