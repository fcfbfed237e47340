package worker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// rateSlack is how much of a rate limit's period the tests allow a start
// to lag its token: the token is written before the claim, whose write
// the tests read the start from (doc.go, "Rate limits": one claim's round
// trip, more on a loaded machine).
const rateSlack = 500 * time.Millisecond

// claimTimes returns, for keys, the server's timestamp of each attempt's
// claim (the ledger stream's message at the attempt's StartRev), sorted:
// the starts as the server stored them, no worker's clock involved. Each
// task must have been claimed once.
func (e *env) claimTimes(keys ...kvledger.IdempotencyKey) []time.Time {
	e.t.Helper()
	ctx := natstest.Context(e.t, 10*time.Second)
	stream, err := e.js.Stream(ctx, "KV_"+e.led.Store().(*kvledger.KVStore).Name())
	require.NoError(e.t, err)
	var starts []time.Time
	for _, k := range keys {
		h, err := e.led.History(ctx, k)
		require.NoError(e.t, err)
		as := kvledger.Attempts(h)
		require.Len(e.t, as, 1, "%s: claimed once: %+v", k, as)
		m, err := stream.GetMsg(ctx, as[0].StartRev)
		require.NoError(e.t, err)
		starts = append(starts, m.Time)
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	return starts
}

// requireRate fails when a window of period less rateSlack holds more
// than n of starts (sorted).
func requireRate(t *testing.T, starts []time.Time, n int, period time.Duration) {
	t.Helper()
	var gaps []time.Duration
	for i := n; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-n]))
	}
	t.Logf("time from each start to the %d-th after it (at least %v): %v", n, period, gaps)
	for i := n; i < len(starts); i++ {
		require.GreaterOrEqual(t, starts[i].Sub(starts[i-n]), period-rateSlack,
			"starts %d and %d within one period: at most %d per %v; starts %v", i-n, i, n, period, starts)
	}
}

// Two workers, each free to run 4 handlers at once and to claim ahead,
// start at most 3 tasks of a kind in any 2 s between them, as the
// server's timestamps of the claims show; all 10 tasks finish, and none
// used more than its one attempt waiting for a token. Tasks of another
// kind run beside them unhindered.
func TestRateLimitAcrossWorkers(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const limit, period, tasks = 3, 2 * time.Second, 10
	cfg := worker.Config{Concurrency: 4, RateLimits: []worker.RateLimit{{Kind: "api", N: limit, Period: period}}}
	for i := range 2 {
		c := cfg
		c.Owner = kvledger.OwnerID(fmt.Sprintf("w%d", i))
		e.worker(c, func(w *worker.Worker) {
			h := func(context.Context, *worker.Task) error { return nil }
			require.NoError(t, w.Handle("api", h))
			require.NoError(t, w.Handle("free", h))
		})
	}
	var keys, free []kvledger.IdempotencyKey
	for i := range tasks {
		k := kvledger.IdempotencyKey(fmt.Sprintf("api%d", i))
		e.submit(kvledger.Submission{Key: k, Kind: "api"})
		keys = append(keys, k)
	}
	for i := range tasks {
		k := kvledger.IdempotencyKey(fmt.Sprintf("free%d", i))
		e.submit(kvledger.Submission{Key: k, Kind: "free"})
		free = append(free, k)
	}
	final := e.waitFinal(30*time.Second, append(slices.Clone(keys), free...)...)
	for k, rec := range final {
		require.Equal(t, kvledger.StatusCompleted, rec.Status, k)
		require.Equal(t, 1, rec.Attempts, "%s: waiting for a token is not an attempt", k)
	}
	starts := e.claimTimes(keys...)
	requireRate(t, starts, limit, period)
	// The limit is met, not only kept: 10 starts at 3 per 2 s take
	// three periods, a little more when a token is spent on a claim the
	// other worker won (doc.go, "Rate limits").
	require.Less(t, starts[tasks-1].Sub(starts[0]), 6*period, "starts %v", starts)
	// The other kind was not held back: it finished within the first
	// period.
	freeStarts := e.claimTimes(free...)
	require.Less(t, freeStarts[tasks-1].Sub(starts[0]), period, "free starts %v", freeStarts)
}

