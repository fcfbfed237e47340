package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A worker whose record watch or lease watch ends for good (its bucket
// deleted under it) says so: Run returns the error and Done closes,
// instead of sitting idle and looking alive.
func TestWatchEndStopsRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bucket func(e *env) string
	}{
		{"record", func(e *env) string { return e.led.Store().(*kvledger.KVStore).Name() }},
		{"lease", func(e *env) string { return e.leases }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := natstest.WithServer(t)
			e := newEnv(t, n.JS, 1)
			w := natstest.Open(t, "worker", func(ctx context.Context) (*worker.Worker, error) {
				return worker.New(ctx, n.JS, e.led, worker.Config{LeaseBucket: e.leases})
			})
			require.NoError(t, w.Handle("k", func(context.Context, *worker.Task) error { return nil }))
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			ran := make(chan error, 1)
			go func() { ran <- w.Run(ctx) }()
			// The lease bucket exists once the worker's manager made it;
			// Run has started once the worker claims a task.
			e.submit(kvledger.Submission{Key: "t", Kind: "k", Seq: 1})
			e.waitFinal(20*time.Second, "t")

			require.NoError(t, n.JS.DeleteKeyValue(natstest.Context(t, 5*time.Second), tc.bucket(e)))
			select {
			case err := <-ran:
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.name+" watch ended")
			case <-time.After(40 * time.Second): // nats.go gives up on the consumer ~20s after the deletion
				t.Fatal("Run did not return after its " + tc.name + " bucket was deleted")
			}
			natstest.WaitClosed(t, w.Done(), 5*time.Second, "Done")
			require.ErrorContains(t, w.Close(natstest.Context(t, 5*time.Second)), tc.name+" watch ended", "Close reports it too")
		})
	}
}
