package kvledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// Each situation a person tells apart has its own phase, derived from the
// record alone and the caller's clock.
func TestPhaseTellsSituationsApart(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Minute)
	for _, tc := range []struct {
		name string
		rec  kvledger.TaskState
		want kvledger.Phase
	}{
		{"due", kvledger.TaskState{Status: kvledger.StatusPending}, kvledger.PhasePending},
		{"due run-at", kvledger.TaskState{Status: kvledger.StatusPending, RunAt: now}, kvledger.PhasePending},
		{"delayed", kvledger.TaskState{Status: kvledger.StatusPending, RunAt: later}, kvledger.PhaseScheduled},
		{"backoff", kvledger.TaskState{Status: kvledger.StatusPending, RunAt: later, Attempts: 1}, kvledger.PhaseRetrying},
		{"claimed", kvledger.TaskState{Status: kvledger.StatusClaimed}, kvledger.PhaseRunning},
		{"cancel requested", kvledger.TaskState{Status: kvledger.StatusClaimed, CancelRequested: true}, kvledger.PhaseCancelling},
		{"completed", kvledger.TaskState{Status: kvledger.StatusCompleted}, kvledger.PhaseCompleted},
		{"failed", kvledger.TaskState{Status: kvledger.StatusFailed}, kvledger.PhaseFailed},
		{"cancelled", kvledger.TaskState{Status: kvledger.StatusFailed, Cancelled: true}, kvledger.PhaseCancelled},
		{"blocked", kvledger.TaskState{Status: kvledger.StatusBlocked}, kvledger.PhaseBlocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.rec.Phase(now))
			p, err := kvledger.ParsePhase(string(tc.want))
			require.NoError(t, err)
			require.Equal(t, tc.want, p)
		})
	}
	p, err := kvledger.ParsePhase("claimed")
	require.NoError(t, err)
	require.Equal(t, kvledger.PhaseRunning, p)
	_, err = kvledger.ParsePhase("done")
	require.ErrorIs(t, err, kvledger.ErrInvalidPhase)
	require.True(t, kvledger.PhaseCancelled.Final())
	require.False(t, kvledger.PhaseRetrying.Final())
	require.False(t, kvledger.PhaseCancelling.Final())
	require.False(t, kvledger.PhaseCancelling.Reopenable())
}
