package worker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A backlog admitted before Start runs in the order the README promises:
// higher priority first, equal priorities in the order they became ready
// (here, admitted), with the default claims ahead and a task on its last
// attempt among them (MaxAttempts 1, never claimed ahead). Run several
// times, since a disorder from claims racing one another shows only in
// some runs.
func TestBacklogStartsInOrder(t *testing.T) {
	n := natstest.WithServer(t)
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			var subs []kvledger.Submission
			for i := range 15 {
				sub := kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("p0-%02d", i)), Kind: "job"}
				if i == 7 {
					sub.Key, sub.MaxAttempts = "p0-07-last", 1
				}
				subs = append(subs, sub)
				switch i {
				case 3:
					subs = append(subs, kvledger.Submission{Key: "p-5", Kind: "job", Priority: -5})
				case 10:
					subs = append(subs, kvledger.Submission{Key: "p10", Kind: "job", Priority: 10})
				}
			}
			want := []kvledger.IdempotencyKey{"p10"}
			for _, s := range subs {
				if s.Priority == 0 {
					want = append(want, s.Key)
				}
			}
			want = append(want, "p-5")
			require.Equal(t, want, runBacklog(t, n.JS, worker.Config{}, subs))
		})
	}
}

// A task claimed ahead keeps its claim but not a place before a higher
// task that became ready after it was claimed: when the handler slot
// frees up, the higher task is claimed and starts first; the task claimed
// ahead starts next.
func TestClaimAheadYieldsToAHigherTask(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	started, gate := make(chan kvledger.IdempotencyKey, 4), make(chan struct{})
	w := e.worker(worker.Config{Concurrency: 1, ClaimAhead: 1}, gatedHandler(t, "k", started, gate))
	e.submit(kvledger.Submission{Key: "a", Kind: "k"})
	require.Equal(t, kvledger.IdempotencyKey("a"), natstest.Recv(t, started, 10*time.Second, "a starts"))
	e.submit(kvledger.Submission{Key: "ahead", Kind: "k"})
	natstest.Eventually(t, 10*time.Second, func() bool { return worker.Ahead(w) == 1 }, "claimed ahead")
	e.submit(kvledger.Submission{Key: "high", Kind: "k", Priority: 5})
	natstest.Eventually(t, 10*time.Second, func() bool { return w.Stats().Ready == 1 }, "high is ready, the window full")
	var order []kvledger.IdempotencyKey
	for range 2 {
		gate <- struct{}{}
		order = append(order, natstest.Recv(t, started, 10*time.Second, "the next start"))
	}
	gate <- struct{}{}
	require.Equal(t, []kvledger.IdempotencyKey{"high", "ahead"}, order)
	for k, s := range e.waitFinal(10*time.Second, "a", "ahead", "high") {
		require.Equal(t, kvledger.StatusCompleted, s.Status, "%s", k)
		require.Equal(t, 1, s.Attempts, "%s", k)
	}
}
