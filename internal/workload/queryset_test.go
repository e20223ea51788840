package workload_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sessiondb/sessiondb/internal/workload"
)

func TestQuerySet(t *testing.T) {
	qs := workload.QuerySet()
	if len(qs) < 200 {
		t.Fatalf("%d queries, want at least 200", len(qs))
	}
	seen := map[string]bool{}
	per := map[string]int{}
	for _, q := range qs {
		key := q.Query + "|" + strings.Join(q.Sources, ",")
		if seen[key] {
			t.Errorf("query %q (sources %v) twice", q.Query, q.Sources)
		}
		seen[key] = true
		if !slices.Contains(workload.Bands, q.Band) {
			t.Errorf("query %q in unknown band %q", q.Query, q.Band)
		}
		per[q.Band]++
		n := utf8.RuneCountInString(q.Query)
		switch q.Band {
		case "cjk1":
			if n != 1 {
				t.Errorf("cjk1 query %q has %d characters", q.Query, n)
			}
		case "cjk2":
			if n != 2 {
				t.Errorf("cjk2 query %q has %d characters", q.Query, n)
			}
		case "cjk3":
			if n < 3 {
				t.Errorf("cjk3 query %q has %d characters", q.Query, n)
			}
		case "source":
			if len(q.Sources) != 1 || q.Sources[0] == "cli" {
				t.Errorf("source query %q limited to %v, want one of the rarer sources", q.Query, q.Sources)
			}
		case "phrase":
			if !strings.HasPrefix(q.Query, `"`) || !strings.HasSuffix(q.Query, `"`) {
				t.Errorf("phrase query %s is not quoted", q.Query)
			}
		case "prefix":
			if !strings.HasSuffix(q.Query, "*") || len(q.Query) < 4 {
				t.Errorf("prefix query %q: want at least three letters and *", q.Query)
			}
		}
	}
	for _, b := range workload.Bands {
		if per[b] < 12 {
			t.Errorf("band %s has %d queries, want at least 12", b, per[b])
		}
	}
	if !slices.EqualFunc(qs, workload.QuerySet(), func(a, b workload.BandQuery) bool { return a.Query == b.Query && a.Band == b.Band }) {
		t.Error("QuerySet is not deterministic")
	}
}

// The set's words are the corpus': every band but rare finds something in
// a small generated workload (rare words need a larger one).
func TestQuerySetWordsAreGenerated(t *testing.T) {
	plan, err := workload.NewPlan(1, 40, 6000)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for i := range plan.Sessions {
		s := plan.Stream(i, "s")
		for turn := s.NextTurn(); turn != nil; turn = s.NextTurn() {
			for _, m := range turn {
				if c, ok := m.Content.(string); ok {
					text.WriteString(strings.ToLower(c))
				}
				text.WriteByte('\n')
			}
		}
	}
	corpus := text.String()
	found := map[string]int{}
	for _, q := range workload.QuerySet() {
		word := strings.Fields(strings.Trim(q.Query, `"*`))[0]
		if strings.Contains(corpus, strings.ToLower(word)) {
			found[q.Band]++
		}
	}
	for _, b := range []string{"frequent", "medium", "phrase", "prefix", "cjk1", "cjk2", "cjk3", "korean", "mixed", "source", "boolean"} {
		if found[b] == 0 {
			t.Errorf("no query of band %s has its first word in the generated text", b)
		}
	}
}
