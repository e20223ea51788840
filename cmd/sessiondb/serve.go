package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/httpapi"
	"github.com/sessiondb/sessiondb/web"
)

func newServeCommand() *command {
	var (
		addr, tokenFile string
		readOnly, open  bool
		allowHosts      stringList
	)
	return &command{
		name:     "serve",
		synopsis: "serve the database as a web page and a JSON API (live, local by default)",
		usage: `Usage: sessiondb [--db PATH] serve [--addr HOST:PORT] [--read-only] [--token-file PATH]
                 [--allow-host NAME]... [--open]

Serves a web page to browse, search and watch the sessions (everything is
in the binary: no network beyond this server), the JSON API under /api/v1
(its OpenAPI document at /api/v1/openapi.json) and live changes, including
those Hermes writes, as Server-Sent Events at /api/v1/events. Ctrl-C stops
it after the running requests end. Each request is logged on stderr.

Safe by default: it listens on 127.0.0.1 only. Another address needs a
token, read from --token-file or else generated and printed once; the page
asks for it and keeps it in an HttpOnly cookie, scripts send it as
"Authorization: Bearer TOKEN". Requests naming another Host are refused
(DNS rebinding), and changes need a same-origin request with the
X-Sessiondb header.

Options:
  --addr HOST:PORT     where to listen (default 127.0.0.1:8484; port 0 picks one)
  --read-only          open the database read-only: no renaming, pinning, ending or deleting
  --token-file PATH    require the token in this file (its first line)
  --allow-host NAME    also answer to this Host name (repeatable), e.g. a reverse proxy's
  --open               open the page in the browser

Examples:
  sessiondb serve --open
  sessiondb serve --read-only --addr 0.0.0.0:8484 --token-file ~/.config/sessiondb/token
`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&addr, "addr", "127.0.0.1:8484", "")
			fs.BoolVar(&readOnly, "read-only", false, "")
			fs.StringVar(&tokenFile, "token-file", "", "")
			fs.BoolVar(&open, "open", false, "")
			fs.Var(&allowHosts, "allow-host", "")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("serve takes no arguments")
			}
			token, generated, err := serveToken(tokenFile, addr)
			if err != nil {
				return err
			}
			var store sessiondb.Store
			if readOnly {
				store, err = e.openRead(ctx)
			} else {
				store, err = e.openWrite(ctx, false)
			}
			if err != nil {
				return err
			}
			defer store.Close()
			srv, err := httpapi.New(httpapi.Config{Store: store, ReadOnly: readOnly, Token: token, Addr: addr,
				AllowedHosts: allowHosts, Assets: web.FS(), AccessLog: e.stderr})
			if err != nil {
				return err
			}
			if err := srv.Open(); err != nil {
				return sessiondb.Errorf(sessiondb.EUNAVAILABLE, "listen on %s: %v", addr, err)
			}
			url := "http://" + srv.Addr() + "/"
			mode := ""
			if readOnly {
				mode = " (read-only)"
			}
			fmt.Fprintf(e.stdout, "sessiondb: serving %s%s at %s\n", dbName(e), mode, url)
			if generated {
				fmt.Fprintf(e.stdout, "sessiondb: token (shown once): %s\n  open %s#token=%s to log in\n", token, url, token)
				url += "#token=" + token
			}
			if open {
				if err := openBrowser(url); err != nil {
					fmt.Fprintf(e.stderr, "sessiondb: cannot open a browser (%v); open %s\n", err, url)
				}
			}
			<-ctx.Done()
			fmt.Fprintln(e.stderr, "sessiondb: stopping")
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Close(sctx)
		},
	}
}

// serveToken returns the token a server on addr requires: the first line
// of file, else for a non-loopback address a new random one (generated is
// then true), else none.
func serveToken(file, addr string) (token string, generated bool, err error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", false, sessiondb.Errorf(sessiondb.EINVALID, "--token-file: %v", err)
		}
		token, _, _ = strings.Cut(string(b), "\n")
		if token = strings.TrimSpace(token); len(token) < 16 {
			return "", false, sessiondb.Errorf(sessiondb.EINVALID, "--token-file %s: the token must be at least 16 characters", file)
		}
		return token, false, nil
	}
	if httpapi.IsLoopback(addr) {
		return "", false, nil
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false, err
	}
	return hex.EncodeToString(b[:]), true, nil
}

func dbName(e *env) string {
	l, err := e.where()
	if err != nil {
		return "the database"
	}
	return l.String()
}

// openBrowser opens url with the desktop's opener.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	return cmd.Start()
}
