package sessiondb

import (
	"strings"
	"testing"
)

func TestSameAgentNamespace(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"agent:main:telegram:1", "agent:main:discord:2", true},
		{"agent:main:x", "agent:ops:x", false},
		{"agent:main:x", "", true},
		{"", "agent:ops:x", true},
		{"telegram:1", "agent:ops:x", true},
		{"agent:a", "agent:a:b", true},
		{"agent:a", "agent:b", false},
	} {
		if got := SameAgentNamespace(c.a, c.b); got != c.want {
			t.Errorf("SameAgentNamespace(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestPromptHash(t *testing.T) {
	// sha256("abc")
	if got, want := PromptHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("PromptHash = %s, want %s", got, want)
	}
}

func TestModelConfigMarkers(t *testing.T) {
	mc := `{"_reset_from": "a", "_branched_from": "b", "x": 1}`
	r, b := ModelConfigMarkers(&mc)
	if r == nil || *r != "a" || b == nil || *b != "b" {
		t.Fatalf("markers = %v %v, want a b", r, b)
	}
	for _, s := range []string{`{"_reset_from": 3}`, `not json`, `{}`} {
		if r, b := ModelConfigMarkers(&s); r != nil || b != nil {
			t.Errorf("markers of %s = %v %v, want none", s, r, b)
		}
	}
	if r, b := ModelConfigMarkers(nil); r != nil || b != nil {
		t.Error("markers of NULL model_config")
	}
}

func TestCheckNewSession(t *testing.T) {
	for _, ns := range []NewSession{{ID: "x"}, {ID: "x", Source: "cli", ModelConfig: "{"}, {ID: "x", Source: "cli", OriginJSON: strings.Repeat("[", MaxJSONDepth+1)}} {
		if got := ErrorCode(CheckNewSession(ns)); got != EINVALID {
			t.Errorf("CheckNewSession(%+v) code %q, want invalid", ns, got)
		}
	}
	if err := CheckNewSession(NewSession{ID: "x", Source: "cli", ModelConfig: `{"a":1}`}); err != nil {
		t.Error(err)
	}
}
