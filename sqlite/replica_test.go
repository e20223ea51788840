package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

func TestSnapshotDoesNotSeeLaterWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	db := MustOpenPath(t, path)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "one"}); err != nil {
		t.Fatal(err)
	}
	ro, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	snap, err := ro.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "two"}); err != nil {
		t.Fatal(err)
	}
	maxID, count, err := snap.MessageIDs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var contents []any
	if err := snap.MessagesAfter(ctx, []string{"id", "content"}, 0, 0, func(r []any) error {
		contents = append(contents, r[1])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if maxID != 1 || count != 1 || len(contents) != 1 || contents[0] != "one" {
		t.Errorf("snapshot: max id %d, %d messages %v; want the one message written before it", maxID, count, contents)
	}
	if err := snap.Sessions(ctx, []string{"id", "no_such_column"}, func([]any) error { return nil }); sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Errorf("an unknown column: %v, want EINVALID", err)
	}
}

func TestUpgradedCopyLeavesTheSourceAlone(t *testing.T) {
	ctx := context.Background()
	src := fixture(t, "hermes-v11.db")
	before, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(src, sqlite.Options{ReadOnly: true}); !errors.Is(err, sqlite.ErrOlderSchema) {
		t.Fatalf("read-only open of a v11 file: %v, want ErrOlderSchema", err)
	}
	dst := filepath.Join(t.TempDir(), "upgraded.db")
	if err := sqlite.UpgradedCopy(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("the source changed")
	}
	db, err := sqlite.Open(dst, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the copy is not at the newest schema: %v", err)
	}
	defer db.Close()
	snap, err := db.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if gen, err := snap.FileGeneration(ctx); err != nil || gen != "" {
		t.Errorf("the copy's generation %q (%v), want none, like the source", gen, err)
	}
	if _, n, err := snap.MessageIDs(ctx, 0); err != nil || n != 653 {
		t.Errorf("the copy holds %d messages (%v), want 653", n, err)
	}
	if err := sqlite.UpgradedCopy(ctx, src, dst); sessiondb.ErrorCode(err) != sessiondb.ECONFLICT {
		t.Errorf("a copy onto an existing file: %v, want ECONFLICT", err)
	}
}

func TestWatcherSeesCommitsAndAReplacedFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	db := MustOpenPath(t, path)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s1", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	w, err := sqlite.Watch(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	changed := func() bool {
		t.Helper()
		c, err := w.Changed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if changed() {
		t.Error("changed before any write")
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s1", Role: "user", Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	if !changed() {
		t.Error("a commit was not seen")
	}
	if changed() {
		t.Error("changed twice for one commit")
	}
	// Another file moved into the path.
	other := filepath.Join(dir, "other.db")
	MustOpenPath(t, other)
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if !changed() {
		t.Error("a replaced file was not seen")
	}
	if changed() {
		t.Error("the replacement is seen once")
	}
}
