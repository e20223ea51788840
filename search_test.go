package sessiondb_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb"
)

func TestCheckSearchFields(t *testing.T) {
	if got, err := sessiondb.CheckSearchFields(nil); got != nil || err != nil {
		t.Errorf("CheckSearchFields(nil) = %v, %v; want nil (every field)", got, err)
	}
	// Canonical order whatever the order asked, duplicates once.
	got, err := sessiondb.CheckSearchFields([]string{"snippet", "id", "snippet", "context"})
	if err != nil || !reflect.DeepEqual(got, []string{"id", "snippet", "context"}) {
		t.Errorf("CheckSearchFields = %v, %v; want [id snippet context]", got, err)
	}
	_, err = sessiondb.CheckSearchFields([]string{"id", "zeta", "alpha"})
	if sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Fatalf("unknown fields: %v, want EINVALID", err)
	}
	if !strings.Contains(err.Error(), "alpha, zeta") || !strings.Contains(err.Error(), strings.Join(sessiondb.SearchFields, ", ")) {
		t.Errorf("error %q does not name the unknown fields sorted and the known ones", err)
	}
}

func TestSearchHitSelect(t *testing.T) {
	snip := "s"
	h := sessiondb.SearchHit{ID: 7, SessionID: "sid", Role: "user", Snippet: &snip, Timestamp: 1.5, Source: "cli", SessionStarted: 1}
	all := h.Select(nil)
	if len(all) != len(sessiondb.SearchFields) {
		t.Errorf("Select(nil) has %d fields, want %d", len(all), len(sessiondb.SearchFields))
	}
	for _, f := range sessiondb.SearchFields {
		if _, ok := all[f]; !ok {
			t.Errorf("Select(nil) lacks %s", f)
		}
	}
	some := h.Select([]string{"id", "source"})
	if !reflect.DeepEqual(some, map[string]any{"id": int64(7), "source": "cli"}) {
		t.Errorf("Select(id, source) = %v", some)
	}
}

func TestClipText(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 4, "hell"},
		{"hello", 0, ""},
		{"héllo", 2, "hé"}, // characters, not bytes
		{"héllo", 5, "héllo"},
		{"日本語", 2, "日本"},
		{"日本語", 3, "日本語"},
	} {
		if got := sessiondb.ClipText(tt.in, tt.n); got != tt.want {
			t.Errorf("ClipText(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	inner := errors.New("disk I/O error")
	for _, tt := range []struct {
		e    *sessiondb.Error
		want string
	}{
		{&sessiondb.Error{Code: sessiondb.EINTERNAL, Err: inner}, "disk I/O error"},
		{&sessiondb.Error{Code: sessiondb.EINTERNAL, Err: inner, Message: "append: disk full"}, "append: disk full"},
		{&sessiondb.Error{Code: sessiondb.EINVALID, Message: "bad id"}, "bad id"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
}
