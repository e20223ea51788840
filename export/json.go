package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/sessiondb/sessiondb"
)

// NewJSONL returns an encoder that writes each item as one line of JSON:
// the session's columns, then "messages" (and, for a lineage, "segments"
// and "lineage_session_ids"), as Hermes' export_session and
// export_session_lineage build them. Messages are written as they are read,
// so the line is never held in memory, and a message's long text is
// escaped as it is written (WriteJSON).
func NewJSONL(w io.Writer, o Options) Encoder {
	return &jsonEncoder{w: bufio.NewWriterSize(w, 64<<10), o: o}
}

// NewJSON returns an encoder that writes the items as one JSON array
// indented by two spaces, byte for byte what json.MarshalIndent would
// produce for the same values, without holding them in memory.
func NewJSON(w io.Writer, o Options) Encoder {
	return &jsonEncoder{w: bufio.NewWriterSize(w, 64<<10), o: o, indent: true}
}

type jsonEncoder struct {
	w      *bufio.Writer
	o      Options
	indent bool // an indented array (json) instead of one line per item (jsonl)
	n      int  // items written
	buf    bytes.Buffer
}

const indentUnit = "  "

func (e *jsonEncoder) Encode(it *Item) error {
	if e.indent {
		if e.n == 0 {
			e.w.WriteByte('[')
		} else {
			e.w.WriteByte(',')
		}
		e.newline(indentUnit)
		if err := e.item(it, indentUnit); err != nil {
			return err
		}
	} else {
		if err := e.item(it, ""); err != nil {
			return err
		}
		e.w.WriteByte('\n')
	}
	e.n++
	return e.w.Flush()
}

func (e *jsonEncoder) Close() error {
	if e.indent {
		if e.n == 0 {
			e.w.WriteString("[]\n")
		} else {
			e.w.WriteString("\n]\n")
		}
	}
	return e.w.Flush()
}

// item writes one object whose opening brace sits at indentation prefix.
func (e *jsonEncoder) item(it *Item, prefix string) error {
	if it.Session == nil {
		return sessiondb.Errorf(sessiondb.EINVALID, "export: an item without a session")
	}
	s := it.Session
	if e.o.Redact {
		s = RedactSession(s)
	}
	head, err := e.marshal(s, prefix)
	if err != nil {
		return fmt.Errorf("export session %q: %w", s.ID, err)
	}
	// The session's own closing brace is dropped; the streamed fields follow.
	closing := "}"
	if e.indent {
		closing = "\n" + prefix + "}"
	}
	head, ok := bytes.CutSuffix(head, []byte(closing))
	if !ok {
		return fmt.Errorf("export session %q: unexpected JSON for a session", s.ID)
	}
	e.w.Write(head)

	e.field("messages", prefix)
	if err := e.messages(it.Messages, prefix+indentUnit); err != nil {
		return fmt.Errorf("export session %q: %w", s.ID, err)
	}
	if it.Segments != nil {
		e.field("segments", prefix)
		e.w.WriteByte('[')
		ids := make([]string, len(it.Segments))
		for i := range it.Segments {
			if i > 0 {
				e.w.WriteByte(',')
			}
			e.newline(prefix + indentUnit + indentUnit)
			if err := e.item(&it.Segments[i], prefix+indentUnit+indentUnit); err != nil {
				return err
			}
			ids[i] = it.Segments[i].Session.ID
		}
		if len(ids) > 0 {
			e.newline(prefix + indentUnit)
		}
		e.w.WriteByte(']')
		e.field("lineage_session_ids", prefix)
		b, err := e.marshal(ids, prefix+indentUnit)
		if err != nil {
			return err
		}
		e.w.Write(b)
	}
	e.newline(prefix)
	e.w.WriteByte('}')
	return nil
}

// messages writes a JSON array of msgs whose opening bracket sits at
// indentation prefix.
func (e *jsonEncoder) messages(msgs Messages, prefix string) error {
	e.w.WriteByte('[')
	n := 0
	if msgs != nil {
		for m, err := range msgs {
			if err != nil {
				return err
			}
			if e.o.Redact {
				m = RedactMessage(m)
			}
			if n > 0 {
				e.w.WriteByte(',')
			}
			e.newline(prefix + indentUnit)
			indent := ""
			if e.indent {
				indent = indentUnit
			}
			if err := WriteJSON(e.w, m, prefix+indentUnit, indent); err != nil {
				return fmt.Errorf("message %d: %w", m.ID, err)
			}
			n++
		}
	}
	if n > 0 {
		e.newline(prefix)
	}
	e.w.WriteByte(']')
	return nil
}

// field starts the next member of an object whose brace sits at prefix.
func (e *jsonEncoder) field(name, prefix string) {
	e.w.WriteByte(',')
	e.newline(prefix + indentUnit)
	e.w.WriteString(`"` + name + `":`)
	if e.indent {
		e.w.WriteByte(' ')
	}
}

func (e *jsonEncoder) newline(prefix string) {
	if e.indent {
		e.w.WriteByte('\n')
		e.w.WriteString(prefix)
	}
}

// marshal encodes v without HTML escaping (transcripts are full of <, >
// and &), indented for a value that sits at prefix when the encoder
// indents. The result is valid until the next call.
func (e *jsonEncoder) marshal(v any, prefix string) ([]byte, error) {
	e.buf.Reset()
	enc := json.NewEncoder(&e.buf)
	enc.SetEscapeHTML(false)
	if e.indent {
		enc.SetIndent(prefix, indentUnit)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")), nil
}
