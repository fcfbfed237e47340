// Command taskqueue is a small tour of kvledger's task runtime and events:
// it admits a dependency graph of tasks, two workers (package
// kvledger/worker) run them as they become ready, one task fails, the
// tasks that need it are blocked, and every transition is printed live:
// each is one write of the ledger bucket, which the bucket republishes on
// "ledger.<bucket>.<key>".
//
// It runs on an embedded nats-server, or against NATS_URL when set:
//
//	go run ./examples/taskqueue
//	NATS_URL=nats://127.0.0.1:4222 go run ./examples/taskqueue
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/examples/internal/exampleenv"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

func main() { exampleenv.Main("taskqueue", run) }

// graph: lint fails, so package (needs lint) and publish (needs package)
// are blocked; docs and test run.
var graph = []struct {
	key   kvledger.IdempotencyKey
	needs []kvledger.IdempotencyKey
}{
	{"fetch", nil},
	{"lint", []kvledger.IdempotencyKey{"fetch"}},
	{"compile", []kvledger.IdempotencyKey{"fetch"}},
	{"test", []kvledger.IdempotencyKey{"compile"}},
	{"docs", []kvledger.IdempotencyKey{"compile"}},
	{"package", []kvledger.IdempotencyKey{"lint", "test"}},
	{"publish", []kvledger.IdempotencyKey{"package"}},
}

func run(ctx context.Context, out io.Writer) error {
	dial, stop, err := exampleenv.Connector(ctx)
	if err != nil {
		return err
	}
	defer stop()
	nc, js, err := open(dial)
	if err != nil {
		return err
	}
	defer nc.Close()

	bucket := "taskqueue_" + nuid.Next()
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: bucket})
	if err != nil {
		return err
	}
	defer store.Close() // its reply subscription, once nothing writes through it
	defer func() {
		dctx, cancel := cleanupContext(ctx)
		defer cancel()
		_ = js.DeleteKeyValue(dctx, bucket)
	}()
	ledger, err := kvledger.New(store)
	if err != nil {
		return err
	}

	// Events arrive on the connection's goroutine; hand them to this one.
	evc := make(chan events.Event, 256)
	live, err := events.SubscribeLive(nc, store.EventSource(), events.LiveConfig{}, func(e events.Event) {
		select {
		case evc <- e:
		default:
		}
	}, nil)
	if err != nil {
		return err
	}
	defer func() { _ = live.Close() }()

	// The whole graph is admitted before the workers start, so that who
	// blocks whom does not depend on timing.
	for _, n := range graph {
		sub := kvledger.Submission{Key: n.key, Seq: 1, Kind: "step", Needs: n.needs, Task: map[string]any{"step": string(n.key)}}
		if _, err := ledger.Submit(ctx, "scheduler", sub); err != nil {
			return err
		}
	}

	// Two workers, each on its own connection as two processes would be.
	// They find ready tasks by push (the bucket's watch), claim each under
	// a lease the server expires if the worker dies, and renew it for as
	// long as the handler runs.
	for i := range 2 {
		wnc, wjs, err := open(dial)
		if err != nil {
			return err
		}
		defer wnc.Close()
		stopWorker, err := startWorker(ctx, wjs, bucket, kvledger.OwnerID(fmt.Sprintf("worker-%d", i+1)))
		if err != nil {
			return err
		}
		defer stopWorker() // before its connection closes
	}

	final := map[string]bool{}
	for len(final) < len(graph) {
		select {
		case e := <-evc:
			fmt.Fprintf(out, "%-18s %-8s %-9s actor=%s fence=%d", e.Name, e.Key, e.Status, e.Actor, e.Fence)
			if e.BlockedBy != "" {
				fmt.Fprintf(out, " blocked_by=%s", e.BlockedBy)
			}
			fmt.Fprintln(out)
			if s := kvledger.Status(e.Status); s.Terminal() || s == kvledger.StatusBlocked {
				final[e.Key] = true
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	snap, err := ledger.Snapshot(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "final states:")
	for _, n := range graph {
		i := slices.IndexFunc(snap.Tasks, func(t kvledger.TaskState) bool { return t.Key == n.key })
		t := snap.Tasks[i]
		fmt.Fprintf(out, "  %-8s %s", t.Key, t.Status)
		if t.BlockedBy != "" {
			fmt.Fprintf(out, " (blocked by %s)", t.BlockedBy)
		}
		fmt.Fprintln(out)
	}
	return nil
}

// startWorker starts a runtime worker on its own connection, and returns
// what stops it: the worker, then its ledger store. Its handler "runs" a
// step: lint fails for good (a permanent error is not retried), every
// other step completes and leaves a result that the steps needing it can
// read.
func startWorker(ctx context.Context, js jetstream.JetStream, bucket string, owner kvledger.OwnerID) (stop func(), err error) {
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: bucket})
	if err != nil {
		return nil, err
	}
	l, err := kvledger.New(store)
	if err != nil {
		store.Close()
		return nil, err
	}
	w, err := worker.New(ctx, js, l, worker.Config{Owner: owner, Concurrency: 2, LeaseBucket: "taskqueue_claims_" + bucket})
	if err != nil {
		store.Close()
		return nil, err
	}
	stop = func() {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		_ = w.Close(cctx) // the worker writes through the store until it has closed
		store.Close()
	}
	err = worker.HandleJSON(w, "step", func(ctx context.Context, t *worker.Task, p struct{ Step string }) error {
		if p.Step == "lint" {
			return worker.Permanent(errors.New("lint: 3 problems"))
		}
		return t.SetResult(map[string]any{"step": p.Step, "by": string(owner)})
	})
	if err == nil {
		err = w.Start(ctx)
	}
	if err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// cleanupContext bounds a cleanup that runs as run returns: it runs also
// when ctx has ended, for at most 10 seconds.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// open dials one connection (NATS_URL, or the embedded server) and its
// JetStream handle.
func open(dial exampleenv.Dialer) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := dial()
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}
