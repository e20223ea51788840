// Package web is the page `sessiondb serve` serves: hand-written HTML, CSS
// and ES modules embedded in the binary, so the page works offline and
// `go build` needs no Node. See DESIGN.md.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// FS returns the page's files: index.html at the root, the rest beside it
// (served under /assets/).
func FS() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}
