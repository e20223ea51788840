package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// buildChain builds the compression chain root → mid → tip started at b,
// b+5 and b+10, with a delegate child "del" of root and an unrelated
// session "other" started at b+7.
func buildChain(h *harness, b float64) {
	h.t.Helper()
	h.create(sessiondb.NewSession{ID: "root", Source: "cli", Model: "m-root", StartedAt: b})
	h.add("root", user("root question", b+1))
	h.create(sessiondb.NewSession{ID: "del", Source: "cli", ParentSessionID: "root", ModelConfig: `{"_delegate_from":"root"}`, StartedAt: b + 2})
	h.add("del", user("subagent goal", b+2.5))
	h.end("root", sessiondb.EndReasonCompression)
	h.create(sessiondb.NewSession{ID: "mid", Source: "cli", ParentSessionID: "root", StartedAt: b + 5})
	h.add("mid", user("mid question", b+6))
	h.end("mid", sessiondb.EndReasonCompression)
	h.create(sessiondb.NewSession{ID: "tip", Source: "cli", Model: "m-tip", ParentSessionID: "mid", StartedAt: b + 10})
	h.add("tip", user("tip question", b+11), assistant("tip answer", b+12))
	h.create(sessiondb.NewSession{ID: "other", Source: "cli", StartedAt: b + 7})
}

