package worker

import (
	"strings"
	"time"

	"github.com/natscoord/natscoord/internal/heapx"
	"github.com/natscoord/natscoord/kvledger"
)

// index is the worker's in-memory picture of the ledger, fed by the
// record and lease watches, guarded by Worker.mu. Every change costs
// O(1) plus the dependents waiting on the changed key, so picking the
// next task costs the same on a ledger of 100k records as on 1k.
type index struct {
	recs map[kvledger.IdempotencyKey]*entry
	// waiting maps a need to the pending records (of handled kinds)
	// waiting for it to complete.
	waiting map[kvledger.IdempotencyKey]map[kvledger.IdempotencyKey]struct{}
	// ready holds, per kind, the keys believed ready, in the order of
	// readyBefore; entries are checked again when taken (lazy removal).
	// queued holds the keys in a ready queue or parked behind a full
	// group (groups).
	ready  map[string]*readyQueue
	queued map[kvledger.IdempotencyKey]bool
	// pos is the revision of the last record change applied: the point
	// of the ledger's stream this worker's view has reached. backlog is
	// set while Start files the records the watch found (considerAll).
	pos     uint64
	backlog bool
	// groups holds, per group limited by Config.GroupLimits, what the
	// lease watch says of its slots and the tasks waiting for one.
	groups map[string]*group
	// rates holds the same for each rate limit (Config.RateLimits) and
	// its tokens.
	rates map[rateScope]*group
	// timers holds pending records whose RunAt is in the future, and
	// keys to look at again after a transient claim failure.
	timers *heapx.Heap[timer]
	// leases holds what the lease watch (or a read) last saw of the lease
	// keys that are live or that a claimed record names: worker leases
	// ("w.<token>" under the prefix) and per-record leases alike, by full
	// key. A key absent here is unknown: it ended before the watch
	// started, or its creation has not been delivered yet.
	leases map[string]leaseSeen
	// byLease maps a lease key to the claimed records (of handled kinds)
	// that name it: when it ends, each is a takeover candidate.
	byLease map[string]map[kvledger.IdempotencyKey]struct{}
	// prefix is the ledger's lease key prefix, for a record's per-record
	// lease key (recordLeaseKey): held by a process outside the runtime
	// that claims the record, and the lease of a claimed record that
	// names none.
	prefix string
	// orphans holds, by key, the fence of a claim of this worker that
	// outlived its attempt (the outcome could not be written): the
	// worker's lease keeps it alive, so nobody else would take it over;
	// this worker does.
	orphans map[kvledger.IdempotencyKey]kvledger.FenceToken
	// synced: both watches delivered their initial values.
	recSynced, leaseSynced bool
	// fair holds the kinds whose ready queue takes groups in turn
	// (Config.FairKinds, fair.go); turns is their turn counter.
	fair  map[string]bool
	turns uint64
}

type entry struct {
	status kvledger.Status
	kind   string
	runAt  time.Time
	needs  []kvledger.IdempotencyKey
	fence  kvledger.FenceToken
	owner  kvledger.OwnerID
	rev    uint64
	prio   int
	group  string
	// ready is the revision at which the task became ready (readyRev),
	// kept while the record does not change: a task filed again (its
	// claim failed, its group was full) keeps its place. 0 until known.
	// turn and floor are its place among the turns of a fair kind's
	// groups once picked (fair.go), kept likewise.
	ready, turn, floor uint64
	// lease, on a claimed record of a handled kind, is the lease key that
	// keeps the claim alive: the record's Lease, or the per-record key
	// for a record that names none.
	lease string
	// blockDue, for a pending record with a failed or blocked need, is
	// when this worker stops waiting for the failure's walk to block it
	// and claims it instead (which blocks it); zero until first seen so.
	blockDue time.Time
	// rec is the whole record while it is pending or claimed and of a
	// kind this worker handles (a claim starts from it without reading
	// it again). Final records and other kinds keep only the fields
	// above: on a ledger of 100k records most are one or the other, and
	// their payloads would otherwise stay in memory for nothing.
	rec *kvledger.TaskState
}

