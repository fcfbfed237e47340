package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/retry"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// run is one attempt: reserved by the dispatcher, then a claim under the
// worker's lease, the handler and the recorded outcome.
type run struct {
	w    *Worker
	key  kvledger.IdempotencyKey
	kind string
	// order is the task's place when the dispatcher took it
	// (readyBefore), by which it gets its handler slot (grantLocked);
	// since is when, and held says a later claimed task waits for this
	// claim (a timer ends that wait at since+orderHold).
	order readyItem
	since time.Time
	held  bool

	// grp is the limited group of the task (Config.GroupLimits), whose
	// slot the attempt takes before its claim; nil when unbounded.
	grp *group

	// sg is the group slot the attempt holds (take), released by end
	// after the outcome is recorded; nil when none.
	sg *kvlease.Guard

	// rates are the rate limits whose tokens the attempt has still to
	// take (takeTokens), each counted in its taking meanwhile.
	rates [2]*group

	// Guarded by Worker.mu.
	slot     bool          // holds a slot: claiming, claimed ahead or in the handler
	handling bool          // holds a handler slot (ahead.go)
	grant    chan struct{} // closed when a waiting claim gets a handler slot
	rev      uint64        // the claim's record revision; 0 until claimed
	fence    kvledger.FenceToken
	cancel   context.CancelCauseFunc
	cause    error // a cause seen before the handler's context existed
	// cancelReq: the claim's record asks for its cancel (CancelRequested),
	// so the outcome, once the handler returned, ends the task cancelled.
	// Set under Worker.mu, read without it by record (atomic).
	cancelReq atomic.Bool
	g         *kvlease.Guard // the worker's lease the claim names
	task      *Task
	hctx      context.Context // the handler's context, once it exists
	ev        Event           // the attempt as the Observer sees it, once claimed

	once sync.Once // the one outcome: recorded by the attempt, or released by the drain

	// The attempt's Task, the values of its handler's context and its
	// outcome in flight live in the run (an attempt has one of each):
	// three allocations per task fewer than making each on its own.
	taskv Task
	tctx  taskCtx
	out   sentOutcome
}

// startLocked reserves a slot for it's task and starts its attempt.
func (w *Worker) startLocked(it readyItem, kind string) {
	k := it.key
	r := &run{w: w, key: k, kind: kind, slot: true, order: it, since: w.now()}
	w.claiming = append(w.claiming, r)
	if e := w.ix.recs[k]; e != nil && e.group != "" {
		if g := w.ix.groups[e.group]; g != nil {
			r.grp = g
			g.taking++ // take gives it back
		}
	}
	w.rateStartLocked(r)
	w.running[k] = r
	w.busy++
	w.perKind[kind]++
	w.runs.Add(1)
	w.startAttemptLocked(r)
}

// freeSlot gives r's concurrency slot back once its handler returned:
// recording the outcome (one or two round trips) then goes on without
// holding up the next task. The key stays in running
// until endRun, so it is not started again meanwhile.
func (w *Worker) freeSlot(r *run) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.freeSlotLocked(r)
	w.produceLocked(w.now()) // the next task starts on this goroutine's time
}

func (w *Worker) freeSlotLocked(r *run) {
	w.claimedLocked(r) // ended without a claim
	w.leaveHandlerLocked(r)
	if r.slot {
		r.slot = false
		w.busy--
		w.perKind[r.kind]--
	}
}

// end is an attempt's last step, after its outcome is recorded (or it
// recorded none): the group slot goes back, the handler's context ends,
// and the key is filed again.
func (r *run) end() {
	w := r.w
	if r.sg != nil {
		w.releaseSlot(r.grp, r.sg)
	}
	w.mu.Lock()
	cancel := r.cancel
	r.untakeTokensLocked()
	w.mu.Unlock()
	if cancel != nil {
		cancel(nil)
	}
	w.endRun(r)
	w.runs.Done()
}

