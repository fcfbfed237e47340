package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A claim is given back only after its handler has returned: a drained
// handler that ignores its cancelled context keeps its claim, under the
// worker's lease renewed for several ClaimTTLs, and a second worker
// starts the task only once that handler returned. This holds when the
// drain runs out (DrainTimeout), with no drain at all (-1), and when
// Close's ctx has ended. Before, the drain gave the claim back as soon as
// it cancelled the handler, and B ran the task beside it.
func TestDrainGivesBackOnlyAfterTheHandlerReturned(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
		ended bool // Close's ctx has ended before the call
	}{
		{"drain timeout", 200 * time.Millisecond, false},
		{"no drain", -1, false},
		{"ended ctx", time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const ttl = time.Second
			n := natstest.WithServer(t)
			e := newEnv(t, n.JS, 1)
			var running atomic.Bool
			started, unblock, returned := make(chan struct{}, 1), make(chan struct{}), make(chan time.Time, 1)
			a := e.startOn(n.JS, e.led, worker.Config{Owner: "A", ClaimTTL: ttl, DrainTimeout: tc.drain}, func(w *worker.Worker) {
				require.NoError(t, w.Handle("k", func(ctx context.Context, _ *worker.Task) error {
					running.Store(true)
					started <- struct{}{}
					<-unblock // ignores its context
					running.Store(false)
					returned <- time.Now()
					return ctx.Err()
				}))
			})
			e.submit(kvledger.Submission{Key: "k1", Kind: "k"})
			natstest.Recv(t, started, 10*time.Second, "A starts the task")

			overlapped := make(chan struct{}, 1)
			bStarted := make(chan time.Time, 1)
			e.worker(worker.Config{Owner: "B", ClaimTTL: ttl}, func(w *worker.Worker) {
				require.NoError(t, w.Handle("k", func(context.Context, *worker.Task) error {
					if running.Load() {
						overlapped <- struct{}{}
					}
					bStarted <- time.Now()
					return nil
				}))
			})

			closeCtx := context.Background()
			if tc.ended {
				ended, cancel := context.WithCancel(context.Background())
				cancel()
				closeCtx = ended
			}
			closed := make(chan error, 1)
			go func() { closed <- a.Close(closeCtx) }()
			if tc.ended {
				require.ErrorIs(t, natstest.Recv(t, closed, 10*time.Second, "Close returns with its ctx"), context.Canceled)
			}
			// Three TTLs of A's lease with the handler still running: the
			// claim must stay A's all along (renewed, not given back, not
			// expired), so B must not start the task. A window, not a
			// condition: what is checked is that nothing happens in it.
			window := time.NewTimer(3 * ttl)
			select {
			case at := <-bStarted:
				t.Fatalf("B started the task at %v while A's handler still ran", at.Format(time.StampMilli))
			case <-window.C:
			}
			rec := e.state("k1")
			require.Equal(t, kvledger.StatusClaimed, rec.Status, "kept while the handler runs")
			require.Equal(t, kvledger.OwnerID("A"), rec.Owner)

			close(unblock)
			end := natstest.Recv(t, returned, 10*time.Second, "A's handler returns")
			at := natstest.Recv(t, bStarted, 10*time.Second, "B starts the task once A's handler returned")
			require.True(t, at.After(end), "B started at %v, A's handler returned at %v", at, end)
			select {
			case <-overlapped:
				t.Fatal("B ran the task while A's handler ran")
			default:
			}
			if !tc.ended {
				require.NoError(t, natstest.Recv(t, closed, 20*time.Second, "A's Close returns"))
			} else {
				require.NoError(t, closeWorker(a), "a later Close waits for the handler and the give-back")
			}
			require.EqualValues(t, 1, a.Stats().Released)
			final := e.waitFinal(10*time.Second, "k1")["k1"]
			require.Equal(t, kvledger.StatusCompleted, final.Status)
			require.Equal(t, 1, final.Attempts, "the drained attempt is not counted")
		})
	}
}
