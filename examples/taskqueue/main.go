// Command taskqueue is a small tour of kvledger and events: it admits a
// dependency graph of tasks, two workers claim them under leases, one task
// fails, the tasks that need it are blocked, and every transition is
// printed live from the "ledger.>" subjects.
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
	"os"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/examples/internal/exampleenv"
	"github.com/natscoord/natscoord/kvledger"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "taskqueue:", err)
		os.Exit(1)
	}
}

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

const lease = 5 * time.Second

func run(ctx context.Context, out io.Writer) error {
	nc, js, stop, err := connect(ctx)
	if err != nil {
		return err
	}
	defer stop()

	bucket := "taskqueue_" + nuid.Next()
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: bucket})
	if err != nil {
		return err
	}
	defer func() { _ = js.DeleteKeyValue(context.WithoutCancel(ctx), bucket) }()
	bus, err := events.NewJetStreamBus(ctx, js, events.JetStreamBusConfig{})
	if err != nil {
		return err
	}
	ledger, err := kvledger.New(store, bus)
	if err != nil {
		return err
	}
	defer func() { _ = ledger.Close(context.Background()) }()
	// The relay publishes the event of any write whose writer died before
	// publishing it.
	if err := ledger.StartRelay(ctx, kvledger.RelayConfig{Durable: "relay_" + bucket}); err != nil {
		return err
	}

	// Events arrive on the connection's goroutine; hand them to this one.
	evc := make(chan events.Event, 256)
	live, err := events.SubscribeLive(nc, "ledger.>", func(e events.Event) {
		if e.Source == bucket {
			select {
			case evc <- e:
			default:
			}
		}
	}, nil)
	if err != nil {
		return err
	}
	defer func() { _ = live.Close() }()

	for _, n := range graph {
		if _, err := ledger.Admit(ctx, "scheduler", n.key, 1, map[string]any{"step": string(n.key)}, time.Now(), n.needs...); err != nil {
			return err
		}
	}

	wctx, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wakes := []chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)}
	errc := make(chan error, len(wakes))
	for i, wake := range wakes {
		owner := kvledger.OwnerID(fmt.Sprintf("worker-%d", i+1))
		wg.Go(func() {
			if err := work(wctx, ledger, owner, wake); err != nil && !errors.Is(err, context.Canceled) {
				errc <- err
			}
		})
	}
	defer func() { stopWorkers(); wg.Wait() }()

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
			for _, w := range wakes {
				select {
				case w <- struct{}{}:
				default:
				}
			}
		case err := <-errc:
			return err
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

// work claims every task whose needs are completed, "runs" it (lint
// fails), and waits for the next event when nothing is ready.
func work(ctx context.Context, l *kvledger.Ledger, owner kvledger.OwnerID, wake <-chan struct{}) error {
	actor := kvledger.Actor(owner)
	for {
		did := false
		for _, n := range graph {
			if ok, err := ready(ctx, l, n.needs); err != nil || !ok {
				if err != nil {
					return err
				}
				continue
			}
			fence, err := l.Claim(ctx, actor, n.key, owner, lease, time.Now())
			if errors.Is(err, kvledger.ErrLeaseActive) || errors.Is(err, kvledger.ErrNotClaimed) {
				continue // someone else has it, or it is done or blocked
			}
			if err != nil {
				return err
			}
			did = true
			// A long task renews well before its lease runs out.
			if err := l.Renew(ctx, actor, n.key, owner, fence, lease, time.Now()); err != nil {
				return err
			}
			status := kvledger.StatusCompleted
			if n.key == "lint" {
				status = kvledger.StatusFailed
			}
			if err := l.Complete(ctx, actor, n.key, owner, fence, status, time.Now()); err != nil {
				return err
			}
		}
		if !did {
			select {
			case <-wake:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// ready reports whether every need is completed. (The ledger itself only
// refuses claims behind failed or blocked needs; ordering the work is the
// worker's choice.)
func ready(ctx context.Context, l *kvledger.Ledger, needs []kvledger.IdempotencyKey) (bool, error) {
	for _, n := range needs {
		s, found, err := l.State(ctx, n)
		if err != nil || !found || s.Status != kvledger.StatusCompleted {
			return false, err
		}
	}
	return true, nil
}

// connect uses NATS_URL when set, else an in-process embedded server.
func connect(ctx context.Context) (*nats.Conn, jetstream.JetStream, func(), error) {
	dial, stop, err := exampleenv.Connector(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	nc, err := dial()
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		stop()
		return nil, nil, nil, err
	}
	return nc, js, func() { nc.Close(); stop() }, nil
}
