package worker

import (
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
	// ready holds, per kind, the keys believed ready in the order they
	// became so; entries are checked again when taken (lazy removal).
	ready  map[string]*fifo
	queued map[kvledger.IdempotencyKey]bool
	// timers holds pending records whose RunAt is in the future, and
	// keys to look at again after a transient claim failure.
	timers *heapx.Heap[timer]
	// leased is the set of keys whose claim lease is live (lease watch,
	// and this worker's own failed acquisitions).
	leased map[kvledger.IdempotencyKey]bool
	// synced: both watches delivered their initial values.
	recSynced, leaseSynced bool
}

type entry struct {
	status kvledger.Status
	kind   string
	runAt  time.Time
	needs  []kvledger.IdempotencyKey
	fence  kvledger.FenceToken
	owner  kvledger.OwnerID
	rev    uint64
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

func newIndex() index {
	return index{
		recs:    make(map[kvledger.IdempotencyKey]*entry),
		waiting: make(map[kvledger.IdempotencyKey]map[kvledger.IdempotencyKey]struct{}),
		ready:   make(map[string]*fifo),
		queued:  make(map[kvledger.IdempotencyKey]bool),
		leased:  make(map[kvledger.IdempotencyKey]bool),
		timers:  heapx.New(func(a, b timer) bool { return a.at.Before(b.at) }, nil),
	}
}

// fifo is a queue of keys.
type fifo struct {
	keys []kvledger.IdempotencyKey
	head int
}

func (q *fifo) push(k kvledger.IdempotencyKey) { q.keys = append(q.keys, k) }

func (q *fifo) pop() (kvledger.IdempotencyKey, bool) {
	if q.head >= len(q.keys) {
		return "", false
	}
	k := q.keys[q.head]
	q.keys[q.head] = ""
	q.head++
	if q.head > 1024 && q.head*2 > len(q.keys) {
		q.keys = append(q.keys[:0], q.keys[q.head:]...)
		q.head = 0
	}
	return k, true
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
// worker has a handler for its kind. It returns the previous entry.
func (ix *index) apply(c kvledger.Change, handled bool) *entry {
	old := ix.recs[c.Key]
	if c.Deleted || c.Err != nil {
		delete(ix.recs, c.Key)
		return old
	}
	r := c.Record
	e := &entry{
		status: r.Status, kind: r.Kind, runAt: r.RunAt, needs: r.Needs,
		fence: r.Fence, owner: r.Owner, rev: c.Rev,
	}
	if handled && (r.Status == kvledger.StatusPending || r.Status == kvledger.StatusClaimed) {
		e.rec = &r
	}
	ix.recs[c.Key] = e
	return old
}

// enqueue adds k to its kind's ready queue once.
func (ix *index) enqueue(k kvledger.IdempotencyKey, kind string) {
	if ix.queued[k] {
		return
	}
	q := ix.ready[kind]
	if q == nil {
		q = &fifo{}
		ix.ready[kind] = q
	}
	q.push(k)
	ix.queued[k] = true
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

// judge decides about k at now without changing the index; for waitNeed
// it also returns the first need that is not completed.
func (ix *index) judge(k kvledger.IdempotencyKey, now time.Time) (readiness, kvledger.IdempotencyKey) {
	e := ix.recs[k]
	if e == nil || !ix.recSynced || !ix.leaseSynced {
		return notCandidate, ""
	}
	switch e.status {
	case kvledger.StatusPending:
		if ix.leased[k] {
			return notCandidate, "" // another worker is claiming it; its lease watch event wakes us
		}
		if e.runAt.After(now) {
			return waitTime, ""
		}
		for _, n := range e.needs {
			ne := ix.recs[n]
			if ne != nil && (ne.status == kvledger.StatusFailed || ne.status == kvledger.StatusBlocked) {
				if !e.blockDue.IsZero() && !now.Before(e.blockDue) {
					return candidate, "" // the claim blocks it
				}
				return waitBlocker, n
			}
			if ne == nil || ne.status != kvledger.StatusCompleted {
				return waitNeed, n
			}
		}
		return candidate, ""
	case kvledger.StatusClaimed:
		if ix.leased[k] {
			return notCandidate, ""
		}
		return candidate, ""
	}
	return notCandidate, ""
}
