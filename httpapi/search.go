package httpapi

import (
	"context"
	"net/http"

	"github.com/sessiondb/sessiondb"
)

// sessionBrief is what a search result says about each session it hits,
// so the page can head each group without a request per session.
type sessionBrief struct {
	Title     *string  `json:"title"`
	Source    string   `json:"source"`
	Model     *string  `json:"model"`
	StartedAt float64  `json:"started_at"`
	EndedAt   *float64 `json:"ended_at"`
	Messages  int64    `json:"message_count"`
}

// search serves GET /api/v1/search: {"hits": [...]} with each hit exactly
// as `sessiondb search --json` prints it (">>>"/"<<<" marking the matches),
// and "sessions", a brief of every session hit.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := &query{r: r}
	text := q.str("q")
	o := sessiondb.SearchOptions{
		Sources:        q.list("source"),
		ExcludeSources: q.list("exclude_source"),
		Roles:          q.list("role"),
		Sort:           q.oneOf("sort", "rank", "rank", "newest", "oldest"),
		Limit:          int(q.int("limit", sessiondb.DefaultSearchLimit, 1, maxSearchSize)),
		Offset:         int(q.int("offset", 0, 0, 1<<31-1)),
	}
	if q.err == nil && text == "" {
		q.err = sessiondb.Errorf(sessiondb.EINVALID, "q is required")
	}
	if q.err != nil {
		writeError(w, q.err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), sessiondb.DefaultSearchTimeout)
	defer cancel()
	hits, err := s.cfg.Store.Search(ctx, text, o)
	if err != nil {
		writeError(w, err)
		return
	}
	if hits == nil {
		hits = []sessiondb.SearchHit{}
	}
	briefs := map[string]sessionBrief{}
	for _, h := range hits {
		if _, ok := briefs[h.SessionID]; ok {
			continue
		}
		sess, err := s.cfg.Store.Session(ctx, h.SessionID)
		if err != nil {
			if sessiondb.ErrorCode(err) == sessiondb.ENOTFOUND {
				continue
			}
			writeError(w, err)
			return
		}
		briefs[h.SessionID] = sessionBrief{sess.Title, sess.Source, sess.Model, sess.StartedAt, sess.EndedAt, sess.MessageCount}
	}
	writeJSON(w, http.StatusOK, map[string]any{"hits": hits, "sessions": briefs})
}
