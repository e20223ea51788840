package sessiondb_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sessiondb/sessiondb"
)

func TestPlanBatch(t *testing.T) {
	o := sessiondb.PrepareOptions{}
	plan, err := sessiondb.PlanBatch([]sessiondb.NewMessage{
		{SessionID: "a", Role: "user"},
		{SessionID: "b", Role: "assistant", ToolCalls: []byte(`[{},{}]`)},
		{SessionID: "a", Role: "tool", ToolCalls: []byte(`[{}]`)},
	}, o)
	if err != nil {
		t.Fatal(err)
	}
	want := []sessiondb.BatchSession{{ID: "a", First: 0, Messages: 2, Calls: 0}, {ID: "b", First: 1, Messages: 1, Calls: 2}}
	if !reflect.DeepEqual(plan.Sessions, want) || !reflect.DeepEqual(plan.SessionIDs, []string{"a", "b", "a"}) {
		t.Fatalf("plan = %+v %v, want %+v", plan.Sessions, plan.SessionIDs, want)
	}
	_, err = sessiondb.PlanBatch([]sessiondb.NewMessage{{SessionID: "a", Role: "user"}, {Role: "user"}}, o)
	var be *sessiondb.BatchError
	if !errors.As(err, &be) || be.Index != 1 || sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Fatalf("a message without a session: %v, want a BatchError for message 1", err)
	}
}

func TestBuildLineage(t *testing.T) {
	s := func(v string) *string { return &v }
	row := func(id string, parent *string, end *string) sessiondb.LineageRow {
		return sessiondb.LineageRow{Node: sessiondb.LineageNode{ID: id}, Parent: parent, ParentEndReason: end}
	}
	tree := sessiondb.BuildLineage("r", []sessiondb.LineageRow{
		row("r", nil, nil), row("c", s("r"), s("compression")), row("b", s("r"), s("branched")), row("g", s("c"), nil),
		row("stray", s("elsewhere"), nil),
	})
	if tree == nil || tree.Kind != sessiondb.KindRoot || len(tree.Children) != 2 {
		t.Fatalf("tree = %+v", tree)
	}
	if c, b := tree.Children[0], tree.Children[1]; c.Kind != sessiondb.KindCompression || b.Kind != sessiondb.KindBranch || len(c.Children) != 1 || c.Children[0].ID != "g" {
		t.Fatalf("children = %+v %+v", c, b)
	}
	if sessiondb.BuildLineage("x", nil) != nil {
		t.Fatal("a lineage without its root is not nil")
	}
}

func TestKeepCompressionLineages(t *testing.T) {
	// a → b → c continue one another; c is not a candidate, so a and b stay.
	next := map[string]string{"a": "b", "b": "c", "x": "y"}
	cands := []sessiondb.PruneCandidate{{ID: "a"}, {ID: "b"}, {ID: "x"}, {ID: "y"}, {ID: "z"}}
	got, err := sessiondb.KeepCompressionLineages(cands, map[string]bool{"a": true, "b": true, "x": true},
		func(id string) (string, error) { return next[id], nil })
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range got {
		ids = append(ids, c.ID)
	}
	if want := []string{"x", "y", "z"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("kept %v, want %v", ids, want)
	}
}

func TestTitleRules(t *testing.T) {
	for _, tt := range []struct {
		base   string
		titles []string
		want   string
	}{
		{"t", nil, "t"},
		{"t", []string{"t"}, "t #2"},
		{"t", []string{"t", "t #3", "t #x", "tt #9"}, "t #4"},
		{"t", []string{"t #5"}, "t #6"},
	} {
		if got := sessiondb.NextNumberedTitle(tt.base, tt.titles); got != tt.want {
			t.Errorf("NextNumberedTitle(%q, %v) = %q, want %q", tt.base, tt.titles, got, tt.want)
		}
	}
	s := func(v string) *string { return &v }
	if !sessiondb.AutoTitleWins(nil, nil, "derived") || !sessiondb.AutoTitleWins(s("x"), s("derived"), "llm") ||
		sessiondb.AutoTitleWins(s("x"), nil, "llm") || sessiondb.AutoTitleWins(s("x"), s("llm"), "llm") {
		t.Fatal("AutoTitleWins: a title gives way only to one of higher authority")
	}
	if sessiondb.CheckAutoTitleSource("user") == nil || sessiondb.CheckAutoTitleSource("llm") != nil {
		t.Fatal("CheckAutoTitleSource accepts the automatic sources only")
	}
}

func TestFlagUpdates(t *testing.T) {
	for _, tt := range []struct {
		u          sessiondb.FlagUpdate
		verb, sets string
	}{
		{sessiondb.ArchiveUpdate(true), "archive", "archived = 1"},
		{sessiondb.ArchiveUpdate(false), "unarchive", "archived = 0, auto_archived = 0"},
		{sessiondb.PinUpdate(true), "pin", "pinned = 1, hidden = 0"},
		{sessiondb.PinUpdate(false), "unpin", "pinned = 0"},
	} {
		if tt.u.Verb != tt.verb || tt.u.Assignments() != tt.sets {
			t.Errorf("%s: %q, want %q", tt.u.Verb, tt.u.Assignments(), tt.sets)
		}
	}
}

func TestReplayChain(t *testing.T) {
	var asked []sessiondb.MessageFilter
	got, err := sessiondb.ReplayChain([]string{"a", "b"}, sessiondb.ConversationOptions{IncludeInactive: true},
		func(id string, f sessiondb.MessageFilter) ([]*sessiondb.Message, error) {
			asked = append(asked, f)
			return []*sessiondb.Message{{Role: "user", Content: id}}, nil
		})
	if err != nil || len(got) != 2 || got[1]["content"] != "b" || len(asked) != 2 || !asked[0].IncludeInactive {
		t.Fatalf("ReplayChain = %v, %v (filters %v)", got, err, asked)
	}
}

func TestListFlagFilters(t *testing.T) {
	for _, tt := range []struct {
		o    sessiondb.ListOptions
		want []sessiondb.FlagValue
	}{
		{sessiondb.ListOptions{}, []sessiondb.FlagValue{{Column: "archived"}, {Column: "hidden"}}},
		{sessiondb.ListOptions{IncludeArchived: true, IncludeHidden: true}, nil},
		{sessiondb.ListOptions{ArchivedOnly: true, IncludeHidden: true, PinnedOnly: true},
			[]sessiondb.FlagValue{{Column: "archived", Value: 1}, {Column: "pinned", Value: 1}}},
	} {
		if got := tt.o.FlagFilters(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("FlagFilters(%+v) = %v, want %v", tt.o, got, tt.want)
		}
	}
}
