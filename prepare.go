package sessiondb

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"time"
)

// Hermes' sane window for timestamps (Unix seconds): a message timestamp
// outside it is replaced by the store's clock, and recency (a session's
// last activity) ignores stored values outside it.
const (
	MinTimestamp = 0.0
	MaxTimestamp = 4200000000.0
)

// UnixSeconds is t as Hermes stores times: Unix seconds with a fraction.
func UnixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// MaxMessageSizeEnv is the environment variable the sessiondb command reads
// a store's largest message (MaxMessageBytes, a size such as 128MiB) from;
// the store packages never read it.
const MaxMessageSizeEnv = "SESSIONDB_MAX_MESSAGE_SIZE"

// PreparedMessage is a message checked and encoded for storage as Hermes
// stores it: text scrubbed to valid UTF-8, content encoded (EncodeContent),
// JSON columns normalised. A nil pointer is NULL. Backends write its
// fields as they are (escaping what their column type cannot hold).
type PreparedMessage struct {
	Role                string
	Content             *string
	ToolCallID          *string
	ToolCalls           *string
	ToolName            *string
	EffectDisposition   *string
	Timestamp           float64
	TokenCount          *int64
	FinishReason        *string
	Reasoning           *string
	ReasoningContent    *string
	ReasoningDetails    *string
	CodexReasoningItems *string
	CodexMessageItems   *string
	PlatformMessageID   *string
	Observed            bool
	CompressedSummary   bool
	APIContent          *string
	DisplayKind         *string
	DisplayMetadata     *string
	// Calls is how many tool calls ToolCalls holds (ToolCallCount).
	Calls int
}

// PrepareOptions are the store's settings PrepareMessage applies.
type PrepareOptions struct {
	// MaxBytes bounds the message's text (CheckMessageSize); 0 or less
	// means no limit.
	MaxBytes int64
	// Now is the store's clock: it stamps a message whose own timestamp is
	// 0 or outside [MinTimestamp, MaxTimestamp] (nil: time.Now).
	Now func() time.Time
	// Imported keeps what an export wrote as it is: a JSON field given as
	// a JSON string is stored as that text whatever its nesting, and
	// content given as text starting with ContentJSONPrefix is stored
	// unchanged (that is how an export writes a stored value it cannot
	// read back as JSON, so it restores as it was).
	Imported bool
}

// PrepareMessage checks and encodes m for storage: a role is required, its
// size is bounded (o.MaxBytes) and so is the nesting of its JSON fields
// (MaxJSONDepth). Refusals are EINVALID errors starting "append message".
func PrepareMessage(m NewMessage, o PrepareOptions) (*PreparedMessage, error) {
	if m.Role == "" {
		return nil, Errorf(EINVALID, "append message: a role is required (user, assistant, tool, system)")
	}
	if err := CheckMessageSize(m, o.MaxBytes); err != nil {
		return nil, err
	}
	var content *string
	var err error
	if s, ok := m.Content.(string); ok && o.Imported && strings.HasPrefix(s, ContentJSONPrefix) {
		s = ScrubText(s)
		content = &s
	} else if content, err = EncodeContent(m.Content); err != nil {
		return nil, appendErr(err)
	}
	p := &PreparedMessage{
		Role:              ScrubText(m.Role),
		Content:           content,
		ToolCallID:        optText(m.ToolCallID),
		ToolName:          optText(m.ToolName),
		EffectDisposition: optText(m.EffectDisposition),
		FinishReason:      optText(m.FinishReason),
		PlatformMessageID: optText(m.PlatformMessageID),
		APIContent:        optText(m.APIContent),
		DisplayKind:       optText(m.DisplayKind),
		Timestamp:         m.Timestamp,
		Observed:          m.Observed,
		CompressedSummary: m.CompressedSummary,
	}
	if math.IsNaN(p.Timestamp) || p.Timestamp <= MinTimestamp || p.Timestamp > MaxTimestamp {
		now := o.Now
		if now == nil {
			now = time.Now
		}
		p.Timestamp = UnixSeconds(now())
	}
	if m.TokenCount != nil {
		n := *m.TokenCount
		p.TokenCount = &n
	}
	if m.Reasoning != nil {
		s := ScrubText(*m.Reasoning)
		p.Reasoning = &s
	}
	if m.ReasoningContent != nil {
		s := ScrubText(*m.ReasoningContent)
		p.ReasoningContent = &s
	}
	calls, err := toolCallsJSON(m.ToolCalls, o.Imported)
	if err != nil {
		return nil, err
	}
	if calls != "" {
		p.ToolCalls = &calls
		p.Calls = ToolCallCount(json.RawMessage(calls))
	}
	for _, f := range []struct {
		name string
		in   json.RawMessage
		out  **string
	}{
		{"reasoning_details", m.ReasoningDetails, &p.ReasoningDetails},
		{"codex_reasoning_items", m.CodexReasoningItems, &p.CodexReasoningItems},
		{"codex_message_items", m.CodexMessageItems, &p.CodexMessageItems},
		{"display_metadata", m.DisplayMetadata, &p.DisplayMetadata},
	} {
		v, err := jsonColumn(f.name, f.in, o.Imported)
		if err != nil {
			return nil, err
		}
		*f.out = v
	}
	return p, nil
}

