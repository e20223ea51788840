package httpapi

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sessiondb/sessiondb"
)

// UsageReporter is the optional interface of a Store that totals tokens,
// API calls and cost (sessiondb.UsageReporter; both stores have it).
type UsageReporter = sessiondb.UsageReporter

// DailyUsageReporter is the optional interface of a Store that totals
// usage per day and model in one call: a map from the day (2026-05-01) to
// one row per model (Key the model). The SQLite store has it.
type DailyUsageReporter interface {
	DailyModelUsage(ctx context.Context, since float64) (map[string][]sessiondb.UsageRow, error)
}

// ChangeFeed is the optional interface of a Store that reports what other
// writers (and other processes) commit, so /api/v1/events can push it
// without rescanning tables. The SQLite store implements it with PRAGMA
// data_version and id high-water marks (sqlite/changes.go).
type ChangeFeed interface {
	// DataVersion returns a number that changes whenever a change is
	// committed by any writer; it must be cheap (it is asked about four
	// times a second).
	DataVersion(ctx context.Context) (int64, error)
	// ChangeHead returns the newest message id and the session cursor: the
	// position from which only new changes are reported.
	ChangeHead(ctx context.Context) (lastMessageID, sessionSeq int64, err error)
	// Changes returns up to limit messages with an id above afterMessageID
	// in id order (Content a short text preview), the sessions created
	// after afterSessionSeq, those of the returned messages and a window of
	// the most recently active ones, and the next session cursor.
	Changes(ctx context.Context, afterMessageID, afterSessionSeq int64, limit int) ([]*sessiondb.Message, []*sessiondb.Session, int64, error)
}

// Config configures a Server.
type Config struct {
	// Store is what the API serves. Required.
	Store sessiondb.Store
	// ReadOnly refuses every mutation with 405 (the store should be opened
	// read-only as well).
	ReadOnly bool
	// Token, when not empty, is required on every API request: as
	// "Authorization: Bearer TOKEN" or through the cookie POST
	// /api/v1/login sets.
	Token string
	// Addr is the address to listen on (Open); default 127.0.0.1:8484.
	Addr string
	// AllowedHosts are host names accepted in the Host header beside the
	// loopback names and the listen address.
	AllowedHosts []string
	// Assets is the web page (index.html and its files); nil serves the API
	// alone.
	Assets fs.FS
	// AccessLog receives one line per request; nil logs nothing.
	AccessLog io.Writer
	// PollInterval is how often the event stream asks the store whether
	// anything changed; default 250ms.
	PollInterval time.Duration
	// RequestTimeout bounds the time of one request (not the event
	// stream); default 30s.
	RequestTimeout time.Duration
	// MaxEventClients bounds the open event streams; default 256.
	MaxEventClients int
}

// Limits every request is held to.
const (
	maxBodyBytes  = 1 << 20 // a PATCH or login body
	maxQueryBytes = 4096    // the raw query string
	maxPageSize   = 1000    // messages per page
	maxListSize   = 200     // sessions per page
	maxSearchSize = 200     // hits per page
)

// Server is the HTTP server of one store.
type Server struct {
	cfg     Config
	handler http.Handler
	routes  []route
	hub     *hub
	assets  *assets

	mu      sync.Mutex
	ln      net.Listener
	srv     *http.Server
	streams int
}

// route is one API route: the pattern as http.ServeMux reads it and
// whether it changes the store.
type route struct {
	method, path string
	mutates      bool
	h            http.HandlerFunc
}

// New returns a server for cfg; it listens only after Open.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("httpapi: Config.Store is required")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8484"
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.MaxEventClients <= 0 {
		cfg.MaxEventClients = 256
	}
	s := &Server{cfg: cfg}
	if feed, ok := cfg.Store.(ChangeFeed); ok {
		s.hub = newHub(feed, cfg.PollInterval)
	}
	if cfg.Assets != nil {
		a, err := loadAssets(cfg.Assets)
		if err != nil {
			return nil, err
		}
		s.assets = a
	}
	s.routes = []route{
		{"GET", "/api/v1/info", false, s.info},
		{"POST", "/api/v1/login", false, s.login},
		{"POST", "/api/v1/logout", false, s.logout},
		{"GET", "/api/v1/openapi.json", false, s.openapi},
		{"GET", "/api/v1/sessions", false, s.listSessions},
		{"GET", "/api/v1/sessions/{id}", false, s.getSession},
		{"GET", "/api/v1/sessions/{id}/messages", false, s.messages},
		{"GET", "/api/v1/sessions/{id}/lineage", false, s.lineage},
		{"GET", "/api/v1/sessions/{id}/export", false, s.export},
		{"PATCH", "/api/v1/sessions/{id}", true, s.patchSession},
		{"POST", "/api/v1/sessions/{id}/end", true, s.endSession},
		{"POST", "/api/v1/sessions/{id}/reopen", true, s.reopenSession},
		{"DELETE", "/api/v1/sessions/{id}", true, s.deleteSession},
		{"GET", "/api/v1/search", false, s.search},
		{"GET", "/api/v1/stats", false, s.stats},
		{"GET", "/api/v1/stats/costliest", false, s.costliest},
		{"GET", "/api/v1/events", false, s.events},
	}
	mux := http.NewServeMux()
	for _, rt := range s.routes {
		h := rt.h
		if rt.mutates && cfg.ReadOnly {
			h = func(w http.ResponseWriter, r *http.Request) {
				writeError(w, &apiError{http.StatusMethodNotAllowed, codeReadOnly, "the server is read-only (--read-only)"})
			}
		}
		mux.HandleFunc(rt.method+" "+rt.path, h)
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, sessiondb.Errorf(sessiondb.ENOTFOUND, "no API route %s %s", r.Method, r.URL.Path))
	})
	if s.assets != nil {
		mux.HandleFunc("GET /{$}", s.page)
		mux.HandleFunc("GET /s/{id}", s.page)
		mux.HandleFunc("GET /stats", s.page)
		mux.HandleFunc("GET /assets/{file...}", s.asset)
	}
	s.handler = s.middleware(mux)
	return s, nil
}

// ServeHTTP serves one request through the security middleware.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Open listens on Config.Addr and serves in the background; Addr then
// reports the bound address (useful with port 0).
func (s *Server) Open() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	s.mu.Lock()
	s.ln, s.srv = ln, srv
	s.cfg.Addr = ln.Addr().String()
	s.mu.Unlock()
	go srv.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed after Close
	return nil
}

// Addr returns the listen address (after Open, the bound one).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Addr
}

// Close ends the event streams, then shuts the listener down gracefully,
// waiting for running requests until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	if s.hub != nil {
		s.hub.close()
	}
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	_, usage := s.cfg.Store.(UsageReporter)
	_, daily := s.cfg.Store.(DailyUsageReporter)
	_, costs := s.cfg.Store.(sessiondb.CostRanker)
	writeJSON(w, http.StatusOK, map[string]any{
		"read_only":       s.cfg.ReadOnly,
		"auth":            s.cfg.Token != "",
		"events":          s.hub != nil,
		"stats":           usage,
		"stats_day_model": usage && daily,
		"stats_costliest": costs,
	})
}

// Routes lists the API routes as "METHOD /path/{param}".
func (s *Server) Routes() []string {
	out := make([]string, len(s.routes))
	for i, r := range s.routes {
		out[i] = r.method + " " + r.path
	}
	return out
}