// leaseSeen is the last state of a lease key: live or ended, at a
// revision of the lease bucket.
type leaseSeen struct {
	live bool
	rev  uint64
}

func newIndex(prefix string) index {
	return index{
		prefix:  prefix,
		leases:  make(map[string]leaseSeen),
		byLease: make(map[string]map[kvledger.IdempotencyKey]struct{}),
		orphans: make(map[kvledger.IdempotencyKey]kvledger.FenceToken),
		recs:    make(map[kvledger.IdempotencyKey]*entry),
		waiting: make(map[kvledger.IdempotencyKey]map[kvledger.IdempotencyKey]struct{}),
		ready:   make(map[string]*readyQueue),
		queued:  make(map[kvledger.IdempotencyKey]bool),
		timers:  heapx.New(func(a, b timer) bool { return a.at.Before(b.at) }, nil),
		groups:  make(map[string]*group),
		fair:    make(map[string]bool),
	}
}

// readyItem is a key in a ready queue: its priority when it was filed,
// the revision at which it became ready and its record's revision. A
// task of a fair kind also carries, once picked, its group's turn and
// its floor (fair.go); both are 0 on other kinds.
type readyItem struct {
	key         kvledger.IdempotencyKey
	prio        int
	ready, own  uint64
	turn, floor uint64
}

// readyQueue is a kind's ready keys, in the order of placeBefore, or for
// a fair kind (f) its groups taken in turn.
type readyQueue struct {
	h *heapx.Heap[readyItem]
	f *fairQueue
}

// placeBefore is the one rule of order (doc.go, "Order"): higher priority
// first, then the one that became ready at the earlier revision of the
// ledger's stream, then the earlier record write (revisions are the
// server's: unique, and the same order for every worker). A ready queue
// keeps its tasks by it; a fair kind's, each group's.
func placeBefore(a, b readyItem) bool {
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.ready != b.ready {
		return a.ready < b.ready
	}
	return a.own < b.own
}

// readyBefore is placeBefore of tasks as the producer took them, by which
// it claims (startReadyLocked) and hands handler slots (grantLocked): the
// same as placeBefore but for picked tasks of a fair kind, which go by
// their pick (their floor, then their turn; fair.go).
func readyBefore(a, b readyItem) bool {
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if ra, rb := max(a.ready, a.floor), max(b.ready, b.floor); ra != rb {
		return ra < rb
	}
	if a.turn != b.turn {
		return a.turn < b.turn
	}
	return a.own < b.own
}

// readyRev is the revision at which e's task became ready: the point this
// worker's view of the ledger had reached when it found the task ready
// (the task's own write, its last need's completion, or, for a task that
// waited for its RunAt or for a claim's lease to end, every write seen by
// then). For the backlog Start finds, whose moment is past, it is the
// later of the task's own write and its needs' completions.
func (ix *index) readyRev(e *entry) uint64 {
	if !ix.backlog {
		return ix.pos
	}
	rev := e.rev
	for _, n := range e.needs {
		if ne := ix.recs[n]; ne != nil {
			rev = max(rev, ne.rev)
		}
	}
	return rev
}

func (q *readyQueue) pop() (readyItem, bool) {
	if q.f != nil {
		return q.f.pop()
	}
	if q.h.Len() == 0 {
		return readyItem{}, false
	}
	return q.h.Pop(), true
}

// timer is a key to look at again at a time.
type timer struct {
	at  time.Time
	key kvledger.IdempotencyKey
}

func (ix *index) addTimer(at time.Time, k kvledger.IdempotencyKey) {
	ix.timers.Push(timer{at: at, key: k})
}

// dueTimers pops the keys due at now.
func (ix *index) dueTimers(now time.Time, fn func(kvledger.IdempotencyKey)) {
	for t, ok := ix.timers.Peek(); ok && !t.at.After(now); t, ok = ix.timers.Peek() {
		fn(ix.timers.Pop().key)
	}
}

// nextTimer returns the earliest timer, if any.
func (ix *index) nextTimer() (time.Time, bool) {
	t, ok := ix.timers.Peek()
	return t.at, ok
}

