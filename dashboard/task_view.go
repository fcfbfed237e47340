package dashboard

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvledger"
)

// taskSummary is what the view keeps of one record: everything a list
// shows, never the payload, and of the last error only its first line.
type taskSummary struct {
	Key        kvledger.IdempotencyKey
	Status     kvledger.Status
	Kind       string
	Owner      kvledger.OwnerID
	Fence      kvledger.FenceToken
	Needs      []kvledger.IdempotencyKey
	BlockedBy  kvledger.IdempotencyKey
	LeaseUntil time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
	LastEvent  events.Name
	Rev        uint64
	// The task runtime's fields (zero on records without them).
	RunAt       time.Time
	Attempts    int
	MaxAttempts int
	Cancelled   bool
	// CancelRequested: a running task an operator cancelled (cancelling).
	CancelRequested bool
	Lease           string // the claim's lease key in the claims lease bucket
	// ErrorLine is the record's last error as a task list shows it
	// (errorLine: its first line, bounded); the task page reads the
	// whole error from the store.
	ErrorLine string
}

func summarize(s kvledger.TaskState, kind string) taskSummary {
	return taskSummary{Key: s.Key, Status: s.Status, Kind: kind, Owner: s.Owner, Fence: s.Fence,
		Needs: slices.Clone(s.Needs), BlockedBy: s.BlockedBy, LeaseUntil: s.LeaseUntil,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, LastEvent: s.LastEvent, Rev: s.Rev,
		RunAt: s.RunAt, Attempts: s.Attempts, MaxAttempts: s.MaxAttempts, Cancelled: s.Cancelled,
		CancelRequested: s.CancelRequested, Lease: s.Lease, ErrorLine: errorLine(s.LastError)}
}

// Phase is the record's phase at now, as kvledger defines it: the view
// keeps the fields TaskState.Phase reads and asks it, so the dashboard
// never spells the rule itself.
func (s taskSummary) Phase(now time.Time) kvledger.Phase { return s.record().Phase(now) }

// AttemptLimit is the attempts the record itself allows, as kvledger
// states the limit (kvledger.AttemptLimit); 0 when the record leaves it to
// the worker's default, which the dashboard does not know.
func (s taskSummary) AttemptLimit() int { return kvledger.AttemptLimit(s.record(), 0) }

// record is the part of the record the summary keeps that phases are
// judged by (TaskState.Phase), counted by kind (kvledger.Tally) and its
// attempts limited by (kvledger.AttemptLimit).
func (s taskSummary) record() kvledger.TaskState {
	return kvledger.TaskState{Key: s.Key, Kind: s.Kind, Status: s.Status, RunAt: s.RunAt, Needs: s.Needs, Attempts: s.Attempts,
		MaxAttempts: s.MaxAttempts, Cancelled: s.Cancelled, CancelRequested: s.CancelRequested}
}

// taskEntry is a summary at its place in admission order.
type taskEntry struct {
	seq uint64 // position in admission order, the paging cursor
	taskSummary
	// fixed is the record's phase when it is the same at every time, ""
	// when the clock decides it (countLocked sets it).
	fixed kvledger.Phase
	// told is set once the run-at clock announced this summary's run-at
	// (runAtClock).
	told bool
}

// phaseAt is e's phase at now.
func (e *taskEntry) phaseAt(now time.Time) kvledger.Phase {
	if e.fixed != "" {
		return e.fixed
	}
	return e.Phase(now)
}

// taskView is the in-memory view of one ledger's records. Entries are kept
// in the order the view first saw them (admission order for records
// admitted while it runs), which is the order pages walk, newest first.
type taskView struct {
	mu         sync.RWMutex
	order      []*taskEntry // ascending seq
	byKey      map[kvledger.IdempotencyKey]*taskEntry
	dependents map[kvledger.IdempotencyKey][]kvledger.IdempotencyKey
	counts     map[kvledger.Status]int
	// phases counts the records by phase: kvledger.Tally, the one
	// definition of phase counting (a run-at that passes turns a record
	// pending with no write).
	phases *kvledger.Tally
	// timed holds the records whose phase the clock changes (a pending
	// record with a run-at), for the run-at clock (runAtsPassed).
	timed map[*taskEntry]struct{}
	// timedAdded receives (without blocking) when a record joins timed,
	// for the run-at clock to look again.
	timedAdded chan struct{}
	next       uint64
	// clk is the dashboard's clock (Config.Clock), at which phases files
	// a record.
	clk clock.Clock
}

