package workload_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/workload"
)

// all drains every session of a plan.
func all(t *testing.T, p *workload.Plan) [][]sessiondb.NewMessage {
	t.Helper()
	out := make([][]sessiondb.NewMessage, len(p.Sessions))
	for i := range p.Sessions {
		s := p.Stream(i, "s"+string(rune('a'+i%26)))
		for turn := s.NextTurn(); turn != nil; turn = s.NextTurn() {
			out[i] = append(out[i], turn...)
		}
		if got := s.Remaining(); got != 0 {
			t.Fatalf("session %d: Remaining() = %d after the last turn", i, got)
		}
	}
	return out
}

func TestPlanLengths(t *testing.T) {
	p, err := workload.NewPlan(7, 50, 3000)
	if err != nil {
		t.Fatal(err)
	}
	sum, longest := 0, 0
	for i, s := range p.Sessions {
		if s.Messages < 1 {
			t.Fatalf("session %d has %d messages", i, s.Messages)
		}
		if s.Index != i || s.Source == "" || s.Model == "" {
			t.Fatalf("session %d = %+v", i, s)
		}
		sum += s.Messages
		longest = max(longest, s.Messages)
	}
	if got, want := sum, 3000; got != want {
		t.Fatalf("lengths sum to %d, want %d", got, want)
	}
	if longest < 2*3000/50 {
		t.Errorf("longest session has %d messages: lengths are not skewed", longest)
	}
	for i, ms := range all(t, p) {
		if got, want := len(ms), p.Sessions[i].Messages; got != want {
			t.Fatalf("session %d yielded %d messages, want %d", i, got, want)
		}
	}
}

func TestPlanRejectsTooFewMessages(t *testing.T) {
	if _, err := workload.NewPlan(1, 10, 9); err == nil {
		t.Fatal("NewPlan(10 sessions, 9 messages) succeeded")
	}
	if _, err := workload.NewPlan(1, 0, 9); err == nil {
		t.Fatal("NewPlan(0 sessions) succeeded")
	}
}

func TestDeterministic(t *testing.T) {
	a, _ := workload.NewPlan(42, 8, 400)
	b, _ := workload.NewPlan(42, 8, 400)
	if !reflect.DeepEqual(all(t, a), all(t, b)) {
		t.Fatal("same seed, different messages")
	}
	c, _ := workload.NewPlan(43, 8, 400)
	if reflect.DeepEqual(all(t, a), all(t, c)) {
		t.Fatal("different seeds, same messages")
	}
}

func hasCJK(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			return true
		}
	}
	return false
}

func TestRealisticMix(t *testing.T) {
	p, _ := workload.NewPlan(1, 40, 8000)
	var n, cjk, withCalls, tool, reasoning int
	text := map[string]int{}
	for _, ms := range all(t, p) {
		open := map[string]bool{}
		for _, m := range ms {
			n++
			content, _ := m.Content.(string)
			if hasCJK(content) {
				cjk++
			}
			for _, q := range workload.Queries {
				if strings.Contains(content, strings.Trim(strings.TrimSuffix(q.Query, "*"), `"`)) {
					text[q.Label]++
				}
			}
			if m.Reasoning != nil {
				reasoning++
			}
			switch m.Role {
			case sessiondb.RoleAssistant:
				if m.ToolCalls == nil {
					continue
				}
				withCalls++
				var calls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				}
				if err := json.Unmarshal(m.ToolCalls, &calls); err != nil || len(calls) == 0 {
					t.Fatalf("tool_calls %s: %v", m.ToolCalls, err)
				}
				for _, c := range calls {
					var args map[string]any
					if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
						t.Fatalf("arguments %q are not a JSON object: %v", c.Function.Arguments, err)
					}
					open[c.ID] = true
				}
			case sessiondb.RoleTool:
				tool++
				if !open[m.ToolCallID] || m.ToolName == "" {
					t.Fatalf("tool result %q/%q answers no earlier call", m.ToolCallID, m.ToolName)
				}
				if !json.Valid([]byte(content)) {
					t.Fatalf("tool result is not JSON: %.80s", content)
				}
			}
		}
	}
	if share := float64(cjk) / float64(n); share < 0.10 || share > 0.22 {
		t.Errorf("%.1f%% of messages hold CJK text, want about 15%%", 100*share)
	}
	if withCalls == 0 || tool == 0 || reasoning == 0 {
		t.Errorf("%d tool-calling assistant messages, %d tool results, %d with reasoning", withCalls, tool, reasoning)
	}
	for _, q := range workload.Queries {
		if text[q.Label] == 0 {
			t.Errorf("no message matches query class %s (%s)", q.Label, q.Query)
		}
	}
	t.Logf("%d messages: %.1f%% CJK, %d with tool calls, %d tool results, %d with reasoning, matches %v",
		n, 100*float64(cjk)/float64(n), withCalls, tool, reasoning, text)
}
