// Package replicate copies a Hermes state.db into a PostgreSQL store
// (sessiondb sync): sessions with every column, messages, usage rows and
// system prompts, incrementally and idempotently, from a file it only
// reads and that Hermes may be writing meanwhile.
//
// The protocol (postgres/DESIGN.md tells it at length): each pass reads
// the source in one snapshot. Session rows are few: every pass reads them
// all with their usage rows and compares a fingerprint of each with the one
// stored in PostgreSQL (sync_sessions), so ended, retitled, pinned or
// re-counted sessions are copied again. Messages are many: only those above
// the origin's high-water mark (sync_origins.message_hw) are read, in id
// order, and copied in batches with COPY; each batch commits with the mark
// that covers it, so a sync killed at any point resumes exactly where its
// last commit left off, and rows are keyed by (origin, source id), so
// nothing is ever stored twice. Messages Hermes changes after the insert
// (compaction's active and compacted flags, display order) are found
// through their session, whose row changes with them: for a changed
// session, a hash of its messages' mutable columns is compared with the
// stored one, and the session's messages are copied again when it differs.
package replicate

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/postgres"
	"github.com/sessiondb/sessiondb/sqlite"
)

// DefaultBatch is how many messages one COPY transaction carries.
const DefaultBatch = 10000

// lockWait is how long a sync waits for another sync of its origin (or
// the connection of one just killed) to let go.
var lockWait = 15 * time.Second

// Options configure a sync.
type Options struct {
	// Origin names the source host in the database (required).
	Origin string
	// MirrorDeletes deletes from PostgreSQL the sessions (and messages) of
	// the origin that the source no longer has; by default they are kept.
	MirrorDeletes bool
	// Batch is how many messages one transaction copies (default
	// DefaultBatch).
	Batch int
	// Progress, when set, is called with the messages copied of the
	// pass's total as the copy goes.
	Progress func(done, total int64)
	// Warn, when set, is told of the errors Follow keeps going after.
	Warn func(error)
	// TempDir holds the upgraded copy of a source at an older schema
	// (default os.TempDir()).
	TempDir string

	// afterBatch, in tests, runs after each committed batch (counted from
	// 1); an error stops the sync there.
	afterBatch func(n int) error
}

// Report says what one sync (or one pass of Follow) copied.
type Report struct {
	Origin   string  `json:"origin"`
	Sessions int64   `json:"sessions"` // session rows inserted or updated
	Messages int64   `json:"messages"` // message rows inserted or updated
	Usage    int64   `json:"usage"`    // session_model_usage rows inserted or updated
	Prompts  int64   `json:"prompts"`  // system prompts new to the database
	Gone     int64   `json:"gone"`     // sessions the source no longer has (kept, or deleted with MirrorDeletes)
	Deleted  int64   `json:"deleted"`  // sessions and messages deleted (MirrorDeletes)
	Skipped  int64   `json:"skipped"`  // messages of sessions not copied (conflicts)
	HighMark int64   `json:"high_water_mark"`
	Seconds  float64 `json:"seconds"`
	// Conflicts are the source's sessions whose id another origin holds:
	// they are not copied.
	Conflicts []postgres.Conflict `json:"conflicts"`
}

// MessagesPerSecond is the copy rate of the report.
func (r *Report) MessagesPerSecond() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Messages) / r.Seconds
}

// Empty reports whether the pass copied, deleted and found nothing.
func (r *Report) Empty() bool {
	return r.Sessions == 0 && r.Messages == 0 && r.Usage == 0 && r.Prompts == 0 && r.Deleted == 0 &&
		r.Gone == 0 && len(r.Conflicts) == 0
}

// Sync copies what changed in the state.db at from since the origin's last
// sync into to, in one pass.
func Sync(ctx context.Context, from string, to *postgres.DB, o Options) (*Report, error) {
	if o.Origin == "" {
		return nil, sessiondb.Errorf(sessiondb.EINVALID, "sync: no origin given")
	}
	release, err := to.LockOrigin(ctx, o.Origin, lockWait)
	if err != nil {
		return nil, err
	}
	defer release()
	return pass(ctx, from, to, o)
}

// source is the state.db a pass reads: the file itself, or an upgraded
// copy of a file at an older schema.
type source struct {
	db      *sqlite.DB
	cleanup func()
}