func newTaskView(clk clock.Clock) *taskView {
	return &taskView{
		clk:        clk,
		byKey:      make(map[kvledger.IdempotencyKey]*taskEntry),
		dependents: make(map[kvledger.IdempotencyKey][]kvledger.IdempotencyKey),
		counts:     make(map[kvledger.Status]int),
		phases:     kvledger.NewTally(),
		timed:      make(map[*taskEntry]struct{}),
		timedAdded: make(chan struct{}, 1),
	}
}

// put stores s unless the view already holds its key at a revision at or
// above s.Rev. It reports whether s was stored.
func (v *taskView) put(s taskSummary) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.byKey[s.Key]
	if ok && e.Rev >= s.Rev {
		return false
	}
	if !ok {
		v.next++
		e = &taskEntry{seq: v.next}
		v.order = append(v.order, e)
		v.byKey[s.Key] = e
	} else {
		v.countLocked(e, -1)
	}
	for _, n := range s.Needs {
		if !slices.Contains(e.Needs, n) {
			v.dependents[n] = append(v.dependents[n], s.Key)
		}
	}
	for _, n := range e.Needs { // a rebase may drop needs
		if !slices.Contains(s.Needs, n) {
			v.unlinkLocked(n, s.Key)
		}
	}
	e.taskSummary = s
	v.countLocked(e, 1)
	return true
}

// remove drops key when the view holds it at a revision below rev (a
// delete or an expiry); its place in admission order and its entries in
// the dependents index go with it. It reports whether it dropped one.
func (v *taskView) remove(k kvledger.IdempotencyKey, rev uint64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.byKey[k]
	if !ok || e.Rev >= rev {
		return false
	}
	v.dropLocked(e)
	return true
}

// retain drops every key not in keep.
func (v *taskView) retain(keep map[kvledger.IdempotencyKey]bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for k, e := range v.byKey {
		if !keep[k] {
			v.dropLocked(e)
		}
	}
}

func (v *taskView) dropLocked(e *taskEntry) {
	delete(v.byKey, e.Key)
	v.countLocked(e, -1)
	v.phases.Apply(kvledger.Change{Key: e.Key, Deleted: true}, time.Time{})
	if i, found := slices.BinarySearchFunc(v.order, e.seq, func(x *taskEntry, s uint64) int { return cmp.Compare(x.seq, s) }); found {
		v.order = slices.Delete(v.order, i, i+1)
	}
	for _, n := range e.Needs {
		v.unlinkLocked(n, e.Key)
	}
}

// countLocked adds e to the counts (by = 1) or takes it out (by = -1).
// Whether e's phase depends on the time is asked of kvledger's rule
// itself: its phase at the earliest and at the latest time differ.
func (v *taskView) countLocked(e *taskEntry, by int) {
	v.counts[e.Status] += by
	if by > 0 {
		e.fixed, e.told = "", false
		if p := e.Phase(time.Time{}); p == e.Phase(maxTime) {
			e.fixed = p
		}
		v.phases.Apply(kvledger.Change{Key: e.Key, Rev: e.Rev, Record: e.record()}, v.clk.Now())
	}
	switch {
	case e.fixed != "": // the clock does not change its phase
	case by > 0:
		v.timed[e] = struct{}{}
		select {
		case v.timedAdded <- struct{}{}:
		default:
		}
	default:
		delete(v.timed, e)
	}
}

// maxTime is later than any run-at.
var maxTime = time.Unix(1<<62, 0)

// unlinkLocked removes dep from the dependents of need.
func (v *taskView) unlinkLocked(need, dep kvledger.IdempotencyKey) {
	ds := slices.DeleteFunc(v.dependents[need], func(d kvledger.IdempotencyKey) bool { return d == dep })
	if len(ds) == 0 {
		delete(v.dependents, need)
	} else {
		v.dependents[need] = ds
	}
}

func (v *taskView) get(k kvledger.IdempotencyKey) (taskSummary, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	e, ok := v.byKey[k]
	if !ok {
		return taskSummary{}, false
	}
	return e.taskSummary, true
}

// neededBy lists the pending or claimed records that name k in their
// needs: those the ledger keeps k's record for (kvledger.ErrNeeded).
func (v *taskView) neededBy(k kvledger.IdempotencyKey) []kvledger.IdempotencyKey {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []kvledger.IdempotencyKey
	for _, d := range v.dependents[k] {
		if e, ok := v.byKey[d]; ok && (e.Status == kvledger.StatusPending || e.Status == kvledger.StatusClaimed) {
			out = append(out, d)
		}
	}
	return out
}

