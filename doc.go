// Package sessiondb holds the domain of a Hermes-compatible session store:
// sessions, messages, the Store contract that storage backends implement, the
// error codes they return, and pure helpers that every backend shares (text
// scrubbing, content encoding, id generation).
//
// It imports only the standard library. The SQLite implementation lives in
// the sqlite subpackage; cmd/sessiondb wires it into a command-line tool.
package sessiondb
