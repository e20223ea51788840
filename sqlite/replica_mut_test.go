package sqlite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// TestUpgradedCopyKeepsTheIdentity: the copy of a file with an identity
// keeps its generation token and application_id (the copy stands for the
// same database).
func TestUpgradedCopyKeepsTheIdentity(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	MustOpenPath(t, src).Close()
	dst := filepath.Join(t.TempDir(), "copy.db")
	if err := sqlite.UpgradedCopy(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	token := func(path string) (string, int) {
		raw := rawDB(t, path)
		var tok string
		if err := raw.QueryRow("SELECT value FROM state_meta WHERE key = 'db_file_generation'").Scan(&tok); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return tok, count(t, raw, "PRAGMA application_id")
	}
	st, sa := token(src)
	dt, da := token(dst)
	if st == "" || dt != st || da != sa {
		t.Errorf("copy: token %q, application_id %d; source: %q, %d", dt, da, st, sa)
	}
}

// TestSnapshotRows: a snapshot's reads call back with every row asked for,
// in id order, from the given id on and up to the limit, and stop at the
// first error of the callback, returning it.
func TestSnapshotRows(t *testing.T) {
	db := MustOpen(t)
	var ids []int64
	for i := range 5 {
		sid := fmt.Sprintf("s%d", i%2)
		if i < 2 {
			if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: sid, Source: "cli"}); err != nil {
				t.Fatal(err)
			}
		}
		id, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: sid, Role: "user", Content: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	snap, err := db.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	collect := func(read func(fn func([]any) error) error) []any {
		t.Helper()
		var got []any
		if err := read(func(row []any) error { got = append(got, row[0]); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	after := func(after int64, limit int) []any {
		return collect(func(fn func([]any) error) error {
			return snap.MessagesAfter(ctx, []string{"id"}, after, limit, fn)
		})
	}
	if got, want := after(ids[1], 0), []any{ids[2], ids[3], ids[4]}; !reflect.DeepEqual(got, want) {
		t.Errorf("messages after %d = %v, want %v", ids[1], got, want)
	}
	if got, want := after(ids[0], 2), []any{ids[1], ids[2]}; !reflect.DeepEqual(got, want) {
		t.Errorf("messages after %d, limit 2 = %v, want %v", ids[0], got, want)
	}
	if got, want := collect(func(fn func([]any) error) error { return snap.Sessions(ctx, []string{"id"}, fn) }), []any{"s0", "s1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sessions = %v, want %v", got, want)
	}
	stop := errors.New("stop")
	calls := 0
	err = snap.MessagesAfter(ctx, []string{"id"}, 0, 0, func([]any) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("a callback error: %v after %d calls, want it returned after 1", err, calls)
	}
}
