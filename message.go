package sessiondb

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// ContentJSONPrefix marks structured (non-string) message content stored as
// JSON text in messages.content, as Hermes stores multimodal parts lists.
const ContentJSONPrefix = "\x00json:"

// Message roles used by Hermes.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one row of the messages table. Content is nil, a string, or a
// decoded JSON value for structured content. JSON columns (tool_calls,
// reasoning_details, codex_*_items, display_metadata) are kept as raw JSON.
type Message struct {
	ID                  int64           `json:"id"`
	SessionID           string          `json:"session_id"`
	Role                string          `json:"role"`
	Content             any             `json:"content"`
	ToolCallID          *string         `json:"tool_call_id"`
	ToolCalls           json.RawMessage `json:"tool_calls"`
	ToolName            *string         `json:"tool_name"`
	EffectDisposition   *string         `json:"effect_disposition"`
	Timestamp           float64         `json:"timestamp"`
	TokenCount          *int64          `json:"token_count"`
	FinishReason        *string         `json:"finish_reason"`
	Reasoning           *string         `json:"reasoning"`
	ReasoningContent    *string         `json:"reasoning_content"`
	ReasoningDetails    json.RawMessage `json:"reasoning_details"`
	CodexReasoningItems json.RawMessage `json:"codex_reasoning_items"`
	CodexMessageItems   json.RawMessage `json:"codex_message_items"`
	PlatformMessageID   *string         `json:"platform_message_id"`
	Observed            bool            `json:"observed"`
	CompressedSummary   bool            `json:"_compressed_summary,omitempty"`
	Active              bool            `json:"active"`
	Compacted           bool            `json:"compacted"`
	APIContent          *string         `json:"api_content"`
	DisplayKind         *string         `json:"display_kind"`
	DisplayMetadata     json.RawMessage `json:"display_metadata"`
}

// NewMessage holds the arguments of Store.AppendMessage. Content may be nil,
// a string, or any value that marshals to JSON (stored with
// ContentJSONPrefix). ToolCalls is a JSON list (or any JSON value: a non-list
// counts as one call); the JSON columns accept raw JSON or, for reasoning
// details and codex items, a plain string stored as it is.
type NewMessage struct {
	SessionID           string          `json:"session_id"`
	Role                string          `json:"role"`
	Content             any             `json:"content,omitempty"`
	ToolCallID          string          `json:"tool_call_id,omitempty"`
	ToolCalls           json.RawMessage `json:"tool_calls,omitempty"`
	ToolName            string          `json:"tool_name,omitempty"`
	EffectDisposition   string          `json:"effect_disposition,omitempty"`
	Timestamp           float64         `json:"timestamp,omitempty"` // Unix seconds; 0 or out of range means now
	TokenCount          *int64          `json:"token_count,omitempty"`
	FinishReason        string          `json:"finish_reason,omitempty"`
	Reasoning           *string         `json:"reasoning,omitempty"`
	ReasoningContent    *string         `json:"reasoning_content,omitempty"`
	ReasoningDetails    json.RawMessage `json:"reasoning_details,omitempty"`
	CodexReasoningItems json.RawMessage `json:"codex_reasoning_items,omitempty"`
	CodexMessageItems   json.RawMessage `json:"codex_message_items,omitempty"`
	PlatformMessageID   string          `json:"platform_message_id,omitempty"`
	Observed            bool            `json:"observed,omitempty"`
	CompressedSummary   bool            `json:"_compressed_summary,omitempty"`
	APIContent          string          `json:"api_content,omitempty"`
	DisplayKind         string          `json:"display_kind,omitempty"`
	DisplayMetadata     json.RawMessage `json:"display_metadata,omitempty"`
}

// MessageFilter selects rows for Store.Messages. By default only active rows
// are returned, in id order.
type MessageFilter struct {
	IncludeInactive  bool  // every row, archived by compaction or not
	IncludeCompacted bool  // also rows archived by compaction that are still displayed
	Limit            int   // 0 means no limit
	Offset           int   // rows to skip
	Latest           bool  // page back from the newest row (result stays in id order)
	AfterID          int64 // keyset paging: rows with id > AfterID
}

// ScrubText returns s as valid UTF-8: every invalid byte sequence, including
// the WTF-8 encoding of a lone UTF-16 surrogate (ED A0..BF xx), becomes
// U+FFFD, and everything else is kept. NUL bytes are valid UTF-8 and kept.
func ScrubText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || n > 1 {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		// One U+FFFD per encoded surrogate (three bytes), else per bad byte.
		if i+2 < len(s) && s[i] == 0xED && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2] >= 0x80 && s[i+2] <= 0xBF {
			n = 3
		}
		b.WriteRune(utf8.RuneError)
		i += n
	}
	return b.String()
}

