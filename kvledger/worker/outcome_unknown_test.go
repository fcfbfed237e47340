package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// An outcome that reached the server while its answer did not come back
// before the worker's lease ended (the server's answers held back: a
// stalled connection) is reported as the record holds it, completed, once
// the answers flow again: the worker sends it again and finds it stored.
// Before, the worker gave up when its lease ended and reported the
// attempt lost, while `ledger show` said completed.
func TestOutcomeAnswerLostPastTheLeaseIsReportedAsStored(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	p, js := natstest.ThroughProxy(t, n, jetstream.WithDefaultTimeout(500*time.Millisecond))
	gate, started := make(chan struct{}), make(chan struct{}, 1)
	w := e.startOn(js, e.ledgerOn(js), worker.Config{ClaimTTL: time.Second, Owner: "W", OpTimeout: 500 * time.Millisecond}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			started <- struct{}{}
			<-gate
			return nil
		}))
	})
	t.Cleanup(func() { p.Stall(false); _ = closeWorker(w) })
	e.submit(kvledger.Submission{Key: "job", Kind: "job"})
	natstest.Recv(t, started, 10*time.Second, "the handler starts")

	p.Stall(true) // what the worker sends reaches the server; no answer comes back
	close(gate)
	natstest.Eventually(t, 10*time.Second, func() bool { return e.state("job").Status == kvledger.StatusCompleted },
		"the outcome is stored")
	natstest.Eventually(t, 10*time.Second, func() bool {
		for _, k := range e.leaseKeys() {
			if strings.Contains(k, ".w.") {
				return false
			}
		}
		return true
	}, "the worker's lease expires on the server: the worker gave it up before")
	require.Zero(t, w.Stats().Lost, "not reported lost: the record says completed")
	p.Stall(false)

	natstest.Eventually(t, 20*time.Second, func() bool { s := w.Stats(); return s.Completed+s.Lost > 0 }, "the attempt is settled")
	s := w.Stats()
	require.EqualValues(t, 1, s.Completed, "reported as the record holds it: %+v", s)
	require.Zero(t, s.Lost)
}
