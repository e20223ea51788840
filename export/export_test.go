package export_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func ptr[T any](v T) *T { return &v }

// seq returns msgs as a Messages sequence.
func seq(msgs ...*sessiondb.Message) export.Messages {
	return func(yield func(*sessiondb.Message, error) bool) {
		for _, m := range msgs {
			if !yield(m, nil) {
				return
			}
		}
	}
}

func session(id string, title *string, parent *string, started float64) *sessiondb.Session {
	return &sessiondb.Session{
		ID: id, Source: "cli", Model: ptr("gpt-5"), Title: title, ParentSessionID: parent,
		StartedAt: started, EndedAt: ptr(started + 600), EndReason: ptr("user_exit"),
		MessageCount: 4, ToolCallCount: 1, InputTokens: 1200, OutputTokens: 340,
		EstimatedCostUSD: ptr(0.0123), Cwd: ptr("/home/me/app"),
		SystemPrompt: ptr("You are Hermes."), SystemPromptHash: ptr("9f86d08"),
	}
}

func messages(sid string, t0 float64) []*sessiondb.Message {
	return []*sessiondb.Message{
		{ID: 1, SessionID: sid, Role: "user", Content: "Deploy <app> & check the logs", Timestamp: t0 + 1, Active: true},
		{ID: 2, SessionID: sid, Role: "assistant", Content: "Running the deploy.", Timestamp: t0 + 2, Active: true,
			Reasoning:    ptr("The user wants a deploy; run docker compose."),
			ToolCalls:    json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"docker compose up -d\"}"}}]`),
			FinishReason: ptr("tool_calls")},
		{ID: 3, SessionID: sid, Role: "tool", ToolName: ptr("shell"), ToolCallID: ptr("c1"), Timestamp: t0 + 3, Active: true,
			Content: "```\nStarted app_web_1\n```"},
		{ID: 4, SessionID: sid, Role: "assistant", Timestamp: t0 + 4, Active: true,
			Content: []any{map[string]any{"type": "text", "text": "Done. Screenshot:"}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:…"}}}},
	}
}

// items is the golden input: one session, then a two-segment lineage.
func items() []export.Item {
	single := export.Item{Session: session("20260501_120000_aaaaaa", ptr("Deploy the app"), nil, 1777636800), Messages: seq(messages("20260501_120000_aaaaaa", 1777636800)...)}
	root := session("20260502_090000_bbbbbb", ptr("Long talk"), nil, 1777712400)
	root.EndReason = ptr(sessiondb.EndReasonCompression)
	tip := session("20260502_100000_cccccc", ptr("Long talk #2"), ptr(root.ID), 1777716000)
	tip.EndedAt, tip.EndReason = nil, nil
	rootMsgs := messages(root.ID, 1777712400)[:2]
	tipMsgs := messages(tip.ID, 1777716000)[2:]
	lineageTip := *tip
	lineageTip.MessageCount = int64(len(rootMsgs) + len(tipMsgs))
	lineage := export.Item{
		Session:  &lineageTip,
		Messages: seq(append(append([]*sessiondb.Message{}, rootMsgs...), tipMsgs...)...),
		Segments: []export.Item{{Session: root, Messages: seq(rootMsgs...)}, {Session: tip, Messages: seq(tipMsgs...)}},
	}
	return []export.Item{single, lineage}
}

func encode(t *testing.T, format string, o export.Options, its []export.Item) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := export.NewEncoder(format, &buf, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range its {
		if err := enc.Encode(&its[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update after checking):\n--- got\n%s", name, got)
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		format, file string
		o            export.Options
	}{
		{"jsonl", "export.jsonl", export.Options{}},
		{"json", "export.json", export.Options{}},
		{"md", "export.md", export.Options{}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			golden(t, tc.file, encode(t, tc.format, tc.o, items()))
		})
	}
}

// The JSONL object carries every session column, then messages, and for a
// lineage segments and lineage_session_ids, as Hermes builds them.
func TestJSONLShape(t *testing.T) {
	lines := bytes.Split(bytes.TrimSuffix(encode(t, "jsonl", export.Options{}, items()), []byte("\n")), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	var single, lineage map[string]any
	if err := json.Unmarshal(lines[0], &single); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[1], &lineage); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(session("x", nil, nil, 0))
	var cols map[string]any
	json.Unmarshal(want, &cols)
	for k := range cols {
		if _, ok := single[k]; !ok {
			t.Errorf("column %s missing from the export", k)
		}
	}
	if got := len(single["messages"].([]any)); got != 4 {
		t.Errorf("%d messages, want 4", got)
	}
	if _, ok := single["segments"]; ok {
		t.Error("a single session has segments")
	}
	if got := lineage["lineage_session_ids"]; len(got.([]any)) != 2 {
		t.Errorf("lineage_session_ids = %v", got)
	}
	if got := lineage["message_count"]; got != 4.0 {
		t.Errorf("lineage message_count = %v, want 4", got)
	}
	if !bytes.Contains(lines[0], []byte("Deploy <app> & check")) {
		t.Error("HTML characters are escaped")
	}
}

// The indented array is exactly json.Indent of the JSON lines as an array:
// the streamed output matches what marshalling the whole value would give.
func TestJSONIsIndentedJSONL(t *testing.T) {
	lines := bytes.TrimSuffix(encode(t, "jsonl", export.Options{}, items()), []byte("\n"))
	array := append(append([]byte("["), bytes.ReplaceAll(lines, []byte("\n"), []byte(","))...), ']')
	var want bytes.Buffer
	if err := json.Indent(&want, array, "", "  "); err != nil {
		t.Fatal(err)
	}
	want.WriteByte('\n')
	if got := encode(t, "json", export.Options{}, items()); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("json output is not the indented JSON lines:\n%s", got)
	}
	if got := encode(t, "json", export.Options{}, nil); string(got) != "[]\n" {
		t.Errorf("empty json export = %q, want []", got)
	}
}

func TestEmptyMessages(t *testing.T) {
	it := []export.Item{{Session: session("s", nil, nil, 1777636800), Messages: seq()}}
	if got := encode(t, "jsonl", export.Options{}, it); !bytes.HasSuffix(got, []byte(`"messages":[]}`+"\n")) {
		t.Errorf("jsonl = %s", got)
	}
	if got := encode(t, "json", export.Options{}, it); !bytes.Contains(got, []byte(`"messages": []`)) {
		t.Errorf("json = %s", got)
	}
}

func TestMessageError(t *testing.T) {
	boom := errors.New("boom")
	it := export.Item{Session: session("s", nil, nil, 0), Messages: func(yield func(*sessiondb.Message, error) bool) {
		yield(nil, boom)
	}}
	for _, f := range export.Formats {
		enc, _ := export.NewEncoder(f, &bytes.Buffer{}, export.Options{})
		if err := enc.Encode(&it); !errors.Is(err, boom) {
			t.Errorf("%s: error = %v, want the iterator's", f, err)
		}
	}
	if _, err := export.NewEncoder("xml", &bytes.Buffer{}, export.Options{}); sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Errorf("unknown format: %v", err)
	}
}

func TestEncodeRedacts(t *testing.T) {
	s := session("s", nil, nil, 0)
	s.SystemPrompt = ptr("use key sk-proj-abcdefghij0123456789XYZ")
	s.ModelConfig = ptr(`{"api_key": "hunter2hunter2", "temperature": 0.2}`)
	m := &sessiondb.Message{ID: 1, Role: "assistant", Content: "token ghp_0123456789abcdefghijABCDEFGHIJabcdef here",
		Reasoning:  ptr("password=swordfish"),
		ToolCalls:  json.RawMessage(`[{"function":{"name":"login","arguments":"{\"password\": \"swordfish\"}"}}]`),
		APIContent: ptr("Authorization: Bearer abc123def456ghi789")}
	for _, f := range export.Formats {
		out := string(encode(t, f, export.Options{Redact: true}, []export.Item{{Session: s, Messages: seq(m)}}))
		for _, secret := range []string{"abcdefghij0123456789XYZ", "hunter2", "0123456789abcdefghij", "swordfish", "abc123def456"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s: %q survives redaction:\n%s", f, secret, out)
			}
		}
		if !strings.Contains(out, export.Redacted) {
			t.Errorf("%s: nothing redacted", f)
		}
		plain := string(encode(t, f, export.Options{}, []export.Item{{Session: s, Messages: seq(m)}}))
		if !strings.Contains(plain, "swordfish") {
			t.Errorf("%s: redacted without --redact", f)
		}
	}
	if got := *m.Reasoning; got != "password=swordfish" {
		t.Errorf("redaction changed the caller's message: %q", got)
	}
}

func ExampleNewJSONL() {
	s := &sessiondb.Session{ID: "s1", Source: "cli", StartedAt: 1777593600}
	msgs := seq(&sessiondb.Message{ID: 1, SessionID: "s1", Role: "user", Content: "hi", Timestamp: 1777593601, Active: true})
	enc := export.NewJSONL(os.Stdout, export.Options{})
	enc.Encode(&export.Item{Session: s, Messages: msgs})
	enc.Close()
	// Output: {"id":"s1","source":"cli","created_source":null,"user_id":null,"session_key":null,"chat_id":null,"chat_type":null,"thread_id":null,"display_name":null,"origin_json":null,"expiry_finalized":null,"model":null,"model_config":null,"system_prompt":null,"system_prompt_hash":null,"parent_session_id":null,"started_at":1777593600,"ended_at":null,"end_reason":null,"message_count":0,"tool_call_count":0,"api_call_count":0,"input_tokens":0,"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"billing_provider":null,"billing_base_url":null,"billing_mode":null,"estimated_cost_usd":null,"actual_cost_usd":null,"cost_status":null,"cost_source":null,"pricing_version":null,"cwd":null,"git_branch":null,"git_repo_root":null,"git_metadata_generation":0,"title":null,"title_source":null,"last_activity_at":null,"last_activity_description":null,"last_activity_provenance":null,"handoff_state":null,"handoff_platform":null,"handoff_error":null,"compression_failure_cooldown_until":null,"compression_failure_error":null,"compression_fallback_streak":0,"compression_ineffective_count":0,"compression_recovery_deadline":null,"compression_overload_streak":0,"profile_name":null,"transport_profile":null,"rewind_count":0,"archived":0,"auto_archived":0,"pinned":0,"hidden":0,"last_read_at":null,"tool_names":null,"messages":[{"id":1,"session_id":"s1","role":"user","content":"hi","tool_call_id":null,"tool_calls":null,"tool_name":null,"effect_disposition":null,"timestamp":1777593601,"token_count":null,"finish_reason":null,"reasoning":null,"reasoning_content":null,"reasoning_details":null,"codex_reasoning_items":null,"codex_message_items":null,"platform_message_id":null,"observed":false,"active":true,"compacted":false,"api_content":null,"display_kind":null,"display_metadata":null}]}
}

func ExampleNewMarkdown() {
	s := &sessiondb.Session{ID: "s1", Source: "cli", Title: ptr("Greeting"), StartedAt: 1777593600, MessageCount: 2}
	msgs := seq(
		&sessiondb.Message{Role: "user", Content: "hi", Timestamp: 1777593601},
		&sessiondb.Message{Role: "assistant", Content: "Hello!", Reasoning: ptr("Be friendly."), Timestamp: 1777593602},
	)
	enc := export.NewMarkdown(os.Stdout, export.Options{})
	enc.Encode(&export.Item{Session: s, Messages: msgs})
	enc.Close()
	// Output:
	// # Greeting
	//
	// - **Session:** `s1`
	// - **Source:** cli
	// - **Started:** 2026-05-01 00:00:00 UTC
	// - **Messages:** 2 (0 tool calls)
	//
	// ### User
	//
	// *2026-05-01 00:00:01 UTC*
	//
	// hi
	//
	// ### Assistant
	//
	// *2026-05-01 00:00:02 UTC*
	//
	// <details><summary>Reasoning</summary>
	//
	// Be friendly.
	//
	// </details>
	//
	// Hello!
}

// TestJSONEmptySegments: a lineage item with no segments writes an empty
// list as json.MarshalIndent does ("[]"), not a list broken over lines.
func TestJSONEmptySegments(t *testing.T) {
	var buf bytes.Buffer
	enc := export.NewJSON(&buf, export.Options{})
	if err := enc.Encode(&export.Item{Session: &sessiondb.Session{ID: "s", Source: "cli"}, Segments: []export.Item{}}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	var v []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, buf.String())
	}
	if !strings.Contains(buf.String(), `"segments": [],`) || !strings.Contains(buf.String(), `"lineage_session_ids": []`) {
		t.Errorf("empty segments not written as []:\n%s", buf.String())
	}
}

// TestMarkdownOtherRoles: a role sessiondb has no heading for is shown as
// written, capitalised; an empty one as an empty heading.
func TestMarkdownOtherRoles(t *testing.T) {
	var buf bytes.Buffer
	enc := export.NewMarkdown(&buf, export.Options{})
	it := export.Item{Session: &sessiondb.Session{ID: "s", Source: "cli"}, Messages: seq(
		&sessiondb.Message{ID: 1, SessionID: "s", Role: "developer", Content: "use tabs", Timestamp: 1},
		&sessiondb.Message{ID: 2, SessionID: "s", Role: "", Content: "anonymous", Timestamp: 2},
	)}
	if err := enc.Encode(&it); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"### Developer\n", "### \n", "use tabs", "anonymous"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}
