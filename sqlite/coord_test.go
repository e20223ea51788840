package sqlite_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

func TestHolderFormat(t *testing.T) {
	h := sqlite.Holder("turn=1")
	if !strings.HasPrefix(h, "pid=") || !strings.HasSuffix(h, ":turn=1") {
		t.Fatalf("holder %q", h)
	}
	if !strings.Contains(h, ":pidns=") {
		t.Errorf("holder %q lacks the pid namespace (Linux)", h)
	}
}

func TestCompressionLock(t *testing.T) {
	db := MustOpen(t)
	me, other := sqlite.Holder("a"), sqlite.Holder("b")
	if ok, err := db.AcquireCompressionLock(ctx, "s1", me, time.Minute); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if ok, _ := db.AcquireCompressionLock(ctx, "s1", other, time.Minute); ok {
		t.Fatal("a live lease was taken over")
	}
	if ok, _ := db.RefreshCompressionLock(ctx, "s1", other, time.Minute); ok {
		t.Fatal("a non-holder refreshed the lease")
	}
	if ok, _ := db.RefreshCompressionLock(ctx, "s1", me, time.Minute); !ok {
		t.Fatal("the holder could not refresh")
	}
	if err := db.ReleaseCompressionLock(ctx, "s1", me); err != nil {
		t.Fatal(err)
	}
	if ok, _ := db.AcquireCompressionLock(ctx, "s1", other, time.Minute); !ok {
		t.Fatal("a released lease could not be taken")
	}

	t.Run("an expired lease is reclaimed", func(t *testing.T) {
		db.AcquireCompressionLock(ctx, "s2", other, time.Nanosecond)
		raw := rawDB(t, db.Path())
		raw.Exec("UPDATE compression_locks SET expires_at = 1 WHERE session_id = 's2'")
		if ok, _ := db.AcquireCompressionLock(ctx, "s2", me, time.Minute); !ok {
			t.Fatal("expired lease not reclaimed")
		}
	})
	t.Run("a dead holder's lease is reclaimed", func(t *testing.T) {
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		// the same namespace as ours, the pid of an exited child
		h := sqlite.Holder("x")
		dead := "pid=" + strconv.Itoa(cmd.Process.Pid) + h[strings.Index(h, ":pidns="):]
		raw := rawDB(t, db.Path())
		if _, err := raw.Exec("INSERT INTO compression_locks VALUES ('s3', ?, 1, 4000000000)", dead); err != nil {
			t.Fatal(err)
		}
		if ok, _ := db.AcquireCompressionLock(ctx, "s3", me, time.Minute); !ok {
			t.Fatal("a dead holder's lease was not reclaimed")
		}
	})
	t.Run("an unstamped holder is kept until expiry", func(t *testing.T) {
		raw := rawDB(t, db.Path())
		raw.Exec("INSERT INTO compression_locks VALUES ('s4', 'pid=999999', 1, 4000000000)")
		if ok, _ := db.AcquireCompressionLock(ctx, "s4", me, time.Minute); ok {
			t.Fatal("a lease without a pid namespace was reclaimed")
		}
	})
}

func TestTurnLease(t *testing.T) {
	db := MustOpen(t)
	a, b := sqlite.Holder("a"), sqlite.Holder("b")
	if ok, _ := db.AcquireTurnLease(ctx, "c1", a, time.Minute); !ok {
		t.Fatal("acquire")
	}
	if ok, _ := db.AcquireTurnLease(ctx, "c1", b, time.Minute); ok {
		t.Fatal("taken over")
	}
	if err := db.ReleaseTurnLease(ctx, "c1", a); err != nil {
		t.Fatal(err)
	}
	if ok, _ := db.RefreshTurnLease(ctx, "c1", a, time.Minute); ok {
		t.Fatal("refreshed a released lease")
	}
}

func TestRoutes(t *testing.T) {
	db := MustOpen(t)
	if err := db.PutRoute(ctx, "", "k1", `{"session_id":"s1"}`); err != nil {
		t.Fatal(err)
	}
	db.PutRoute(ctx, "", "k1", `{"session_id":"s2"}`)
	db.PutRoute(ctx, "work", "k1", `{"session_id":"s3"}`)
	rs, err := db.Routes(ctx, "", "")
	if err != nil || len(rs) != 1 || rs[0].EntryJSON != `{"session_id":"s2"}` {
		t.Fatalf("routes %+v %v", rs, err)
	}
	if err := db.PutRoute(ctx, "", "k2", "{oops"); sessiondb.ErrorCode(err) != sessiondb.EINVALID {
		t.Fatalf("invalid JSON: %v", err)
	}
	db.DeleteRoute(ctx, "", "k1")
	if rs, _ := db.Routes(ctx, "", "k1"); len(rs) != 0 {
		t.Fatal("route not deleted")
	}
	if rs, _ := db.Routes(ctx, "work", ""); len(rs) != 1 {
		t.Fatal("other scope touched")
	}
}

func TestDelegations(t *testing.T) {
	db := MustOpen(t)
	if err := db.RecordDelegation(ctx, "d1", "s1", "", `{"goal":"x"}`); err != nil {
		t.Fatal(err)
	}
	if ds, _ := db.PendingDeliveries(ctx); len(ds) != 0 {
		t.Fatal("a running delegation is pending delivery")
	}
	if err := db.CompleteDelegation(ctx, "d1", "completed", `{"ok":true}`); err != nil {
		t.Fatal(err)
	}
	ds, err := db.PendingDeliveries(ctx)
	if err != nil || len(ds) != 1 || ds[0].State != "completed" {
		t.Fatalf("pending %+v %v", ds, err)
	}
	db.MarkDelivered(ctx, "d1")
	if ds, _ := db.PendingDeliveries(ctx); len(ds) != 0 {
		t.Fatal("delivered delegation still pending")
	}
	if err := db.CompleteDelegation(ctx, "nope", "failed", ""); sessiondb.ErrorCode(err) != sessiondb.ENOTFOUND {
		t.Fatalf("unknown delegation: %v", err)
	}
}

