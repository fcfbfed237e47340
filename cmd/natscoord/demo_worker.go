package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
)

const (
	// demoLease is the claim lease of ordinary work: far longer than a task
	// takes, so no ordinary claim is ever taken over.
	demoLease = 10 * time.Second
	// demoStallLease is the lease of the claim whose worker pauses: short,
	// so the takeover happens within the demo's few seconds.
	demoStallLease = 400 * time.Millisecond
	// demoWork is how long a task "runs".
	demoWork = 40 * time.Millisecond
	// demoRecheck bounds how long an idle worker waits without a wake-up,
	// in case it missed one (the live subscription is core NATS).
	demoRecheck = time.Second
)

// demoWorker is one worker "process": its own NATS connection, ledger
// handle, event subscription and election candidacy.
type demoWorker struct {
	name   kvledger.OwnerID
	index  int
	nc     *nats.Conn
	js     jetstream.JetStream
	ledger *kvledger.Ledger
	wake   chan struct{}
	run    *demoRun
}

// demoRun is the state the workers share with the reporter: the outcome of
// the stall-and-takeover and of the election, and the stall's one-shot.
type demoRun struct {
	bucket string
	runID  string

	stallMu sync.Mutex // serializes claims of demoStalling until one stalls
	stalled bool       // the first claim of demoStalling was taken (by the staller)

	mu      sync.Mutex
	stall   stallReport
	leader  kvledger.OwnerID
	term    uint64
	leaders int
}

// stallReport records what happened to the paused worker.
type stallReport struct {
	Worker      kvledger.OwnerID `json:"worker"`
	Fence       uint64           `json:"fence"`
	TakenBy     kvledger.OwnerID `json:"taken_over_by,omitempty"`
	TakenFence  uint64           `json:"takeover_fence,omitempty"`
	LateRefused bool             `json:"late_complete_refused"`
	LateError   string           `json:"late_complete_error,omitempty"`
}

func (w *demoWorker) actor() kvledger.Actor { return kvledger.Actor(w.name) }

// loop claims ready work until every task of the graph is final. A task is
// ready when all its needs completed; a claimed task whose lease has run out
// (the paused worker's) is taken over. Between passes the worker sleeps until
// an event wakes it, the earliest lease it saw runs out, or demoRecheck.
func (w *demoWorker) loop(ctx context.Context) error {
	order := rotate(demoGraph, w.index)
	for {
		snap, err := w.ledger.Snapshot(ctx)
		if err != nil {
			return err
		}
		byKey := make(map[kvledger.IdempotencyKey]kvledger.TaskState, len(snap.Tasks))
		for _, t := range snap.Tasks {
			byKey[t.Key] = t
		}
		if allFinal(byKey) {
			return nil
		}
		// Work starts once the leader has admitted the whole graph, so
		// that every dependent exists before any task can fail and the
		// outcome (who blocks whom) does not depend on timing.
		did, admitted := false, len(byKey) >= len(demoGraph)
		var next time.Time
		for _, t := range order {
			rec, ok := byKey[t.key]
			if !ok || !admitted {
				continue
			}
			now := time.Now()
			switch {
			case rec.Status == kvledger.StatusPending && needsDone(byKey, t.needs):
				ran, err := w.claim(ctx, t)
				if err != nil {
					return err
				}
				did = did || ran
			case rec.Status == kvledger.StatusClaimed && !rec.LeaseUntil.After(now):
				ran, err := w.takeover(ctx, t)
				if err != nil {
					return err
				}
				did = did || ran
			case rec.Status == kvledger.StatusClaimed:
				if next.IsZero() || rec.LeaseUntil.Before(next) {
					next = rec.LeaseUntil
				}
			}
		}
		if did {
			continue
		}
		wait := demoRecheck
		if !next.IsZero() {
			wait = min(wait, time.Until(next)+5*time.Millisecond)
		}
		timer := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-w.wake:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
		timer.Stop()
	}
}

// claim claims t and runs it; false means someone else got it first.
func (w *demoWorker) claim(ctx context.Context, t demoTask) (bool, error) {
	fence, stall, err := w.tryClaim(ctx, t)
	if errors.Is(err, kvledger.ErrLeaseActive) || errors.Is(err, kvledger.ErrNotClaimed) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: claim %s: %w", w.name, t.key, err)
	}
	if stall {
		return true, w.pause(ctx, t, fence)
	}
	return true, w.finish(ctx, t, fence)
}

