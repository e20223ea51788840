package export_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"openai", "key sk-abcdefghijklmnop0123456789ABCD ok", "key sk-[REDACTED] ok"},
		{"openai project", "sk-proj-Ab3_dEf-GhIjKlMnOpQrStUv", "sk-[REDACTED]"},
		{"anthropic", "ANTHROPIC_API_KEY sk-ant-api03-abcDEF123456_ghiJKL-mno", "ANTHROPIC_API_KEY sk-ant-[REDACTED]"},
		{"github classic", "ghp_0123456789abcdefghijABCDEFGHIJabcdef", "ghp_[REDACTED]"},
		{"github oauth", "gho_0123456789abcdefghijABCDEFGHIJabcdef", "gho_[REDACTED]"},
		{"github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_[REDACTED]"},
		{"slack", "xoxb-123456789012-abcdefABCDEF", "xoxb-[REDACTED]"},
		{"aws", "AKIAIOSFODNN7EXAMPLE", "AKIA[REDACTED]"},
		{"google", "AIzaSyA-1234567890abcdefghijklmnopqrstu", "AIza[REDACTED]"},
		{"bearer", "Authorization: Bearer abc123.def456-ghi789", "Authorization: Bearer [REDACTED]"},
		{"jwt", "t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end", "t=[REDACTED] end"},
		{"password=", "mysql -u root password=swordfish -h db", "mysql -u root password=[REDACTED] -h db"},
		{"password quoted", `PASSWORD="s3cr3t pass" next`, `PASSWORD="[REDACTED]" next`},
		{"secret single-quoted", `client_secret: 'a b c'`, `client_secret: '[REDACTED]'`},
		{"json password", `{"user": "bob", "password": "swordfish"}`, `{"user": "bob", "password": "[REDACTED]"}`},
		{"json api_key", `{"api_key":"abc\"def"}`, `{"api_key":"[REDACTED]"}`},
		{"api_key=", "curl https://x/?api_key=abcdef&q=1", "curl https://x/?api_key=[REDACTED]&q=1"},
		{"api-key colon", "X-Api-Key: 0123abcd", "X-Api-Key: [REDACTED]"},
		{"url token", "https://hooks.example/run?token=abc123&x=1", "https://hooks.example/run?token=[REDACTED]&x=1"},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "[REDACTED PRIVATE KEY]"},

		// Things that look alike but are not secrets stay.
		{"prose sk-", "pip install sk-learn-tutorial-for-beginners", "pip install sk-learn-tutorial-for-beginners"},
		{"task-", "see task-abcdefghijklmnop0123456789", "see task-abcdefghijklmnop0123456789"},
		{"bearer prose", "the bearer of bad news", "the bearer of bad news"},
		{"bearer word", "Bearer authentication is used", "Bearer authentication is used"},
		{"max_tokens", "max_tokens=4096", "max_tokens=4096"},
		{"token count", "token count: 1500", "token count: 1500"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := export.Redact(tc.in)
			if got != tc.want {
				t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if again := export.Redact(got); again != got {
				t.Errorf("Redact is not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestRedactMessageStructured(t *testing.T) {
	m := &sessiondb.Message{
		Content: []any{map[string]any{"type": "text", "text": "key sk-abcdefghijklmnop0123456789ABCD"}},
		// Arguments are JSON inside a JSON string; a secret-named key is
		// masked whatever its value looks like.
		ToolCalls:       json.RawMessage(`[{"id":"c1","function":{"name":"login","arguments":"{\"user\":\"bob\",\"password\":\"pw\"}"},"token":"t0k3n","n":12345678901234567890}]`),
		DisplayMetadata: json.RawMessage(`{"reactions": [], "note": "plain"}`),
	}
	r := export.RedactMessage(m)
	if got := r.Content.([]any)[0].(map[string]any)["text"]; got != "key sk-[REDACTED]" {
		t.Errorf("content text = %v", got)
	}
	var calls []map[string]any
	if err := json.Unmarshal(r.ToolCalls, &calls); err != nil {
		t.Fatal(err)
	}
	if got := calls[0]["function"].(map[string]any)["arguments"]; got != `{"user":"bob","password":"[REDACTED]"}` {
		t.Errorf("arguments = %v", got)
	}
	if calls[0]["token"] != export.Redacted {
		t.Errorf("token = %v", calls[0]["token"])
	}
	if !json.Valid(r.ToolCalls) || !strings.Contains(string(r.ToolCalls), "12345678901234567890") {
		t.Errorf("numbers not kept exactly: %s", r.ToolCalls)
	}
	if string(r.DisplayMetadata) != string(m.DisplayMetadata) {
		t.Errorf("unchanged JSON was rewritten: %s", r.DisplayMetadata)
	}
	if m.Content.([]any)[0].(map[string]any)["text"] == "key sk-[REDACTED]" {
		t.Error("RedactMessage changed its argument")
	}
}
