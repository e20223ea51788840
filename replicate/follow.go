package replicate

import (
	"context"
	"fmt"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

// DefaultPoll is how often Follow asks the source whether it changed.
const DefaultPoll = 200 * time.Millisecond

// Follow syncs from into to, then keeps syncing each time another
// connection commits to the source, until ctx ends (then it returns nil).
// It asks SQLite every poll (default DefaultPoll) whether the file changed
// (PRAGMA data_version, which reads nothing while nothing changed), so a
// commit in Hermes is copied within about a poll plus the pass. Each pass
// reads only the session rows and the messages above the high-water mark.
// each is called with the report of the first pass and of every later one
// that copied or found something. A pass that fails because the server is
// unreachable or busy is tried again (o.Warn is told); any other error
// ends Follow.
func Follow(ctx context.Context, from string, to *postgres.DB, o Options, poll time.Duration, each func(*Report)) error {
	if o.Origin == "" {
		return sessiondb.Errorf(sessiondb.EINVALID, "sync: no origin given")
	}
	if poll <= 0 {
		poll = DefaultPoll
	}
	release, err := to.LockOrigin(ctx, o.Origin, lockWait)
	if err != nil {
		return err
	}
	defer release()
	// Watch before the first pass: a commit during a pass is seen by the
	// next poll.
	w, err := sqlite.Watch(ctx, from)
	if err != nil {
		return err
	}
	defer w.Close()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	wait := time.Second
	for first := true; ; {
		rep, err := pass(ctx, from, to, o)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && transient(err) {
			// The server restarts, or the source is locked for long:
			// try again, ever more patiently.
			if o.Warn != nil {
				o.Warn(fmt.Errorf("%w; trying again in %s", err, wait))
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			wait = min(2*wait, 30*time.Second)
			continue
		}
		if err != nil {
			return err
		}
		wait = time.Second
		if first || !rep.Empty() {
			each(rep)
		}
		first = false
		for changed := false; !changed; {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			if changed, err = w.Changed(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}
}

// transient reports an error after which a later pass may succeed: the
// server unreachable or busy, the source locked.
func transient(err error) bool {
	switch sessiondb.ErrorCode(err) {
	case sessiondb.EUNAVAILABLE, sessiondb.EBUSY, sessiondb.ETIMEOUT:
		return true
	}
	return false
}
