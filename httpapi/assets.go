package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// assets is the web page held in memory, each file also gzipped once.
type assets struct {
	files map[string]*asset
}

type asset struct {
	body, gz []byte
	ctype    string
	etag     string
}

func loadAssets(fsys fs.FS) (*assets, error) {
	a := &assets{files: map[string]*asset{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(body)
		zw.Close()
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		a.files[p] = &asset{body: body, gz: gz.Bytes(), ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	return a, err
}

// serve writes one file, gzipped when the client takes it.
func (a *assets) serve(w http.ResponseWriter, r *http.Request, name string) {
	f, ok := a.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	h.Set("Vary", "Accept-Encoding")
	if r.Header.Get("If-None-Match") == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	_, _ = w.Write(body)
}

// GzipSize returns the gzipped size of the files whose names end in one
// of exts, for the page-weight figure.
func (s *Server) GzipSize(exts ...string) int {
	n := 0
	if s.assets == nil {
		return 0
	}
	for name, f := range s.assets.files {
		for _, e := range exts {
			if strings.HasSuffix(name, e) {
				n += len(f.gz)
			}
		}
	}
	return n
}

// page serves index.html for every URL the page routes itself (/, /s/ID,
// /stats).
func (s *Server) page(w http.ResponseWriter, r *http.Request) { s.assets.serve(w, r, "index.html") }

func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	s.assets.serve(w, r, r.PathValue("file"))
}
