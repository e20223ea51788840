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

// groupWindow is the longest a group stays open for concurrent writers to
// join it, and only when the previous group saw concurrency.
const groupWindow = time.Millisecond

// groupCommit coalesces appends issued concurrently on one store into one
// BEGIN IMMEDIATE transaction. A lone caller commits at once (its latency
// is unchanged). Callers arriving while a commit runs queue up and the next
// leader takes them all (up to maxGroup) in one transaction; when the last
// group showed k concurrent writers, the leader keeps its transaction open
// for up to groupWindow, inserting requests as they queue, until k have
// joined: writers that were just acknowledged join instead of forming a
// second, alternating group, and their inserts overlap the time the others
// spend preparing theirs. What is queued goes in with one INSERT
// (appendChunk), yet one failing message (an unknown or closed session, a
// refused row) fails alone; each caller gets its own id and error, and
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
	batch := db.commitGroup(context.WithoutCancel(ctx), g, want)
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

// take moves up to n requests out of the queue.
func (g *groupCommit) take(n int) []*appendReq {
	g.mu.Lock()
	defer g.mu.Unlock()
	n = min(n, len(g.queue))
	taken := g.queue[:n:n]
	g.queue = g.queue[n:]
	return taken
}

// await takes up to n requests, waiting for one to queue until deadline;
// it returns none once the deadline has passed.
func (g *groupCommit) await(deadline time.Time, n int) []*appendReq {
	var timer *time.Timer
	for {
		if taken := g.take(n); len(taken) > 0 || !time.Now().Before(deadline) {
			if timer != nil {
				timer.Stop()
			}
			return taken
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		select {
		case <-g.joined:
		case <-timer.C:
		}
	}
}

// commitGroup appends the queued requests in one transaction and returns
// them. It starts on what is queued at once; when want writers were seen
// concurrently last time, it goes on taking requests as they queue, up to
// want of them or for groupWindow, so their inserts overlap the time their
// callers spend preparing them.
func (db *DB) commitGroup(ctx context.Context, g *groupCommit, want int) []*appendReq {
	batch := g.take(maxGroup)
	op := fmt.Sprintf("append message to %q", batch[0].sessionID)
	if want > 1 || len(batch) > 1 {
		op = "append messages"
	}
	deadline := time.Now().Add(groupWindow)
	err := db.writeTx(ctx, TranscriptWritePatience, op, func(tx *sql.Tx) error {
		for done := 0; ; done = len(batch) { // the transaction may run again
			if done == len(batch) && done > 0 {
				if len(batch) >= want {
					return nil
				}
				more := g.await(deadline, maxGroup-len(batch))
				if len(more) == 0 {
					return nil
				}
				batch = append(batch, more...)
			}
			if err := db.appendChunk(ctx, tx, batch[done:]); err != nil {
				return err
			}
		}
	})
	if err != nil {
		for _, req := range batch {
			req.id, req.err = 0, err
		}
	}
	return batch
}

// appendChunk appends reqs with one INSERT for all of them. Every
// statement that writes inside a transaction makes FTS5 write its pending
// rows out as a new segment, so one statement for the chunk indexes it in
// one segment per index, where a statement per message wrote one each.
// A request whose session cannot take messages fails alone; should the
// INSERT itself fail (SQLite undoes just that statement), the requests are
// appended one at a time so that only the bad one fails.
func (db *DB) appendChunk(ctx context.Context, tx *sql.Tx, reqs []*appendReq) error {
	type session struct {
		refusal         error // why it cannot take messages, or nil
		messages, calls int   // what the chunk adds to its counters
	}
	var order []string // sessions in order of first appearance
	sessions := map[string]*session{}
	var ok []*appendReq
	for _, req := range reqs {
		req.id, req.err = 0, nil
		s := sessions[req.sessionID]
		if s == nil {
			s = &session{refusal: appendable(ctx, tx, req.sessionID)}
			sessions[req.sessionID] = s
			order = append(order, req.sessionID)
		}
		if s.refusal != nil {
			if !db.failAlone(req, s.refusal) {
				return s.refusal
			}
			continue
		}
		s.messages++
		s.calls += req.r.countedCalls()
		ok = append(ok, req)
	}
	if len(ok) == 0 {
		return nil
	}
	sessionIDs := make([]string, len(ok))
	rows := make([]*row, len(ok))
	for i, req := range ok {
		sessionIDs[i], rows[i] = req.sessionID, req.r
	}
	first, err := insertMessages(ctx, tx, sessionIDs, rows)
	if err != nil {
		if groupWide(err) {
			return err
		}
		return db.appendEach(ctx, tx, ok)
	}
	for i, req := range ok {
		req.id = first + int64(i)
	}
	for _, id := range order {
		if s := sessions[id]; s.messages > 0 {
			if err := bumpCounters(ctx, tx, id, s.messages, s.calls); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendEach appends reqs one at a time, each in its own savepoint.
func (db *DB) appendEach(ctx context.Context, tx *sql.Tx, reqs []*appendReq) error {
	for _, req := range reqs {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT append_one"); err != nil {
			return err
		}
		first, err := insertMessages(ctx, tx, []string{req.sessionID}, []*row{req.r})
		if err == nil {
			err = bumpCounters(ctx, tx, req.sessionID, 1, req.r.countedCalls())
		}
		if err == nil {
			req.id = first
		} else {
			if !db.failAlone(req, err) {
				return err
			}
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO append_one"); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE append_one"); err != nil {
			return err
		}
	}
	return nil
}

// failAlone records err as req's own failure and reports true, unless err
// concerns the whole group.
func (db *DB) failAlone(req *appendReq, err error) bool {
	if groupWide(err) {
		return false
	}
	req.err = db.mapErr(fmt.Sprintf("append message to %q", req.sessionID), err)
	return true
}

// groupWide reports whether err concerns the whole transaction: a busy
// database (the group is retried) or a damaged index (repaired, then
// retried).
func groupWide(err error) bool {
	return isBusy(err) || isFTSCorrupt(err)
}