// endRun ends r and files its key again.
func (w *Worker) endRun(r *run) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.freeSlotLocked(r)
	if w.running[r.key] == r {
		delete(w.running, r.key)
	}
	w.considerLocked(r.key, w.now())
	w.idleLocked()
	w.poke()
}

// claimRetry is the pause after a claim that failed transiently (a 503
// while a stream has no leader, a timeout, no responders), or after what
// a claim needs failed so (the worker's lease, a group slot, a lease
// read, an outcome write): the n-th failure in a row stops every claim of
// the worker for PauseAfter(n), 250 ms doubling to 1 s. Its tries have no
// ceiling of their own (the task stays pending in the store: the worker
// tries until it claims it, another worker does, or Close); the capped
// pause bounds them: a key is tried at most 4 times in its first 2 s of
// failures and once a second after that. The key keeps its place
// (index.ready), so it is the first tried again.
var claimRetry = retry.Policy{Pause: 250 * time.Millisecond, MaxPause: time.Second}

// retryLater looks at k again after a transient failure: no claim starts
// before claimRetry's pause (produceLocked), however the attempt ends.
func (w *Worker) retryLater(k kvledger.IdempotencyKey) {
	w.mu.Lock()
	w.claimFails++
	at := w.now().Add(claimRetry.PauseAfter(w.claimFails))
	w.claimPause = at
	w.ix.addTimer(at, k) // wakes the dispatcher when the pause ends
	w.mu.Unlock()
	w.poke()
}

func (w *Worker) opCtx() (context.Context, context.CancelFunc) {
	return kvx.Detached(w.values, w.cfg.OpTimeout)
}

// ledgerCtx is the context of a claim or an outcome's first send: on a
// pipelining store (pipelined: the KVStore) whose own bound of one
// operation is within Config.OpTimeout (storeBounds), the worker's
// values, with no deadline of their own, since that store bounds each
// read and write it makes (kvx.OpTimeout: a timer shared by every
// operation instead of one per call), so the hot path arms no timer per
// task. A call that walks (a claim reading needs or failing the task, a
// failure blocking its dependents) is many store operations, each
// bounded by the store (KVStore.Dependents too); the walk as a whole is
// not cut, since a walk cut short leaves dependents pending that should
// be blocked (TestPartitionsDAG found it). On any other store opCtx.
func (w *Worker) ledgerCtx() (context.Context, context.CancelFunc) {
	if w.storeBounds {
		return w.values, noCancel
	}
	return w.opCtx()
}

// storeBoundsOps reports whether l's store bounds each of its operations
// within opTimeout and sends outcomes without waiting (ledgerCtx).
func storeBoundsOps(l *kvledger.Ledger, opTimeout time.Duration) bool {
	s, ok := l.Store().(kvledger.OpBounded)
	return ok && pipelined(l) && s.OpTimeout() <= opTimeout
}

func noCancel() {}

