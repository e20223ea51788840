package postgres

import (
	"reflect"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// PostgreSQL text cannot hold the NUL character, which sessiondb stores
// (ContentJSONPrefix starts with one, and message text may carry them).
// Text is escaped on the way in and unescaped on the way out with the
// private-use character U+E000 as the escape: NUL is stored as U+E000 '0'
// and U+E000 itself as U+E000 '1'; nothing else changes, so searches and
// ILIKE see the text as it is.
const (
	escChar = "\ue000"
	escNUL  = escChar + "0"
	escEsc  = escChar + "1"
)

var (
	escaper   = strings.NewReplacer(escChar, escEsc, "\x00", escNUL)
	unescaper = strings.NewReplacer(escEsc, escChar, escNUL, "\x00")
)

// toPG escapes s for a text column.
func toPG(s string) string {
	if !strings.Contains(s, "\x00") && !strings.Contains(s, escChar) {
		return s
	}
	return escaper.Replace(s)
}

// fromPG reverses toPG.
func fromPG(s string) string {
	if !strings.Contains(s, escChar) {
		return s
	}
	return unescaper.Replace(s)
}

// fromPGPtr reverses toPG on a nullable column.
func fromPGPtr(s *string) *string {
	if s == nil {
		return nil
	}
	v := fromPG(*s)
	return &v
}

// fromPGStruct reverses toPG on every string and *string field of the
// struct p points to (a scanned row).
func fromPGStruct(p any) {
	v := reflect.ValueOf(p).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch {
		case f.Kind() == reflect.String:
			f.SetString(fromPG(f.String()))
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.String && !f.IsNil():
			f.Elem().SetString(fromPG(f.Elem().String()))
		}
	}
}

// textArg is a text argument: "" is NULL, anything else scrubbed to valid
// UTF-8 and escaped.
func textArg(s string) any {
	if s == "" {
		return nil
	}
	return toPG(sessiondb.ScrubText(s))
}

// text scrubs and escapes a NOT NULL text argument.
func text(s string) string { return toPG(sessiondb.ScrubText(s)) }
