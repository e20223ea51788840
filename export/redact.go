package export

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// Redacted is what a masked secret is replaced with. Where a secret has a
// recognisable prefix (sk-ant-, ghp_, AKIA, …) or a name (password=,
// "api_key": …, Bearer), the prefix or name is kept in front of it, so a
// reader still sees what kind of secret was there.
const Redacted = "[REDACTED]"

// secretPattern is one kind of secret: every match of re is replaced by
// repl (which may refer to re's groups), unless check rejects the match.
type secretPattern struct {
	re    *regexp.Regexp
	repl  string
	check func(match string) bool
}

// secretKeys are the names whose values are secrets, in key=value text and
// as JSON object keys.
const secretKeys = `password|passwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?key`

// secretPatterns are applied in order; specific token formats come before
// the generic name=value forms.
var secretPatterns = []secretPattern{
	{re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----`), repl: "[REDACTED PRIVATE KEY]"},
	// Anthropic before OpenAI: both start with sk-.
	{re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{16,}`), repl: "sk-ant-" + Redacted},
	{re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`), repl: "sk-" + Redacted, check: hasDigit},
	{re: regexp.MustCompile(`\b(gh[pousr]_)[A-Za-z0-9]{30,}`), repl: "${1}" + Redacted},
	{re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{22,}`), repl: "github_pat_" + Redacted},
	{re: regexp.MustCompile(`\b(xox[abposr]-)[A-Za-z0-9-]{10,}`), repl: "${1}" + Redacted},
	{re: regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`), repl: "${1}" + Redacted},
	{re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), repl: "AIza" + Redacted},
	// JSON Web Tokens: base64url header and payload, both starting {".
	{re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`), repl: Redacted},
	{re: regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{12,}`), repl: "${1}" + Redacted, check: hasDigit},
	// "password": "…" in JSON text.
	{re: regexp.MustCompile(`(?i)("(?:` + secretKeys + `|token)"\s*:\s*")(?:[^"\\]|\\.)+"`), repl: `${1}` + Redacted + `"`},
	// password=…, api_key: …, quoted or not.
	{re: regexp.MustCompile(`(?i)\b(` + secretKeys + `)(\s*[=:]\s*)"(?:[^"\\\n]|\\.)+"`), repl: `${1}${2}"` + Redacted + `"`},
	{re: regexp.MustCompile(`(?i)\b(` + secretKeys + `)(\s*[=:]\s*)'[^'\n]+'`), repl: `${1}${2}'` + Redacted + `'`},
	{re: regexp.MustCompile(`(?i)\b(` + secretKeys + `)(\s*[=:]\s*)[^\s"'&,;]+`), repl: "${1}${2}" + Redacted},
	// ?token=… and &token=… in URLs.
	{re: regexp.MustCompile(`(?i)([?&](?:access_)?token=)[^\s&"'#]+`), repl: "${1}" + Redacted},
}

// hasDigit tells random-looking tokens from words: real keys contain
// digits, prose such as "sk-learn-tutorial-for-beginners" does not.
func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// Redact masks secrets in s: API keys of OpenAI (sk-…), Anthropic
// (sk-ant-…), GitHub (ghp_…, github_pat_…), Slack (xox?-…), AWS (AKIA…),
// Google (AIza…); bearer tokens; JSON Web Tokens; PEM private keys; and the
// values of password, secret, api_key, *_token and similar names written as
// name=value, name: value or "name": "value", and of token= in URLs.
func Redact(s string) string {
	for _, p := range secretPatterns {
		if !p.re.MatchString(s) {
			continue
		}
		s = p.re.ReplaceAllStringFunc(s, func(m string) string {
			if p.check != nil && !p.check(m) {
				return m
			}
			return p.re.ReplaceAllString(m, p.repl)
		})
	}
	return s
}

// secretKeyRE matches JSON object keys whose string values are secrets.
var secretKeyRE = regexp.MustCompile(`(?i)^(?:` + secretKeys + `|token|authorization)$`)

// redactValue masks secrets in a decoded JSON value: strings through
// Redact, and the whole string value of a secret-named key. It reports
// whether anything changed; unchanged values are returned as they are.
func redactValue(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		r := Redact(x)
		return r, r != x
	case []any:
		var out []any
		for i, e := range x {
			r, changed := redactValue(e)
			if changed && out == nil {
				out = append(make([]any, 0, len(x)), x[:i]...)
			}
			if out != nil {
				out = append(out, r)
			}
		}
		if out == nil {
			return x, false
		}
		return out, true
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			var r any
			var changed bool
			if s, ok := e.(string); ok && s != "" && s != Redacted && secretKeyRE.MatchString(k) {
				r, changed = Redacted, true
			} else {
				r, changed = redactValue(e)
			}
			if changed {
				if out == nil {
					out = make(map[string]any, len(x))
					for k2, e2 := range x {
						out[k2] = e2
					}
				}
				out[k] = r
			}
		}
		if out == nil {
			return x, false
		}
		return out, true
	}
	return v, false
}

// redactRaw masks secrets in raw JSON; the bytes are returned unchanged
// when nothing needed masking (so key order and number formatting survive).
func redactRaw(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return json.RawMessage(Redact(string(raw)))
	}
	r, changed := redactValue(v)
	if !changed {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return json.RawMessage(Redact(string(raw)))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func redactString(p *string) *string {
	if p == nil {
		return nil
	}
	r := Redact(*p)
	return &r
}

// redactJSONText masks secrets in a text column that holds JSON.
func redactJSONText(p *string) *string {
	if p == nil {
		return nil
	}
	r := string(redactRaw(json.RawMessage(*p)))
	return &r
}

// RedactMessage returns a copy of m with secrets masked in its content,
// tool calls, reasoning (all three reasoning columns and the codex items),
// API content and display metadata.
func RedactMessage(m *sessiondb.Message) *sessiondb.Message {
	c := *m
	c.Content, _ = redactValue(m.Content)
	c.ToolCalls = redactRaw(m.ToolCalls)
	c.Reasoning = redactString(m.Reasoning)
	c.ReasoningContent = redactString(m.ReasoningContent)
	c.ReasoningDetails = redactRaw(m.ReasoningDetails)
	c.CodexReasoningItems = redactRaw(m.CodexReasoningItems)
	c.CodexMessageItems = redactRaw(m.CodexMessageItems)
	c.APIContent = redactString(m.APIContent)
	c.DisplayMetadata = redactRaw(m.DisplayMetadata)
	return &c
}

// RedactSession returns a copy of s with secrets masked in its system
// prompt, model config and origin.
func RedactSession(s *sessiondb.Session) *sessiondb.Session {
	c := *s
	c.SystemPrompt = redactString(s.SystemPrompt)
	c.ModelConfig = redactJSONText(s.ModelConfig)
	c.OriginJSON = redactJSONText(s.OriginJSON)
	return &c
}