func (r *run) attempt() {
	w := r.w
	handed := false // the collector ends r (collect.go)
	defer func() {
		if !handed {
			r.end()
		}
	}()

	seen, lease, known, live := kvledger.TaskState{Key: r.key}, "", false, false
	w.mu.Lock()
	if e := w.ix.recs[r.key]; e != nil && e.rec != nil {
		seen, lease = *e.rec, e.lease
		live, known = w.ix.leaseState(e)
		if f, ok := w.ix.orphans[r.key]; ok && f == e.fence {
			live = false // this worker's own claim, its attempt over
		}
	}
	w.mu.Unlock()
	if seen.Status == kvledger.StatusClaimed && known && live {
		// The dispatcher judged the claim's lease unknown, and the lease
		// watch has reported it live since (a worker's new lease reaches
		// the record watch first): its claimant is alive. The lease's end
		// files the task again.
		w.stats.contended.Add(1)
		return
	}
	if r.grp != nil {
		// The group's slot is taken before the claim, so a task that
		// finds its group full is not claimed and not counted as an
		// attempt: endRun files it again and it waits, parked, for the
		// lease watch to report a slot free. seen stays the record as
		// the dispatcher judged it: a claim written meanwhile makes the
		// claim below fail (ErrLeaseActive), never a takeover.
		sg, ok := w.take(r, r.grp)
		if !ok {
			return
		}
		// Released after the outcome is recorded (end), before
		// endRun files the key again.
		r.sg = sg
	}
	if seen.Status == kvledger.StatusClaimed && !known {
		if ok := w.readLeaseEnded(r.key, lease); !ok {
			return
		}
	}
	g, err := w.workerLease()
	if errors.Is(err, ErrClosed) {
		return // draining: nothing more is claimed
	}
	if err != nil {
		w.cfg.Logger.Warn("worker: acquiring the worker's lease", "key", string(r.key), "err", err)
		w.retryLater(r.key)
		return
	}
	if !w.takeTokens(r) {
		return
	}
	octx, cancel := w.ledgerCtx()
	rec, err := claimLeasedFrom(w.l, octx, w.cfg.Actor, seen, w.cfg.Owner, g, w.cfg.MaxAttempts, w.now())
	cancel()
	if errors.Is(err, kvledger.ErrAttemptsExhausted) && rec.Status == kvledger.StatusFailed {
		// The last allowed attempt was lost with its claimant: the task
		// failed instead of running again.
		w.observe(w.values, Event{Key: r.key, Kind: rec.Kind, Owner: w.cfg.Owner, Fence: rec.Fence,
			Attempt: rec.Attempts, Result: ResultFailed, Err: err})
		w.stats.failed.Add(1)
		return
	}
	if errors.Is(err, kvledger.ErrNotClaimed) && rec.Cancelled {
		// Cancelled while a claimant that died ran it: ended cancelled
		// instead of running again.
		w.observe(w.values, Event{Key: r.key, Kind: rec.Kind, Owner: w.cfg.Owner, Fence: rec.Fence,
			Attempt: rec.Attempts, Result: ResultCancelled, Err: err})
		w.stats.cancelled.Add(1)
		return
	}
	if err != nil {
		switch {
		case errors.Is(err, kvledger.ErrNotReady), errors.Is(err, kvledger.ErrNotClaimed), errors.Is(err, kvledger.ErrNoKey),
			errors.Is(err, kvledger.ErrLeaseActive):
			w.stats.contended.Add(1) // another worker claimed it first; the record watch tells the rest
		case errors.Is(err, kvledger.ErrNoLease):
			// The worker's lease ended just now: the next claim
			// acquires a fresh one.
			w.cfg.Logger.Debug("worker: claiming", "key", string(r.key), "err", err)
			w.retryLater(r.key)
		default:
			w.cfg.Logger.Warn("worker: claiming", "key", string(r.key), "err", err)
			w.retryLater(r.key)
		}
		return
	}
	if rec.LastEvent == kvledger.TakenOverEvent {
		w.stats.takenOver.Add(1)
	}
	r.taskv = Task{w: w, rec: rec}
	t := &r.taskv
	// Ended by end, after the outcome is recorded.
	r.tctx = taskCtx{Context: w.values, t: t}
	hctx, hcancel := context.WithCancelCause(&r.tctx)

	ev := Event{Key: r.key, Kind: rec.Kind, Owner: w.cfg.Owner, Fence: rec.Fence, Attempt: rec.Attempts}
	w.mu.Lock()
	r.rev, r.fence, r.g, r.task, r.cancel, r.hctx, r.ev = rec.Rev, rec.Fence, g, t, hcancel, hctx, ev
	w.claimFails = 0
	if e := w.ix.recs[r.key]; e != nil && e.rev > rec.Rev {
		switch {
		case e.status != kvledger.StatusClaimed || e.fence != rec.Fence:
			r.cause = ErrClaimLost
		case e.rec != nil && e.rec.CancelRequested:
			// Cancelled before r was filed to see it (observeLocked).
			r.cause = ErrCancelled
			r.cancelReq.Store(true)
		}
	}
	if err := g.Err(); err != nil && r.cause == nil {
		// The lease ended before r was filed under it, so its end hook
		// (workerLeaseEnded) missed r.
		r.cause = fmt.Errorf("%w: %w", ErrClaimLost, err)
	}
	if r.cause != nil {
		hcancel(r.cause)
	}
	w.mu.Unlock()
	if !w.enterHandler(r) {
		// Drained, cancelled or lost before a handler slot was free:
		// its handler never started, so its claim is given back
		// uncounted (giveBackUnstarted; done already when Close
		// released it while it waited). An operator's cancel wrote
		// the record itself: recorded as a cancelled handler is.
		if !errors.Is(context.Cause(hctx), ErrCancelled) {
			w.giveBackUnstarted(r)
		}
		r.once.Do(func() { handed = w.record(r, hctx, nil, ev) })
		return
	}
	// Pickup is measured to the handler's start, after any wait for a
	// handler slot.
	ev.setPickup(seen, w.now())
	w.mu.Lock()
	r.ev = ev
	w.mu.Unlock()

	w.stats.started.Add(1)
	if o := w.cfg.Observer; o != nil {
		o.OnStart(hctx, ev)
	}
	start := clock.Start(true)
	stopTimeout := w.armTimeout(rec, hcancel)
	herr, panicked := call(hctx, w.handlers[rec.Kind], t)
	stopTimeout()
	ev.Duration = clock.Since(start)
	if panicked {
		w.stats.panics.Add(1)
	}
	w.freeSlot(r)
	r.once.Do(func() { handed = w.record(r, hctx, herr, ev) })
}

