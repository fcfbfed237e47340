package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// Every hook of the runtime's protocol is assigned by kvledger and has
// the type protocol.go asserts (a mismatch would have panicked when this
// package loaded), and each reaches its implementation: one call each,
// on an in-memory ledger.
func TestProtocolHooks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := kvledger.New(kvledger.NewMemStore())
	require.NoError(t, err)
	now := time.Now()

	_, err = claimLeasedFrom(l, ctx, "a", kvledger.TaskState{Key: "k"}, "w", nil, 0, now)
	require.ErrorIs(t, err, kvledger.ErrNoLease, "the claim checks its lease before anything else")

	_, err = finishClaim(l, ctx, "a", "missing", "w", 1, kvledger.Outcome{Status: kvledger.StatusCompleted}, now)
	require.ErrorIs(t, err, kvledger.ErrNoKey)
	_, err = finishAsync(l, ctx, "a", "missing", "w", 1, kvledger.Outcome{Status: kvledger.StatusCompleted}, now).Wait(ctx)
	require.ErrorIs(t, err, kvledger.ErrNoKey)
	require.False(t, pipelined(l), "a MemStore cannot send a swap without waiting")

	require.True(t, attemptsUsed(kvledger.TaskState{Attempts: 2, MaxAttempts: 2}, 5), "the record's own limit bounds it")
	require.False(t, attemptsUsed(kvledger.TaskState{Attempts: 2}, 3))

	backoff := func(int) time.Duration { return time.Minute }
	o := retryOrFail(kvledger.TaskState{Attempts: 1}, 3, "boom", false, backoff, now)
	require.Equal(t, kvledger.Outcome{Status: kvledger.StatusPending, Error: "boom", RunAt: now.Add(time.Minute)}, o)
	o = retryOrFail(kvledger.TaskState{Attempts: 3}, 3, "boom", false, backoff, now)
	require.Equal(t, kvledger.StatusFailed, o.Status, "the last attempt's failure is final")
}
