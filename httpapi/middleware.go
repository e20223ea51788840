package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// csp lets the page load its own script, style and images and nothing else:
// no inline script, no inline style attribute sinks, no remote origin.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// CSRFHeader must be present on every request that changes something: a
// page on another origin cannot send it without a CORS preflight, which
// this server never approves.
const CSRFHeader = "X-Sessiondb"

// cookieName holds the token after POST /api/v1/login.
const cookieName = "sessiondb_token"

// middleware wraps the routes with, in order: the access log, security
// headers, the Host check, request limits, authentication and the
// same-origin check of mutations.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		lw := &logWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if s.cfg.AccessLog != nil {
				fmt.Fprintf(s.cfg.AccessLog, "%s %s %s %q %d %d %s\n", start.UTC().Format(time.RFC3339),
					r.RemoteAddr, r.Method, r.URL.RequestURI(), lw.status, lw.bytes, time.Since(start).Round(time.Microsecond))
			}
		}()
		h := lw.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !s.hostAllowed(r.Host) {
			writeError(lw, &apiError{http.StatusMisdirectedRequest, codeBadHost, "the Host header " + fmt.Sprintf("%q", r.Host) + " is not one this server answers to"})
			return
		}
		if len(r.URL.RawQuery) > maxQueryBytes {
			writeError(lw, &apiError{http.StatusRequestURITooLong, codeTooLarge, fmt.Sprintf("the query string is longer than %d bytes", maxQueryBytes)})
			return
		}
		r.Body = http.MaxBytesReader(lw, r.Body, maxBodyBytes)
		api := strings.HasPrefix(r.URL.Path, "/api/")
		if api && !s.authorized(r) && r.URL.Path != "/api/v1/login" {
			lw.Header().Set("WWW-Authenticate", `Bearer realm="sessiondb"`)
			writeError(lw, &apiError{http.StatusUnauthorized, codeUnauthorized, "a token is needed: send Authorization: Bearer TOKEN or log in"})
			return
		}
		if mutating(r.Method) {
			if err := sameOrigin(r); err != nil {
				writeError(lw, err)
				return
			}
		}
		if r.URL.Path != "/api/v1/events" {
			ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
			defer cancel()
			r = r.WithContext(ctx)
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.RequestTimeout + 5*time.Second))
		}
		next.ServeHTTP(lw, r)
	})
}

func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// sameOrigin refuses a mutation another origin may have sent: it must
// carry CSRFHeader, and its Origin (when the browser sends one) must be
// this server and its Sec-Fetch-Site same-origin.
func sameOrigin(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return &apiError{http.StatusForbidden, codeForbidden, "cross-site request refused (Sec-Fetch-Site: " + site + ")"}
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return &apiError{http.StatusForbidden, codeForbidden, "cross-origin request refused (Origin: " + o + ")"}
		}
	}
	if r.Header.Get(CSRFHeader) == "" {
		return &apiError{http.StatusForbidden, codeForbidden, "a request that changes something needs the " + CSRFHeader + " header"}
	}
	return nil
}

// authorized reports whether r carries the token (always true without
// one).
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return s.tokenMatches(strings.TrimSpace(a[7:]))
	}
	if c, err := r.Cookie(cookieName); err == nil {
		return s.tokenMatches(c.Value)
	}
	return false
}

// tokenMatches compares in constant time (hashes first, so the length
// does not leak either).
func (s *Server) tokenMatches(t string) bool {
	a, b := sha256.Sum256([]byte(t)), sha256.Sum256([]byte(s.cfg.Token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// hostAllowed is the DNS-rebinding check: a page on evil.example whose
// name resolves to 127.0.0.1 reaches this server with Host: evil.example.
// Accepted are the loopback names, the listen host and AllowedHosts; a
// server bound to every interface (0.0.0.0, ::), which requires a token,
// accepts any name.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" {
		return false
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	bind, _, _ := net.SplitHostPort(s.Addr())
	bind = strings.ToLower(strings.Trim(bind, "[]"))
	if ip := net.ParseIP(bind); bind == "" || (ip != nil && ip.IsUnspecified()) {
		return s.cfg.Token != ""
	}
	if host == bind {
		return true
	}
	for _, a := range s.cfg.AllowedHosts {
		if strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// IsLoopback reports whether a listen address binds only the loopback
// interface ("localhost:N", "127.0.0.1:N", "[::1]:N").
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// login checks the token of {"token": "..."} and sets it as an HttpOnly,
// SameSite=Strict cookie, so the page needs no token in script.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Token string `json:"token"`
	}
	if err := readJSON(r, &body); err != nil {
		writeError(w, err)
		return
	}
	if s.cfg.Token == "" {
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
		return
	}
	if !s.tokenMatches(body.Token) {
		writeError(w, &apiError{http.StatusUnauthorized, codeUnauthorized, "wrong token"})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: body.Token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// logWriter records the status and size for the access log and passes
// Flush through for the event stream.
type logWriter struct {
	http.ResponseWriter
	status, bytes int
	wrote         bool
}

func (l *logWriter) WriteHeader(code int) {
	if !l.wrote {
		l.status, l.wrote = code, true
	}
	l.ResponseWriter.WriteHeader(code)
}

func (l *logWriter) Write(b []byte) (int, error) {
	l.wrote = true
	n, err := l.ResponseWriter.Write(b)
	l.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (l *logWriter) Unwrap() http.ResponseWriter { return l.ResponseWriter }
