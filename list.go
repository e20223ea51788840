package sessiondb

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ListOptions select sessions for Store.ListSessions. The zero value lists
// the 20 most recent conversations people pick from: roots and branch or
// reset children (not subagent runs), each compression chain shown once as
// its live tip, archived and hidden sessions left out.
type ListOptions struct {
	Sources         []string // only these sources
	ExcludeSources  []string // never these sources
	Limit           int      // 0 means 20; -1 means no limit
	Offset          int
	IncludeArchived bool // also archived sessions
	ArchivedOnly    bool // only archived sessions
	IncludeHidden   bool // also hidden sessions
	PinnedOnly      bool // only pinned sessions
	IncludeChildren bool // also delegate (subagent) children and compression continuations
	RawChains       bool // show every compression segment instead of one row per chain
	OrderByActivity bool // most recently active first (default: most recently started)
}

// SessionSummary is one row of a session listing: the session (for a
// compression chain, its tip) with a preview of its first user message and
// the time of its last activity.
type SessionSummary struct {
	Session
	Preview       string  `json:"preview"`
	LastActive    float64 `json:"last_active"`
	LineageRootID *string `json:"_lineage_root_id,omitempty"` // the chain's root when the row is a projected tip
}

// PreviewChars is how much of the first user message a listing shows.
const PreviewChars = 60

// LineageNode is a session in a lineage tree.
type LineageNode struct {
	ID           string         `json:"id"`
	Title        *string        `json:"title"`
	Source       string         `json:"source"`
	StartedAt    float64        `json:"started_at"`
	EndedAt      *float64       `json:"ended_at"`
	EndReason    *string        `json:"end_reason"`
	MessageCount int64          `json:"message_count"`
	Kind         string         `json:"kind"` // root, compression, branch, reset, delegate or child
	Children     []*LineageNode `json:"children,omitempty"`
}

// PruneOptions select ended sessions for Store.Prune.
type PruneOptions struct {
	Before        float64  // last activity before this Unix time (required)
	Sources       []string // only these sources
	IncludePinned bool     // also pinned sessions and their chains
	DryRun        bool     // report, delete nothing
}

// PruneCandidate is a session Prune deletes (or would delete).
type PruneCandidate struct {
	ID           string   `json:"id"`
	Source       string   `json:"source"`
	Title        *string  `json:"title"`
	Model        *string  `json:"model"`
	StartedAt    float64  `json:"started_at"`
	LastActive   float64  `json:"last_active"`
	EndedAt      *float64 `json:"ended_at"`
	MessageCount int64    `json:"message_count"`
	Archived     bool     `json:"archived"`
}

