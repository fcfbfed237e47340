package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A slot this worker released stays free in its view when the lease
// watch lags and delivers the slot's earlier put late: the group's next
// task starts at once, not after the slot's delete arrives (here it never
// would: it was delivered before the late put). The lag is made
// deterministic by order: the test waits until the watch delivered a
// later key (so the slot's delete is in), then delivers the put it
// carried earlier.
func TestReleasedGroupSlotIsFreeWhenTheWatchLags(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	limits := map[string]int{"tenant": 1}
	var (
		w    *worker.Worker
		held = make(chan uint64, 1) // the revision of the slot's put, as the running task's worker saw it
	)
	w = e.worker(worker.Config{ClaimTTL: 30 * time.Second, Owner: "A", GroupLimits: limits}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			if task.Key() == "first" {
				live, rev := worker.LeaseSeen(w, worker.SlotKey(w, "tenant", 0))
				if live {
					held <- rev
				}
			}
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "first", Kind: "job", Group: "tenant"})
	require.Equal(t, kvledger.StatusCompleted, e.waitFinal(10*time.Second, "first")["first"].Status)
	put := natstest.Recv(t, held, time.Second, "the slot was held while the task ran")
	slot := worker.SlotKey(w, "tenant", 0)
	natstest.Eventually(t, 10*time.Second, func() bool { return !slices.Contains(e.leaseKeys(), slot) }, "the slot is released")
	ctx := natstest.Context(t, 20*time.Second)

	// A key written after the slot's delete: once the worker sees it,
	// the watch delivered the delete too.
	prefix := kvledger.LeasePrefix(e.led.Store().(*kvledger.KVStore).Name())
	require.True(t, strings.HasPrefix(slot, prefix), "%q under %q", slot, prefix)
	m := natstest.Open(t, "lease manager", func(ctx context.Context) (*kvlease.Manager, error) {
		return kvlease.NewManager(ctx, e.js, kvlease.Config{Bucket: e.leases})
	})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	marker := prefix + kvledger.ClaimLeaseInfix + "marker"
	g, ok, err := m.TryAcquireKey(ctx, marker, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	t.Cleanup(func() { _ = g.Release(context.Background()) })
	natstest.Eventually(t, 10*time.Second, func() bool { live, _ := worker.LeaseSeen(w, marker); return live }, "the watch delivered the marker")

	worker.DeliverLease(w, slot, true, put) // the lagging watch's late put
	require.Equal(t, 1, worker.GroupRoom(w, "tenant"), "a late put of a released slot does not hold it again")
	e.submit(kvledger.Submission{Key: "second", Kind: "job", Group: "tenant"})
	require.Equal(t, kvledger.StatusCompleted, e.waitFinal(10*time.Second, "second")["second"].Status)
}