// CountedCalls is what the message adds to its session's tool_call_count:
// tool results add nothing, the calls themselves are counted on the
// assistant row.
func (p *PreparedMessage) CountedCalls() int {
	if p.Role == RoleTool {
		return 0
	}
	return p.Calls
}

// BatchMessage is m as a batch append stores it: reasoning is kept for
// assistant rows only, as Hermes does.
func BatchMessage(m NewMessage) NewMessage {
	if m.Role != RoleAssistant {
		m.Reasoning, m.ReasoningContent, m.ReasoningDetails = nil, nil, nil
		m.CodexReasoningItems, m.CodexMessageItems = nil, nil
	}
	return m
}

// optText maps "" to nil and anything else to its scrubbed text.
func optText(s string) *string {
	if s == "" {
		return nil
	}
	s = ScrubText(s)
	return &s
}

// toolCallsJSON normalises tool_calls: a JSON string holding JSON is
// unwrapped, an empty value (null, "", [], {}) becomes "" (NULL), anything
// else must be valid JSON, nested at most MaxJSONDepth deep, and is stored
// as given. For an import, a string nested deeper is stored as it is.
func toolCallsJSON(raw json.RawMessage, imported bool) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	if err := CheckJSONDepth("tool_calls", raw); err != nil {
		return "", appendErr(err)
	}
	if !json.Valid(raw) {
		return "", Errorf(EINVALID, "append message: tool_calls is not valid JSON")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return "", nil
		}
		if imported && TooDeep(s) {
			return ScrubText(s), nil
		}
		if err := CheckJSONDepth("tool_calls", s); err != nil {
			return "", appendErr(err)
		}
		if !json.Valid([]byte(s)) {
			return "", Errorf(EINVALID, "append message: tool_calls string is not valid JSON")
		}
		raw = json.RawMessage(s)
	}
	if ToolCallCount(raw) == 0 {
		return "", nil
	}
	return ScrubText(string(raw)), nil
}

// jsonColumn encodes a JSON column: null/empty as nil (NULL), a JSON string
// as the string itself (not encoded twice), anything else as JSON text.
// What is stored may nest at most MaxJSONDepth deep, except a string an
// import stores as it is.
func jsonColumn(name string, raw json.RawMessage, imported bool) (*string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if err := CheckJSONDepth(name, raw); err != nil {
		return nil, appendErr(err)
	}
	if !json.Valid(raw) {
		return nil, Errorf(EINVALID, "append message: %s is not valid JSON", name)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if !imported {
			if err := CheckJSONDepth(name, s); err != nil {
				return nil, appendErr(err)
			}
		}
		s = ScrubText(s)
		return &s, nil
	}
	s = ScrubText(string(raw))
	return &s, nil
}

