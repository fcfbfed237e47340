package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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

	// grp is the limited group of the task (Config.GroupLimits), whose
	// slot the attempt takes before its claim; nil when unbounded.
	grp *group

	// Guarded by Worker.mu.
	slot   bool   // holds a concurrency slot: claiming or in the handler
	rev    uint64 // the claim's record revision; 0 until claimed
	fence  kvledger.FenceToken
	cancel context.CancelCauseFunc
	cause  error          // a cause seen before the handler's context existed
	g      *kvlease.Guard // the worker's lease the claim names
	task   *Task
	hctx   context.Context // the handler's context, once it exists
	ev     Event           // the attempt as the Observer sees it, once claimed

	once sync.Once // the one outcome: recorded by the attempt, or released by the drain
}

// startLocked reserves a slot for k and starts its attempt.
func (w *Worker) startLocked(k kvledger.IdempotencyKey, kind string) {
	r := &run{w: w, key: k, kind: kind, slot: true}
	if e := w.ix.recs[k]; e != nil && e.group != "" {
		if g := w.ix.groups[e.group]; g != nil {
			r.grp = g
			g.taking++ // takeSlot gives it back
		}
	}
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
	w.poke()
}

func (w *Worker) freeSlotLocked(r *run) {
	if r.slot {
		r.slot = false
		w.busy--
		w.perKind[r.kind]--
	}
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

// retryLater looks at k again after a transient failure.
func (w *Worker) retryLater(k kvledger.IdempotencyKey) {
	w.mu.Lock()
	w.ix.addTimer(w.now().Add(time.Second), k)
	w.mu.Unlock()
	w.poke()
}

func (w *Worker) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(w.values), w.cfg.OpTimeout)
}

