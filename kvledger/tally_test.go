package kvledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// The tally follows records through their changes, and a task whose
// RunAt comes is counted as pending from then on.
func TestTallyFollowsChanges(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tl := kvledger.NewTally()
	rec := func(key string, st kvledger.Status, kind string) kvledger.Change {
		return kvledger.Change{Key: kvledger.IdempotencyKey(key), Record: kvledger.TaskState{Key: kvledger.IdempotencyKey(key), Status: st, Kind: kind}}
	}
	tl.Apply(rec("a", kvledger.StatusPending, "mail"), now)
	tl.Apply(rec("b", kvledger.StatusPending, "mail"), now)
	later := rec("c", kvledger.StatusPending, "report")
	later.Record.RunAt = now.Add(time.Minute)
	tl.Apply(later, now)
	tl.Apply(kvledger.Change{Synced: true}, now)

	c := tl.Counts(now)
	require.Equal(t, 3, c.Total)
	require.Equal(t, map[kvledger.Phase]int{kvledger.PhasePending: 2, kvledger.PhaseScheduled: 1}, c.ByPhase)
	require.Equal(t, map[kvledger.Phase]int{kvledger.PhasePending: 2}, c.ByKind["mail"])

	tl.Apply(rec("a", kvledger.StatusClaimed, "mail"), now)
	cancelled := rec("b", kvledger.StatusFailed, "mail")
	cancelled.Record.Cancelled = true
	tl.Apply(cancelled, now)
	require.Equal(t, map[kvledger.Phase]int{kvledger.PhaseRunning: 1, kvledger.PhaseCancelled: 1}, tl.Counts(now).ByKind["mail"])

	// c's time comes: it counts as pending.
	require.Equal(t, map[kvledger.Phase]int{kvledger.PhasePending: 1}, tl.Counts(now.Add(time.Minute)).ByKind["report"])

	// A retry files it again; a deletion and a corrupt value forget it.
	retry := rec("c", kvledger.StatusPending, "report")
	retry.Record.RunAt, retry.Record.Attempts = now.Add(2*time.Minute), 1
	tl.Apply(retry, now.Add(time.Minute))
	require.Equal(t, map[kvledger.Phase]int{kvledger.PhaseRetrying: 1}, tl.Counts(now.Add(time.Minute)).ByKind["report"])
	tl.Apply(kvledger.Change{Key: "c", Deleted: true}, now)
	tl.Apply(kvledger.Change{Key: "a", Err: errors.New("corrupt")}, now)
	c = tl.Counts(now.Add(time.Hour))
	require.Equal(t, 1, c.Total)
	require.Equal(t, map[kvledger.Phase]int{kvledger.PhaseCancelled: 1}, c.ByPhase)
	require.NotContains(t, c.ByKind, "report")
}