// statusCounts returns the number of records per status and in all.
func (v *taskView) statusCounts() (map[kvledger.Status]int, int) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := make(map[kvledger.Status]int, len(v.counts))
	for s, n := range v.counts {
		out[s] = n
	}
	return out, len(v.order)
}

// phaseCounts returns the number of records per phase at now and in
// all, as kvledger.Tally counts them.
func (v *taskView) phaseCounts(now time.Time) (map[kvledger.Phase]int, int) {
	c := v.phases.Counts(now)
	return c.ByPhase, c.Total
}

// oldestReady returns the earliest-seen record a worker can claim now:
// kvledger.Judge's VerdictReady on the view's needs (the view follows no
// lease, so a per-record lease is not known).
func (v *taskView) oldestReady(now time.Time) (taskSummary, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, e := range v.order {
		if e.Status == kvledger.StatusPending && kvledger.Judge(e.record(), v.needStatus, kvledger.LeaseStateUnknown, now).Kind == kvledger.VerdictReady {
			return e.taskSummary, true
		}
	}
	return taskSummary{}, false
}

// needStatus is the view's status of need n (v.mu held).
func (v *taskView) needStatus(n kvledger.IdempotencyKey) (kvledger.Status, bool) {
	if d, ok := v.byKey[n]; ok {
		return d.Status, true
	}
	return "", false
}

// taskFilter selects records for a page; empty fields match everything.
// Phase is judged at Now.
type taskFilter struct {
	Phase  kvledger.Phase
	Kind   string
	Prefix string
	Now    time.Time
	// Only, when set, further limits the phases matched (a bulk action's
	// filter chooses only the tasks the action applies to).
	Only func(kvledger.Phase) bool
}

func (f taskFilter) match(e *taskEntry) bool {
	if f.Phase != "" || f.Only != nil {
		p := e.phaseAt(f.Now)
		if (f.Phase != "" && p != f.Phase) || (f.Only != nil && !f.Only(p)) {
			return false
		}
	}
	return (f.Kind == "" || e.Kind == f.Kind) && strings.HasPrefix(string(e.Key), f.Prefix)
}

// taskPage is one page of matches, newest first. Next is the cursor of
// the following page, 0 when this is the last.
type taskPage struct {
	Rows []taskSummary
	Next uint64
}

// page returns up to n matches of f seen before cursor (0: from the
// newest). It walks back from the cursor and stops after n+1 matches, so
// it costs the records it passes, never the whole view unless nothing
// further matches.
func (v *taskView) page(f taskFilter, before uint64, n int) taskPage {
	v.mu.RLock()
	defer v.mu.RUnlock()
	i := len(v.order)
	if before > 0 {
		i, _ = slices.BinarySearchFunc(v.order, before, func(e *taskEntry, s uint64) int { return cmp.Compare(e.seq, s) })
	}
	var (
		p    taskPage
		last uint64
	)
	for i--; i >= 0; i-- {
		e := v.order[i]
		if !f.match(e) {
			continue
		}
		if len(p.Rows) == n { // one more match exists: the page has a successor
			p.Next = last
			break
		}
		p.Rows = append(p.Rows, e.taskSummary)
		last = e.seq
	}
	return p
}

// dependentsOf returns the keys that name k in their needs.
func (v *taskView) dependentsOf(k kvledger.IdempotencyKey) []kvledger.IdempotencyKey {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return slices.Clone(v.dependents[k])
}

// size is the number of records in the view.
func (v *taskView) size() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.order)
}

// runAtsPassed returns the records whose run-at passed by now and were
// not returned before (their phase changed with no write), and the
// earliest run-at still ahead (zero when none is).
func (v *taskView) runAtsPassed(now time.Time) (passed []taskSummary, next time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	// The tally turns the records whose run-at passed pending when it
	// counts: counting here, as the clock passes them, keeps it from
	// holding their run-ats until someone looks at a page.
	v.phases.Counts(now)
	for e := range v.timed {
		switch {
		case !e.RunAt.After(now):
			if !e.told {
				e.told = true
				passed = append(passed, e.taskSummary)
			}
		case next.IsZero() || e.RunAt.Before(next):
			next = e.RunAt
		}
	}
	return passed, next
}
