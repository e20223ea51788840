package httpapi

import (
	"net/http"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/export"
)

// listSessions serves GET /api/v1/sessions: a page of the listing the CLI's
// list prints, or with q the sessions whose messages match q (best first).
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := &query{r: r}
	o := sessiondb.ListOptions{
		Limit:           int(q.int("limit", 50, 1, maxListSize)),
		Offset:          int(q.int("offset", 0, 0, 1<<31-1)),
		Sources:         q.list("source"),
		ExcludeSources:  q.list("exclude_source"),
		PinnedOnly:      q.bool("pinned"),
		IncludeChildren: q.bool("children"),
		OrderByActivity: q.oneOf("sort", "started", "started", "activity") == "activity",
	}
	switch q.oneOf("archived", "0", "0", "1", "only") {
	case "1":
		o.IncludeArchived = true
	case "only":
		o.ArchivedOnly = true
	}
	text := q.str("q")
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	if text != "" {
		s.sessionsMatching(w, r, text, o)
		return
	}
	page, total, err := s.cfg.Store.ListSessions(r.Context(), o)
	if err != nil {
		writeError(w, err)
		return
	}
	for i := range page {
		page[i].SystemPrompt = nil // large, and shown only with the session
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": page, "total": total})
}

// sessionsMatching lists the sessions of the first 200 hits of a search
// for text, in the order of their best hit.
func (s *Server) sessionsMatching(w http.ResponseWriter, r *http.Request, text string, o sessiondb.ListOptions) {
	hits, err := s.cfg.Store.Search(r.Context(), text, sessiondb.SearchOptions{
		Sources: o.Sources, ExcludeSources: o.ExcludeSources, Limit: maxSearchSize, Fields: []string{"id", "session_id"}})
	if err != nil {
		writeError(w, err)
		return
	}
	seen := map[string]bool{}
	var out []sessiondb.SessionSummary
	for _, h := range hits {
		if seen[h.SessionID] {
			continue
		}
		seen[h.SessionID] = true
		sess, err := s.cfg.Store.Session(r.Context(), h.SessionID)
		if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND {
			continue
		}
		if err != nil {
			writeError(w, err)
			return
		}
		if sess.Hidden != 0 || (sess.Archived != 0 && !o.IncludeArchived && !o.ArchivedOnly) ||
			(o.ArchivedOnly && sess.Archived == 0) || (o.PinnedOnly && sess.Pinned == 0) {
			continue
		}
		sess.SystemPrompt = nil
		last := sess.StartedAt
		if sess.LastActivityAt != nil {
			last = max(last, *sess.LastActivityAt)
		}
		out = append(out, sessiondb.SessionSummary{Session: *sess, LastActive: last})
	}
	total := len(out)
	out = out[min(o.Offset, total):min(o.Offset+o.Limit, total)]
	if out == nil {
		out = []sessiondb.SessionSummary{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out, "total": total})
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.cfg.Store.Session(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sess)
}

// messages serves a page of a session's messages in id order: the first
// limit after after_id, or with tail the last tail.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	q := &query{r: r}
	f := sessiondb.MessageFilter{
		AfterID: q.int("after_id", 0, 0, 1<<62),
		Limit:   int(q.int("limit", 200, 1, maxPageSize)),
	}
	if tail := q.int("tail", 0, 0, maxPageSize); tail > 0 {
		if f.AfterID > 0 && q.err == nil {
			q.err = sessiondb.Errorf(sessiondb.EINVALID, "tail and after_id cannot be combined")
		}
		f.Latest, f.Limit = true, int(tail)
	}
	f.IncludeInactive = q.bool("inactive")
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	ms, err := s.cfg.Store.Messages(r.Context(), r.PathValue("id"), f)
	if err != nil {
		writeError(w, err)
		return
	}
	if ms == nil {
		ms = []*sessiondb.Message{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": ms, "more": !f.Latest && len(ms) == f.Limit})
}

func (s *Server) lineage(w http.ResponseWriter, r *http.Request) {
	n, err := s.cfg.Store.Lineage(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, n)
}

// export streams one session as Markdown, JSON Lines or JSON, with its
// messages read 500 at a time, as a download.
func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	q := &query{r: r}
	format := q.oneOf("format", "md", export.Formats...)
	redact := q.bool("redact")
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	ctx := r.Context()
	sess, err := s.cfg.Store.Session(ctx, r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	enc, err := export.NewEncoder(format, w, export.Options{Redact: redact})
	if err != nil {
		writeError(w, err)
		return
	}
	types := map[string]string{"md": "text/markdown; charset=utf-8", "jsonl": "application/x-ndjson", "json": "application/json"}
	w.Header().Set("Content-Type", types[format])
	w.Header().Set("Content-Disposition", `attachment; filename="`+safeFileName(sess.ID)+`.`+format+`"`)
	msgs := export.Messages(sessiondb.MessagePages(ctx, s.cfg.Store.Messages, sess.ID, 500))
	// Headers are gone once the body starts: a failure part way ends the
	// download early, which the client sees as a truncated file.
	if err := enc.Encode(&export.Item{Session: sess, Messages: msgs}); err == nil {
		_ = enc.Close()
	}
}

// safeFileName keeps the characters a download name may safely hold.
func safeFileName(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, id)
}

// patchSession sets the title and the pinned and archived flags given.
func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Title    *string `json:"title"`
		Pinned   *bool   `json:"pinned"`
		Archived *bool   `json:"archived"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, err)
		return
	}
	ctx, id := r.Context(), r.PathValue("id")
	if _, err := s.cfg.Store.Session(ctx, id); err != nil {
		writeError(w, err)
		return
	}
	steps := []func() error{}
	if body.Title != nil {
		steps = append(steps, func() error { return s.cfg.Store.SetTitle(ctx, id, *body.Title) })
	}
	if body.Pinned != nil {
		steps = append(steps, func() error { return s.cfg.Store.SetPinned(ctx, id, *body.Pinned) })
	}
	if body.Archived != nil {
		steps = append(steps, func() error { return s.cfg.Store.SetArchived(ctx, id, *body.Archived) })
	}
	s.mutate(w, r, id, steps...)
}

func (s *Server) endSession(w http.ResponseWriter, r *http.Request) {
	body := struct {
		Reason string `json:"reason"`
	}{}
	if r.ContentLength != 0 {
		if err := readJSON(r, &body); err != nil {
			writeError(w, err)
			return
		}
	}
	if body.Reason == "" {
		body.Reason = "user_exit"
	}
	id := r.PathValue("id")
	s.mutate(w, r, id, func() error { return s.cfg.Store.EndSession(r.Context(), id, body.Reason) })
}

func (s *Server) reopenSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mutate(w, r, id, func() error { return s.cfg.Store.ReopenSession(r.Context(), id) })
}

// mutate runs steps and answers with the session as it now is; the
// change is also pushed to the event streams, which would not see a flag
// change on a session outside the store's recent window.
func (s *Server) mutate(w http.ResponseWriter, r *http.Request, id string, steps ...func() error) {
	for _, step := range steps {
		if err := step(); err != nil {
			writeError(w, err)
			return
		}
	}
	sess, err := s.cfg.Store.Session(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	if s.hub != nil {
		s.hub.publishSession(sess, false)
	}
	writeJSON(w, http.StatusOK, sess)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	ids, err := s.cfg.Store.DeleteSession(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	if s.hub != nil {
		for _, id := range ids {
			s.hub.publishSession(&sessiondb.Session{ID: id}, true)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": ids})
}
