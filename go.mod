module github.com/sessiondb/sessiondb

go 1.26.8

require (
	github.com/mattn/go-sqlite3 v1.14.53
	golang.org/x/term v0.48.0
)

require golang.org/x/sys v0.50.0 // indirect