func testListSessions(t *testing.T, s *suite) {
	t.Run("rows, previews and last activity", func(t *testing.T) {
		h := s.store(t)
		long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 4)
		exact := strings.Repeat("0123456789", 6)
		h.at("sys", base+1)
		h.add("sys", sessiondb.NewMessage{Role: sessiondb.RoleSystem, Content: "You are a helpful assistant.", Timestamp: base + 2},
			user("Hello world", base+3), assistant("Hi!", base+4), user("Second question", base+5))
		h.at("long", base+10)
		h.add("long", user(long, base+11))
		h.at("exact60", base+15)
		h.add("exact60", user(exact, base+16))
		h.at("nouser", base+20)
		h.add("nouser", assistant("only the assistant spoke", base+21))
		h.at("empty", base+30)
		h.at("lines", base+40)
		h.add("lines", user("line one\nline two\nline three", base+41))
		h.at("hidden-first", base+45)
		h.add("hidden-first", sessiondb.NewMessage{Role: sessiondb.RoleUser, Content: "scaffolding", DisplayKind: "hidden", Timestamp: base + 46},
			user("what the user typed", base+47))
		h.at("titled", base+50)
		h.title("titled", "A title")

		rows, total := h.list(sessiondb.ListOptions{})
		equal(t, "ids", summaryIDs(rows), []string{"titled", "hidden-first", "lines", "empty", "nouser", "exact60", "long", "sys"})
		if total != 8 {
			t.Errorf("total = %d, want 8", total)
		}
		for id, want := range map[string]string{
			"sys":          "Hello world", // the first user message, not the system one
			"long":         long[:sessiondb.PreviewChars] + "...",
			"exact60":      exact,
			"nouser":       "",
			"empty":        "",
			"lines":        "line one line two line three",
			"hidden-first": "what the user typed",
			"titled":       "",
		} {
			if got := row(t, rows, id).Preview; got != want {
				t.Errorf("%s preview = %q, want %q", id, got, want)
			}
		}
		for id, want := range map[string]float64{"sys": base + 5, "empty": base + 30, "nouser": base + 21, "titled": base + 50} {
			if got := row(t, rows, id).LastActive; got != want {
				t.Errorf("%s last_active = %v, want %v", id, got, want)
			}
		}
		r := row(t, rows, "sys")
		if r.MessageCount != 4 || r.Source != "cli" || r.StartedAt != base+1 {
			t.Errorf("sys row: message_count %d, source %q, started %v", r.MessageCount, r.Source, r.StartedAt)
		}
		if got := str(row(t, rows, "titled").Title); got != "A title" {
			t.Errorf("title = %s", got)
		}
	})

	t.Run("source filters, the total they count, paging", func(t *testing.T) {
		h := s.store(t)
		srcs := []string{"cli", "telegram", "cli", "tool", "cron", "cli", "telegram", "tool"}
		var all []string
		for i, src := range srcs {
			id := fmt.Sprintf("%s-%d", src, i)
			h.create(sessiondb.NewSession{ID: id, Source: src, StartedAt: base + float64(i)})
			all = append([]string{id}, all...) // newest first
		}
		for _, tt := range []struct {
			name string
			o    sessiondb.ListOptions
			want []string
		}{
			{"every source", sessiondb.ListOptions{}, all},
			{"one source", sessiondb.ListOptions{Sources: []string{"telegram"}}, []string{"telegram-6", "telegram-1"}},
			{"two sources", sessiondb.ListOptions{Sources: []string{"telegram", "cron"}}, []string{"telegram-6", "cron-4", "telegram-1"}},
			{"exclude one", sessiondb.ListOptions{ExcludeSources: []string{"tool"}}, []string{"telegram-6", "cli-5", "cron-4", "cli-2", "telegram-1", "cli-0"}},
			{"exclude many", sessiondb.ListOptions{ExcludeSources: []string{"tool", "cron", "telegram"}}, []string{"cli-5", "cli-2", "cli-0"}},
			{"include and exclude", sessiondb.ListOptions{Sources: []string{"cli", "tool"}, ExcludeSources: []string{"tool"}}, []string{"cli-5", "cli-2", "cli-0"}},
			{"a page", sessiondb.ListOptions{Limit: 3, Offset: 3}, all[3:6]},
			{"the last page", sessiondb.ListOptions{Limit: 3, Offset: 6}, all[6:]},
			{"past the end", sessiondb.ListOptions{Limit: 3, Offset: 9}, []string{}},
			{"a filtered page", sessiondb.ListOptions{Sources: []string{"cli"}, Limit: 1, Offset: 1}, []string{"cli-2"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				rows, total := h.on(t).list(tt.o)
				equal(t, "ids", summaryIDs(rows), tt.want)
				wantTotal := len(tt.want)
				if tt.o.Limit > 0 { // the total counts every match, not the page
					o := tt.o
					o.Limit, o.Offset = -1, 0
					wantTotal = len(h.on(t).listIDs(o))
				}
				if total != wantTotal {
					t.Errorf("total = %d, want %d", total, wantTotal)
				}
			})
		}
		t.Run("the default limit is 20", func(t *testing.T) {
			h := h.on(t)
			for i := 0; i < 20; i++ {
				h.at(fmt.Sprintf("bulk-%02d", i), base-float64(i+1))
			}
			rows, total := h.list(sessiondb.ListOptions{})
			if len(rows) != 20 || total != 28 {
				t.Errorf("%d rows, total %d; want 20 of 28", len(rows), total)
			}
			equal(t, "first page", summaryIDs(rows), append(slices.Clone(all), "bulk-00", "bulk-01", "bulk-02", "bulk-03", "bulk-04",
				"bulk-05", "bulk-06", "bulk-07", "bulk-08", "bulk-09", "bulk-10", "bulk-11"))
			if got := len(h.listIDs(sessiondb.ListOptions{})); got != 28 {
				t.Errorf("limit -1 lists %d, want 28", got)
			}
		})
	})

	t.Run("branch and reset children are listed, delegates only with children", func(t *testing.T) {
		h := s.store(t)
		h.at("p", base)
		h.add("p", user("parent", base+1))
		h.create(sessiondb.NewSession{ID: "branch", Source: "cli", ParentSessionID: "p", ModelConfig: `{"_branched_from":"p"}`, StartedAt: base + 2})
		h.create(sessiondb.NewSession{ID: "delegate", Source: "cli", ParentSessionID: "p", ModelConfig: `{"_delegate_from":"p"}`, StartedAt: base + 3})
		h.create(sessiondb.NewSession{ID: "reset", Source: "cli", ParentSessionID: "p", ModelConfig: `{"_reset_from":"p"}`, StartedAt: base + 4})
		rows, total := h.list(sessiondb.ListOptions{})
		equal(t, "ids", summaryIDs(rows), []string{"reset", "branch", "p"})
		if total != 3 {
			t.Errorf("total = %d, want 3", total)
		}
		equal(t, "ids with children", h.listIDs(sessiondb.ListOptions{IncludeChildren: true}), []string{"reset", "delegate", "branch", "p"})
	})

	t.Run("a compression chain is listed once, as its tip", func(t *testing.T) {
		h := s.store(t)
		buildChain(h, base)
		rows, total := h.list(sessiondb.ListOptions{})
		equal(t, "ids", summaryIDs(rows), []string{"other", "tip"})
		if total != 2 {
			t.Errorf("total = %d, want 2", total)
		}
		r := row(t, rows, "tip")
		if str(r.LineageRootID) != "root" || r.Preview != "tip question" || r.EndedAt != nil || r.MessageCount != 2 ||
			str(r.Model) != "m-tip" || r.LastActive != base+12 {
			t.Errorf("tip row: root %s, preview %q, ended %v, messages %d, model %s, last_active %v",
				str(r.LineageRootID), r.Preview, r.EndedAt, r.MessageCount, str(r.Model), r.LastActive)
		}
		if r.StartedAt != base || r.ParentSessionID != nil {
			t.Errorf("tip row: started %v, parent %s; want the root's %v, NULL", r.StartedAt, str(r.ParentSessionID), base)
		}
		if r := row(t, rows, "other"); r.LineageRootID != nil {
			t.Errorf("other row: _lineage_root_id = %s, want none", str(r.LineageRootID))
		}
	})

	t.Run("raw chains list every segment", func(t *testing.T) {
		h := s.store(t)
		buildChain(h, base)
		rows, _ := h.list(sessiondb.ListOptions{RawChains: true, Limit: -1})
		equal(t, "ids", summaryIDs(rows), []string{"other", "root"})
		if r := row(t, rows, "root"); r.LineageRootID != nil || r.Preview != "root question" || str(r.EndReason) != "compression" {
			t.Errorf("root row: lineage %s, preview %q, end %s", str(r.LineageRootID), r.Preview, str(r.EndReason))
		}
		sameSet(t, "raw chains with children", h.listIDs(sessiondb.ListOptions{RawChains: true, IncludeChildren: true}),
			[]string{"root", "del", "mid", "tip", "other"})
	})

	t.Run("order by activity: the freshest message over the chain", func(t *testing.T) {
		h := s.store(t)
		h.at("a", base+1)
		h.add("a", user("late message", base+100))
		h.at("b", base+2)
		h.at("c", base+3)
		h.add("c", user("middle", base+50))
		equal(t, "by start", h.listIDs(sessiondb.ListOptions{}), []string{"c", "b", "a"})
		equal(t, "by activity", h.listIDs(sessiondb.ListOptions{OrderByActivity: true}), []string{"a", "c", "b"})
		h.at("root", base)
		h.end("root", sessiondb.EndReasonCompression)
		h.create(sessiondb.NewSession{ID: "tip", Source: "cli", ParentSessionID: "root", StartedAt: base + 0.5})
		h.add("tip", user("tip is busy", base+200))
		rows, _ := h.list(sessiondb.ListOptions{OrderByActivity: true, Limit: -1})
		equal(t, "by activity with a chain", summaryIDs(rows), []string{"tip", "a", "c", "b"})
		var last []float64
		for _, r := range rows {
			last = append(last, r.LastActive)
		}
		equal(t, "last_active", last, []float64{base + 200, base + 100, base + 50, base + 2})
	})
}

