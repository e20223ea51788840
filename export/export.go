// Package export writes sessions and their messages in three formats:
// JSON Lines (the format of Hermes' export_session and export_all: one
// object per session, every sessions column plus "messages"), an indented
// JSON array of the same objects, and a readable Markdown transcript.
//
// Encoders stream: a session's messages are read from an iterator while
// they are written, so exporting a session of any length holds one message
// at a time (plus whatever page the iterator reads ahead). The package
// imports only the standard library and the sessiondb domain; storage
// backends supply the sessions and the message iterators.
package export

import (
	"io"
	"iter"

	"github.com/sessiondb/sessiondb"
)

// Messages is a session's messages in transcript order, read lazily. An
// error ends the sequence. Ranging over it again reads the messages again.
type Messages = iter.Seq2[*sessiondb.Message, error]

// Item is one exported object. For a single session (Hermes'
// export_session) Session is the row and Messages its active messages. For
// a compression lineage (export_session_lineage) Session is the last
// segment with MessageCount summed over all segments, Messages concatenates
// the segments' messages root first, and Segments holds every segment with
// its own messages.
type Item struct {
	Session  *sessiondb.Session
	Messages Messages
	Segments []Item
}

// ItemOf is the item of what a store exported (sessiondb.Exporter).
func ItemOf(x *sessiondb.ExportedSession) Item {
	it := Item{Session: x.Session, Messages: x.Messages}
	if x.Segments != nil {
		it.Segments = make([]Item, len(x.Segments))
		for i := range x.Segments {
			it.Segments[i] = ItemOf(&x.Segments[i])
		}
	}
	return it
}

// Options modify an encoder.
type Options struct {
	// Redact masks secrets (see Redact) in every message's text, tool calls
	// and reasoning, and in the session's system prompt, model config and
	// origin.
	Redact bool
}

// Encoder writes items to a stream.
type Encoder interface {
	// Encode writes one item. On error the output may end in the middle of
	// the item.
	Encode(it *Item) error
	// Close finishes the stream (a JSON array's closing bracket) and
	// flushes it; it does not close the underlying writer.
	Close() error
}

// Formats lists the format names NewEncoder accepts.
var Formats = []string{"jsonl", "json", "md"}

// NewEncoder returns the encoder for format: "jsonl", "json", or "md"
// (also "markdown").
func NewEncoder(format string, w io.Writer, o Options) (Encoder, error) {
	switch format {
	case "jsonl":
		return NewJSONL(w, o), nil
	case "json":
		return NewJSON(w, o), nil
	case "md", "markdown":
		return NewMarkdown(w, o), nil
	}
	return nil, sessiondb.Errorf(sessiondb.EINVALID, "unknown export format %q: want jsonl, json or md", format)
}