// EncodeContent turns a message content value into what messages.content
// stores: nil stays NULL, a string is stored as scrubbed text, and any other
// value is marshalled to JSON behind ContentJSONPrefix; JSON nesting deeper
// than MaxJSONDepth is refused.
func EncodeContent(v any) (*string, error) {
	switch c := v.(type) {
	case nil:
		return nil, nil
	case string:
		if strings.HasPrefix(c, ContentJSONPrefix) {
			return nil, Errorf(EINVALID, "message text cannot start with NUL + \"json:\": Hermes reads that prefix as structured content; pass the value itself instead")
		}
		s := ScrubText(c)
		return &s, nil
	case json.RawMessage:
		if err := CheckJSONDepth("structured message content", c); err != nil {
			return nil, err
		}
		if !json.Valid(c) {
			return nil, Errorf(EINVALID, "structured message content is not valid JSON")
		}
		s := ContentJSONPrefix + ScrubText(string(c))
		return &s, nil
	default:
		b, err := json.Marshal(c)
		if err != nil {
			return nil, &Error{Code: EINVALID, Message: "structured message content cannot be encoded as JSON: " + err.Error(), Err: err}
		}
		if err := CheckJSONDepth("structured message content", b); err != nil {
			return nil, err
		}
		s := ContentJSONPrefix + string(b)
		return &s, nil
	}
}

// DecodeContent is the inverse of EncodeContent: text starting with
// ContentJSONPrefix is decoded as JSON, any other text is returned as a
// string. Structured content that does not decode, or nests deeper than
// MaxJSONDepth, is returned as its stored text, prefix included.
func DecodeContent(s *string) any {
	if s == nil {
		return nil
	}
	if rest, ok := strings.CutPrefix(*s, ContentJSONPrefix); ok && !TooDeep(rest) {
		var v any
		if err := json.Unmarshal([]byte(rest), &v); err == nil {
			return v
		}
	}
	return *s
}

// ContentParts renders the parts of a multimodal content list in order: the
// text of each {"type":"text"} part, and label(type) for every other typed
// part (image, audio, file); untyped parts are skipped.
func ContentParts(parts []any, label func(typ string) string) []string {
	var out []string
	for _, p := range parts {
		m, _ := p.(map[string]any)
		switch t, _ := m["type"].(string); t {
		case "":
		case "text":
			if s, ok := m["text"].(string); ok {
				out = append(out, s)
			}
		default:
			out = append(out, label(t))
		}
	}
	return out
}

// ContentText flattens a decoded content value to plain text as Hermes does
// for search context: a string as it is; a parts list as the text of its
// {"type":"text"} parts joined by spaces, or "[multimodal content]" when it
// has none; anything else as "".
func ContentText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			if m, ok := p.(map[string]any); ok && m["type"] == "text" {
				if t, ok := m["text"].(string); ok && t != "" {
					parts = append(parts, t)
				}
			}
		}
		if text := strings.TrimSpace(strings.Join(parts, " ")); text != "" {
			return text
		}
		return "[multimodal content]"
	}
	return ""
}

// ToolCallCount returns how many tool calls a tool_calls value represents:
// the length of a JSON list, 1 for any other non-empty value, 0 for none.
func ToolCallCount(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err == nil {
		return len(list)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err == nil && !truthy(v) {
		return 0
	}
	return 1
}

// truthy reports whether a decoded JSON value is non-empty in Python's sense.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// StoredJSON returns a stored JSON column (nil for NULL) as raw JSON: NULL
// and "" are nil, valid JSON is returned as it is, and invalid text becomes
// fallback (or, when fallback is "", a JSON string holding the text). Text
// nested deeper than MaxJSONDepth, valid or not, becomes a JSON string
// holding it: no reader of the message (JSON encoders, Python's json) has
// to descend into it.
func StoredJSON(s *string, fallback string) json.RawMessage {
	if s == nil || *s == "" {
		return nil
	}
	deep := TooDeep(*s)
	if !deep && json.Valid([]byte(*s)) {
		return json.RawMessage(*s)
	}
	if fallback != "" && !deep {
		return json.RawMessage(fallback)
	}
	b, _ := json.Marshal(*s)
	return b
}