func TestContinueSession(t *testing.T) {
	db := MustOpen(t)
	db.CreateSession(ctx, sessiondb.NewSession{ID: "p", Source: "telegram", SessionKey: "agent:main:tg:1", UserID: "u1", Cwd: "/w"})
	db.SetPinned(ctx, "p", true)
	db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "p", Role: "user", Content: "before"})
	db.EndSession(ctx, "p", "idle_timeout") // automatic: may be continued
	child, err := db.ContinueSession(ctx, "p", sessiondb.NewSession{ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := db.Session(ctx, "p")
	c, _ := db.Session(ctx, child)
	if *p.EndReason != "compression" {
		t.Errorf("parent end reason %q", *p.EndReason)
	}
	if c.Source != "telegram" || c.SessionKey == nil || *c.SessionKey != "agent:main:tg:1" || *c.UserID != "u1" || *c.Cwd != "/w" || c.Pinned != 1 {
		t.Errorf("child did not inherit: %+v", c)
	}
	if _, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "p", Role: "user", Content: "late"}); sessiondb.ErrorCode(err) != sessiondb.ECONFLICT {
		t.Errorf("append to the compressed parent: %v", err)
	}
	if tip, _ := db.CompressionTip(ctx, "p"); tip != "c" {
		t.Errorf("tip %q", tip)
	}
	db.EndSession(ctx, "c", "user_exit")
	if _, err := db.ContinueSession(ctx, "c", sessiondb.NewSession{}); sessiondb.ErrorCode(err) != sessiondb.ECONFLICT {
		t.Errorf("continuing a deliberately ended session: %v", err)
	}
}

// STORAGE.md §5.1: a lease lives ttl seconds (300 when none is given) from
// its acquisition or its last refresh, and is stale only once
// expires_at < now; expired turn leases are swept a day after their expiry. Each step opens the file with a clock at that time.
func TestLeaseExpiry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	at := func(seconds float64) *sqlite.DB {
		return sessOpenAt(t, path, fixedNow.Add(time.Duration(seconds*float64(time.Second))))
	}
	a, b := sqlite.Holder("a"), sqlite.Holder("b")
	// acquire takes key for a at 0 s with ttl; then, at each of the given
	// times, b tries to take it over, and must get it only at the last.
	acquire := func(key string, ttl time.Duration, keptAt, reclaimedAt float64) {
		t.Helper()
		if ok, err := at(0).AcquireCompressionLock(ctx, key, a, ttl); err != nil || !ok {
			t.Fatalf("%s: acquire with ttl %v: %v %v", key, ttl, ok, err)
		}
		if ok, _ := at(keptAt).AcquireCompressionLock(ctx, key, b, time.Minute); ok {
			t.Errorf("%s: the lease was taken over at %v s", key, keptAt)
		}
		if ok, _ := at(reclaimedAt).AcquireCompressionLock(ctx, key, b, time.Minute); !ok {
			t.Errorf("%s: the lease was not reclaimed at %v s", key, reclaimedAt)
		}
	}
	acquire("default ttl 0", 0, 299, 301)
	acquire("default ttl below 0", -time.Second, 299, 301)
	acquire("live at its expiry instant", time.Minute, 60, 61)
	// refreshed at 50 s for a minute: it lives until 110 s
	if ok, _ := at(0).AcquireCompressionLock(ctx, "refreshed", a, time.Minute); !ok {
		t.Fatal("acquire refreshed")
	}
	if ok, _ := at(50).RefreshCompressionLock(ctx, "refreshed", a, time.Minute); !ok {
		t.Fatal("the holder could not refresh")
	}
	if ok, _ := at(100).AcquireCompressionLock(ctx, "refreshed", b, time.Minute); ok {
		t.Error("a lease refreshed at 50 s for a minute was taken over at 100 s")
	}

	if ok, _ := at(0).AcquireTurnLease(ctx, "c1", a, time.Minute); !ok {
		t.Fatal("acquire turn lease c1")
	}
	raw := rawDB(t, path)
	leases := func() int {
		return count(t, raw, "SELECT COUNT(*) FROM session_turn_leases WHERE conversation_id = 'c1'")
	}
	at(60+86400-1).AcquireTurnLease(ctx, "c2", b, time.Minute)
	if leases() != 1 {
		t.Error("a turn lease expired less than a day ago was swept")
	}
	at(60+86400+1).AcquireTurnLease(ctx, "c3", b, time.Minute)
	if leases() != 0 {
		t.Error("a turn lease expired more than a day ago was not swept")
	}
}

// A holder stamped with another pid namespace cannot be probed from here:
// its lease is kept until it expires, even when its pid is free in ours.
func TestLeaseOfAnotherNamespaceIsKept(t *testing.T) {
	db := MustOpen(t)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	h := sqlite.Holder("")
	ns := h[strings.Index(h, ":pidns=")+len(":pidns="):]
	other := "pid=" + strconv.Itoa(cmd.Process.Pid) + ":pidns=1" + ns
	raw := rawDB(t, db.Path())
	if _, err := raw.Exec("INSERT INTO compression_locks VALUES ('s1', ?, 1, 4000000000)", other); err != nil {
		t.Fatal(err)
	}
	if ok, _ := db.AcquireCompressionLock(ctx, "s1", sqlite.Holder("me"), time.Minute); ok {
		t.Fatal("the lease of a holder in another pid namespace was reclaimed")
	}
}
