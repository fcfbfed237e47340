package tasks_test

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
	"github.com/natscoord/natscoord/tasks"
)

type callAPI struct{ N int }

func (callAPI) Kind() string { return "call-api" }

// Config.RateLimits reaches the client's worker: at most one task of the
// kind starts per second, each with its one attempt; a bad limit is
// refused by NewClient.
func TestClientRateLimit(t *testing.T) {
	n := natstest.WithServer(t)
	_, err := tasks.NewClient(natstest.Context(t, 10*time.Second), n.JS, tasks.Config{
		Ledger: "bad_rates", RateLimits: []worker.RateLimit{{Kind: "call-api", N: 1, Period: 500 * time.Millisecond}}})
	require.ErrorIs(t, err, worker.ErrInvalidConfig)

	c, err := tasks.NewClient(natstest.Context(t, 10*time.Second), n.JS, tasks.Config{
		RateLimits: []worker.RateLimit{{Kind: "call-api", N: 1, Period: time.Second}}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close(context.Background())) })
	require.NoError(t, tasks.AddWorker(c, func(context.Context, *tasks.Task[callAPI]) error { return nil }))
	ctx := natstest.Context(t, 30*time.Second)
	require.NoError(t, c.Start(ctx))
	var keys []kvledger.IdempotencyKey
	for i := range 3 {
		sub, err := c.Submit(ctx, callAPI{N: i}, &tasks.SubmitOpts{Key: kvledger.IdempotencyKey(fmt.Sprintf("call-%d", i))})
		require.NoError(t, err)
		keys = append(keys, sub.Key)
	}
	final, err := c.Wait(ctx, keys...)
	require.NoError(t, err)
	var starts []time.Time
	for _, k := range keys {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status, k)
		as, err := c.Attempts(ctx, k)
		require.NoError(t, err)
		require.Len(t, as, 1, "%s: waiting is not an attempt", k)
		starts = append(starts, as[0].Started)
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(starts); i++ {
		// The claims' times, on this process's clock: a claim follows
		// its token by a round trip (doc.go of kvledger/worker).
		require.GreaterOrEqual(t, starts[i].Sub(starts[i-1]), 500*time.Millisecond, "starts %v", starts)
	}
}
