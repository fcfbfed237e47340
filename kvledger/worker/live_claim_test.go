package worker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// Workers that start together, each on its own connection, never take
// over one another's live claims: while a worker's new lease has not yet
// reached another worker's lease watch, that worker reads it; once the
// watch has reported it live, it leaves the claim alone. Nobody crashes
// here, so no task may start twice and no claim may be taken over.
func TestNoTakeoverOfALiveClaim(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const tasks = 60
	var (
		mu     sync.Mutex
		starts = map[kvledger.IdempotencyKey]int{}
	)
	var ws []*worker.Worker
	for i := range 4 {
		js := n.NewJS(t)
		w := e.startOn(js, e.ledgerOn(js), worker.Config{Owner: kvledger.OwnerID(fmt.Sprintf("w%d", i)), Concurrency: 4},
			func(w *worker.Worker) {
				require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
					mu.Lock()
					starts[task.Key()]++
					mu.Unlock()
					select { // long enough for the other workers' watches to see the claim
					case <-time.After(20 * time.Millisecond):
					case <-ctx.Done():
					}
					return nil
				}))
			})
		ws = append(ws, w)
	}
	// The tasks come once every worker watches, so that all of them race
	// for the first ones while acquiring their first leases.
	keys := make([]kvledger.IdempotencyKey, tasks)
	for i := range keys {
		keys[i] = kvledger.IdempotencyKey(fmt.Sprintf("t%02d", i))
		e.submit(kvledger.Submission{Key: keys[i], Kind: "job"})
	}
	final := e.waitFinal(60*time.Second, keys...)
	for _, w := range ws {
		require.NoError(t, closeWorker(w))
	}
	var takenOver uint64
	for _, w := range ws {
		takenOver += w.Stats().TakenOver
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range keys {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status, k)
		require.Equal(t, 1, starts[k], "task %q started more than once", k)
	}
	require.Zero(t, takenOver, "no worker crashed, yet claims were taken over")
}
