package storetest

import (
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

func testTitles(t *testing.T, s *suite) {
	// titleOf returns a session's title and title source.
	titleOf := func(h *harness, id string) (string, string) {
		h.t.Helper()
		got := h.get(id)
		return str(got.Title), str(got.TitleSource)
	}
	wantTitle := func(h *harness, id, title string) {
		h.t.Helper()
		if got, _ := titleOf(h, id); got != title {
			h.t.Fatalf("%s title = %q, want %q", id, got, title)
		}
	}

	t.Run("a new session has no title", func(t *testing.T) {
		h := withOne(t, s)
		if title, source := titleOf(h, "s1"); title != "<nil>" || source != "<nil>" {
			t.Fatalf("title %s (%s), want NULL", title, source)
		}
	})

	t.Run("set, read back as a user title, and replace", func(t *testing.T) {
		h := withOne(t, s)
		h.title("s1", "My Session")
		if title, source := titleOf(h, "s1"); title != "My Session" || source != sessiondb.TitleSourceUser {
			t.Fatalf("title %s (%s), want My Session (user)", title, source)
		}
		h.title("s1", "Renamed")
		wantTitle(h, "s1", "Renamed")
		h.end("s1", "user_exit")
		wantTitle(h, "s1", "Renamed")
	})

	t.Run("special characters are kept", func(t *testing.T) {
		h := withOne(t, s)
		const title = `PR #438 — fixing the 'auth' middleware "v2" 🚀 项目 café 50%_done`
		h.title("s1", title)
		wantTitle(h, "s1", title)
	})

	t.Run("control and invisible characters are removed, spaces folded", func(t *testing.T) {
		h := withOne(t, s)
		h.title("s1", "  hello\x00  \tworld\u200b  ")
		wantTitle(h, "s1", "hello world")
	})

	t.Run("a title over 100 characters is invalid and changes nothing", func(t *testing.T) {
		h := withOne(t, s)
		h.title("s1", "kept")
		wantCode(t, h.SetTitle(t.Context(), "s1", strings.Repeat("x", 101)), sessiondb.EINVALID)
		wantTitle(h, "s1", "kept")
		h.title("s1", strings.Repeat("y", 100))
		wantTitle(h, "s1", strings.Repeat("y", 100))
	})

	t.Run("an empty title clears it to NULL", func(t *testing.T) {
		h := withOne(t, s)
		h.at("s2", base+1)
		for _, empty := range []string{"", "   ", "\x00\u200b"} {
			h.title("s1", "temp")
			h.title("s1", empty)
			h.title("s2", empty) // several sessions may have no title
			if title, source := titleOf(h, "s1"); title != "<nil>" || source != "<nil>" {
				t.Fatalf("SetTitle(%q) left %s (%s)", empty, title, source)
			}
		}
		_, err := h.ResolveTitle(t.Context(), "temp")
		wantCode(t, err, sessiondb.ENOTFOUND)
	})

	t.Run("a title held by another session conflicts", func(t *testing.T) {
		h := withOne(t, s)
		h.at("s2", base+1)
		h.title("s1", "Taken")
		h.title("s2", "Mine")
		wantCode(t, h.SetTitle(t.Context(), "s2", "Taken"), sessiondb.ECONFLICT)
		wantCode(t, h.SetTitle(t.Context(), "s2", "  Taken\x00 "), sessiondb.ECONFLICT) // compared once sanitised
		wantTitle(h, "s2", "Mine")
		wantTitle(h, "s1", "Taken")
		h.title("s1", "Taken") // the holder may set it again
	})

	t.Run("an unknown session is not found", func(t *testing.T) {
		h := withOne(t, s)
		wantCode(t, h.SetTitle(t.Context(), "ghost", "x"), sessiondb.ENOTFOUND)
	})

	t.Run("a compression descendant takes its ancestor's title over", func(t *testing.T) {
		h := s.store(t)
		h.at("root", base)
		h.title("root", "X")
		h.end("root", sessiondb.EndReasonCompression)
		h.create(sessiondb.NewSession{ID: "mid", Source: "cli", ParentSessionID: "root", StartedAt: base + 100})
		h.end("mid", sessiondb.EndReasonCompression)
		h.create(sessiondb.NewSession{ID: "tip", Source: "cli", ParentSessionID: "mid", StartedAt: base + 200})
		h.at("other", base+300)
		h.title("other", "Y")
		wantCode(t, h.SetTitle(t.Context(), "root", "Y"), sessiondb.ECONFLICT) // no relative
		h.title("tip", "X")
		wantTitle(h, "tip", "X")
		if title, _ := titleOf(h, "root"); title != "<nil>" {
			t.Errorf("root title = %s, want NULL after the move", title)
		}
		wantCode(t, h.SetTitle(t.Context(), "root", "X"), sessiondb.ECONFLICT) // an ancestor cannot take it back
		if got, err := h.ResolveTitle(t.Context(), "X"); err != nil || got != "tip" {
			t.Errorf("ResolveTitle(X) = %q, %v; want tip", got, err)
		}
	})

	t.Run("a child of a parent ended otherwise cannot take its title", func(t *testing.T) {
		h := s.store(t)
		h.at("p", base)
		h.title("p", "W")
		h.end("p", "user_exit")
		h.create(sessiondb.NewSession{ID: "c", Source: "cli", ParentSessionID: "p", StartedAt: base + 1})
		wantCode(t, h.SetTitle(t.Context(), "c", "W"), sessiondb.ECONFLICT)
		wantTitle(h, "p", "W")
	})

	t.Run("ResolveTitle", func(t *testing.T) {
		h := s.store(t)
		for _, x := range []struct {
			id, title string
			started   float64
		}{
			{"s1", "my project", 1000}, {"s2", "my project #2", 2000}, {"s3", "my project #3", 3000},
			{"s10", "my project #10", 1500}, // a higher number, an older start
			{"solo", "standalone", 1000}, {"u1", "test_project", 1000}, {"u2", "testXproject #2", 2000},
			{"g1", "a*b", 1000}, {"g2", "aXXb #2", 2000}, {"q1", "why?", 1000}, {"q2", "whyX #5", 2000},
			{"b1", "[draft]", 1000}, {"b2", "d #4", 2000}, {"p1", "100% done", 1000}, {"p2", "100x done #3", 2000},
		} {
			h.at(x.id, base+x.started)
			h.title(x.id, x.title)
		}
		for _, tt := range []struct{ title, want string }{
			{"standalone", "solo"},
			{"my project", "s3"}, // the latest "my project #N" by start
			{"my project #2", "s2"},
			{"my project #10", "s10"},
			{"test_project", "u1"}, // _ is literal
			{"a*b", "g1"},          // * is literal
			{"why?", "q1"},         // ? is literal
			{"[draft]", "b1"},      // [ is literal
			{"100% done", "p1"},    // % is literal
		} {
			got, err := h.ResolveTitle(t.Context(), tt.title)
			if err != nil || got != tt.want {
				t.Errorf("ResolveTitle(%q) = %q, %v; want %q", tt.title, got, err, tt.want)
			}
		}
		_, err := h.ResolveTitle(t.Context(), "no such title")
		wantCode(t, err, sessiondb.ENOTFOUND)
	})
}