// call runs h, turning a panic into an error.
func call(ctx context.Context, h Handler, t *Task) (err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			err, panicked = panicError(v), true
		}
	}()
	return h(ctx, t), false
}

// record sends the attempt's outcome and hands it to the collector
// (true), which settles it and ends r; false when it settled here (no
// outcome to write, or no collector). The worker's lease stays: the next
// claims name it too.
func (w *Worker) record(r *run, hctx context.Context, herr error, ev Event) bool {
	g, t := r.g, r.task
	herr = timedOut(hctx, herr)
	ev.Err = herr
	cause := context.Cause(hctx)
	cancelReq := r.cancelReq.Load()
	switch {
	case errors.Is(cause, ErrCancelled) && !cancelReq:
		// Ended cancelled by another writer: nothing left to write.
		ev.Result = ResultCancelled
		w.observe(hctx, ev)
		w.stats.cancelled.Add(1)
		return false
	case errors.Is(cause, ErrClaimLost) || g.Err() != nil:
		ev.Result = ResultLost
		w.observe(hctx, ev)
		w.stats.lost.Add(1)
		return false
	}
	var o kvledger.Outcome
	switch {
	case cancelReq:
		// Cancel asked for it: the ledger ends the claim cancelled,
		// whatever the handler returned, now that it has returned.
		o = kvledger.Outcome{Status: kvledger.StatusFailed, Error: ErrCancelled.Error()}
		ev.Result = ResultCancelled
	case herr == nil:
		o = kvledger.Outcome{Status: kvledger.StatusCompleted, Result: t.resultBytes()}
		ev.Result = ResultCompleted
	case errors.Is(cause, ErrDraining):
		// Cancelled by Close's drain, and given back only now that the
		// handler has returned, so no other worker starts the task
		// while it still runs: pending again at once, uncounted.
		o = kvledger.Outcome{Status: kvledger.StatusPending, Uncount: true}
		ev.Result = ResultReleased
		if !errors.Is(herr, ErrDraining) {
			ev.Err = fmt.Errorf("%w: %w", ErrDraining, herr)
		}
	case isGiveBack(herr):
		// Not before the first retry's pause: a cause that persists
		// (the handler gives back every time) is then a slow loop of
		// released writes, not a hot one.
		o = kvledger.Outcome{Status: kvledger.StatusPending, Error: herr.Error(), Uncount: true,
			RunAt: w.now().Add(max(w.cfg.Backoff(1), 0))}
		ev.Result, ev.RunAt = ResultReleased, o.RunAt
	case isSnooze(herr):
		o, ev.Result = w.snoozeOutcome(t.rec, herr)
		ev.RunAt = o.RunAt
	default:
		o = retryOrFail(t.rec, w.cfg.MaxAttempts, herr.Error(), IsPermanent(herr), w.cfg.Backoff, w.now())
		ev.Result = ResultFailed
		if o.Status == kvledger.StatusPending {
			ev.Result, ev.RunAt = ResultRetried, o.RunAt
		}
	}
	// A pipelining store bounds each read finishAsync makes before its
	// send itself (the send takes no context), so the hot path arms no
	// timer; on a store that cannot pipeline finishAsync is the whole
	// finishClaim, bounded here by OpTimeout (then retried by settle's finish).
	octx, cancel := w.ledgerCtx()
	sent := finishAsync(w.l, octx, w.cfg.Actor, r.key, w.cfg.Owner, r.fence, o, w.now())
	cancel()
	r.out = sentOutcome{r: r, hctx: hctx, ev: ev, o: o, sent: sent}
	so := &r.out
	if w.collect(so) {
		return true
	}
	w.settle(so)
	return false
}

