package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// statusOf maps sessiondb's error codes to HTTP statuses: the one place
// the mapping is written.
var statusOf = map[string]int{
	sessiondb.ENOTFOUND:    http.StatusNotFound,
	sessiondb.EINVALID:     http.StatusBadRequest,
	sessiondb.ECONFLICT:    http.StatusConflict,
	sessiondb.EBUSY:        http.StatusServiceUnavailable,
	sessiondb.EUNAVAILABLE: http.StatusServiceUnavailable,
	sessiondb.ETIMEOUT:     http.StatusGatewayTimeout,
	sessiondb.EPERM:        http.StatusForbidden,
	sessiondb.ECORRUPT:     http.StatusInternalServerError,
	sessiondb.EINTERNAL:    http.StatusInternalServerError,
}

// Error codes of this package, beside sessiondb's.
const (
	codeUnauthorized   = "unauthorized"
	codeForbidden      = "forbidden"
	codeBadHost        = "bad_host"
	codeReadOnly       = "read_only"
	codeTooLarge       = "too_large"
	codeNotImplemented = "not_implemented"
	codeTooMany        = "too_many"
)

// apiError is an error with its own HTTP status, for failures of the
// request rather than of the store.
type apiError struct {
	status        int
	code, message string
}

func (e *apiError) Error() string { return e.message }

func errorBody(code, message string) map[string]any {
	return map[string]any{"error": map[string]string{"code": code, "message": message}}
}

// writeError writes err as {"error":{"code","message"}} with its status.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		writeJSON(w, ae.status, errorBody(ae.code, ae.message))
		return
	}
	if errors.Is(err, context.DeadlineExceeded) && sessiondb.ErrorCode(err) == sessiondb.EINTERNAL {
		err = sessiondb.Errorf(sessiondb.ETIMEOUT, "the request took longer than its time limit")
	}
	code := sessiondb.ErrorCode(err)
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	writeJSON(w, status, errorBody(code, err.Error()))
}

// writeJSON writes v as JSON the way the CLI's --json does (no HTML
// escaping: the page never turns text into HTML).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing to tell it
}

// readJSON decodes the request body (bounded by the limits middleware)
// into v, refusing unknown fields.
func readJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{http.StatusRequestEntityTooLarge, codeTooLarge, "the request body is larger than " + strconv.FormatInt(mbe.Limit, 10) + " bytes"}
		}
		return sessiondb.Errorf(sessiondb.EINVALID, "request body: %v", err)
	}
	return nil
}

// query reads the query parameters of one request.
type query struct {
	r   *http.Request
	err error
}

func (q *query) str(name string) string { return q.r.URL.Query().Get(name) }

// list returns a repeatable parameter; each value may also hold a comma
// separated list.
func (q *query) list(name string) []string {
	var out []string
	for _, v := range q.r.URL.Query()[name] {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// int returns an integer parameter within [lo, hi], def when absent.
func (q *query) int(name string, def, lo, hi int64) int64 {
	s := q.str(name)
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		if q.err == nil {
			q.err = sessiondb.Errorf(sessiondb.EINVALID, "%s=%q: want a whole number from %d to %d", name, s, lo, hi)
		}
		return def
	}
	return n
}

// bool returns a flag parameter: 1/true/yes or 0/false/no.
func (q *query) bool(name string) bool {
	switch strings.ToLower(q.str(name)) {
	case "", "0", "false", "no":
		return false
	case "1", "true", "yes":
		return true
	}
	if q.err == nil {
		q.err = sessiondb.Errorf(sessiondb.EINVALID, "%s=%q: want 1 or 0", name, q.str(name))
	}
	return false
}

// oneOf returns a parameter that must be one of allowed ("" is def).
func (q *query) oneOf(name, def string, allowed ...string) string {
	s := q.str(name)
	if s == "" {
		return def
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	if q.err == nil {
		q.err = sessiondb.Errorf(sessiondb.EINVALID, "%s=%q: want one of %s", name, s, strings.Join(allowed, ", "))
	}
	return def
}
