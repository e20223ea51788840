package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb"
)

// TestExportPagesLargeMessagesPageEnd: a page of messages ends at the
// message that brings its text to exportPageBytes, exactly reached here,
// and says more may follow; the next page holds the rest and says none
// does.
func TestExportPagesLargeMessagesPageEnd(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	// content and reasoning both count; reasoning is in no index, so the
	// test writes 16 MiB without tokenizing it.
	r := strings.Repeat("r", exportPageBytes/2-1)
	for _, m := range []sessiondb.NewMessage{
		{SessionID: "s", Role: "assistant", Content: "a", Reasoning: &r},
		{SessionID: "s", Role: "assistant", Content: "b", Reasoning: &r},
		{SessionID: "s", Role: "user", Content: "c"},
	} {
		if _, err := db.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	after := int64(math.MinInt64)
	for i, want := range []struct {
		contents string
		more     bool
	}{
		{"a b", true},
		{"c", false},
	} {
		page, more, err := db.exportMessagePage(ctx, "s", after)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range page {
			got = append(got, fmt.Sprint(m.Content))
		}
		if strings.Join(got, " ") != want.contents || more != want.more {
			t.Fatalf("page %d = %q, more %v; want %q, more %v", i+1, got, more, want.contents, want.more)
		}
		after = page[len(page)-1].ID
	}
}

// TestImportStoreFault: a row SQLite refuses (a constraint, a value of the
// wrong type or too big), bare or as importRefused reports it, is the
// session's fault; any other SQLite error is the store's; an error that
// is not SQLite's is not blamed on the store.
func TestImportStoreFault(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"constraint", sqlite3.Error{Code: sqlite3.ErrConstraint, ExtendedCode: sqlite3.ErrConstraintCheck}, false},
		{"mismatch", sqlite3.Error{Code: sqlite3.ErrMismatch}, false},
		{"too big", sqlite3.Error{Code: sqlite3.ErrTooBig}, false},
		{"refused mismatch", importRefused("s", sqlite3.Error{Code: sqlite3.ErrMismatch}), false},
		{"refused too big", importRefused("s", sqlite3.Error{Code: sqlite3.ErrTooBig}), false},
		{"refused unique", importRefused("s", sqlite3.Error{Code: sqlite3.ErrConstraint, ExtendedCode: sqlite3.ErrConstraintUnique}), false},
		{"I/O error", sqlite3.Error{Code: sqlite3.ErrIoErr}, true},
		{"disk full", sqlite3.Error{Code: sqlite3.ErrFull}, true},
		{"read-only", sqlite3.Error{Code: sqlite3.ErrReadonly}, true},
		{"damaged", sqlite3.Error{Code: sqlite3.ErrCorrupt}, true},
		{"wrapped I/O error", &sessiondb.Error{Code: sessiondb.EINVALID, Err: fmt.Errorf("write: %w", sqlite3.Error{Code: sqlite3.ErrIoErr})}, true},
		{"not SQLite's", &sessiondb.Error{Code: sessiondb.EINVALID, Err: errors.New("bad title")}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (sqliteImport{}).ImportStoreFault(tc.err); got != tc.want {
				t.Errorf("ImportStoreFault(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