// UsageRow is token, call and cost totals for one group of sessions.
type UsageRow struct {
	Key              string  `json:"key"` // the model, source or day; "" for the grand total
	Provider         string  `json:"provider,omitempty"`
	Task             string  `json:"task,omitempty"`
	Sessions         int64   `json:"sessions"`
	Messages         int64   `json:"messages"`
	APICalls         int64   `json:"api_calls"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
	ActualCostUSD    float64 `json:"actual_cost_usd"`
}

// Preview is how a listing shows a session's first user message, given
// its stored content: its text (ContentText), trimmed, newlines made
// spaces, at most PreviewChars characters then "...".
func Preview(content string) string {
	text := newlines.Replace(strings.TrimSpace(ContentText(DecodeContent(&content))))
	// Past PreviewChars characters (an invalid byte counts as one), the
	// first PreviewChars, the invalid bytes among them as U+FFFD: what
	// string([]rune(text)[:PreviewChars]) gives, without decoding the rest
	// of a long message.
	at, n := 0, 0
	for at < len(text) && n < PreviewChars {
		_, size := utf8.DecodeRuneInString(text[at:])
		at += size
		n++
	}
	if at < len(text) {
		text = string([]rune(text[:at])) + "..."
	}
	return text
}

// newlines turns line breaks into spaces (a Replacer is safe for concurrent
// use).
var newlines = strings.NewReplacer("\n", " ", "\r", " ")

// ProjectTip shows a compression chain as its live tip: row keeps the
// root's identity in time (started_at, parent, routing) and takes the tip's
// id, state and content columns, as Hermes' listing does.
func ProjectTip(row, tip *Session) {
	row.ID = tip.ID
	row.EndedAt, row.EndReason = tip.EndedAt, tip.EndReason
	row.MessageCount, row.ToolCallCount = tip.MessageCount, tip.ToolCallCount
	row.Title, row.Model, row.SystemPrompt = tip.Title, tip.Model, tip.SystemPrompt
	row.Cwd, row.GitBranch, row.GitRepoRoot = tip.Cwd, tip.GitBranch, tip.GitRepoRoot
}

// ProjectChainTips shows each compression root of a listed page as its
// chain's live tip (ProjectTip), unless o.RawChains: tipOf returns a
// chain's tip (the root itself when nothing continues it), load reads a
// session, and refresh sets a projected row's Preview and LastActive from
// the tip (the chain keeps its root's start).
func ProjectChainTips(page []SessionSummary, o ListOptions, tipOf func(id string) (string, error),
	load func(id string) (*Session, error), refresh func(row *SessionSummary) error) error {
	if o.RawChains {
		return nil
	}
	for i := range page {
		row := &page[i]
		if row.EndReason == nil || *row.EndReason != EndReasonCompression {
			continue
		}
		tipID, err := tipOf(row.ID)
		if err != nil {
			return err
		}
		if tipID == row.ID {
			continue
		}
		tip, err := load(tipID)
		if err != nil {
			return err
		}
		root := row.ID
		row.LineageRootID = &root
		ProjectTip(&row.Session, tip)
		if err := refresh(row); err != nil {
			return err
		}
	}
	return nil
}

// Lineage node kinds (LineageNode.Kind).
const (
	KindRoot        = "root"
	KindCompression = "compression"
	KindBranch      = "branch"
	KindReset       = "reset"
	KindDelegate    = "delegate"
	KindChild       = "child"
)

// ChildKind classifies how a session continues its parent, from its
// parent_session_id, its model_config (markers _delegate_from,
// _branched_from, _reset_from) and its parent's end_reason; nil is NULL.
func ChildKind(parent, modelConfig, parentEndReason *string) string {
	if parent == nil {
		return KindRoot
	}
	var mc map[string]any
	if modelConfig != nil {
		_ = json.Unmarshal([]byte(*modelConfig), &mc)
	}
	end := ""
	if parentEndReason != nil {
		end = *parentEndReason
	}
	switch {
	case mc["_delegate_from"] != nil:
		return KindDelegate
	case mc["_branched_from"] != nil || end == "branched":
		return KindBranch
	case mc["_reset_from"] != nil || ResetEndReasons[end]:
		return KindReset
	case end == EndReasonCompression:
		return KindCompression
	}
	return KindChild
}

// KeepCompressionLineages applies Prune's lineage rule to its candidates: a
// compression ancestor goes only together with its whole later lineage.
// compressed names the candidates that ended with 'compression'; next
// returns a session's compression continuation ("" for none). The
// candidates kept are returned in their order.
func KeepCompressionLineages(cands []PruneCandidate, compressed map[string]bool, next func(id string) (string, error)) ([]PruneCandidate, error) {
	if len(compressed) == 0 {
		return cands, nil
	}
	match := map[string]bool{}
	for _, c := range cands {
		match[c.ID] = true
	}
	keep := map[string]bool{}
	for id := range compressed {
		for cur := id; ; {
			n, err := next(cur)
			if err != nil {
				return nil, err
			}
			if n == "" {
				break
			}
			if !match[n] {
				keep[id] = true
				break
			}
			cur = n
		}
	}
	kept := cands[:0]
	for _, c := range cands {
		if !keep[c.ID] {
			kept = append(kept, c)
		}
	}
	return kept, nil
}

// LineageRow is a session of a lineage as a backend reads it, for
// BuildLineage: the node's columns and what classifies it (ChildKind).
type LineageRow struct {
	Node            LineageNode
	Parent          *string // parent_session_id
	ModelConfig     *string
	ParentEndReason *string
}

// BuildLineage assembles the tree of root from its sessions (rows, in the
// order children are listed: started_at, then id): each node is classified
// (ChildKind) and hung under its parent. It returns nil when root is not
// among the rows.
func BuildLineage(root string, rows []LineageRow) *LineageNode {
	nodes := make(map[string]*LineageNode, len(rows))
	for i := range rows {
		r := &rows[i]
		r.Node.Kind = ChildKind(r.Parent, r.ModelConfig, r.ParentEndReason)
		nodes[r.Node.ID] = &r.Node
	}
	for i := range rows {
		r := &rows[i]
		if r.Parent == nil || r.Node.ID == root {
			continue
		}
		if p, ok := nodes[*r.Parent]; ok {
			p.Children = append(p.Children, &r.Node)
		}
	}
	return nodes[root]
}

// FlagUpdate is what SetArchived or SetPinned writes on every session of a
// compression chain: Verb names the operation, Set the flag columns and
// their new values.
type FlagUpdate struct {
	Verb string
	Set  []FlagValue
}

// FlagValue is a flag column and its new value.
type FlagValue struct {
	Column string
	Value  int
}

// Assignments renders u.Set as the SET list of an UPDATE ("archived = 1,
// auto_archived = 0"), standard SQL every backend takes.
func (u FlagUpdate) Assignments() string {
	parts := make([]string, len(u.Set))
	for i, f := range u.Set {
		parts[i] = fmt.Sprintf("%s = %d", f.Column, f.Value)
	}
	return strings.Join(parts, ", ")
}

// ArchiveUpdate is SetArchived's update: unarchiving also clears
// auto_archived.
func ArchiveUpdate(archived bool) FlagUpdate {
	if archived {
		return FlagUpdate{"archive", []FlagValue{{"archived", 1}}}
	}
	return FlagUpdate{"unarchive", []FlagValue{{"archived", 0}, {"auto_archived", 0}}}
}

// PinUpdate is SetPinned's update: pinning also unhides.
func PinUpdate(pinned bool) FlagUpdate {
	if pinned {
		return FlagUpdate{"pin", []FlagValue{{"pinned", 1}, {"hidden", 0}}}
	}
	return FlagUpdate{"unpin", []FlagValue{{"pinned", 0}}}
}

// FlagFilters are the flag columns a listing with o requires, and their
// values (a NULL flag counts as 0): archived sessions are left out unless
// asked for (or asked for alone), hidden ones unless asked for, and
// PinnedOnly keeps pinned ones.
func (o ListOptions) FlagFilters() []FlagValue {
	var fs []FlagValue
	switch {
	case o.ArchivedOnly:
		fs = append(fs, FlagValue{"archived", 1})
	case !o.IncludeArchived:
		fs = append(fs, FlagValue{"archived", 0})
	}
	if !o.IncludeHidden {
		fs = append(fs, FlagValue{"hidden", 0})
	}
	if o.PinnedOnly {
		fs = append(fs, FlagValue{"pinned", 1})
	}
	return fs
}
