package worker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// Pickup resumes within a bound after the ledger stream's leader steps
// down, and after the node leading it restarts (doc.go, "Failure modes"):
// while a task is admitted every 20 ms, three step-downs and three
// restarts of the leading node never leave the worker idle with a task
// ready for longer than the bound doc.go states (pickupBound), with room
// for a loaded machine. The worker's connection may be on the node that
// restarts.
func TestPickupAfterLedgerLeaderMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster run")
	}
	const opTimeout = 2 * time.Second
	c := natstest.WithCluster(t, 3)
	e := newEnv(t, c.JS, 3)
	js := c.NewJS(t)
	var (
		mu       sync.Mutex
		admitted = map[kvledger.IdempotencyKey]time.Time{}
		starts   = map[kvledger.IdempotencyKey]time.Time{}
	)
	w := e.startOn(js, e.ledgerOn(js), worker.Config{LeaseReplicas: 3, OpTimeout: opTimeout}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(_ context.Context, task *worker.Task) error {
			mu.Lock()
			if _, seen := starts[task.Key()]; !seen {
				starts[task.Key()] = time.Now()
			}
			mu.Unlock()
			return nil
		}))
	})
	t.Cleanup(func() { require.NoError(t, closeWorker(w)) })
	stream := embedded.KVStreamName(e.led.Store().(*kvledger.KVStore).Name())
	ctx := natstest.Context(t, 2*time.Minute)

	// One task after another, each admitted as soon as the stream takes
	// it, until stop closes.
	stop, flowed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(flowed)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			k := kvledger.IdempotencyKey(fmt.Sprintf("t%05d", i))
			for ctx.Err() == nil {
				sctx, cancel := context.WithTimeout(ctx, time.Second)
				ok, err := e.led.Submit(sctx, "test", kvledger.Submission{Key: k, Kind: "job"})
				cancel()
				if err == nil {
					if ok {
						mu.Lock()
						admitted[k] = time.Now()
						mu.Unlock()
					}
					break
				}
			}
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	flowing := func(n int) {
		mu.Lock()
		from := len(starts)
		mu.Unlock()
		natstest.Eventually(t, 30*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(starts) >= from+n
		}, "tasks start")
	}
	flowing(5)
	for range 3 {
		_, err := c.StepDownStream(ctx, stream)
		require.NoError(t, err)
		flowing(20)
		leader := c.StreamLeader(stream)
		require.GreaterOrEqual(t, leader, 0)
		require.NoError(t, c.StopNode(ctx, leader))
		require.NoError(t, c.RestartNode(ctx, leader))
		flowing(20)
	}
	close(stop)
	<-flowed
	natstest.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for k := range admitted {
			if _, ok := starts[k]; !ok {
				return false
			}
		}
		return true
	}, "every task starts")

	mu.Lock()
	defer mu.Unlock()
	// idle: how long the worker started nothing while a task was ready
	// (admitted, not started): for each task, from its admission or the
	// start before its own, whichever is later, to its start.
	var all []time.Time
	for _, s := range starts {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	var idle, slowest time.Duration
	for k, at := range admitted {
		s := starts[k]
		slowest = max(slowest, s.Sub(at))
		i, _ := slices.BinarySearchFunc(all, s, func(a, b time.Time) int { return a.Compare(b) })
		from := at
		if i > 0 && all[i-1].After(from) {
			from = all[i-1]
		}
		idle = max(idle, s.Sub(from))
	}
	t.Logf("%d tasks; longest idle with a task ready %v; slowest pickup %v", len(admitted), idle.Round(time.Millisecond), slowest.Round(time.Millisecond))
	require.LessOrEqual(t, idle, worker.PickupBound(opTimeout)+time.Second)
}
