package kvledger_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// Schedules are created if absent, updated and deleted by revision, and
// the record watch with schedules delivers each change in order.
func TestKVStoreSchedules(t *testing.T) {
	n := natstest.WithServer(t)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	ctx := natstest.Context(t, 30*time.Second)

	var (
		mu      sync.Mutex
		seen    []kvledger.ScheduleChange
		records int
	)
	synced := make(chan struct{})
	w, err := s.WatchRecordsAndSchedules(ctx, func(c kvledger.Change) {
		mu.Lock()
		defer mu.Unlock()
		if c.Synced {
			close(synced)
		} else if c.Key != "" {
			records++
		}
	}, func(c kvledger.ScheduleChange) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c)
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	<-synced

	sc := kvledger.Schedule{Name: "tick", Spec: "@every 1m", Task: kvledger.ScheduleTask{Kind: "k", Task: json.RawMessage(`{"n":18446744073709551617}`)}}
	created, err := s.CreateSchedule(ctx, sc)
	require.NoError(t, err)
	require.NotZero(t, created.Rev)
	_, err = s.CreateSchedule(ctx, sc)
	require.ErrorIs(t, err, kvledger.ErrScheduleExists)

	sc.Spec = "0 0 31 2 *"
	_, err = s.CreateSchedule(ctx, kvledger.Schedule{Name: "never", Spec: "0 0 31 2 *", Task: sc.Task})
	require.ErrorIs(t, err, kvledger.ErrInvalidSchedule)

	sc.Spec = "@every 2m"
	updated, err := s.UpdateSchedule(ctx, sc, created.Rev)
	require.NoError(t, err)
	_, err = s.UpdateSchedule(ctx, sc, created.Rev)
	require.ErrorIs(t, err, kvledger.ErrScheduleChanged)

	got, found, err := s.LoadSchedule(ctx, "tick")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "@every 2m", got.Spec)
	require.Equal(t, `{"n":18446744073709551617}`, string(got.Task.Task))
	all, err := s.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, updated.Rev, all[0].Rev)

	require.ErrorIs(t, s.DeleteSchedule(ctx, "tick", created.Rev), kvledger.ErrScheduleChanged)
	require.NoError(t, s.DeleteSchedule(ctx, "tick", updated.Rev))
	require.ErrorIs(t, s.DeleteSchedule(ctx, "tick", updated.Rev), kvledger.ErrNoSchedule)
	_, found, err = s.LoadSchedule(ctx, "tick")
	require.NoError(t, err)
	require.False(t, found)
	// Created again over its delete marker.
	_, err = s.CreateSchedule(ctx, sc)
	require.NoError(t, err)

	natstest.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 4
	}, "the watch delivers 4 schedule changes")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "@every 1m", seen[0].Schedule.Spec)
	require.Equal(t, "@every 2m", seen[1].Schedule.Spec)
	// Each change carries its spec parsed once, for the watch's readers.
	at := time.Date(2026, 12, 2, 1, 2, 30, 0, time.UTC)
	require.Equal(t, time.Date(2026, 12, 2, 1, 3, 0, 0, time.UTC), seen[0].Periods.Next(at).UTC())
	require.Equal(t, time.Date(2026, 12, 2, 1, 4, 0, 0, time.UTC), seen[1].Periods.Next(at).UTC())
	require.Zero(t, seen[2].Periods, "a removal has no periods")
	require.True(t, seen[2].Deleted)
	require.Equal(t, "tick", seen[3].Name)
	require.Zero(t, records)
	// The record-only readers never see a schedule.
	snapN := 0
	require.NoError(t, s.Range(ctx, func(kvledger.TaskState) bool { snapN++; return true }))
	require.Zero(t, snapN)
}

// RemoveSchedule removes at the revision it reads and says which;
// DeleteSchedule removes at a revision given. A value that is not a
// schedule is removed only at a revision given.
func TestKVStoreRemoveSchedule(t *testing.T) {
	n := natstest.WithServer(t)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	ctx := natstest.Context(t, 30*time.Second)

	sc, err := s.CreateSchedule(ctx, kvledger.Schedule{Name: "tick", Spec: "@every 1m", Task: kvledger.ScheduleTask{Kind: "k"}})
	require.NoError(t, err)
	require.ErrorIs(t, s.DeleteSchedule(ctx, "tick", sc.Rev+100), kvledger.ErrScheduleChanged)
	rev, err := s.RemoveSchedule(ctx, "tick")
	require.NoError(t, err)
	require.Equal(t, sc.Rev, rev)
	_, err = s.RemoveSchedule(ctx, "tick")
	require.ErrorIs(t, err, kvledger.ErrNoSchedule)
	require.ErrorIs(t, s.DeleteSchedule(ctx, "tick", rev), kvledger.ErrNoSchedule)

	kv, err := n.JS.KeyValue(ctx, s.Name())
	require.NoError(t, err)
	bad, err := kv.Put(ctx, "sched.bad", []byte("not json"))
	require.NoError(t, err)
	_, err = s.RemoveSchedule(ctx, "bad")
	require.ErrorIs(t, err, kvledger.ErrCorruptRecord)
	require.NoError(t, s.DeleteSchedule(ctx, "bad", bad))
	_, found, err := s.LoadSchedule(ctx, "bad")
	require.NoError(t, err)
	require.False(t, found)
}
