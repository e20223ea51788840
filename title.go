package sessiondb

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTitleLength is the longest session title, in characters.
const MaxTitleLength = 100

// Title sources, in increasing authority for automatic titles: a derived
// title may be replaced by an llm one, neither ever replaces a user's.
const (
	TitleSourceDerived        = "derived"
	TitleSourceLLM            = "llm"
	TitleSourceUser           = "user"
	TitleSourceBranch         = "branch"
	TitleSourceBranchFallback = "branch_fallback"
)

// TitleRank orders title sources by authority; a NULL source on a titled
// row counts as a user title.
func TitleRank(source string) int {
	switch source {
	case TitleSourceDerived, TitleSourceBranch, TitleSourceBranchFallback:
		return 0
	case TitleSourceLLM:
		return 1
	}
	return 2
}

var (
	titleControlRE = regexp.MustCompile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufffc\ufff9-\ufffb]")
	numberedRE     = regexp.MustCompile(`^(.*) #(\d+)$`)
)

// SanitizeTitle cleans a session title as Hermes does: control and
// invisible characters and invalid UTF-8 are removed, whitespace runs become
// one space, the ends are trimmed. An empty result means "no title". A
// title longer than MaxTitleLength characters is an EINVALID error.
func SanitizeTitle(t string) (string, error) {
	if !utf8.ValidString(t) {
		t = strings.ToValidUTF8(t, "")
	}
	t = titleControlRE.ReplaceAllString(t, "")
	t = strings.Join(strings.FieldsFunc(t, unicode.IsSpace), " ")
	if n := utf8.RuneCountInString(t); n > MaxTitleLength {
		return "", Errorf(EINVALID, "Title too long (%d chars, max %d)", n, MaxTitleLength)
	}
	return t, nil
}

// SplitNumberedTitle splits "base #N" into base and N (N = 0 when the title
// carries no number).
func SplitNumberedTitle(t string) (string, int) {
	m := numberedRE.FindStringSubmatch(t)
	if m == nil {
		return t, 0
	}
	var n int
	fmt.Sscan(m[2], &n)
	return m[1], n
}

// NextNumberedTitle returns the title for the next session of a numbered
// lineage of base (without a "#N" suffix), given titles in use: base
// itself when neither it nor a "base #N" is among them, else "base #N" one
// past the highest number in use.
func NextNumberedTitle(base string, titles []string) string {
	found, highest := false, 1
	for _, t := range titles {
		b, n := SplitNumberedTitle(t)
		if t == base || b == base {
			found = true
			highest = max(highest, n)
		}
	}
	if !found {
		return base
	}
	return fmt.Sprintf("%s #%d", base, highest+1)
}

// CheckAutoTitleSource refuses (EINVALID) a source that is not one of an
// automatic title: derived, llm, branch or branch_fallback.
func CheckAutoTitleSource(source string) error {
	switch source {
	case TitleSourceDerived, TitleSourceLLM, TitleSourceBranch, TitleSourceBranchFallback:
		return nil
	}
	return Errorf(EINVALID, "automatic title source %q: want derived, llm, branch or branch_fallback", source)
}

// AutoTitleWins reports whether an automatic title of source may replace
// a session's current title (nil: none) of curSource: only a title of
// lower authority (TitleRank) gives way.
func AutoTitleWins(current, curSource *string, source string) bool {
	if current == nil {
		return true
	}
	cs := ""
	if curSource != nil {
		cs = *curSource
	}
	return TitleRank(cs) < TitleRank(source)
}
