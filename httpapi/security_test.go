package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/httpapi"
	"github.com/sessiondb/sessiondb/internal/servetest"
)

func TestMain(m *testing.M) { servetest.Main(m) }

func TestTokenRequired(t *testing.T) {
	f := newFixture(t, func(c *httpapi.Config) { c.Token = "s3cret-token" })
	for _, path := range []string{"/api/v1/sessions", "/api/v1/search?q=x", "/api/v1/events", "/api/v1/sessions/" + servetest.Docker + "/export"} {
		status, body, h := f.do(t, "GET", path, "")
		if status != 401 || errorCode(t, body) != "unauthorized" || h.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s without a token: %d %s", path, status, body)
		}
		status, _, _ = f.do(t, "GET", path, "", "Authorization", "Bearer wrong")
		if status != 401 {
			t.Errorf("GET %s with a wrong token: %d", path, status)
		}
	}
	status, body, _ := f.do(t, "GET", "/api/v1/sessions", "", "Authorization", "Bearer s3cret-token")
	if status != 200 {
		t.Fatalf("with the token: %d %s", status, body)
	}

	t.Run("login sets an HttpOnly SameSite=Strict cookie", func(t *testing.T) {
		status, _, _ := f.do(t, "POST", "/api/v1/login", `{"token":"nope"}`, httpapi.CSRFHeader, "1")
		if status != 401 {
			t.Fatalf("wrong login: %d", status)
		}
		status, body, h := f.do(t, "POST", "/api/v1/login", `{"token":"s3cret-token"}`, httpapi.CSRFHeader, "1")
		c := h.Get("Set-Cookie")
		if status != 200 || !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Strict") {
			t.Fatalf("login: %d %s cookie %q", status, body, c)
		}
		cookie := strings.SplitN(c, ";", 2)[0]
		status, _, _ = f.do(t, "GET", "/api/v1/sessions", "", "Cookie", cookie)
		if status != 200 {
			t.Fatalf("with the cookie: %d", status)
		}
		status, _, _ = f.do(t, "POST", "/api/v1/login", `{"token":"s3cret-token"}`)
		if status != 403 {
			t.Fatalf("login without the CSRF header: %d", status)
		}
	})
}

func TestHostChecked(t *testing.T) {
	f := newFixture(t, nil)
	for _, host := range []string{"evil.example", "evil.example:8484", "127.0.0.1.nip.io", "192.168.1.9:8484"} {
		status, body, _ := f.do(t, "GET", "/api/v1/sessions", "", "Host", host)
		if status != http.StatusMisdirectedRequest || errorCode(t, body) != "bad_host" {
			t.Errorf("Host %s: %d %s", host, status, body)
		}
	}
	for _, host := range []string{"localhost:8484", "127.0.0.1:1", "[::1]:8484", "app.localhost"} {
		if status, body, _ := f.do(t, "GET", "/api/v1/sessions", "", "Host", host); status != 200 {
			t.Errorf("Host %s: %d %s", host, status, body)
		}
	}
}

// TestCrossOriginMutations: a page on another origin can neither change
// nor delete anything, whichever method it uses.
func TestCrossOriginMutations(t *testing.T) {
	f := newFixture(t, nil)
	reqs := [][2]string{{"POST", "/end"}, {"POST", "/reopen"}, {"PATCH", ""}, {"DELETE", ""}}
	cases := map[string][]string{
		"foreign Origin":         {"Origin", "https://evil.example", httpapi.CSRFHeader, "1"},
		"Sec-Fetch-Site":         {"Sec-Fetch-Site", "cross-site", httpapi.CSRFHeader, "1"},
		"same-site other port":   {"Origin", "http://127.0.0.1:1", "Sec-Fetch-Site", "same-site", httpapi.CSRFHeader, "1"},
		"no CSRF header":         {},
		"no CSRF header, Origin": {"Origin", f.ts.URL},
	}
	for name, hdr := range cases {
		for _, r := range reqs {
			status, body, _ := f.do(t, r[0], "/api/v1/sessions/"+servetest.Docker+r[1], `{"pinned":true}`, hdr...)
			if status != 403 || errorCode(t, body) != "forbidden" {
				t.Errorf("%s: %s %s: %d %s", name, r[0], r[1], status, body)
			}
		}
	}
	if status, body, _ := f.do(t, "PATCH", "/api/v1/sessions/"+servetest.Docker, `{"pinned":true}`,
		"Origin", f.ts.URL, "Sec-Fetch-Site", "same-origin", httpapi.CSRFHeader, "1"); status != 200 {
		t.Fatalf("same-origin PATCH: %d %s", status, body)
	}
}

func TestSecurityHeadersAndLimits(t *testing.T) {
	f := newFixture(t, nil)
	_, _, h := f.do(t, "GET", "/api/v1/sessions", "")
	csp := h.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP = %q", csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers = %v", h)
	}
	status, body, _ := f.do(t, "GET", "/api/v1/search?q="+strings.Repeat("a", 5000), "")
	if status != http.StatusRequestURITooLong || errorCode(t, body) != "too_large" {
		t.Errorf("long query: %d %s", status, body)
	}
	status, body, _ = f.do(t, "GET", "/api/v1/nothing", "")
	if status != 404 || errorCode(t, body) != "not_found" {
		t.Errorf("unknown route: %d %s", status, body)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8484": true, "localhost:1": true, "[::1]:80": true,
		"0.0.0.0:8484": false, ":8484": false, "192.168.1.2:80": false, "example.com:80": false} {
		if got := httpapi.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
}