// settle waits for an outcome sent by record and finishes the attempt's
// bookkeeping: a refused outcome is a lost claim, a transient failure is
// retried by finish.
func (w *Worker) settle(so *sentOutcome) {
	r, hctx, ev, g := so.r, so.hctx, so.ev, so.r.g
	herr := ev.Err
	rec, err := w.finish(r, so.o, so.sent)
	if err != nil && !refused(err) && !unwritable(err) {
		// The server did not answer for as long as finish tries (it
		// restarted, the connection went): the outcome may have landed,
		// and the claim stands until someone takes it over. Settle it
		// when the server answers again, so that what is reported is
		// what the record holds.
		rec, err = w.finishLate(r, so.o)
	}
	if err == nil && rec.Cancelled {
		// Cancelled after the handler returned, before its outcome
		// landed: the ledger ended it cancelled (as the record says).
		ev.Result, ev.RunAt = ResultCancelled, time.Time{}
	}
	if err != nil {
		if g.Err() == nil {
			// The claim may stand, kept alive by the worker's lease:
			// take it over again (endRun files it), after the claims'
			// pause when the write failed rather than was refused.
			w.mu.Lock()
			w.ix.orphans[r.key] = r.fence
			w.mu.Unlock()
			if !refused(err) {
				w.retryLater(r.key)
			}
		}
		ev.Result, ev.Err = ResultLost, errors.Join(herr, err)
		w.observe(hctx, ev)
		w.stats.lost.Add(1)
		return
	}
	// Observed before counted, as on every path of an attempt's end:
	// whoever sees the count (Stats) finds the Observer called.
	w.observe(hctx, ev)
	switch ev.Result {
	case ResultCompleted:
		w.stats.completed.Add(1)
	case ResultFailed:
		w.stats.failed.Add(1)
	case ResultRetried:
		w.stats.retried.Add(1)
	case ResultReleased:
		w.stats.released.Add(1)
	case ResultSnoozed:
		w.stats.snoozed.Add(1)
	case ResultCancelled:
		w.stats.cancelled.Add(1)
	}
}

