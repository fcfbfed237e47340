package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

const (
	// demoLease is the claim TTL of ordinary work: far longer than a task
	// takes (claims renew every third of it), so no ordinary claim is
	// ever taken over.
	demoLease = 10 * time.Second
	// demoStallLease is the lease TTL of the claim whose worker pauses:
	// short, so the takeover happens within the demo's few seconds (the
	// server's TTLs are whole seconds, at least one).
	demoStallLease = time.Second
	// demoWork is how long a task "runs".
	demoWork = 40 * time.Millisecond
	// demoKind is the kind of every demo task.
	demoKind = "demo"
)

// demoWorker is one worker "process": its own NATS connection, ledger
// handle, lease manager, task-runtime worker and election candidacy.
type demoWorker struct {
	name   kvledger.OwnerID
	index  int
	nc     *nats.Conn
	js     jetstream.JetStream
	ledger *kvledger.Ledger
	leases *kvlease.Manager
	rt     *worker.Worker
	run    *demoRun
}

// demoRun is the state the workers share with the reporter: the outcome of
// the stall-and-takeover and of the election.
type demoRun struct {
	bucket string
	runID  string

	mu      sync.Mutex
	stall   stallReport
	leader  kvledger.OwnerID
	term    uint64
	leaders int
}

// claimsBucket holds the leases of the run's workers' claims. It is the
// run's own, as its ledger bucket is, so that cleanUp can delete it: a
// bucket shared by every run stayed on the server after a run against
// --server.
func (r *demoRun) claimsBucket() string { return "natscoord_demo_claims_" + r.runID }

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

// newRuntime makes the worker's task runtime: it runs every ready task of
// the demo ledger, one claim per task paired with a lease that the server
// expires if the worker stops renewing it.
func (w *demoWorker) newRuntime(ctx context.Context) error {
	rt, err := worker.New(ctx, w.js, w.ledger, worker.Config{
		Clock: wall,
		Owner: w.name, Leases: w.leases, ClaimTTL: demoLease, Concurrency: 2, DrainTimeout: time.Second,
	})
	if err == nil {
		err = rt.Handle(demoKind, w.handle)
	}
	if err != nil {
		return err
	}
	w.rt = rt
	return nil
}

// handle "runs" a task: integ-test fails for good (a permanent error is
// not retried), everything else succeeds.
func (w *demoWorker) handle(ctx context.Context, t *worker.Task) error {
	if err := sleepCtx(ctx, demoWork); err != nil {
		return err
	}
	if t.Key() == demoFailing {
		return worker.Permanent(errors.New("integration tests failed"))
	}
	return nil
}

// lead is what the elected leader does. It takes the lease of
// demoStalling before anything can run it, admits the graph, lets the
// other workers start (started), and then plays a worker that pauses
// (a GC pause, SIGSTOP, a partition) while holding a claim: it claims
// demoStalling once its need completed, stops renewing the claim's lease,
// waits until another worker has taken the task over and finished it,
// and tries a late Complete with its old fence, which the ledger must
// refuse. Only then does its own runtime start: a paused process runs
// nothing.
func (w *demoWorker) lead(ctx context.Context, started func(), note func(string)) error {
	g, ok, err := w.leases.TryAcquireKey(context.WithoutCancel(ctx), worker.LeaseKey(w.run.bucket, demoStalling), demoStallLease)
	if err != nil {
		return fmt.Errorf("%s: lease of %s: %w", w.name, demoStalling, err)
	}
	if !ok {
		return fmt.Errorf("%s: the lease of %s is held by someone else", w.name, demoStalling)
	}
	defer func() { _ = g.Release(context.WithoutCancel(ctx)) }()
	if err := g.StartRenewing(0); err != nil {
		return err
	}
	if err := w.admit(ctx); err != nil {
		return err
	}
	started()
	if _, err := w.ledger.WaitFinal(ctx, needsOf(demoStalling)...); err != nil {
		return err
	}
	rec, err := w.ledger.ClaimLeased(ctx, w.actor(), demoStalling, w.name, g, wall.Now())
	if err != nil {
		return fmt.Errorf("%s: claim %s: %w", w.name, demoStalling, err)
	}
	g.StopRenewing()
	note(fmt.Sprintf("%s claimed %s (fence %d) and pauses: its lease (TTL %v) is no longer renewed", w.name, demoStalling, rec.Fence, demoStallLease))
	final, err := w.ledger.WaitFinal(ctx, demoStalling)
	if err != nil {
		return err
	}
	now := final[demoStalling]
	late := w.ledger.Complete(ctx, w.actor(), demoStalling, w.name, rec.Fence, kvledger.StatusCompleted, wall.Now())
	w.run.mu.Lock()
	w.run.stall = stallReport{
		Worker: w.name, Fence: uint64(rec.Fence), TakenBy: now.Owner, TakenFence: uint64(now.Fence),
		// Refused as fenced, also now that the taker finished the task:
		// a stale token is judged before the record's status.
		LateRefused: errors.Is(late, kvledger.ErrFenced),
	}
	if late != nil {
		w.run.stall.LateError = late.Error()
	}
	w.run.mu.Unlock()
	note(fmt.Sprintf("%s woke up; its late Complete of %s with fence %d: %v", w.name, demoStalling, rec.Fence, late))
	return w.rt.Start(ctx)
}

// admit admits the whole graph. Admission is idempotent, so a second
// leader (after a failover) admitting again is harmless.
func (w *demoWorker) admit(ctx context.Context) error {
	for _, t := range demoGraph {
		sub := kvledger.Submission{Key: t.key, Seq: 1, Kind: demoKind, Needs: t.needs,
			Task: map[string]any{"step": string(t.key), "layer": t.layer}}
		if _, err := w.ledger.Submit(ctx, w.actor(), sub); err != nil {
			return fmt.Errorf("%s: admit %s: %w", w.name, t.key, err)
		}
	}
	return nil
}

// needsOf returns the needs of a task of the graph.
func needsOf(k kvledger.IdempotencyKey) []kvledger.IdempotencyKey {
	for _, t := range demoGraph {
		if t.key == k {
			return t.needs
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
