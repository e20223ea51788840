package sessiondb

import (
	"slices"
	"strings"
	"testing"
)

func TestChangePreview(t *testing.T) {
	long := strings.Repeat("é", ChangePreviewChars)
	for _, tt := range []struct {
		name, stored, want string
	}{
		{"empty", "", ""},
		{"a short text", "hello", "hello"},
		{"a text of the preview's length", long, long},
		{"a longer text is cut to the preview's characters", long + "xyz", long},
		{"invalid UTF-8 is scrubbed", "caf\xe9", "caf\ufffd"},
		{"invalid UTF-8 is scrubbed before the cut", "\xff" + long, "\ufffd" + long[:len(long)-len("é")]},
		{"an encoded surrogate is one character", "\xed\xa0\x80" + long, "\ufffd" + long[:len(long)-len("é")]},
		{"structured content gives its text", ContentJSONPrefix + `[{"type":"text","text":"hi"},{"type":"image_url"}]`, "hi"},
		{"structured content without text", ContentJSONPrefix + `[{"type":"image_url"}]`, "[multimodal content]"},
		{"a structured value that is no content list", ContentJSONPrefix + `{"a":"b"}`, ""},
		{"structured content cut too", ContentJSONPrefix + `[{"type":"text","text":"` + long + `!"}]`, long},
		{"structured content that does not decode is text", ContentJSONPrefix + "{bad", ContentJSONPrefix + "{bad"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ChangePreview(tt.stored); got != tt.want {
				t.Errorf("ChangePreview(%.30q) = %.30q (%d bytes), want %.30q (%d bytes)", tt.stored, got, len(got), tt.want, len(tt.want))
			}
		})
	}
}

func TestChangedSessions(t *testing.T) {
	var c ChangedSessions
	if c.IDs != nil {
		t.Fatalf("a new ChangedSessions holds %q", c.IDs)
	}
	for _, id := range []string{"b", "a", "b", "c", "a", ""} {
		c.Add(id)
	}
	if want := []string{"b", "a", "c", ""}; !slices.Equal(c.IDs, want) {
		t.Errorf("IDs = %q, want %q: each once, in the order first added", c.IDs, want)
	}
}
