package worker_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// runBacklog admits subs (of kind "job") before Start, runs them on one
// worker with cfg and Concurrency 1 (and the default claim ahead) and
// returns the order their handlers started in.
func runBacklog(t *testing.T, js jetstream.JetStream, cfg worker.Config, subs []kvledger.Submission) []kvledger.IdempotencyKey {
	t.Helper()
	e := newEnv(t, js, 1)
	var keys []kvledger.IdempotencyKey
	for _, s := range subs {
		e.submit(s)
		keys = append(keys, s.Key)
	}
	var (
		mu    sync.Mutex
		order []kvledger.IdempotencyKey
	)
	cfg.Concurrency = 1
	e.worker(cfg, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			mu.Lock()
			order = append(order, task.Key())
			mu.Unlock()
			return nil
		}))
	})
	for k, s := range e.waitFinal(30*time.Second, keys...) {
		require.Equal(t, kvledger.StatusCompleted, s.Status, k)
	}
	mu.Lock()
	defer mu.Unlock()
	return order
}

func groupSubs(group string, n, prio int) []kvledger.Submission {
	var subs []kvledger.Submission
	for i := range n {
		key := kvledger.IdempotencyKey(fmt.Sprintf("%s-%d-%02d", cmpOr(group, "none"), prio, i))
		subs = append(subs, kvledger.Submission{Key: key, Kind: "job", Group: group, Priority: prio})
	}
	return subs
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func keysOf(subs ...[]kvledger.Submission) []kvledger.IdempotencyKey {
	var ks []kvledger.IdempotencyKey
	for _, ss := range subs {
		for _, s := range ss {
			ks = append(ks, s.Key)
		}
	}
	return ks
}

// A fair kind's backlog takes groups in turn: tenant A's 20 tasks, then
// B's 3 and 2 without a group, admitted before Start, start A, B, none,
// A, B, none, ... each group's own in the order admitted; without
// FairKinds the same backlog starts in the order admitted. Several rounds,
// since claims ahead racing one another show only in some.
func TestFairKindTakesGroupsInTurn(t *testing.T) {
	n := natstest.WithServer(t)
	a, b, none := groupSubs("A", 20, 0), groupSubs("B", 3, 0), groupSubs("", 2, 0)
	subs := append(append(append([]kvledger.Submission(nil), a...), b...), none...)
	var fair []kvledger.IdempotencyKey
	for i := range 20 {
		fair = append(fair, a[i].Key)
		if i < 3 {
			fair = append(fair, b[i].Key)
		}
		if i < 2 {
			fair = append(fair, none[i].Key)
		}
	}
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			require.Equal(t, fair, runBacklog(t, n.JS, worker.Config{FairKinds: []string{"job"}}, subs))
			require.Equal(t, keysOf(subs), runBacklog(t, n.JS, worker.Config{FairKinds: []string{"other"}}, subs))
		})
	}
}

// Priority goes before turns: the higher tasks of both groups start
// first (in turn), then the rest take turns.
func TestFairKindKeepsPriority(t *testing.T) {
	n := natstest.WithServer(t)
	a, b := groupSubs("A", 6, 0), groupSubs("B", 2, 0)
	bHi, aHi := groupSubs("B", 1, 5), groupSubs("A", 1, 5)
	subs := append(append(append(append([]kvledger.Submission(nil), a...), b...), bHi...), aHi...)
	want := keysOf(bHi, aHi)
	want = append(want, a[0].Key, b[0].Key, a[1].Key, b[1].Key)
	want = append(want, keysOf(a[2:])...)
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			require.Equal(t, want, runBacklog(t, n.JS, worker.Config{FairKinds: []string{"job"}}, subs))
		})
	}
}