// appendErr prefixes an EINVALID error with "append message".
func appendErr(err error) error {
	var e *Error
	if errors.As(err, &e) && e.Code == EINVALID {
		return &Error{Code: e.Code, Message: "append message: " + e.Message, Err: e.Err}
	}
	return err
}

// CheckMessageSize refuses (EINVALID) a message whose text fields together
// are over max bytes (no limit when max <= 0). Structured content is
// measured as its JSON.
func CheckMessageSize(m NewMessage, max int64) error {
	if max <= 0 {
		return nil
	}
	n := int64(len(m.ToolCallID) + len(m.ToolCalls) + len(m.ToolName) + len(m.EffectDisposition) + len(m.FinishReason) +
		len(m.ReasoningDetails) + len(m.CodexReasoningItems) + len(m.CodexMessageItems) + len(m.PlatformMessageID) +
		len(m.APIContent) + len(m.DisplayKind) + len(m.DisplayMetadata) + len(m.Role))
	if m.Reasoning != nil {
		n += int64(len(*m.Reasoning))
	}
	if m.ReasoningContent != nil {
		n += int64(len(*m.ReasoningContent))
	}
	switch c := m.Content.(type) {
	case nil:
	case string:
		n += int64(len(c))
	case json.RawMessage:
		n += int64(len(c))
	default:
		if n <= max { // measure it only when it could still fit
			b, err := json.Marshal(c)
			if err != nil {
				return &Error{Code: EINVALID, Message: "append message: structured message content cannot be encoded as JSON: " + err.Error(), Err: err}
			}
			n += int64(len(b))
		}
	}
	if n > max {
		return Errorf(EINVALID, "append message: the message holds %s of text (content, tool calls, reasoning and the other fields together), over the limit of %s; keep large outputs in a file and store a reference, or raise the limit (Options.MaxMessageBytes; %s for the sessiondb command)",
			FormatBytes(n), FormatBytes(max), MaxMessageSizeEnv)
	}
	return nil
}

// BatchPlan is a batch of messages to several sessions, checked and
// encoded (PlanBatch) before any is written.
type BatchPlan struct {
	Messages   []*PreparedMessage
	SessionIDs []string       // the session of each message
	Sessions   []BatchSession // the sessions named, in order of first appearance
}

// BatchSession is what a batch adds to one session.
type BatchSession struct {
	ID       string
	First    int // index of its first message in the batch
	Messages int // messages it receives
	Calls    int // what they add to its tool_call_count
}

// PlanBatch checks and encodes a batch (each message as BatchMessage, then
// PrepareMessage) and counts what it adds to each session. A refused
// message is a *BatchError.
func PlanBatch(ms []NewMessage, o PrepareOptions) (*BatchPlan, error) {
	plan := &BatchPlan{Messages: make([]*PreparedMessage, len(ms)), SessionIDs: make([]string, len(ms))}
	index := map[string]int{}
	for i, m := range ms {
		m = BatchMessage(m)
		if m.SessionID == "" {
			return nil, &BatchError{Index: i, Err: Errorf(EINVALID, "append message: a session id is required")}
		}
		p, err := PrepareMessage(m, o)
		if err != nil {
			return nil, &BatchError{Index: i, SessionID: m.SessionID, Err: err}
		}
		j, ok := index[m.SessionID]
		if !ok {
			j = len(plan.Sessions)
			index[m.SessionID] = j
			plan.Sessions = append(plan.Sessions, BatchSession{ID: m.SessionID, First: i})
		}
		plan.Sessions[j].Messages++
		plan.Sessions[j].Calls += p.CountedCalls()
		plan.Messages[i], plan.SessionIDs[i] = p, m.SessionID
	}
	return plan, nil
}
