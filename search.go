package sessiondb

import (
	"sort"
	"strings"
	"time"
)

// SearchOptions modify Store.Search. The zero value searches every source
// and role, active (and compaction-archived) rows, best match first, 20 hits.
type SearchOptions struct {
	Sources          []string // only these sources (nil: all)
	ExcludeSources   []string // never these sources
	Roles            []string // only these roles (nil or empty: all)
	Limit            int      // hits per page; 0 means 20
	Offset           int      // hits to skip
	Sort             string   // "rank" (default), "newest" or "oldest"
	IncludeInactive  bool     // also rows archived by compaction (rewound)
	IncludeReasoning bool     // also search assistant reasoning (a full scan)
	Fields           []string // keep only these hit fields (nil: all); see SearchFields
}

// DefaultSearchLimit is the page size when SearchOptions.Limit is 0.
const DefaultSearchLimit = 20

// DefaultSearchTimeout is the time budget the command line and the browser
// give one search (Store.Search takes its budget from the context's
// deadline). The costliest queries MaxQueryTerms allows take about a second
// on 100,000 messages; 10 s lets them run on ten times that.
const DefaultSearchTimeout = 10 * time.Second

// SearchFields are the fields of a hit, in their canonical order.
var SearchFields = []string{"id", "session_id", "role", "snippet", "timestamp", "tool_name", "source", "model", "session_started", "context"}

// SearchHit is one message found by Store.Search. Snippet marks matches
// with >>> and <<< and elides with "...".
type SearchHit struct {
	ID             int64            `json:"id"`
	SessionID      string           `json:"session_id"`
	Role           string           `json:"role"`
	Snippet        *string          `json:"snippet"`
	Timestamp      float64          `json:"timestamp"`
	ToolName       *string          `json:"tool_name"`
	Source         string           `json:"source"`
	Model          *string          `json:"model"`
	SessionStarted float64          `json:"session_started"`
	Context        []ContextMessage `json:"context"`
}

// ContextMessage is one message around a search hit: the previous message,
// the hit and the next message of the same session, content flattened to
// text and cut to 200 characters.
type ContextMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ContextChars is how much of each context message a hit carries.
const ContextChars = 200

// CheckSearchFields returns the requested fields in canonical order, or an
// EINVALID error naming the unknown ones. nil means every field.
func CheckSearchFields(fields []string) ([]string, error) {
	if fields == nil {
		return nil, nil
	}
	want := map[string]bool{}
	for _, f := range fields {
		want[f] = true
	}
	var out, unknown []string
	for _, f := range SearchFields {
		if want[f] {
			out = append(out, f)
			delete(want, f)
		}
	}
	for f := range want {
		unknown = append(unknown, f)
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, Errorf(EINVALID, "unknown search result field(s): %s (known: %s)", strings.Join(unknown, ", "), strings.Join(SearchFields, ", "))
	}
	return out, nil
}

// Select returns the hit as a map holding only fields (all when nil).
func (h SearchHit) Select(fields []string) map[string]any {
	all := map[string]any{
		"id": h.ID, "session_id": h.SessionID, "role": h.Role, "snippet": h.Snippet,
		"timestamp": h.Timestamp, "tool_name": h.ToolName, "source": h.Source, "model": h.Model,
		"session_started": h.SessionStarted, "context": h.Context,
	}
	if fields == nil {
		return all
	}
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		out[f] = all[f]
	}
	return out
}

// ClipText returns the first n characters of s.
func ClipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}
