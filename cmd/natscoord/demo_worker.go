package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/tasks"
)

// The demo's Go side is what a service does with package tasks: each
// "service" is a process of its own in miniature (its own NATS connection
// and tasks.Client) that runs the "build" tasks with a typed handler, and
// the one elected leader submits the graph and waits for it.

// buildStep is the arguments of the tasks the Go services run.
type buildStep struct {
	Step string `json:"step"`
}

func (buildStep) Kind() string { return "build" }

// shellStep is the arguments of the tasks `natscoord work` runs: its
// command reads them as JSON on stdin. Hang makes the first attempt hang
// until its worker is killed (the crash the demo shows).
type shellStep struct {
	Step string `json:"step"`
	Hang bool   `json:"hang,omitempty"`
}

func (shellStep) Kind() string { return "shell" }

// demoWork is how long a build task "runs".
const demoWork = 40 * time.Millisecond

// demoService is one Go service: its own connection, tasks.Client and
// candidacy in the leader election.
type demoService struct {
	name   string
	nc     *nats.Conn
	client *tasks.Client
	cand   *candidate
	run    *demoRun
}

// demoRun is what the services, the `natscoord work` processes and the
// reporter share.
type demoRun struct {
	bucket string
	runID  string
	crash  bool // the crash is shown: docs hangs, and its worker is killed

	mu      sync.Mutex
	names   map[kvledger.OwnerID]string // owner id in claims -> service name
	leader  string
	term    uint64
	leaders int
	killed  crashReport
}

// claimsBucket holds the leases of the run's workers' claims. It is the
// run's own, as its ledger bucket is, so that cleanUp can delete it: a
// bucket shared by every run stayed on the server after a run against
// --server.
func (r *demoRun) claimsBucket() string { return "natscoord_demo_claims_" + r.runID }

// nameOf is the name the report gives a claim's owner: a service's name
// (its tasks.Client claims under a generated owner id), or the --name of
// a `natscoord work` process.
func (r *demoRun) nameOf(owner string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.names[kvledger.OwnerID(owner)]; ok {
		return n
	}
	return owner
}

// startDemoServices starts n services, their workers running. The
// returned function drains them and closes everything.
func startDemoServices(ctx context.Context, dial dialer, run *demoRun, n int) ([]*demoService, func(), error) {
	var ss []*demoService
	closeAll := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, s := range ss {
			if s.client != nil {
				wg.Go(func() { _ = s.client.Close(cctx) })
			}
		}
		wg.Wait()
		for _, s := range ss {
			if s.cand != nil {
				_ = s.cand.close(cctx)
			}
			s.nc.Close()
		}
	}
	for i := range n {
		name := fmt.Sprintf("svc-%d", i+1)
		nc, js, err := dial("natscoord-demo-" + name)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		s := &demoService{name: name, nc: nc, run: run}
		ss = append(ss, s)
		s.client, err = tasks.NewClient(ctx, js, tasks.Config{
			Ledger: run.bucket, ClaimBucket: run.claimsBucket(), Actor: kvledger.Actor(name),
			Concurrency: 2, DrainTimeout: time.Second, IgnoreSchedules: true,
		})
		if err == nil {
			err = tasks.AddWorker(s.client, s.build)
		}
		if err == nil {
			err = s.client.Start(ctx)
		}
		if err == nil {
			s.cand, err = newCandidate(ctx, js, run.runID, name)
		}
		if err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return ss, closeAll, nil
}

// build runs a build task: fetch-deps fails its first attempt (and is
// retried), integ-test fails for good, everything else succeeds.
func (s *demoService) build(ctx context.Context, t *tasks.Task[buildStep]) error {
	s.run.mu.Lock()
	s.run.names[t.Record().Owner] = s.name
	s.run.mu.Unlock()
	if err := sleepCtx(ctx, demoWork); err != nil {
		return err
	}
	switch {
	case t.Key == demoFailing:
		return tasks.Permanent(errors.New("integration tests failed"))
	case t.Key == demoRetried && t.Attempt == 1:
		return errors.New("package registry timed out")
	}
	return nil
}

// lead is what the elected service does: submit the graph and wait until
// every task has ended. Submission is idempotent (each task has its key),
// so a second leader after a failover would admit nothing twice.
func (s *demoService) lead(ctx context.Context) (map[kvledger.IdempotencyKey]kvledger.TaskState, error) {
	all := make([]kvledger.IdempotencyKey, 0, len(demoGraph))
	for _, t := range demoGraph {
		var args tasks.Args = buildStep{Step: string(t.key)}
		if t.shell {
			args = shellStep{Step: string(t.key), Hang: s.run.crash && t.key == demoCrashed}
		}
		if _, err := s.client.Submit(ctx, args, &tasks.SubmitOpts{Key: t.key, Needs: t.needs}); err != nil {
			return nil, fmt.Errorf("%s: submit %s: %w", s.name, t.key, err)
		}
		all = append(all, t.key)
	}
	return s.client.Wait(ctx, all...)
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