func testLineage(t *testing.T, s *suite) {
	h := s.store(t)
	buildChain(h, base)
	h.create(sessiondb.NewSession{ID: "br", Source: "cli", ParentSessionID: "root", ModelConfig: `{"_branched_from":"root"}`, StartedAt: base + 3})
	h.create(sessiondb.NewSession{ID: "plain", Source: "cli", ParentSessionID: "br", StartedAt: base + 4})
	h.create(sessiondb.NewSession{ID: "rs", Source: "cli", ParentSessionID: "tip", ModelConfig: `{"_reset_from":"tip"}`, StartedAt: base + 13})
	h.title("tip", "The tip")

	var render func(n *sessiondb.LineageNode, depth int) string
	render = func(n *sessiondb.LineageNode, depth int) string {
		out := fmt.Sprintf("%s%s:%s\n", strings.Repeat("  ", depth), n.ID, n.Kind)
		for _, c := range n.Children {
			out += render(c, depth+1)
		}
		return out
	}
	const want = `root:root
  del:delegate
  br:branch
    plain:child
  mid:compression
    tip:compression
      rs:reset
`
	t.Run("the tree from its root, whichever member is asked", func(t *testing.T) {
		for _, from := range []string{"root", "tip", "plain", "del", "rs"} {
			tree, err := h.Lineage(t.Context(), from)
			if err != nil {
				t.Fatalf("Lineage(%s): %v", from, err)
			}
			if got := render(tree, 0); got != want {
				t.Errorf("Lineage(%s) =\n%s\nwant\n%s", from, got, want)
			}
		}
	})
	t.Run("nodes carry the session's fields", func(t *testing.T) {
		tree, err := h.Lineage(t.Context(), "tip")
		if err != nil {
			t.Fatal(err)
		}
		if str(tree.EndReason) != "compression" || tree.EndedAt == nil || tree.StartedAt != base || tree.MessageCount != 1 {
			t.Errorf("root node = %+v", tree)
		}
		tip := tree.Children[2].Children[0]
		if tip.ID != "tip" || str(tip.Title) != "The tip" || tip.MessageCount != 2 || tip.EndedAt != nil || tip.StartedAt != base+10 || tip.Source != "cli" {
			t.Errorf("tip node = %+v", tip)
		}
	})
	t.Run("the parent's end reason names the kind", func(t *testing.T) {
		h := s.store(t)
		h.at("p", base)
		for i, c := range []struct{ id, parentEnd string }{{"b", "branched"}, {"r", "session_reset"}, {"c", "user_exit"}, {"live", ""}} {
			parent := "p-" + c.id
			h.create(sessiondb.NewSession{ID: parent, Source: "cli", ParentSessionID: "p", StartedAt: base + float64(10*i+1)})
			h.create(sessiondb.NewSession{ID: c.id, Source: "cli", ParentSessionID: parent, StartedAt: base + float64(10*i+2)})
			if c.parentEnd != "" {
				h.end(parent, c.parentEnd)
			}
		}
		tree, err := h.Lineage(t.Context(), "live")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := render(tree, 0), `p:root
  p-b:child
    b:branch
  p-r:child
    r:reset
  p-c:child
    c:child
  p-live:child
    live:child
`; got != want {
			t.Errorf("Lineage =\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("a lone session is its own root", func(t *testing.T) {
		lone, err := h.Lineage(t.Context(), "other")
		if err != nil || lone.ID != "other" || lone.Kind != "root" || len(lone.Children) != 0 {
			t.Errorf("Lineage(other) = %+v, %v", lone, err)
		}
	})
	t.Run("an unknown id is not found", func(t *testing.T) {
		_, err := h.Lineage(t.Context(), "nope")
		wantCode(t, err, sessiondb.ENOTFOUND)
	})
}

func testFlags(t *testing.T, s *suite) {
	flags := func(h *harness, id string) (archived, pinned int64) {
		h.t.Helper()
		got := h.get(id)
		return got.Archived, got.Pinned
	}
	chain := []string{"root", "mid", "tip"}

	t.Run("archive applies to the whole chain", func(t *testing.T) {
		h := s.store(t)
		buildChain(h, base)
		if err := h.SetArchived(t.Context(), "mid", true); err != nil {
			t.Fatal(err)
		}
		for _, id := range chain {
			if a, _ := flags(h, id); a != 1 {
				t.Errorf("%s archived = %d, want 1", id, a)
			}
		}
		// del, a delegate child of root, is left out: whether a flag
		// reaches it is not specified.
		if a, _ := flags(h, "other"); a != 0 {
			t.Errorf("other archived = %d, want 0 (not of the chain)", a)
		}
		equal(t, "default list", h.listIDs(sessiondb.ListOptions{}), []string{"other"})
		equal(t, "include archived", h.listIDs(sessiondb.ListOptions{IncludeArchived: true}), []string{"other", "tip"})
		rows, total := h.list(sessiondb.ListOptions{ArchivedOnly: true})
		if ids := summaryIDs(rows); !slices.Equal(ids, []string{"tip"}) || total != 1 {
			t.Errorf("archived only = %v (total %d), want [tip] (1)", ids, total)
		}
		if err := h.SetArchived(t.Context(), "tip", false); err != nil {
			t.Fatal(err)
		}
		for _, id := range chain {
			if a, _ := flags(h, id); a != 0 {
				t.Errorf("%s archived = %d after unarchive, want 0", id, a)
			}
		}
		equal(t, "list after unarchive", h.listIDs(sessiondb.ListOptions{}), []string{"other", "tip"})
	})

	t.Run("pin applies to the whole chain", func(t *testing.T) {
		h := s.store(t)
		buildChain(h, base)
		if err := h.SetPinned(t.Context(), "root", true); err != nil {
			t.Fatal(err)
		}
		for _, id := range chain {
			if _, p := flags(h, id); p != 1 {
				t.Errorf("%s pinned = %d, want 1", id, p)
			}
		}
		if _, p := flags(h, "other"); p != 0 {
			t.Errorf("other pinned = %d, want 0", p)
		}
		rows, total := h.list(sessiondb.ListOptions{PinnedOnly: true})
		if ids := summaryIDs(rows); !slices.Equal(ids, []string{"tip"}) || total != 1 || str(rows[0].LineageRootID) != "root" {
			t.Errorf("pinned only = %v (total %d), want [tip] (1) projected from root", ids, total)
		}
		if err := h.SetPinned(t.Context(), "tip", false); err != nil {
			t.Fatal(err)
		}
		for _, id := range chain {
			if _, p := flags(h, id); p != 0 {
				t.Errorf("%s pinned = %d after unpin, want 0", id, p)
			}
		}
		if ids := h.listIDs(sessiondb.ListOptions{PinnedOnly: true}); len(ids) != 0 {
			t.Errorf("pinned only after unpin = %v", ids)
		}
	})

	t.Run("a session outside a chain is flagged alone", func(t *testing.T) {
		h := s.store(t)
		h.at("a", base)
		h.at("b", base+1)
		if err := h.SetArchived(t.Context(), "a", true); err != nil {
			t.Fatal(err)
		}
		if err := h.SetPinned(t.Context(), "b", true); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string][2]int64{"a": {1, 0}, "b": {0, 1}} {
			if a, p := flags(h, id); a != want[0] || p != want[1] {
				t.Errorf("%s archived, pinned = %d, %d; want %d, %d", id, a, p, want[0], want[1])
			}
		}
	})

	t.Run("an unknown id is not found", func(t *testing.T) {
		h := s.store(t)
		wantCode(t, h.SetArchived(t.Context(), "nope", true), sessiondb.ENOTFOUND)
		wantCode(t, h.SetPinned(t.Context(), "nope", true), sessiondb.ENOTFOUND)
	})
}
