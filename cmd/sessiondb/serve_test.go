package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve runs `sessiondb serve args` until the test's work is done, and
// returns the URL it printed, its stdout and its stderr.
func serve(t *testing.T, db string, args ...string) (url string, out, errOut *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut = &syncBuffer{}, &syncBuffer{}
	done := make(chan int)
	go func() {
		done <- Run(ctx, append([]string{"--db", db, "serve"}, args...), strings.NewReader(""), out, errOut)
	}()
	re := regexp.MustCompile(`at (http://\S+/)`)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errOut)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if url == "" {
		t.Fatalf("serve printed no URL: %s %s", out, errOut)
	}
	stop = func() int {
		cancel()
		return <-done
	}
	t.Cleanup(func() { stop() })
	return url, out, errOut, sync.OnceValue(stop)
}

func TestServe(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	mustCLI(t, db, "init")
	url, _, errOut, stop := serve(t, db, "--addr", "127.0.0.1:0", "--read-only")
	resp, err := http.Get(url + "api/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"read_only":true`) {
		t.Fatalf("info: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %v", resp.StatusCode, resp.Header)
	}
	// an open event stream does not hold the shutdown up: were it to, the
	// shutdown would end at its 5 s deadline with an error (exit 1)
	events, err := http.Get(url + "api/v1/events")
	if err != nil || events.StatusCode != 200 {
		t.Fatalf("events: %v %v", events, err)
	}
	defer events.Body.Close()
	if code := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if log := errOut.String(); !strings.Contains(log, `GET "/api/v1/info" 200`) {
		t.Errorf("access log: %s", log)
	}
}

func TestServeToken(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	mustCLI(t, db, "init")

	t.Run("a non-loopback address gets a token printed once", func(t *testing.T) {
		url, out, _, _ := serve(t, db, "--addr", "0.0.0.0:0")
		m := regexp.MustCompile(`token \(shown once\): (\w+)`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no token in %s", out)
		}
		url = strings.Replace(url, "0.0.0.0", "127.0.0.1", 1)
		resp, err := http.Get(url + "api/v1/sessions")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("without the token: %d", resp.StatusCode)
		}
		req, _ := http.NewRequest("GET", url+"api/v1/sessions", nil)
		req.Header.Set("Authorization", "Bearer "+m[1])
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("with the token: %d", resp.StatusCode)
		}
	})

	t.Run("a short token file is refused", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "token")
		os.WriteFile(file, []byte("short\n"), 0o600)
		_, errOut, code := cli(t, db, "", "serve", "--token-file", file)
		if code != exitUsage || !strings.Contains(errOut, "at least 16") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
}