// apply records a change of one record; handled says whether this
// worker has a handler for its kind. It returns the key's entry (nil
// when the record went). The watch delivers three changes
// per task, so a key's entry, and the copy of its record, are updated
// in place rather than allocated per change: nothing outside the index
// keeps a pointer to either (readers copy *rec).
func (ix *index) apply(c *kvledger.Change, handled bool) *entry {
	e := ix.recs[c.Key]
	if e != nil && e.lease != "" {
		ix.unname(e.lease, c.Key)
	}
	if c.Deleted || c.Err != nil {
		delete(ix.recs, c.Key)
		delete(ix.orphans, c.Key)
		return nil
	}
	r := &c.Record
	ix.pos = max(ix.pos, c.Rev)
	var rec *kvledger.TaskState
	var ready, turn, floor uint64
	if e == nil {
		e = new(entry)
		ix.recs[c.Key] = e
	} else {
		rec = e.rec
		if e.rev == c.Rev { // delivered again (a watch caught up): not a new write
			ready, turn, floor = e.ready, e.turn, e.floor
		}
	}
	*e = entry{
		status: r.Status, kind: r.Kind, runAt: r.RunAt, needs: r.Needs,
		fence: r.Fence, owner: r.Owner, rev: c.Rev, prio: r.Priority, group: r.Group, ready: ready, turn: turn, floor: floor,
	}
	if handled && (r.Status == kvledger.StatusPending || r.Status == kvledger.StatusClaimed) {
		if rec == nil {
			rec = new(kvledger.TaskState)
		}
		*rec = *r
		e.rec = rec
	}
	if f, ok := ix.orphans[c.Key]; ok && (r.Status != kvledger.StatusClaimed || r.Fence != f) {
		delete(ix.orphans, c.Key)
	}
	if handled && r.Status == kvledger.StatusClaimed {
		e.lease = r.Lease
		if e.lease == "" {
			e.lease = recordLeaseKey(ix.prefix, c.Key)
		}
		m := ix.byLease[e.lease]
		if m == nil {
			m = make(map[kvledger.IdempotencyKey]struct{})
			ix.byLease[e.lease] = m
		}
		m[c.Key] = struct{}{}
	}
	return e
}

// unname removes k from the records naming lease, and forgets an ended
// lease that no record names any more.
func (ix *index) unname(lease string, k kvledger.IdempotencyKey) {
	m := ix.byLease[lease]
	delete(m, k)
	if len(m) == 0 {
		delete(ix.byLease, lease)
		if s, ok := ix.leases[lease]; ok && !s.live {
			delete(ix.leases, lease)
		}
	}
}

// seeLease records the state of lease at revision rev (from the watch,
// or a read), unless what is recorded is newer. It reports whether the
// state changed.
func (ix *index) seeLease(lease string, live bool, rev uint64) bool {
	if s, ok := ix.leases[lease]; ok && s.rev >= rev {
		return false
	}
	if !live && len(ix.byLease[lease]) == 0 && !ix.isSlot(lease) {
		delete(ix.leases, lease) // ended and named by nothing: unknown again
		return true
	}
	ix.leases[lease] = leaseSeen{live: live, rev: rev}
	return true
}

// isSlot reports whether lease is a group's slot key or a rate limit's
// token. An ended slot keeps its revision (the slots are few, and fixed
// by GroupLimits and RateLimits): a
// lagging watch that delivers the slot's earlier put, after this worker
// released it or after the delete, must not show the slot held again
// until the delete arrives (once more).
func (ix *index) isSlot(lease string) bool {
	rest, ok := strings.CutPrefix(lease, ix.prefix)
	return ok && (strings.HasPrefix(rest, groupInfix) || strings.HasPrefix(rest, rateInfix))
}

// leaseState says what the index knows of the lease of the claimed
// record e: live, ended (known true), or unknown (known false).
func (ix *index) leaseState(e *entry) (live, known bool) {
	s, ok := ix.leases[e.lease]
	return s.live, ok
}

