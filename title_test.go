package sessiondb_test

import (
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestSanitizeTitle covers every sanitize_title example of API.md §4 and
// checklist items 111–129.
func TestSanitizeTitle(t *testing.T) {
	hundred := strings.Repeat("a", 100)
	for _, tt := range []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"only spaces", "   ", ""},
		{"only control characters", "\x00\x01\x7f", ""},
		{"only invisible characters", "\u200b\ufeff\u2060", ""},
		{"NUL inside a word", "hello\x00world", "helloworld"},
		{"bell, backspace, escape", "\x07\x08test\x1b", "test"},
		{"spaces around NUL", "  hello\x00  world  ", "hello world"},
		{"tabs collapse", "hello\t\tworld", "hello world"},
		{"newlines collapse", "hello\nworld\r\nagain", "hello world again"},
		{"mixed whitespace runs", " \t one \n\n two\t\tthree \r\n", "one two three"},
		{"unicode spaces collapse", "a\u00a0\u3000b", "a b"},
		{"vertical tab and form feed are stripped", "a\x0bb\x0cc", "abc"},
		{"DEL stripped", "de\x7fl", "del"},
		{"C1-free ASCII controls 0x0e-0x1f", "x\x0e\x1fy", "xy"},
		{"zero-width space", "he\u200bllo", "hello"},
		{"zero-width joiners and marks", "a\u200cb\u200dc\u200ed\u200f", "abcd"},
		{"line and paragraph separators, bidi overrides", "a\u2028b\u2029c\u202ad\u202ee", "abcde"},
		{"word joiner and isolates", "a\u2060b\u2066c\u2069", "abc"},
		{"BOM", "\ufeffTitle", "Title"},
		{"object replacement and annotations", "a\ufffcb\ufff9c\ufffb", "abc"},
		{"invalid UTF-8 removed", "ab\xffcd", "abcd"},
		{"emoji kept", "🚀 Launch day ✨", "🚀 Launch day ✨"},
		{"CJK kept", "项目进度 日本語 한국어", "项目进度 日本語 한국어"},
		{"accents kept", "Café résumé naïve Ærø", "Café résumé naïve Ærø"},
		{"punctuation kept", "PR #438 — fixing the 'auth' middleware", "PR #438 — fixing the 'auth' middleware"},
		{"quotes and symbols kept", `say "hi" & <b>50%</b> _under_ \back`, `say "hi" & <b>50%</b> _under_ \back`},
		{"exactly 100 characters", hundred, hundred},
		{"100 characters after trimming", "   " + hundred + "\n", hundred},
		{"100 characters after stripping controls", strings.Repeat("a\x00", 100), hundred},
		{"100 CJK characters (counted as characters, not bytes)", strings.Repeat("项", 100), strings.Repeat("项", 100)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sessiondb.SanitizeTitle(tt.in)
			if err != nil {
				t.Fatalf("SanitizeTitle(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("SanitizeTitle(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSanitizeTitleTooLong(t *testing.T) {
	for _, tt := range []struct {
		name, in, msg string
	}{
		{"101 characters", strings.Repeat("a", 101), "Title too long (101 chars, max 100)"},
		{"150 characters", strings.Repeat("b", 150), "Title too long (150 chars, max 100)"},
		{"101 CJK characters", strings.Repeat("项", 101), "Title too long (101 chars, max 100)"},
		{"101 after collapsing whitespace", strings.Repeat("a ", 51), "Title too long (101 chars, max 100)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sessiondb.SanitizeTitle(tt.in)
			if err == nil {
				t.Fatalf("SanitizeTitle = %q, want an error", got)
			}
			if code := sessiondb.ErrorCode(err); code != sessiondb.EINVALID {
				t.Errorf("code = %q, want %q", code, sessiondb.EINVALID)
			}
			if err.Error() != tt.msg {
				t.Errorf("message = %q, want %q", err.Error(), tt.msg)
			}
		})
	}
}

func TestSplitNumberedTitle(t *testing.T) {
	for _, tt := range []struct {
		in   string
		base string
		n    int
	}{
		{"my project", "my project", 0},
		{"my project #2", "my project", 2},
		{"my project #17", "my project", 17},
		{"my project #2 #3", "my project #2", 3},
		{"PR #438 — fixing auth", "PR #438 — fixing auth", 0},
		{"PR #438", "PR", 438},
		{"x#2", "x#2", 0},
		{"#2", "#2", 0},
		{"my project #", "my project #", 0},
		{"my project #2a", "my project #2a", 0},
		{"", "", 0},
	} {
		base, n := sessiondb.SplitNumberedTitle(tt.in)
		if base != tt.base || n != tt.n {
			t.Errorf("SplitNumberedTitle(%q) = %q, %d; want %q, %d", tt.in, base, n, tt.base, tt.n)
		}
	}
}

func TestTitleRank(t *testing.T) {
	for _, tt := range []struct {
		source string
		rank   int
	}{
		{sessiondb.TitleSourceDerived, 0},
		{sessiondb.TitleSourceBranch, 0},
		{sessiondb.TitleSourceBranchFallback, 0},
		{sessiondb.TitleSourceLLM, 1},
		{sessiondb.TitleSourceUser, 2},
		{"", 2}, // a NULL title_source on a titled row counts as a user title
	} {
		if got := sessiondb.TitleRank(tt.source); got != tt.rank {
			t.Errorf("TitleRank(%q) = %d, want %d", tt.source, got, tt.rank)
		}
	}
	if !(sessiondb.TitleRank(sessiondb.TitleSourceDerived) < sessiondb.TitleRank(sessiondb.TitleSourceLLM) &&
		sessiondb.TitleRank(sessiondb.TitleSourceLLM) < sessiondb.TitleRank(sessiondb.TitleSourceUser)) {
		t.Error("want derived < llm < user")
	}
}
