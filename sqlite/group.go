package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// maxGroup bounds how many appends one group commit carries.
const maxGroup = 64

// groupWindow is the longest a leader waits for concurrent writers to
// join its group, and only when the previous group saw concurrency.
const groupWindow = time.Millisecond

// groupCommit coalesces appends issued concurrently on one store into one
// BEGIN IMMEDIATE transaction. A lone caller commits at once (its latency
// is unchanged). Callers arriving while a commit runs queue up and the next
// leader takes them all (up to maxGroup) in one transaction; when the last
// group showed k concurrent writers, the leader first waits up to
// groupWindow for k of them to queue, so writers that were just
// acknowledged join instead of forming a second, alternating group. Each
// message gets its own savepoint, so one failing message (an unknown or
// closed session) fails alone; each caller gets its own id and error, and
// returns only after the commit (durable, with synchronous=FULL).
type groupCommit struct {
	mu      sync.Mutex
	queue   []*appendReq
	running bool
	writers int           // concurrency the last group saw
	joined  chan struct{} // signalled when a request queues
}

type appendReq struct {
	sessionID string
	r         *row
	id        int64
	err       error
	done      chan struct{} // closed when the request is committed or failed
	lead      chan struct{} // closed when this request must lead the next commit
}

func (g *groupCommit) append(ctx context.Context, db *DB, sessionID string, r *row) (int64, error) {
	req := &appendReq{sessionID: sessionID, r: r, done: make(chan struct{}), lead: make(chan struct{})}
	g.mu.Lock()
	if g.joined == nil {
		g.joined = make(chan struct{}, 1)
	}
	g.queue = append(g.queue, req)
	leader := !g.running
	g.running = true
	g.mu.Unlock()
	select {
	case g.joined <- struct{}{}:
	default:
	}
	if !leader {
		select {
		case <-req.done:
			return req.id, req.err
		case <-req.lead:
		}
	}
	g.lead(ctx, db)
	<-req.done
	return req.id, req.err
}

// lead commits one group (which holds the leader's own request, the oldest
// in the queue) and hands leadership to the next queued request, if any.
func (g *groupCommit) lead(ctx context.Context, db *DB) {
	g.mu.Lock()
	want := min(g.writers, maxGroup)
	g.mu.Unlock()
	if want > 1 {
		deadline := time.NewTimer(groupWindow)
		for waiting := true; waiting; {
			g.mu.Lock()
			queued := len(g.queue)
			g.mu.Unlock()
			if queued >= want {
				break
			}
			select {
			case <-g.joined:
			case <-deadline.C:
				waiting = false
			}
		}
		deadline.Stop()
	}
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()

	db.commitGroup(context.WithoutCancel(ctx), batch)
	for _, req := range batch {
		close(req.done)
	}

	g.mu.Lock()
	g.writers = len(batch) + len(g.queue)
	if len(g.queue) > 0 {
		close(g.queue[0].lead)
	} else {
		g.running = false
	}
	g.mu.Unlock()
}

// commitGroup appends every request of batch in one transaction.
func (db *DB) commitGroup(ctx context.Context, batch []*appendReq) {
	op := fmt.Sprintf("append message to %q", batch[0].sessionID)
	if len(batch) > 1 {
		op = fmt.Sprintf("append %d messages", len(batch))
	}
	err := db.writeTx(ctx, TranscriptWritePatience, op, func(tx *sql.Tx) error {
		for _, req := range batch {
			req.id, req.err = 0, nil // the transaction may run again
			if _, err := tx.ExecContext(ctx, "SAVEPOINT append_one"); err != nil {
				return err
			}
			id, err := appendOne(ctx, tx, req.sessionID, req.r)
			if err != nil {
				if isBusy(err) || isFTSCorrupt(err) {
					return err // the whole group is retried or repaired
				}
				if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO append_one"); rerr != nil {
					return rerr
				}
				req.err = db.mapErr(fmt.Sprintf("append message to %q", req.sessionID), err)
			}
			if _, err := tx.ExecContext(ctx, "RELEASE append_one"); err != nil {
				return err
			}
			req.id = id
		}
		return nil
	})
	if err != nil {
		for _, req := range batch {
			req.id, req.err = 0, err
		}
	}
}

func appendOne(ctx context.Context, tx *sql.Tx, sessionID string, r *row) (int64, error) {
	if err := appendable(ctx, tx, sessionID); err != nil {
		return 0, err
	}
	id, err := insertMessage(ctx, tx, sessionID, r)
	if err != nil {
		return 0, err
	}
	return id, bumpCounters(ctx, tx, sessionID, 1, r.countedCalls())
}