// finishRetry is finish's policy on the one retry primitive: 3 writes,
// 50 and 100 ms apart, each bounded by OpTimeout (opCtx); the pauses end
// when the worker's lease does, since a claim naming an ended lease can
// no longer be finished by this worker.
var finishRetry = retry.Policy{Tries: 3, Pause: 50 * time.Millisecond, MaxPause: 100 * time.Millisecond}

// finish writes o for r's claim, trying again briefly on a transient
// error (the fence makes a repeated write harmless: a second try after a
// write that landed finds the record no longer claimed). sent, when not
// nil, is o's first try, already sent (finishAsync): its answer is
// waited for instead of a first write.
func (w *Worker) finish(r *run, o kvledger.Outcome, sent *kvledger.PendingFinish) (kvledger.TaskState, error) {
	var (
		rec kvledger.TaskState
		err error
	)
	for l := finishRetry.Start(r.g.Context()); l.Next(); {
		var (
			octx   context.Context
			cancel context.CancelFunc
		)
		if l.Try() == 0 && sent != nil {
			// The answer to a pipelined send: its wait, what follows a
			// lost swap and a failure's walk through its dependents.
			octx, cancel = w.ledgerCtx()
			rec, err = sent.Wait(octx)
		} else {
			octx, cancel = w.opCtx()
			rec, err = finishClaim(w.l, octx, w.cfg.Actor, r.key, w.cfg.Owner, r.fence, o, w.now())
		}
		cancel()
		if err == nil || refused(err) {
			break
		}
		if r.g.Err() != nil {
			break
		}
	}
	if err != nil {
		w.cfg.Logger.Warn("worker: recording an attempt", "key", string(r.key), "fence", uint64(r.fence), "err", err)
	}
	return rec, err
}

// refused reports whether err, from an outcome's write, says the claim
// is no longer the worker's: nothing was written, and trying again
// cannot change that.
func refused(err error) bool {
	return errors.Is(err, kvledger.ErrFenced) || errors.Is(err, kvledger.ErrNotClaimed) || errors.Is(err, kvledger.ErrNoKey)
}

// unwritable reports whether err says an outcome cannot be written
// however often it is tried: the ledger closed, or the record refused.
func unwritable(err error) bool {
	return errors.Is(err, kvledger.ErrClosed) || errors.Is(err, kvledger.ErrInvalidState) || errors.Is(err, kvledger.ErrTooLarge) ||
		errors.Is(err, kvledger.ErrUnknownStatus) || errors.Is(err, kvledger.ErrFenceExhausted)
}

// lateRetry is finishLate's policy: the server may be away for a while
// (a restart, a partition), so the pauses grow to 2 s and the tries
// reach past a minute; they end with the worker's Close (after which
// finishLate tries as finish does, finishRetry).
var lateRetry = retry.Policy{Tries: 40, Pause: 100 * time.Millisecond, MaxPause: 2 * time.Second}

// finishLate writes o for r's claim when the server answers again, also
// after the worker's lease ended: an outcome whose answer was lost, or
// the give-back of a claim whose handler never started. Both are safe
// without the lease: the handler has returned or never ran, so whoever
// takes the claim over cannot overlap a run of it, and the write is
// fenced (refused once the claim was taken over: lost). A write that
// landed earlier is found as landed (kvledger's finish), so what is
// reported is what the record holds.
func (w *Worker) finishLate(r *run, o kvledger.Outcome) (kvledger.TaskState, error) {
	var (
		rec kvledger.TaskState
		err error
	)
	p, ctx := lateRetry, w.ctx
	if ctx.Err() != nil {
		p, ctx = finishRetry, w.values // Close began: a drain's few tries
	}
	for l := p.Start(ctx); l.Next(); {
		octx, cancel := w.opCtx()
		rec, err = finishClaim(w.l, octx, w.cfg.Actor, r.key, w.cfg.Owner, r.fence, o, w.now())
		cancel()
		if err == nil || refused(err) || unwritable(err) {
			return rec, err
		}
	}
	w.cfg.Logger.Warn("worker: recording an attempt after the server came back", "key", string(r.key), "fence", uint64(r.fence), "err", err)
	return rec, err
}