// A group's rate limit counts its tasks of every kind, and a task under
// both its kind's and its group's limit is held to the tighter one.
func TestRateLimitOfAGroup(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const period = time.Second
	e.worker(worker.Config{Concurrency: 4, RateLimits: []worker.RateLimit{
		{Group: "tenant", N: 2, Period: period},
		{Kind: "a", N: 5, Period: period},
	}}, func(w *worker.Worker) {
		h := func(context.Context, *worker.Task) error { return nil }
		require.NoError(t, w.Handle("a", h))
		require.NoError(t, w.Handle("b", h))
	})
	var keys []kvledger.IdempotencyKey
	for i := range 6 {
		k := kvledger.IdempotencyKey(fmt.Sprintf("t%d", i))
		e.submit(kvledger.Submission{Key: k, Kind: []string{"a", "b"}[i%2], Group: "tenant"})
		keys = append(keys, k)
	}
	final := e.waitFinal(30*time.Second, keys...)
	for k, rec := range final {
		require.Equal(t, kvledger.StatusCompleted, rec.Status, k)
		require.Equal(t, 1, rec.Attempts, k)
	}
	requireRate(t, e.claimTimes(keys...), 2, period)
}

// New refuses a rate limit it cannot keep, naming it.
func TestRateLimitConfigRefused(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	for _, tc := range []struct {
		rl   worker.RateLimit
		want string
	}{
		{worker.RateLimit{N: 1, Period: time.Second}, "exactly one of Kind and Group"},
		{worker.RateLimit{Kind: "a", Group: "g", N: 1, Period: time.Second}, "exactly one of Kind and Group"},
		{worker.RateLimit{Kind: "a", N: 0, Period: time.Second}, "N outside"},
		{worker.RateLimit{Kind: "a", N: 5000, Period: time.Second}, "N outside"},
		{worker.RateLimit{Kind: "a", N: 1, Period: 1500 * time.Millisecond}, "whole seconds"},
		{worker.RateLimit{Kind: "a", N: 1, Period: 0}, "period"},
		{worker.RateLimit{Kind: "a", N: 1, Period: 48 * time.Hour}, "period"},
	} {
		_, err := worker.New(natstest.Context(t, 5*time.Second), e.js, e.led,
			worker.Config{LeaseBucket: e.leases, RateLimits: []worker.RateLimit{tc.rl}})
		require.ErrorIs(t, err, worker.ErrInvalidConfig, "%v", tc.rl)
		require.ErrorContains(t, err, tc.want, "%v", tc.rl)
	}
	twice := []worker.RateLimit{{Kind: "a", N: 1, Period: time.Second}, {Kind: "a", N: 2, Period: time.Second}}
	_, err := worker.New(natstest.Context(t, 5*time.Second), e.js, e.led, worker.Config{LeaseBucket: e.leases, RateLimits: twice})
	require.ErrorContains(t, err, "a second limit")
}

// A worker waiting for a rate limit's token sends nothing: the token's
// expiry reaches it through its lease watch, by push, and it then starts
// the task with its one attempt.
func TestRateWaitSendsNothing(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const period = 3 * time.Second
	limits := []worker.RateLimit{{Group: "tenant", N: 1, Period: period}}
	ok := func(context.Context, *worker.Task) error { return nil }
	e.worker(worker.Config{Owner: "A", RateLimits: limits}, func(w *worker.Worker) { require.NoError(t, w.Handle("a", ok)) })
	e.submit(kvledger.Submission{Key: "first", Kind: "a", Group: "tenant"})
	e.waitFinal(10*time.Second, "first")

	// B, on its own connection, has run nothing, so it holds no lease
	// to renew while it waits.
	nc := natstest.Connect(t, n.Server)
	js := natstest.JetStream(t, nc)
	b := e.startOn(js, e.ledgerOn(js), worker.Config{Owner: "B", RateLimits: limits}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("b", ok))
	})
	t.Cleanup(func() { require.NoError(t, closeWorker(b)) })
	e.submit(kvledger.Submission{Key: "second", Kind: "b", Group: "tenant"})
	natstest.Eventually(t, 10*time.Second, func() bool { return b.Stats().Ready == 1 && b.Stats().Running == 0 }, "B waits for the token")
	before := nc.Stats()
	time.Sleep(500 * time.Millisecond) // the measurement interval itself
	after := nc.Stats()
	require.Zero(t, after.OutMsgs-before.OutMsgs, "messages sent by a worker waiting for a token")
	require.Equal(t, kvledger.StatusPending, e.state("second").Status)

	final := e.waitFinal(10*time.Second, "second")
	require.Equal(t, kvledger.StatusCompleted, final["second"].Status)
	require.Equal(t, 1, final["second"].Attempts)
	starts := e.claimTimes("first", "second")
	t.Logf("second claimed %v after the first", starts[1].Sub(starts[0]))
	require.GreaterOrEqual(t, starts[1].Sub(starts[0]), period-rateSlack)
}