func openSource(ctx context.Context, path, tempDir string) (*source, error) {
	db, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	if err == nil {
		return &source{db: db, cleanup: func() {}}, nil
	}
	if !errors.Is(err, sqlite.ErrOlderSchema) {
		return nil, err
	}
	// A file at an older schema is read as Hermes would see it after its
	// next start: from a copy upgraded by the same migration.
	dir, err := os.MkdirTemp(tempDir, "sessiondb-sync-")
	if err != nil {
		return nil, sessiondb.Errorf(sessiondb.EINTERNAL, "sync: a directory for the upgraded copy of %s: %v", path, err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	upgraded := filepath.Join(dir, "source.db")
	if err := sqlite.UpgradedCopy(ctx, path, upgraded); err != nil {
		cleanup()
		return nil, err
	}
	if db, err = sqlite.Open(upgraded, sqlite.Options{ReadOnly: true}); err != nil {
		cleanup()
		return nil, err
	}
	return &source{db: db, cleanup: cleanup}, nil
}

func (s *source) close() {
	s.db.Close()
	s.cleanup()
}

// plan is what a pass learned from the source and the sync state before
// it writes.
type plan struct {
	st      *postgres.SyncState
	gen     string
	maxID   int64
	pending int64

	changed  [][]any            // session rows to upsert
	usage    map[string][][]any // usage rows, by session
	fps      map[string][]byte  // fingerprints of the changed sessions
	recopy   map[string][][]any // full message rows to copy again, by session
	recopied map[string]int64   // the new messages fingerprint of rechecked sessions
	present  map[string][]int64 // source ids of rechecked sessions' messages (for MirrorDeletes)
	prompts  [][]any            // prompts of changed sessions
	gone     []string           // sessions the source no longer has
	wasGone  []string           // sessions an earlier pass found gone (and kept)
	states   map[string]postgres.SessionSync
}

func pass(ctx context.Context, from string, to *postgres.DB, o Options) (*Report, error) {
	start := time.Now()
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	src, err := openSource(ctx, from, o.TempDir)
	if err != nil {
		return nil, err
	}
	defer src.close()
	snap, err := src.db.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	st, err := to.SyncState(ctx, o.Origin)
	if err != nil {
		return nil, err
	}
	p, err := readPlan(ctx, snap, st, from)
	if err != nil {
		return nil, err
	}
	rep := &Report{Origin: o.Origin}
	if err := p.apply(ctx, to, o, from, rep); err != nil {
		return nil, err
	}
	if err := p.copyMessages(ctx, snap, to, o, rep); err != nil {
		return nil, err
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

func readPlan(ctx context.Context, snap *sqlite.Snapshot, st *postgres.SyncState, from string) (*plan, error) {
	p := &plan{st: st, usage: map[string][][]any{}, fps: map[string][]byte{}, recopy: map[string][][]any{},
		recopied: map[string]int64{}, present: map[string][]int64{}, states: map[string]postgres.SessionSync{}}
	var err error
	if p.gen, err = snap.FileGeneration(ctx); err != nil {
		return nil, err
	}
	if st.Known && st.SourceGeneration != "" && p.gen != "" && st.SourceGeneration != p.gen {
		return nil, sessiondb.Errorf(sessiondb.ECONFLICT,
			"sync: origin %q was copied from another state.db (%s, generation %s; %s is generation %s); give this file another --origin",
			st.Origin, st.SourcePath, st.SourceGeneration, from, p.gen)
	}
	if p.maxID, p.pending, err = snap.MessageIDs(ctx, st.MessageHW); err != nil {
		return nil, err
	}
	if p.maxID < st.MessageHW {
		return nil, sessiondb.Errorf(sessiondb.ECONFLICT,
			"sync: origin %q has messages copied up to id %d but %s ends at id %d: it is another or a restored file; give it another --origin",
			st.Origin, st.MessageHW, from, p.maxID)
	}
	if err := snap.Usage(ctx, postgres.UsageColumns, func(r []any) error {
		id := text(r[0])
		p.usage[id] = append(p.usage[id], r)
		return nil
	}); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	hashes := map[string]bool{}
	promptCol := slices.Index(postgres.SessionColumns, "system_prompt_hash")
	if err := snap.Sessions(ctx, postgres.SessionColumns, func(r []any) error {
		id := text(r[0])
		seen[id] = true
		fp := fingerprint(r, p.usage[id])
		prev, known := st.Sessions[id]
		if known && prev.Fingerprint != nil && !prev.Gone && bytes.Equal(prev.Fingerprint, fp) {
			return nil
		}
		p.changed = append(p.changed, r)
		p.fps[id] = fp
		if h := text(r[promptCol]); h != "" {
			hashes[h] = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for id, prev := range st.Sessions {
		switch {
		case seen[id]:
		case prev.Gone:
			p.wasGone = append(p.wasGone, id)
		default:
			p.gone = append(p.gone, id)
		}
	}
	slices.Sort(p.gone)
	slices.Sort(p.wasGone)
	if len(hashes) > 0 {
		list := make([]string, 0, len(hashes))
		for h := range hashes {
			list = append(list, h)
		}
		slices.Sort(list)
		if err := snap.Prompts(ctx, postgres.PromptColumns, list, func(r []any) error {
			p.prompts = append(p.prompts, r)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	// Sessions that changed after earlier messages were copied: check those
	// messages' mutable columns against the stored hash.
	if st.MessageHW > 0 {
		for _, r := range p.changed {
			id := text(r[0])
			prev := st.Sessions[id]
			var sum int64
			var ids []int64
			if err := snap.SessionMessages(ctx, postgres.MessageMutableColumns, id, st.MessageHW, func(m []any) error {
				sum ^= rowHash(m)
				ids = append(ids, integer(m[0]))
				return nil
			}); err != nil {
				return nil, err
			}
			p.recopied[id] = sum
			p.present[id] = ids
			if prev.Fingerprint != nil && sum == prev.MessagesFingerprint {
				continue
			}
			if len(ids) == 0 || prev.ConflictOrigin != "" {
				// A session another origin held: apply sees whether it
				// still does before its messages are read.
				continue
			}
			var rows [][]any
			if err := snap.SessionMessages(ctx, postgres.MessageColumns, id, st.MessageHW, func(m []any) error {
				rows = append(rows, m)
				return nil
			}); err != nil {
				return nil, err
			}
			p.recopy[id] = rows
		}
	}
	return p, nil
}

// apply writes the session-level changes in one transaction: prompts,
// sessions, usage, messages copied again, deletions, and the sessions' sync
// state.
func (p *plan) apply(ctx context.Context, to *postgres.DB, o Options, from string, rep *Report) error {
	var conflicts []postgres.Conflict
	var sessions, usage, prompts, messages, deleted int64
	var states map[string]postgres.SessionSync
	path, err := filepath.Abs(from)
	if err != nil {
		path = from
	}
	err = to.Ingest(ctx, o.Origin, func(in *postgres.Ingest) error {
		sessions, usage, prompts, messages, deleted = 0, 0, 0, 0, 0
		states = map[string]postgres.SessionSync{}
		if err := in.ClaimOrigin(ctx, path, p.gen, p.st.MessageHW); err != nil {
			return err
		}
		var err error
		if prompts, err = in.UpsertPrompts(ctx, p.prompts); err != nil {
			return err
		}
		if conflicts, err = in.UpsertSessions(ctx, p.changed); err != nil {
			return err
		}
		lost := map[string]string{}
		for _, c := range conflicts {
			lost[c.SessionID] = c.Origin
		}
		var accepted []string
		var usageRows, messageRows [][]any
		for _, r := range p.changed {
			id := text(r[0])
			if owner, ok := lost[id]; ok {
				states[id] = postgres.SessionSync{ConflictOrigin: owner}
				continue
			}
			accepted = append(accepted, id)
			usageRows = append(usageRows, p.usage[id]...)
			messageRows = append(messageRows, p.recopy[id]...)
			s := postgres.SessionSync{Fingerprint: p.fps[id], MessagesFingerprint: p.recopied[id]}
			if p.st.Sessions[id].ConflictOrigin != "" && len(p.present[id]) > 0 {
				// Another origin held it until now, and its earlier
				// messages were never copied: no fingerprint makes the
				// next pass copy them (and this one skip its new ones).
				s = postgres.SessionSync{}
			}
			states[id] = s
		}
		sessions = int64(len(accepted))
		if o.MirrorDeletes {
			if _, err := in.DeleteUsage(ctx, accepted); err != nil {
				return err
			}
		}
		if usage, err = in.UpsertUsage(ctx, usageRows); err != nil {
			return err
		}
		if messages, err = in.CopyMessages(ctx, messageRows); err != nil {
			return err
		}
		if o.MirrorDeletes {
			for _, id := range accepted {
				n, err := p.mirrorMessages(ctx, in, id)
				if err != nil {
					return err
				}
				deleted += n
			}
			drop := append(slices.Clone(p.gone), p.wasGone...)
			n, err := in.DeleteSessions(ctx, drop)
			if err != nil {
				return err
			}
			deleted += n
			if err := in.DeleteSessionSync(ctx, drop); err != nil {
				return err
			}
		} else {
			for _, id := range p.gone {
				s := p.st.Sessions[id]
				s.Gone = true
				states[id] = s
			}
		}
		return in.PutSessionSync(ctx, states)
	})
	if err != nil {
		return err
	}
	for id, s := range p.st.Sessions {
		p.states[id] = s
	}
	for id, s := range states {
		p.states[id] = s
	}
	if o.MirrorDeletes {
		for _, id := range append(p.gone, p.wasGone...) {
			delete(p.states, id)
		}
	}
	rep.Sessions, rep.Usage, rep.Prompts, rep.Messages, rep.Deleted = sessions, usage, prompts, messages, deleted
	rep.Gone = int64(len(p.gone))
	rep.Conflicts = conflicts
	rep.HighMark = p.st.MessageHW
	return nil
}

// mirrorMessages deletes the messages of session id, among those copied
// before, that the source no longer has.
func (p *plan) mirrorMessages(ctx context.Context, in *postgres.Ingest, id string) (int64, error) {
	if p.st.MessageHW == 0 {
		return 0, nil
	}
	have, err := in.MessageIDs(ctx, id, p.st.MessageHW)
	if err != nil {
		return 0, err
	}
	present := p.present[id]
	var drop []int64
	for _, m := range have {
		if _, ok := slices.BinarySearch(present, m); !ok {
			drop = append(drop, m)
		}
	}
	return in.DeleteMessages(ctx, drop)
}

// batch is one read of messages above the mark, prepared for the
// database.
type batch struct {
	rows    [][]any // the messages copied (of sessions the origin holds)
	skipped int64   // messages of sessions it does not hold (conflicts)
	last    int64   // the largest id read
	ready   *postgres.MessageBatch
	err     error
}

// preparers is how many batches are converted (and indexed for search) at
// once while another is written.
const preparers = 2

// copyMessages copies the messages above the high-water mark in batches,
// each committed with the mark that covers it. Reading the source,
// preparing batches (conversion, search columns) and writing PostgreSQL
// overlap: a goroutine reads batches in id order and hands each to a
// preparer; the writer commits them in the order read.
func (p *plan) copyMessages(ctx context.Context, snap *sqlite.Snapshot, to *postgres.DB, o Options, rep *Report) error {
	if p.pending == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The sessions whose messages are copied: those the origin holds.
	held := map[string]bool{}
	for id, s := range p.states {
		held[id] = s.Fingerprint != nil
	}
	queue := make(chan chan batch, preparers+1)
	go func() {
		defer close(queue)
		busy := make(chan struct{}, preparers)
		for after := p.st.MessageHW; after < p.maxID; {
			var b batch
			var n int
			b.err = snap.MessagesAfter(ctx, postgres.MessageColumns, after, o.Batch, func(r []any) error {
				n++
				b.last = integer(r[0])
				if held[text(r[1])] {
					b.rows = append(b.rows, r)
				} else {
					b.skipped++
				}
				return nil
			})
			if b.err == nil && n == 0 {
				return
			}
			after = b.last
			out := make(chan batch, 1)
			select {
			case queue <- out:
			case <-ctx.Done():
				return
			}
			if b.err != nil {
				out <- b
				return
			}
			busy <- struct{}{}
			go func() {
				defer func() { <-busy }()
				b.ready, b.err = to.PrepareMessages(ctx, o.Origin, b.rows)
				out <- b
			}()
		}
	}()
	// Writers: each batch is its own transaction, and up to writers of
	// them COPY at once; each commits only after the one before it did
	// (its mark moves from where that one left it), so commits stay in id
	// order and a failure stops every later batch before its commit.
	prev := &commit{done: make(chan struct{})}
	close(prev.done)
	prevHW := p.st.MessageHW
	slots := make(chan struct{}, writers)
	var pendingCommits []*commit
	var done int64
	n := 0
	wait := func(c *commit) error {
		<-c.done
		if c.err != nil {
			return c.err
		}
		rep.Messages += c.copied
		rep.Skipped += c.b.skipped + int64(len(c.b.rows)) - c.copied
		rep.HighMark = c.b.last
		done += int64(len(c.b.rows)) + c.b.skipped
		if o.Progress != nil {
			o.Progress(done, p.pending)
		}
		n++
		if o.afterBatch != nil {
			return o.afterBatch(n)
		}
		return nil
	}
	for out := range queue {
		b := <-out
		if b.err != nil {
			return b.err
		}
		touched := map[string]postgres.SessionSync{}
		for _, r := range b.rows {
			id := text(r[1])
			s, ok := touched[id]
			if !ok {
				s = p.states[id]
			}
			s.MessagesFingerprint ^= rowHash(mutable(r))
			touched[id] = s
		}
		for id, s := range touched {
			p.states[id] = s
		}
		// Slots are taken in batch order: a batch never waits for a
		// predecessor that waits for a slot.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		c := &commit{b: b, done: make(chan struct{})}
		go c.run(ctx, to, o.Origin, touched, prev, prevHW, slots)
		prev, prevHW = c, b.last
		pendingCommits = append(pendingCommits, c)
		// Report the batches committed so far, in order.
		for len(pendingCommits) > 0 && pendingCommits[0].finished() {
			if err := wait(pendingCommits[0]); err != nil {
				return err
			}
			pendingCommits = pendingCommits[1:]
		}
	}
	for _, c := range pendingCommits {
		if err := wait(c); err != nil {
			return err
		}
	}
	return nil
}

// writers is how many batches are written to PostgreSQL at once (their
// commits stay in order).
const writers = 2

// commit is the writing of one batch.
type commit struct {
	b      batch
	copied int64
	err    error
	done   chan struct{} // closed when the batch committed or failed
}

func (c *commit) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// run writes the batch in a transaction that commits after prev's did,
// moving the mark from hw to the batch's last id, and frees its slot.
func (c *commit) run(ctx context.Context, to *postgres.DB, origin string, touched map[string]postgres.SessionSync, prev *commit, hw int64, slots chan struct{}) {
	defer close(c.done)
	defer func() { <-slots }()
	c.err = to.Ingest(ctx, origin, func(in *postgres.Ingest) error {
		var err error
		if c.copied, err = in.AppendBatch(ctx, c.b.ready); err != nil {
			return err
		}
		select {
		case <-prev.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if prev.err != nil {
			return errAborted
		}
		if err := in.PutSessionSync(ctx, touched); err != nil {
			return err
		}
		return in.SetHighWater(ctx, hw, c.b.last)
	})
}

// errAborted is the error of a batch whose predecessor failed.
var errAborted = errors.New("sync: stopped after an earlier batch failed")

// mutableIndex maps MessageMutableColumns to their places in
// MessageColumns.
var mutableIndex = func() []int {
	out := make([]int, len(postgres.MessageMutableColumns))
	for i, c := range postgres.MessageMutableColumns {
		out[i] = slices.Index(postgres.MessageColumns, c)
	}
	return out
}()

// mutable picks the mutable columns out of a full message row.
func mutable(r []any) []any {
	out := make([]any, len(mutableIndex))
	for i, j := range mutableIndex {
		out[i] = r[j]
	}
	return out
}

// rowHash is a 64-bit hash of a row's values; sessions' messages
// fingerprints XOR them, so a batch adds its rows without rereading the
// session's others.
func rowHash(r []any) int64 {
	h := fnv.New64a()
	writeValues(h, r)
	return int64(h.Sum64())
}

// fingerprint is a sha-256 of a session row and its usage rows.
func fingerprint(session []any, usage [][]any) []byte {
	h := sha256.New()
	writeValues(h, session)
	sorted := slices.Clone(usage)
	slices.SortFunc(sorted, func(a, b []any) int {
		for i := 0; i < 6 && i < len(a); i++ {
			if c := cmp.Compare(text(a[i]), text(b[i])); c != 0 {
				return c
			}
		}
		return 0
	})
	for _, u := range sorted {
		h.Write([]byte{0xff})
		writeValues(h, u)
	}
	return h.Sum(nil)
}

// writeValues writes values in a form that tells every type and length
// apart.
func writeValues(h hash.Hash, vals []any) {
	var buf [9]byte
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			h.Write([]byte{0})
		case int64:
			buf[0] = 1
			binary.LittleEndian.PutUint64(buf[1:], uint64(x))
			h.Write(buf[:])
		case float64:
			buf[0] = 2
			binary.LittleEndian.PutUint64(buf[1:], math.Float64bits(x))
			h.Write(buf[:])
		case string:
			buf[0] = 3
			binary.LittleEndian.PutUint64(buf[1:], uint64(len(x)))
			h.Write(buf[:])
			h.Write([]byte(x))
		case []byte:
			buf[0] = 4
			binary.LittleEndian.PutUint64(buf[1:], uint64(len(x)))
			h.Write(buf[:])
			h.Write(x)
		default:
			fmt.Fprintf(h, "\x05%T:%v", v, v)
		}
	}
}

// text is a value as SQLite stores it, as text ("" for NULL).
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

// integer is an id as SQLite stores it.
func integer(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 0
}