// enqueue adds k, of entry e, to its kind's ready queue once, in its
// place (readyBefore).
func (ix *index) enqueue(k kvledger.IdempotencyKey, e *entry) {
	if ix.queued[k] {
		return
	}
	if e.ready == 0 {
		e.ready = ix.readyRev(e)
	}
	ix.file(e.kind, readyItem{key: k, prio: e.prio, ready: e.ready, own: e.rev, turn: e.turn, floor: e.floor}, ix.backlog)
	ix.queued[k] = true
}

// requeue puts it back in kind's ready queue, keeping its place.
func (ix *index) requeue(kind string, it readyItem) { ix.file(kind, it, false) }

// file puts it in kind's ready queue; backlog says it is of the backlog
// Start files.
func (ix *index) file(kind string, it readyItem, backlog bool) {
	q := ix.ready[kind]
	if q == nil {
		q = new(readyQueue)
		if ix.fair[kind] {
			q.f = newFairQueue(ix)
		} else {
			q.h = heapx.New(placeBefore, nil)
		}
		ix.ready[kind] = q
	}
	if q.f == nil {
		q.h.Push(it)
		return
	}
	var group string
	if e := ix.recs[it.key]; e != nil {
		group = e.group
	}
	q.f.push(it, group, backlog)
}

func (ix *index) wait(need, dep kvledger.IdempotencyKey) {
	m := ix.waiting[need]
	if m == nil {
		m = make(map[kvledger.IdempotencyKey]struct{})
		ix.waiting[need] = m
	}
	m[dep] = struct{}{}
}

// readiness says what a record needs before this worker may claim it.
type readiness int

const (
	notCandidate readiness = iota // final, unhandled, or held by a live lease
	waitTime                      // pending, RunAt in the future
	waitNeed                      // pending, a need not completed
	waitBlocker                   // pending, a need failed or blocked: the failure's walk blocks it
	candidate                     // ready, or a claim whose lease expired
)

// judge decides about k at now without changing the index, by
// kvledger.Judge on what the watches delivered: the needs' statuses and
// the lease that holds k (for a pending record, a per-record lease of a
// process outside the runtime that is claiming it; for a claimed one, its
// claim's lease). For waitNeed and waitBlocker it also returns the need
// that decided.
func (ix *index) judge(k kvledger.IdempotencyKey, now time.Time) (readiness, kvledger.IdempotencyKey) {
	return ix.judgeEntry(k, ix.recs[k], now)
}

// judgeEntry is judge of k's entry e.
func (ix *index) judgeEntry(k kvledger.IdempotencyKey, e *entry, now time.Time) (readiness, kvledger.IdempotencyKey) {
	if e == nil || e.rec == nil || !ix.recSynced || !ix.leaseSynced {
		return notCandidate, "" // e.rec is nil on final records and unhandled kinds
	}
	lease := kvledger.LeaseStateUnknown
	switch e.status {
	case kvledger.StatusPending:
		if ix.leases[recordLeaseKey(ix.prefix, k)].live {
			lease = kvledger.LeaseStateLive // its lease's end wakes us
		}
	case kvledger.StatusClaimed:
		if f, ok := ix.orphans[k]; ok && f == e.fence {
			lease = kvledger.LeaseStateEnded // this worker's claim, its attempt over
		} else if live, known := ix.leaseState(e); live {
			lease = kvledger.LeaseStateLive // its claimant is alive; the lease's end wakes us
		} else if known {
			lease = kvledger.LeaseStateEnded
		}
	}
	v := kvledger.Judge(*e.rec, ix.needStatus, lease, now)
	switch v.Kind {
	case kvledger.VerdictWaitTime:
		return waitTime, ""
	case kvledger.VerdictWaitNeed:
		return waitNeed, v.Need
	case kvledger.VerdictBlockedNeed:
		if !e.blockDue.IsZero() && !now.Before(e.blockDue) {
			return candidate, "" // the claim blocks it
		}
		return waitBlocker, v.Need
	}
	if v.Claimable() {
		return candidate, "" // an unknown lease is read before the takeover (run.go)
	}
	return notCandidate, ""
}

// needStatus is what the record watch last delivered of need n.
func (ix *index) needStatus(n kvledger.IdempotencyKey) (kvledger.Status, bool) {
	if ne := ix.recs[n]; ne != nil {
		return ne.status, true
	}
	return "", false
}
