package sessiondb

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Replay renders a conversation in the OpenAI chat format
// (ConversationMessage): segments are the messages of each session of a
// compression lineage, root first. A user prompt a continuation replays at
// its start, already held by an ancestor, is kept once. The result is never
// nil.
func Replay(segments [][]*Message, rowIDs bool) []map[string]any {
	out := []map[string]any{}
	for i, ms := range segments {
		for _, m := range ms {
			msg := ConversationMessage(m, rowIDs)
			if i > 0 && m.Role == RoleUser && replayed(out, msg) {
				continue // a continuation replays a prompt its ancestor already holds
			}
			out = append(out, msg)
		}
	}
	return out
}

// memoryContextREs strip recalled-memory blocks that leaked into stored
// user and assistant text, in Hermes' order: whole blocks, the system note
// that introduces them, then stray tags.
var memoryContextREs = []*regexp.Regexp{
	regexp.MustCompile(`(?i)<\s*memory-context\s*>[\s\S]*?</\s*memory-context\s*>`),
	regexp.MustCompile(`(?i)\[System note:\s*The following is recalled memory context,\s*NOT new user input\.\s*Treat as (?:informational background data|authoritative reference data[^\]]*)\.\]\s*`),
	regexp.MustCompile(`(?i)</?\s*memory-context\s*>`),
}

func stripMemoryContext(s string) string {
	for _, re := range memoryContextREs {
		if re.MatchString(s) { // ReplaceAllString copies s twice even when nothing matches
			s = re.ReplaceAllString(s, "")
		}
	}
	return strings.TrimSpace(s)
}

// replayed reports whether user message msg repeats one already in ms: a
// clone (same timestamp and content) anywhere, or the same content in the
// current turn (scanning back to the last assistant message with content or
// tool calls).
func replayed(ms []map[string]any, msg map[string]any) bool {
	key := contentKey(msg["content"])
	if key == "" {
		return false
	}
	for _, m := range ms {
		if m["role"] == RoleUser && m["timestamp"] == msg["timestamp"] && contentKey(m["content"]) == key {
			return true
		}
	}
	text, ok := msg["content"].(string)
	if !ok {
		return false
	}
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m["role"] == RoleAssistant && (m["content"] != "" || m["tool_calls"] != nil) {
			return false
		}
		if m["role"] == RoleUser && m["content"] == text {
			return true
		}
	}
	return false
}

// ConversationMessage renders one stored message in the OpenAI chat
// format: role and content always (NULL content as ""; recalled-memory
// blocks stripped from user and assistant text), other keys only when they
// carry information, reasoning keys on assistant rows only, and "_row_id"
// with rowIDs.
func ConversationMessage(m *Message, rowIDs bool) map[string]any {
	msg := map[string]any{"role": m.Role, "content": m.Content}
	if s, ok := m.Content.(string); ok && (m.Role == RoleUser || m.Role == RoleAssistant) {
		msg["content"] = stripMemoryContext(s)
	}
	if m.Content == nil {
		msg["content"] = ""
	}
	if m.Timestamp != 0 {
		msg["timestamp"] = m.Timestamp
	}
	putString := func(key string, v *string) {
		if v != nil && *v != "" {
			msg[key] = *v
		}
	}
	putJSON := func(key string, raw json.RawMessage) {
		if len(raw) == 0 {
			return
		}
		var v any
		if json.Unmarshal(raw, &v) == nil && v != nil {
			msg[key] = v
		}
	}
	putString("tool_call_id", m.ToolCallID)
	putString("tool_name", m.ToolName)
	putString("effect_disposition", m.EffectDisposition)
	putString("api_content", m.APIContent)
	putString("display_kind", m.DisplayKind)
	putString("message_id", m.PlatformMessageID)
	putJSON("display_metadata", m.DisplayMetadata)
	if calls := ToolCallCount(m.ToolCalls); calls > 0 {
		putJSON("tool_calls", m.ToolCalls)
	}
	if m.Observed {
		msg["observed"] = true
	}
	if m.Role == RoleAssistant {
		putString("finish_reason", m.FinishReason)
		putString("reasoning", m.Reasoning)
		if m.ReasoningContent != nil {
			msg["reasoning_content"] = *m.ReasoningContent
		}
		putJSON("reasoning_details", m.ReasoningDetails)
		putJSON("codex_reasoning_items", m.CodexReasoningItems)
		putJSON("codex_message_items", m.CodexMessageItems)
	}
	if rowIDs {
		msg["_row_id"] = m.ID
	}
	return msg
}

// contentKey is a comparable form of a content value ("" for no content).
func contentKey(v any) string {
	switch c := v.(type) {
	case nil:
		return ""
	case string:
		return c
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "[]" {
		return ""
	}
	return string(b)
}

// ReplayChain is Store.Conversation once a backend knows the sessions to
// replay (chain, root first; the session alone without
// IncludeAncestors): it reads each one's messages through messages, with
// o's IncludeInactive, and replays them (Replay).
func ReplayChain(chain []string, o ConversationOptions, messages func(id string, f MessageFilter) ([]*Message, error)) ([]map[string]any, error) {
	segments := make([][]*Message, len(chain))
	for i, id := range chain {
		ms, err := messages(id, MessageFilter{IncludeInactive: o.IncludeInactive})
		if err != nil {
			return nil, err
		}
		segments[i] = ms
	}
	return Replay(segments, o.IncludeRowIDs), nil
}
