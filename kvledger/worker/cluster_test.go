package worker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A random DAG with failing and flaky handlers, run by three workers on
// separate connections to a 3-node cluster (R3 buckets: the CAS paths'
// conflict codes differ there), ends exactly as the DAG predicts.
func TestRandomDAGOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster run")
	}
	c := natstest.WithCluster(t, 3)
	e := newEnv(t, c.JS, 3)
	rng := rand.New(rand.NewPCG(7, 12))
	const n = 40
	key := func(i int) kvledger.IdempotencyKey { return kvledger.IdempotencyKey(fmt.Sprintf("t%02d", i)) }
	bad, flaky := map[kvledger.IdempotencyKey]bool{}, map[kvledger.IdempotencyKey]bool{}
	needs := make([][]kvledger.IdempotencyKey, n)
	for i := range n {
		switch r := rng.IntN(10); {
		case r == 0:
			bad[key(i)] = true
		case r < 3:
			flaky[key(i)] = true
		}
		for j := range i {
			if rng.IntN(8) == 0 {
				needs[i] = append(needs[i], key(j))
			}
		}
	}
	h := func(ctx context.Context, task *worker.Task) error {
		switch {
		case bad[task.Key()]:
			return errors.New("bad")
		case flaky[task.Key()] && task.Attempt() == 1:
			return errors.New("flaky")
		}
		return nil
	}
	ws := make([]*worker.Worker, 3)
	for i := range ws {
		js := c.NewJS(t)
		ws[i] = e.startOn(js, e.ledgerOn(js), worker.Config{Owner: kvledger.OwnerID(fmt.Sprintf("w%d", i)), MaxAttempts: 2,
			LeaseReplicas: 3, BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond}, func(w *worker.Worker) {
			require.NoError(t, w.Handle("dag", h))
		})
	}
	t.Cleanup(func() {
		for _, w := range ws {
			require.NoError(t, closeWorker(w))
		}
	})
	keys := make([]kvledger.IdempotencyKey, n)
	for i := range n {
		keys[i] = key(i)
		e.submit(kvledger.Submission{Key: key(i), Kind: "dag", Needs: needs[i]})
	}
	final := e.waitFinal(60*time.Second, keys...)

	want := make([]kvledger.Status, n)
	for i := range n {
		want[i] = kvledger.StatusCompleted
		for _, nd := range needs[i] {
			var j int
			_, _ = fmt.Sscanf(string(nd), "t%02d", &j)
			if want[j] != kvledger.StatusCompleted {
				want[i] = kvledger.StatusBlocked
			}
		}
		if want[i] == kvledger.StatusCompleted && bad[key(i)] {
			want[i] = kvledger.StatusFailed
		}
	}
	var done uint64
	for i := range n {
		require.Equal(t, want[i], final[key(i)].Status, "%s (needs %v, bad %v, flaky %v)", key(i), needs[i], bad[key(i)], flaky[key(i)])
		if want[i] == kvledger.StatusFailed {
			require.Equal(t, 2, final[key(i)].Attempts)
		}
	}
	for _, w := range ws {
		done += w.Stats().Completed
	}
	t.Logf("completed per worker: %d %d %d", ws[0].Stats().Completed, ws[1].Stats().Completed, ws[2].Stats().Completed)
	require.Positive(t, done)
}
