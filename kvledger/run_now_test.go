package kvledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// RunNow clears a waiting record's RunAt in one write named RunNowEvent,
// at the revision given; it refuses a record that moved since, one that
// is running or ended, and writes nothing for one already due.
func TestRunNowLedger(t *testing.T) {
	ctx := context.Background()
	l, err := kvledger.New(nil)
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	for _, s := range []kvledger.Submission{{Key: "later", Delay: time.Hour}, {Key: "due"}, {Key: "busy"}} {
		s.Now = now
		_, err := l.Submit(ctx, "t", s)
		require.NoError(t, err)
	}
	later, _, _ := l.State(ctx, "later")
	require.Equal(t, kvledger.PhaseScheduled, later.Phase(now))

	_, err = l.RunNow(ctx, "op", "later", now, kvledger.AtRevision(later.Rev+1))
	require.ErrorIs(t, err, kvledger.ErrMoved)
	rec, err := l.RunNow(ctx, "op", "later", now, kvledger.AtRevision(later.Rev))
	require.NoError(t, err)
	require.Equal(t, kvledger.PhasePending, rec.Phase(now))
	require.Equal(t, later.Fence, rec.Fence)
	require.Equal(t, later.Attempts, rec.Attempts)
	require.Equal(t, kvledger.RunNowEvent, rec.LastEvent)
	require.Contains(t, keyEvents(t, l, "later"), kvledger.RunNowEvent)

	due, _, _ := l.State(ctx, "due")
	rec, err = l.RunNow(ctx, "op", "due", now)
	require.NoError(t, err)
	require.Equal(t, due.Rev, rec.Rev, "a due task is not written")

	_, err = l.Claim(ctx, "t", "busy", "w", time.Minute, now)
	require.NoError(t, err)
	_, err = l.RunNow(ctx, "op", "busy", now)
	require.ErrorIs(t, err, kvledger.ErrNotDelayed)
	_, err = l.RunNow(ctx, "op", "none", now)
	require.ErrorIs(t, err, kvledger.ErrNoKey)
}
