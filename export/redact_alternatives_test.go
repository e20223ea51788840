package export_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
)

// TestRedactEachAlternative takes every alternative of every secret pattern
// (each prefix letter, each key name, each quoting) with a positive case and
// a near miss that must be left alone, so that dropping one alternative, or
// widening one, fails.
func TestRedactEachAlternative(t *testing.T) {
	const r = export.Redacted
	digits := "0123456789"
	b30 := "Ab1" + strings.Repeat("x", 27) // 30 characters
	for _, tc := range []struct{ name, in, want string }{
		// PEM private keys: any key type word, none.
		{"pem plain", "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----", "[REDACTED PRIVATE KEY]"},
		{"pem rsa", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[REDACTED PRIVATE KEY]"},
		{"pem openssh", "a -----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\nbnNz\n-----END OPENSSH PRIVATE KEY----- z", "a [REDACTED PRIVATE KEY] z"},
		{"pem public key kept", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----"},
		{"pem without end kept", "-----BEGIN PRIVATE KEY-----\nMIIE", "-----BEGIN PRIVATE KEY-----\nMIIE"},

		// Anthropic: 16 characters after sk-ant- at least.
		{"anthropic", "sk-ant-" + strings.Repeat("a", 16), "sk-ant-" + r},
		{"anthropic too short", "sk-ant-" + strings.Repeat("a", 15), "sk-ant-" + strings.Repeat("a", 15)},

		// OpenAI: each optional prefix, 20 characters, a digit required.
		{"openai", "sk-" + strings.Repeat("a", 19) + "1", "sk-" + r},
		{"openai proj", "sk-proj-" + strings.Repeat("a", 19) + "1", "sk-" + r},
		{"openai svcacct", "sk-svcacct-" + strings.Repeat("a", 19) + "1", "sk-" + r},
		{"openai admin", "sk-admin-" + strings.Repeat("a", 19) + "1", "sk-" + r},
		{"openai too short", "sk-" + strings.Repeat("a", 18) + "1", "sk-" + strings.Repeat("a", 18) + "1"},
		{"openai without digit", "sk-learn-tutorial-for-beginners", "sk-learn-tutorial-for-beginners"},
		{"openai inside a word", "task-" + strings.Repeat("a", 19) + "1", "task-" + strings.Repeat("a", 19) + "1"},

		// GitHub: each of p, o, u, s, r; 30 characters; github_pat_ with 22.
		{"github ghp", "ghp_" + b30, "ghp_" + r},
		{"github gho", "gho_" + b30, "gho_" + r},
		{"github ghu", "ghu_" + b30, "ghu_" + r},
		{"github ghs", "ghs_" + b30, "ghs_" + r},
		{"github ghr", "ghr_" + b30, "ghr_" + r},
		{"github ghx kept", "ghx_" + b30, "ghx_" + b30},
		{"github too short", "ghp_" + b30[:29], "ghp_" + b30[:29]},
		{"github pat", "github_pat_" + strings.Repeat("A", 22), "github_pat_" + r},
		{"github pat too short", "github_pat_" + strings.Repeat("A", 21), "github_pat_" + strings.Repeat("A", 21)},

		// Slack: each of a, b, p, o, s, r; 10 characters.
		{"slack xoxa", "xoxa-" + digits, "xoxa-" + r},
		{"slack xoxb", "xoxb-" + digits, "xoxb-" + r},
		{"slack xoxp", "xoxp-" + digits, "xoxp-" + r},
		{"slack xoxo", "xoxo-" + digits, "xoxo-" + r},
		{"slack xoxs", "xoxs-" + digits, "xoxs-" + r},
		{"slack xoxr", "xoxr-" + digits, "xoxr-" + r},
		{"slack xoxc kept", "xoxc-" + digits, "xoxc-" + digits},
		{"slack too short", "xoxb-" + digits[:9], "xoxb-" + digits[:9]},

		// AWS: AKIA and ASIA, exactly 16 upper-case letters or digits.
		{"aws akia", "AKIA" + "ABCDEFGH12345678", "AKIA" + r},
		{"aws asia", "ASIA" + "ABCDEFGH12345678", "ASIA" + r},
		{"aws abia kept", "ABIA" + "ABCDEFGH12345678", "ABIAABCDEFGH12345678"},
		{"aws 15 kept", "AKIA" + "ABCDEFGH1234567", "AKIAABCDEFGH1234567"},
		{"aws 17 kept", "AKIA" + "ABCDEFGH123456789", "AKIAABCDEFGH123456789"},

		// Google: AIza and exactly 35 more.
		{"google", "AIza" + strings.Repeat("B", 35), "AIza" + r},
		{"google too short", "AIza" + strings.Repeat("B", 34), "AIza" + strings.Repeat("B", 34)},

		// JSON Web Tokens: two eyJ parts of 8 characters at least.
		{"jwt", "eyJhbGciOiJI.eyJzdWIiOiIx.sig_1", r},
		{"jwt shortest parts", "eyJ12345678.eyJ12345678.", r},
		{"jwt short payload kept", "eyJhbGciOiJI.eyJ1234567.sig", "eyJhbGciOiJI.eyJ1234567.sig"},
		{"jwt payload not json kept", "eyJhbGciOiJI.abcdefghijk.sig", "eyJhbGciOiJI.abcdefghijk.sig"},

		// Bearer tokens: any case, 12 characters, a digit required.
		{"bearer", "Authorization: Bearer abcdefghijk1", "Authorization: Bearer " + r},
		{"bearer lower case", "bearer abcdefghijk1", "bearer " + r},
		{"bearer too short", "Bearer abcdefghij1", "Bearer abcdefghij1"},
		{"bearer without digit", "Bearer of-bad-news-today", "Bearer of-bad-news-today"},

		// URL tokens: ? and &, token= and access_token=.
		{"url ?token", "https://x.test/a?token=abc123&b=1", "https://x.test/a?token=" + r + "&b=1"},
		{"url &token", "https://x.test/a?b=1&token=abc123", "https://x.test/a?b=1&token=" + r},
		{"url access_token", "https://x.test/a?access_token=abc123", "https://x.test/a?access_token=" + r},
		{"url other parameter kept", "https://x.test/a?tokens=abc123", "https://x.test/a?tokens=abc123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := export.Redact(tc.in); got != tc.want {
				t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// secretKeyNames are the key names whose values are masked, each spelling
// the patterns allow.
var secretKeyNames = []string{
	"password", "passwd", "secret",
	"client_secret", "client-secret", "clientsecret",
	"api_key", "api-key", "apikey",
	"access_token", "access-token", "accesstoken",
	"auth_token", "auth-token", "authtoken",
	"refresh_token", "refresh-token", "refreshtoken",
	"private_key", "private-key", "privatekey",
}

// TestRedactEachKeyName masks the value of every secret name in each form
// (name=value, name: value, "quoted", 'quoted', JSON text, JSON object
// key) and leaves a name that is not on the list alone.
func TestRedactEachKeyName(t *testing.T) {
	const r = export.Redacted
	for _, k := range secretKeyNames {
		for _, name := range []string{k, strings.ToUpper(k)} {
			for _, tc := range []struct{ in, want string }{
				{name + "=hunter2", name + "=" + r},
				{name + ": hunter2", name + ": " + r},
				{name + `="hunter 2"`, name + `="` + r + `"`},
				{name + `='hunter 2'`, name + `='` + r + `'`},
				{`{"` + name + `": "hunter 2"}`, `{"` + name + `": "` + r + `"}`},
			} {
				if got := export.Redact(tc.in); got != tc.want {
					t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
				}
			}
		}
		in := map[string]any{k: "hunter2", "note": "plain"}
		out := redactJSONValue(t, in)
		if out[k] != r || out["note"] != "plain" {
			t.Errorf("JSON object with key %q: %v", k, out)
		}
	}
	// token alone is a secret name as a JSON key (in text and objects) but
	// not in key=value prose; authorization only as an object key.
	if got, want := export.Redact(`{"token": "abc"}`), `{"token": "`+r+`"}`; got != want {
		t.Errorf("Redact JSON token = %q, want %q", got, want)
	}
	for _, k := range []string{"token", "authorization", "Authorization"} {
		if out := redactJSONValue(t, map[string]any{k: "abc"}); out[k] != r {
			t.Errorf("JSON object key %q: %v", k, out)
		}
	}
	for _, near := range []string{"passwords_hint=abc", "token=abc", "api_keys=abc", "secretary=abc", "key=abc", "auth=abc"} {
		if got := export.Redact(near); got != near {
			t.Errorf("Redact(%q) = %q, want it unchanged (not a secret name)", near, got)
		}
	}
	for _, k := range []string{"tokens", "author", "password_hint", "keyring"} {
		if out := redactJSONValue(t, map[string]any{k: "abc"}); out[k] != "abc" {
			t.Errorf("JSON object key %q masked: %v", k, out)
		}
	}
}

// redactJSONValue masks a JSON object the way an export masks tool calls.
func redactJSONValue(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal([]any{map[string]any{"function": map[string]any{"arguments": v}}})
	if err != nil {
		t.Fatal(err)
	}
	m := export.RedactMessage(&sessiondb.Message{ToolCalls: raw})
	var out []map[string]map[string]map[string]any
	if err := json.Unmarshal(m.ToolCalls, &out); err != nil {
		t.Fatalf("redacted tool calls %s: %v", m.ToolCalls, err)
	}
	return out[0]["function"]["arguments"]
}