func (r *run) attempt() {
	w := r.w
	defer w.runs.Done()
	defer w.endRun(r)

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
		sg, ok := w.takeSlot(r)
		if !ok {
			return
		}
		// Released after the outcome is recorded (deferred calls run
		// in reverse), before endRun files the key again.
		defer w.releaseSlot(r.grp, sg)
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
	octx, cancel := w.opCtx()
	rec, err := w.l.ClaimLeasedFrom(octx, w.cfg.Actor, seen, w.cfg.Owner, g, w.cfg.MaxAttempts, w.now())
	cancel()
	if errors.Is(err, kvledger.ErrAttemptsExhausted) && rec.Status == kvledger.StatusFailed {
		// The last allowed attempt was lost with its claimant: the task
		// failed instead of running again.
		w.stats.failed.Add(1)
		w.observe(w.values, Event{Key: r.key, Kind: rec.Kind, Owner: w.cfg.Owner, Fence: rec.Fence,
			Attempt: rec.Attempts, Result: ResultFailed, Err: err})
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
	t := &Task{w: w, rec: rec}
	hctx, hcancel := context.WithCancelCause(context.WithValue(w.values, ctxKey{}, t))
	defer hcancel(nil)

	ev := Event{Key: r.key, Kind: rec.Kind, Owner: w.cfg.Owner, Fence: rec.Fence, Attempt: rec.Attempts}
	ev.setPickup(seen, w.now())
	w.mu.Lock()
	r.rev, r.fence, r.g, r.task, r.cancel, r.hctx, r.ev = rec.Rev, rec.Fence, g, t, hcancel, hctx, ev
	if e := w.ix.recs[r.key]; e != nil && e.rev > rec.Rev && (e.status != kvledger.StatusClaimed || e.fence != rec.Fence) {
		r.cause = ErrClaimLost
	}
	if err := g.Err(); err != nil && r.cause == nil {
		// The lease ended before r was filed under it, so its end hook
		// (workerLeaseEnded) missed r.
		r.cause = fmt.Errorf("%w: %w", ErrClaimLost, err)
	}
	if r.cause != nil {
		hcancel(r.cause)
	}
	draining := w.draining
	w.mu.Unlock()
	if draining {
		w.release(r)
		return
	}

	w.stats.started.Add(1)
	if o := w.cfg.Observer; o != nil {
		o.OnStart(hctx, ev)
	}
	start := time.Now()
	herr, panicked := call(hctx, w.handlers[rec.Kind], t)
	ev.Duration = time.Since(start)
	if panicked {
		w.stats.panics.Add(1)
	}
	w.freeSlot(r)
	r.once.Do(func() { w.record(r, hctx, herr, ev) })
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

// record writes the attempt's outcome. The worker's lease stays: the
// next claims name it too.
func (w *Worker) record(r *run, hctx context.Context, herr error, ev Event) {
	g, t := r.g, r.task
	ev.Err = herr
	cause := context.Cause(hctx)
	switch {
	case errors.Is(cause, ErrCancelled):
		ev.Result = ResultCancelled
		w.stats.cancelled.Add(1)
		w.observe(hctx, ev)
		return
	case errors.Is(cause, ErrClaimLost) || g.Err() != nil:
		ev.Result = ResultLost
		w.stats.lost.Add(1)
		w.observe(hctx, ev)
		return
	}
	var o kvledger.Outcome
	switch {
	case herr == nil:
		o = kvledger.Outcome{Status: kvledger.StatusCompleted, Result: t.resultBytes()}
		ev.Result = ResultCompleted
	default:
		o = kvledger.RetryOrFail(t.rec, w.cfg.MaxAttempts, herr.Error(), IsPermanent(herr), w.cfg.Backoff, w.now())
		ev.Result = ResultFailed
		if o.Status == kvledger.StatusPending {
			ev.Result, ev.RunAt = ResultRetried, o.RunAt
		}
	}
	_, err := w.finish(r, o)
	if err != nil {
		if g.Err() == nil {
			// The claim may stand, kept alive by the worker's lease:
			// take it over again (endRun files it).
			w.mu.Lock()
			w.ix.orphans[r.key] = r.fence
			w.mu.Unlock()
		}
		ev.Result, ev.Err = ResultLost, errors.Join(herr, err)
		w.stats.lost.Add(1)
		w.observe(hctx, ev)
		return
	}
	switch ev.Result {
	case ResultCompleted:
		w.stats.completed.Add(1)
	case ResultFailed:
		w.stats.failed.Add(1)
	case ResultRetried:
		w.stats.retried.Add(1)
	}
	w.observe(hctx, ev)
}

// finishRetry is finish's policy on the one retry primitive: 3 writes,
// 50 and 100 ms apart, each bounded by OpTimeout (opCtx); the pauses end
// when the worker's lease does, since a claim naming an ended lease can
// no longer be finished by this worker.
var finishRetry = retry.Policy{Tries: 3, Pause: 50 * time.Millisecond, MaxPause: 100 * time.Millisecond}

// finish writes o for r's claim, trying again briefly on a transient
// error (the fence makes a repeated write harmless: a second try after a
// write that landed finds the record no longer claimed).
func (w *Worker) finish(r *run, o kvledger.Outcome) (kvledger.TaskState, error) {
	var (
		rec kvledger.TaskState
		err error
	)
	for l := finishRetry.Start(r.g.Context()); l.Next(); {
		octx, cancel := w.opCtx()
		rec, err = w.l.Finish(octx, w.cfg.Actor, r.key, w.cfg.Owner, r.fence, o, w.now())
		cancel()
		if err == nil || errors.Is(err, kvledger.ErrFenced) || errors.Is(err, kvledger.ErrNotClaimed) || errors.Is(err, kvledger.ErrNoKey) {
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

// release gives r's claim back during a drain: the handler's context is
// cancelled with ErrDraining and the record goes back to pending (this
// attempt not counted), so another worker starts the task at once. The
// worker's lease is deleted after every release (Close).
func (w *Worker) release(r *run) {
	w.mu.Lock()
	claimed, cancel, g, hctx, ev := r.fence != 0, r.cancel, r.g, r.hctx, r.ev
	w.mu.Unlock()
	if !claimed {
		return // not claimed yet: the attempt sees the drain itself
	}
	r.once.Do(func() {
		if cancel != nil {
			cancel(ErrDraining)
		}
		ev.Result, ev.Err = ResultReleased, ErrDraining
		err := g.Err()
		if err == nil {
			_, err = w.finish(r, kvledger.Outcome{Status: kvledger.StatusPending, Uncount: true})
		}
		if err != nil {
			ev.Result, ev.Err = ResultLost, errors.Join(ErrDraining, err)
			w.stats.lost.Add(1)
		} else {
			w.stats.released.Add(1)
		}
		w.observe(hctx, ev)
	})
}

func (w *Worker) observe(ctx context.Context, ev Event) {
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
		return
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
