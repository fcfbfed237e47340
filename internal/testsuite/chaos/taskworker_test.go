package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// Settings of the "taskworker" child role (besides envURL, envBucket and
// envTTL).
const (
	envWorker   = "NATSCOORD_CHAOS_WORKER"   // the worker's owner id
	envSubject  = "NATSCOORD_CHAOS_SUBJECT"  // where handlers report to the parent
	envReplicas = "NATSCOORD_CHAOS_REPLICAS" // replicas of the claim-lease bucket
)

// childTaskWorker runs a task-runtime worker on the ledger bucket until
// ctx ends, announcing "ready" once it is started. Its handler does what
// the task's payload (a dagTask) says and reports to the parent when it
// starts and before it succeeds.
func childTaskWorker(ctx context.Context) error {
	ttl, err := time.ParseDuration(os.Getenv(envTTL))
	if err != nil {
		return err
	}
	replicas, _ := strconv.Atoi(os.Getenv(envReplicas))
	name, subject := os.Getenv(envWorker), os.Getenv(envSubject)
	nc, err := nats.Connect(os.Getenv(envURL), nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := kvledger.NewKVStore(octx, js, kvledger.KVStoreConfig{Bucket: os.Getenv(envBucket), Replicas: max(replicas, 1)})
	if err != nil {
		return err
	}
	l, err := kvledger.New(store)
	if err != nil {
		return err
	}
	w, err := worker.New(octx, js, l, worker.Config{
		Owner: kvledger.OwnerID(name), ClaimTTL: ttl, Concurrency: crashConcurrency, MaxAttempts: crashMaxAttempts,
		BackoffBase: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, DrainTimeout: crashDrain,
		LeaseReplicas: max(replicas, 1),
	})
	if err != nil {
		return err
	}
	reportTo := func(phase string, t *worker.Task) error {
		b, _ := json.Marshal(taskReport{Phase: phase, Worker: name, Key: string(t.Key()), Fence: uint64(t.Fence()), Attempt: t.Attempt()})
		m, err := nc.Request(subject, b, 10*time.Second)
		if err != nil {
			return err
		}
		if string(m.Data) != "ok" {
			return fmt.Errorf("resource refused %s of %s with fence %d: %s", phase, t.Key(), t.Fence(), m.Data)
		}
		return nil
	}
	err = worker.HandleJSON(w, "dag", func(ctx context.Context, t *worker.Task, d dagTask) error {
		return runDAGTask(ctx, t, d, func(phase string) error { return reportTo(phase, t) })
	})
	if err != nil {
		return err
	}
	if err := w.Start(octx); err != nil {
		_ = w.Close(context.Background())
		return err
	}
	say("ready")
	<-ctx.Done()
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	return w.Close(cctx)
}

// drainSlowStop is how long a long task's handler takes to return once
// a drain cancelled it.
const drainSlowStop = time.Second

// runDAGTask is the handler of a DAG task: it reports its start, takes
// the payload's time, fails as the payload says, reports before it
// succeeds, and reports its end as it returns. A report that returns an error (refused for a stale fence)
// fails the attempt.
func runDAGTask(ctx context.Context, t *worker.Task, d dagTask, report func(phase string) error) error {
	defer func() { _ = report("end") }() // for the overlap checker
	if err := report("start"); err != nil {
		return err
	}
	timer := time.NewTimer(time.Duration(d.SleepMS) * time.Millisecond)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
		if d.Long && errors.Is(context.Cause(ctx), worker.ErrDraining) {
			// Slow to stop, as a command in its --grace: the claim
			// must stay this worker's until the handler returned.
			time.Sleep(drainSlowStop)
		}
		return context.Cause(ctx)
	}
	switch {
	case d.Permanent:
		return worker.Permanent(errors.New("injected permanent failure"))
	case t.Attempt() <= d.FailFirst:
		return crashHandlerError(string(t.Key()), t.Attempt())
	}
	return report("done")
}
