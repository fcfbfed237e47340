package kvledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// Outcomes sent with FinishAsync are in flight together and each lands
// fenced: the current claimant's outcomes land, a stale claimant's outcome
// (its claim taken over after it was cached) is refused with ErrFenced
// and leaves the new claim alone, a failure blocks its dependents once it
// landed, a second outcome for one claim loses to the first, and an
// outcome Finish refuses is refused at once.
func TestFinishAsyncPipelinedAndFenced(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	led, err := kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "fasync"}))
	require.NoError(t, err)
	// A second handle on the bucket: another process.
	other, err := kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "fasync"}))
	require.NoError(t, err)
	m, err := kvlease.NewManager(ctx, n.JS, kvlease.Config{Bucket: "fasync_leases"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	gA, ok, err := m.TryAcquireKey(ctx, "kvledger.fasync.w.A", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	gB, ok, err := m.TryAcquireKey(ctx, "kvledger.fasync.w.B", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	keys := []kvledger.IdempotencyKey{"a", "b", "c", "stale"}
	claims := map[kvledger.IdempotencyKey]kvledger.TaskState{}
	for _, k := range keys {
		ok, err := led.Admit(ctx, "test", k, 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
		rec, err := led.ClaimLeased(ctx, "A", k, "A", gA, time.Now())
		require.NoError(t, err)
		claims[k] = rec
	}
	ok, err = led.Admit(ctx, "test", "after-c", 1, nil, t0, "c")
	require.NoError(t, err)
	require.True(t, ok)
	// B takes "stale" over (A's lease judged ended by B): A's cached
	// claim is stale, and its outcome's compare-and-swap loses.
	b, err := other.ClaimLeasedFrom(ctx, "B", claims["stale"], "B", gB, 0, time.Now())
	require.NoError(t, err)

	now := time.Now()
	sent := map[kvledger.IdempotencyKey]*kvledger.PendingFinish{
		"a":     led.FinishAsync(ctx, "A", "a", "A", claims["a"].Fence, kvledger.Outcome{Status: kvledger.StatusCompleted}, now),
		"b":     led.FinishAsync(ctx, "A", "b", "A", claims["b"].Fence, kvledger.Outcome{Status: kvledger.StatusPending, Error: "again", RunAt: now}, now),
		"c":     led.FinishAsync(ctx, "A", "c", "A", claims["c"].Fence, kvledger.Outcome{Status: kvledger.StatusFailed, Error: "boom"}, now),
		"stale": led.FinishAsync(ctx, "A", "stale", "A", claims["stale"].Fence, kvledger.Outcome{Status: kvledger.StatusCompleted}, now),
	}
	// A second outcome for a's claim, sent before the first is answered:
	// both are compare-and-swaps on the claim's revision, so the second
	// loses its swap on the server, and Wait then finds the claim ended.
	again := led.FinishAsync(ctx, "A", "a", "A", claims["a"].Fence, kvledger.Outcome{Status: kvledger.StatusFailed, Error: "late"}, now)
	rec, err := sent["a"].Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusCompleted, rec.Status)
	_, err = again.Wait(ctx)
	require.ErrorIs(t, err, kvledger.ErrNotClaimed, "one outcome per claim, in the order sent")
	rec, err = sent["b"].Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusPending, rec.Status)
	require.Equal(t, 1, rec.Attempts)
	_, err = sent["c"].Wait(ctx)
	require.NoError(t, err)
	_, err = sent["stale"].Wait(ctx)
	require.ErrorIs(t, err, kvledger.ErrFenced)

	for k, want := range map[kvledger.IdempotencyKey]kvledger.Status{
		"a": kvledger.StatusCompleted, "b": kvledger.StatusPending, "c": kvledger.StatusFailed,
		"after-c": kvledger.StatusBlocked, "stale": kvledger.StatusClaimed,
	} {
		s, _, err := led.State(ctx, k)
		require.NoError(t, err)
		require.Equal(t, want, s.Status, "%s", k)
	}
	s, _, err := led.State(ctx, "stale")
	require.NoError(t, err)
	require.Equal(t, b.Fence, s.Fence, "the new claim stands")

	_, err = led.FinishAsync(ctx, "A", "a", "A", claims["a"].Fence, kvledger.Outcome{Status: "bogus"}, now).Wait(ctx)
	require.ErrorIs(t, err, kvledger.ErrUnknownStatus)
}

// An outcome sent again after it landed (its first answer was lost: the
// server went away) is found stored: Finish returns the record as the
// first send wrote it, not ErrNotClaimed, so the runtime reports what the
// record holds. Another outcome of that claim is still refused.
func TestFinishFindsItsLandedOutcome(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	led, err := kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "flanded"}))
	require.NoError(t, err)
	m, err := kvlease.NewManager(ctx, n.JS, kvlease.Config{Bucket: "flanded_leases"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	g, ok, err := m.TryAcquireKey(ctx, "kvledger.flanded.w.A", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	now := time.Now()
	for _, o := range []kvledger.Outcome{
		{Status: kvledger.StatusCompleted},
		{Status: kvledger.StatusFailed, Error: "boom"},
		{Status: kvledger.StatusPending, Error: "again", RunAt: now},
		{Status: kvledger.StatusPending, Uncount: true}, // a claim given back before its handler ran
	} {
		k := kvledger.IdempotencyKey("k-" + string(o.Status) + o.Error)
		ok, err := led.Admit(ctx, "test", k, 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
		claim, err := led.ClaimLeased(ctx, "A", k, "A", g, now)
		require.NoError(t, err)
		first, err := led.Finish(ctx, "A", k, "A", claim.Fence, o, now)
		require.NoError(t, err)
		again, err := led.Finish(ctx, "A", k, "A", claim.Fence, o, now)
		require.NoError(t, err, "%s: the outcome sent again is found stored", k)
		require.Equal(t, first.Rev, again.Rev, "%s: nothing written twice", k)
		require.Equal(t, first.Attempts, again.Attempts)
		if o.Uncount {
			require.Equal(t, 0, again.Attempts, "the given-back claim's attempt is taken back")
		}
		_, err = led.Finish(ctx, "A", k, "A", claim.Fence, kvledger.Outcome{Status: kvledger.StatusFailed, Error: "other"}, now)
		if o.Status != kvledger.StatusFailed || o.Error != "other" {
			require.ErrorIs(t, err, kvledger.ErrNotClaimed, "%s: another outcome of the claim is refused", k)
		}
	}
}