// giveBackUnstarted gives back r's claim, whose handler never started
// (it waited for a handler slot: a claim ahead), however the wait ended:
// a drain, the worker's lease ending (a partition, a server restart
// longer than ClaimTTL), or the record moving on. The record goes back
// to pending with the claim's attempt taken back (Outcome.Uncount) in
// the same write, so an attempt counts only when its handler ran, and
// the task shows as given back (ResultReleased, Err the cause), also in
// the record's attempts. The write is finishLate's: tried until the
// server answers, even after the lease ended. Refused (the claim was
// taken over meanwhile, which counted it), the attempt is lost.
func (w *Worker) giveBackUnstarted(r *run) {
	w.mu.Lock()
	cancel, hctx, ev := r.cancel, r.hctx, r.ev
	w.mu.Unlock()
	r.once.Do(func() {
		cause := context.Cause(hctx)
		if cause == nil {
			cause = ErrDraining // the drain ended the wait, not the context
		}
		if cancel != nil {
			cancel(cause)
		}
		rec, err := w.finishLate(r, kvledger.Outcome{Status: kvledger.StatusPending, Uncount: true})
		ev.Result, ev.Err = ResultReleased, cause
		switch {
		case err != nil:
			ev.Result, ev.Err = ResultLost, errors.Join(cause, err)
		case rec.Cancelled:
			ev.Result, ev.Err = ResultCancelled, ErrCancelled // the ledger ended it cancelled
		}
		w.observe(hctx, ev)
		switch {
		case err != nil:
			w.stats.lost.Add(1)
		case ev.Result == ResultCancelled:
			w.stats.cancelled.Add(1)
		default:
			w.stats.released.Add(1)
		}
	})
}

// release gives back the claim of r, whose handler never started (it
// waited for a handler slot, or was claimed as Close began): pending
// again, this attempt not counted, so another worker starts the task at
// once. A running handler's claim is never released here: the drain
// cancels it (stopHandler) and record gives it back once it returned.
func (w *Worker) release(r *run) {
	w.mu.Lock()
	claimed, handling := r.fence != 0, r.handling
	w.mu.Unlock()
	if !claimed || handling {
		return // not claimed yet (the attempt sees the drain itself), or in its handler
	}
	w.giveBackUnstarted(r)
}

// stopHandler cancels the context of r's handler with ErrDraining when
// the drain's time is up. The claim stays, under the worker's lease,
// which keeps being renewed: record gives it back after the handler
// returned.
func (w *Worker) stopHandler(r *run) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.cause == nil {
		r.cause = ErrDraining
	}
	if r.cancel != nil {
		r.cancel(ErrDraining)
	}
}

func (w *Worker) observe(ctx context.Context, ev Event) {
	w.logAttempt(ctx, ev)
	if o := w.cfg.Observer; o != nil {
		o.OnFinish(ctx, ev)
	}
}

// observeLocked reacts to a change of r's record made by someone else:
// a cancellation or any other change of the claim ends the handler's
// context.
func (r *run) observeLocked(c kvledger.Change) {
	if r.rev == 0 || c.Rev <= r.rev {
		return
	}
	var cause error
	switch {
	case c.Deleted || c.Err != nil:
		cause = ErrClaimLost
	case c.Record.Status == kvledger.StatusClaimed && c.Record.Fence == r.fence:
		if !c.Record.CancelRequested || r.cancelReq.Load() {
			return // still r's claim (a renewal, say)
		}
		r.cancelReq.Store(true)
		cause = ErrCancelled
	case c.Record.Cancelled:
		cause = ErrCancelled
	default:
		cause = ErrClaimLost
	}
	if r.cause == nil {
		r.cause = cause
	}
	if r.cancel != nil {
		r.cancel(cause)
	}
}
