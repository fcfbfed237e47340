package kvledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// SubmitResult returns the record the admission wrote (with the stored
// revision) and Admitted, or the stored record that made it a no-op and
// not Admitted, never a later record: a claim after the admission does
// not show in what it returned.
func TestSubmitResultReturnsTheAdmission(t *testing.T) {
	n := natstest.WithServer(t)
	l, err := kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{}))
	require.NoError(t, err)
	ctx := natstest.Context(t, 30*time.Second)

	adm, err := l.SubmitResult(ctx, "t", kvledger.Submission{Key: "a", Seq: 1, Kind: "k"})
	require.NoError(t, err)
	require.True(t, adm.Admitted)
	rec := adm.Record
	stored, _, err := l.State(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, stored.Rev, rec.Rev, "the record as written, its revision included")
	require.Equal(t, stored.Fence, rec.Fence)
	require.Equal(t, "k", rec.Kind)
	require.Equal(t, kvledger.StatusPending, stored.Status)
	require.Equal(t, kvledger.StatusPending, rec.Status)

	fence, err := l.Claim(ctx, "t", "a", "w", time.Minute, time.Now())
	require.NoError(t, err)

	adm, err = l.SubmitResult(ctx, "t", kvledger.Submission{Key: "a", Seq: 1})
	require.NoError(t, err)
	require.False(t, adm.Admitted)
	dup := adm.Record
	require.Equal(t, kvledger.StatusClaimed, dup.Status, "the record that made it a no-op")
	require.Equal(t, fence, dup.Fence)

	// A need that failed: the record is written blocked, and says by what.
	_, err = l.Admit(ctx, "t", "f", 1, nil, time.Now())
	require.NoError(t, err)
	ff, err := l.Claim(ctx, "t", "f", "w", time.Minute, time.Now())
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "t", "f", "w", ff, kvledger.StatusFailed, time.Now()))
	adm, err = l.SubmitResult(ctx, "t", kvledger.Submission{Key: "b", Seq: 1, Needs: []kvledger.IdempotencyKey{"f"}})
	require.NoError(t, err)
	require.True(t, adm.Admitted)
	rec = adm.Record
	require.Equal(t, kvledger.StatusBlocked, rec.Status)
	require.Equal(t, kvledger.IdempotencyKey("f"), rec.BlockedBy)

	adm, err = l.SubmitResult(ctx, "t", kvledger.Submission{Key: "c", Seq: 1, Delay: -time.Second})
	require.ErrorIs(t, err, kvledger.ErrInvalidState)
	require.Equal(t, kvledger.Admission{}, adm)
}
