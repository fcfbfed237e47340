package kvledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// SubmitState returns the record the admission wrote (with the stored
// revision), or the stored record that made it a no-op, never a later
// one: a claim after the admission does not show in what it returned.
func TestSubmitStateReturnsTheAdmission(t *testing.T) {
	n := natstest.WithServer(t)
	l, err := kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{}))
	require.NoError(t, err)
	ctx := natstest.Context(t, 30*time.Second)

	rec, ok, err := l.SubmitState(ctx, "t", kvledger.Submission{Key: "a", Seq: 1, Kind: "k"})
	require.NoError(t, err)
	require.True(t, ok)
	stored, _, err := l.State(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, stored.Rev, rec.Rev, "the record as written, its revision included")
	require.Equal(t, stored.Fence, rec.Fence)
	require.Equal(t, "k", rec.Kind)
	require.Equal(t, kvledger.StatusPending, stored.Status)

	fence, err := l.Claim(ctx, "t", "a", "w", time.Minute, time.Now())
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusPending, rec.Status, "a claim after the admission does not change what it returned")

	dup, ok, err := l.SubmitState(ctx, "t", kvledger.Submission{Key: "a", Seq: 1})
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, kvledger.StatusClaimed, dup.Status, "the record that made it a no-op")
	require.Equal(t, fence, dup.Fence)

	// A need that failed: the record is written blocked, and says by what.
	_, err = l.Admit(ctx, "t", "f", 1, nil, time.Now())
	require.NoError(t, err)
	ff, err := l.Claim(ctx, "t", "f", "w", time.Minute, time.Now())
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "t", "f", "w", ff, kvledger.StatusFailed, time.Now()))
	rec, ok, err = l.SubmitState(ctx, "t", kvledger.Submission{Key: "b", Seq: 1, Needs: []kvledger.IdempotencyKey{"f"}})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, kvledger.StatusBlocked, rec.Status)
	require.Equal(t, kvledger.IdempotencyKey("f"), rec.BlockedBy)

	_, _, err = l.SubmitState(ctx, "t", kvledger.Submission{Key: "c", Seq: 1, Delay: -time.Second})
	require.ErrorIs(t, err, kvledger.ErrInvalidState)
}