// tryClaim claims t. The first successful claim of demoStalling is made
// with a short lease by a worker that will then pause (stall is true);
// stallMu makes "first" exact.
func (w *demoWorker) tryClaim(ctx context.Context, t demoTask) (kvledger.FenceToken, bool, error) {
	if t.key != demoStalling {
		fence, err := w.ledger.Claim(ctx, w.actor(), t.key, w.name, demoLease, time.Now())
		return fence, false, err
	}
	w.run.stallMu.Lock()
	defer w.run.stallMu.Unlock()
	stall, lease := !w.run.stalled, demoLease
	if stall {
		lease = demoStallLease
	}
	fence, err := w.ledger.Claim(ctx, w.actor(), t.key, w.name, lease, time.Now())
	if err == nil && stall {
		w.run.stalled = true
	}
	return fence, stall, err
}

// takeover takes a claim whose lease ran out and runs the task.
func (w *demoWorker) takeover(ctx context.Context, t demoTask) (bool, error) {
	fence, err := w.ledger.Takeover(ctx, w.actor(), t.key, w.name, demoLease, time.Now())
	if errors.Is(err, kvledger.ErrNotStale) || errors.Is(err, kvledger.ErrNotClaimed) || errors.Is(err, kvledger.ErrLeaseActive) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: take over %s: %w", w.name, t.key, err)
	}
	return true, w.finish(ctx, t, fence)
}

// finish "runs" the task and records its outcome under fence.
func (w *demoWorker) finish(ctx context.Context, t demoTask, fence kvledger.FenceToken) error {
	if err := sleepCtx(ctx, demoWork); err != nil {
		return err
	}
	status := kvledger.StatusCompleted
	if t.key == demoFailing {
		status = kvledger.StatusFailed
	}
	if err := w.ledger.Complete(ctx, w.actor(), t.key, w.name, fence, status, time.Now()); err != nil {
		return fmt.Errorf("%s: complete %s: %w", w.name, t.key, err)
	}
	return nil
}

// pause plays a worker that stops (a GC pause, SIGSTOP, a partition) while
// holding a claim: it neither renews nor completes until another worker
// has taken the task over, then tries its late Complete with the old fence,
// which the ledger must refuse.
func (w *demoWorker) pause(ctx context.Context, t demoTask, fence kvledger.FenceToken) error {
	for {
		rec, _, err := w.ledger.State(ctx, t.key)
		if err != nil {
			return err
		}
		if rec.Fence != fence {
			late := w.ledger.Complete(ctx, w.actor(), t.key, w.name, fence, kvledger.StatusCompleted, time.Now())
			w.run.mu.Lock()
			w.run.stall = stallReport{
				Worker: w.name, Fence: uint64(fence), TakenBy: rec.Owner, TakenFence: uint64(rec.Fence),
				LateRefused: errors.Is(late, kvledger.ErrFenced),
			}
			if late != nil {
				w.run.stall.LateError = late.Error()
			}
			w.run.mu.Unlock()
			return nil
		}
		timer := time.NewTimer(demoRecheck)
		select {
		case <-w.wake:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
		timer.Stop()
	}
}

// admit is what the leader does: admit the whole graph. Admission is
// idempotent, so a second leader (after a failover) admitting again is
// harmless.
func (w *demoWorker) admit(ctx context.Context) error {
	for _, t := range demoGraph {
		task := map[string]any{"step": string(t.key), "layer": t.layer}
		if _, err := w.ledger.Admit(ctx, w.actor(), t.key, 1, task, time.Now(), t.needs...); err != nil {
			return fmt.Errorf("%s: admit %s: %w", w.name, t.key, err)
		}
	}
	return nil
}

// subscribe wakes the worker on every event of its ledger.
func (w *demoWorker) subscribe() (*events.Live, error) {
	return events.SubscribeLive(w.nc, w.run.subject(), func(e events.Event) {
		if e.Source != w.run.bucket {
			return
		}
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}, nil)
}

func allFinal(byKey map[kvledger.IdempotencyKey]kvledger.TaskState) bool {
	for _, t := range demoGraph {
		rec, ok := byKey[t.key]
		if !ok || !(rec.Status.Terminal() || rec.Status == kvledger.StatusBlocked) {
			return false
		}
	}
	return true
}

func needsDone(byKey map[kvledger.IdempotencyKey]kvledger.TaskState, needs []kvledger.IdempotencyKey) bool {
	for _, n := range needs {
		if byKey[n].Status != kvledger.StatusCompleted {
			return false
		}
	}
	return true
}

// rotate starts worker i's scan of the graph at a different task of each
// layer's neighbourhood, so workers spread over ready tasks instead of all
// racing for the first one.
func rotate(g []demoTask, i int) []demoTask {
	out := make([]demoTask, 0, len(g))
	for layer := 0; ; layer++ {
		var l []demoTask
		for _, t := range g {
			if t.layer == layer {
				l = append(l, t)
			}
		}
		if len(l) == 0 {
			return out
		}
		k := i % len(l)
		out = append(out, l[k:]...)
		out = append(out, l[:k]...)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