// A group whose tasks become ready while another's backlog runs joins
// the turns at their end, as in any round robin: behind the task claimed
// ahead and the turn the running group already had.
func TestFairKindLetsALateGroupIn(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	started, gate := make(chan kvledger.IdempotencyKey, 16), make(chan struct{})
	a := groupSubs("A", 8, 0)
	for _, s := range a {
		e.submit(s)
	}
	w := e.worker(worker.Config{Concurrency: 1, ClaimAhead: 1, FairKinds: []string{"job"}}, gatedHandler(t, "job", started, gate))
	require.Equal(t, a[0].Key, natstest.Recv(t, started, 10*time.Second, "the first start"))
	b := groupSubs("B", 2, 0)
	for _, s := range b {
		e.submit(s)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return w.Stats().Ready == 8 }, "B's tasks are ready beside A's 6")
	var order []kvledger.IdempotencyKey
	for range 5 {
		gate <- struct{}{}
		order = append(order, natstest.Recv(t, started, 10*time.Second, "the next start"))
	}
	// A-0-01 was claimed ahead before B's tasks were admitted, and A had
	// its next turn then.
	require.Equal(t, []kvledger.IdempotencyKey{a[1].Key, a[2].Key, b[0].Key, a[3].Key, b[1].Key}, order)
	for range 5 {
		gate <- struct{}{}
	}
	for k, s := range e.waitFinal(10*time.Second, keysOf(a, b)...) {
		require.Equal(t, kvledger.StatusCompleted, s.Status, "%s", k)
	}
}

// A fair kind keeps the other rules: a group limit (A runs one at a time,
// its tasks parked meanwhile) and tasks on their last attempt (never
// claimed ahead) among the turns; every task completes, once.
func TestFairKindWithGroupLimitsAndLastAttempts(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	subs := append(groupSubs("A", 8, 0), groupSubs("B", 8, 0)...)
	for i := range subs {
		if i%3 == 0 {
			subs[i].MaxAttempts = 1
		}
		e.submit(subs[i])
	}
	var (
		mu        sync.Mutex
		inA, maxA int
		starts    = map[kvledger.IdempotencyKey]int{}
	)
	e.worker(worker.Config{Concurrency: 3, FairKinds: []string{"job"}, GroupLimits: map[string]int{"A": 1}}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			mu.Lock()
			starts[task.Key()]++
			a := task.Group() == "A"
			if a {
				inA++
				maxA = max(maxA, inA)
			}
			mu.Unlock()
			runtime.Gosched() // a handler's work: B's tasks run beside it
			mu.Lock()
			if a {
				inA--
			}
			mu.Unlock()
			return nil
		}))
	})
	for k, s := range e.waitFinal(30*time.Second, keysOf(subs)...) {
		require.Equal(t, kvledger.StatusCompleted, s.Status, k)
	}
	mu.Lock()
	defer mu.Unlock()
	require.LessOrEqual(t, maxA, 1)
	for _, s := range subs {
		require.Equal(t, 1, starts[s.Key], s.Key)
	}
}

// An empty kind in FairKinds is refused by New, with the field named.
func TestFairKindsConfig(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	_, err := worker.New(context.Background(), n.JS, e.led, worker.Config{LeaseBucket: e.leases, FairKinds: []string{"job", ""}})
	require.ErrorIs(t, err, worker.ErrInvalidConfig)
	require.Contains(t, err.Error(), "FairKinds")
}

// Across workers the turns are each worker's own, so groups interleave
// but not strictly: with two fair workers, tenant B's 4 tasks, admitted
// after A's 20, all start within the first half of the starts (in FIFO
// order they would be the last 4).
func TestFairKindAcrossWorkers(t *testing.T) {
	n := natstest.WithServer(t)
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			e := newEnv(t, n.JS, 1)
			a, b := groupSubs("A", 20, 0), groupSubs("B", 4, 0)
			for _, s := range append(append([]kvledger.Submission(nil), a...), b...) {
				e.submit(s)
			}
			var (
				mu    sync.Mutex
				order []kvledger.IdempotencyKey
			)
			for range 2 {
				e.worker(worker.Config{Concurrency: 1, ClaimAhead: -1, FairKinds: []string{"job"}}, func(w *worker.Worker) {
					require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
						mu.Lock()
						order = append(order, task.Key())
						mu.Unlock()
						return nil
					}))
				})
			}
			for k, s := range e.waitFinal(30*time.Second, keysOf(a, b)...) {
				require.Equal(t, kvledger.StatusCompleted, s.Status, k)
			}
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, order, 24)
			require.Subset(t, order[:12], keysOf(b), "B's tasks among the first 12 starts: %v", order)
		})
	}
}
