package sessiondb

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Rules of session rows both backends share.

// ResetEndReasons are the end reasons that start a new conversation on the
// same routing key (Hermes bumps the key's conversation generation); a
// child of a session ended with one is a reset, not a continuation.
var ResetEndReasons = map[string]bool{
	"session_reset": true, "session_switch": true, "idle": true,
	"daily": true, "suspended": true, "resume_pending_expired": true,
}

// SameAgentNamespace reports whether two session keys agree on their
// "agent:<ns>:" namespace (keys without one agree with anything).
func SameAgentNamespace(a, b string) bool {
	ns := func(k string) string {
		rest, ok := strings.CutPrefix(k, "agent:")
		if !ok {
			return ""
		}
		name, _, _ := strings.Cut(rest, ":")
		return name
	}
	x, y := ns(a), ns(b)
	return x == "" || y == "" || x == y
}

// PromptHash is the key a system prompt is stored under in system_prompts:
// the hex SHA-256 of its (scrubbed) text.
func PromptHash(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(sum[:])
}

// CheckNewSession validates what CreateSession is given: a source, and
// JSON fields that are valid and not too deep.
func CheckNewSession(ns NewSession) error {
	if ns.Source == "" {
		return Errorf(EINVALID, "create session %q: a source is required (cli, telegram, …)", ns.ID)
	}
	for _, f := range []struct{ name, text string }{{"model_config", ns.ModelConfig}, {"origin_json", ns.OriginJSON}} {
		if err := CheckJSONDepth(f.name, f.text); err != nil {
			return Errorf(EINVALID, "create session %q: %s", ns.ID, err)
		}
	}
	if ns.ModelConfig != "" && !json.Valid([]byte(ns.ModelConfig)) {
		return Errorf(EINVALID, "create session %q: model_config is not valid JSON", ns.ID)
	}
	return nil
}

// ModelConfigMarkers reads the _reset_from and _branched_from markers a
// session's model_config JSON may carry.
func ModelConfigMarkers(modelConfig *string) (resetFrom, branchedFrom *string) {
	if modelConfig == nil {
		return nil, nil
	}
	var mc map[string]any
	if json.Unmarshal([]byte(*modelConfig), &mc) != nil {
		return nil, nil
	}
	str := func(key string) *string {
		if v, ok := mc[key].(string); ok {
			return &v
		}
		return nil
	}
	return str("_reset_from"), str("_branched_from")
}
