package kvlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvlock"
	"github.com/natscoord/natscoord/opstats"
)

func TestMemoryContendersNeverOverlap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := kvlock.NewMemory(kvlock.Config{TTL: 5 * time.Second})
	require.NoError(t, err)
	defer m.Close(ctx)
	var res fencedResource
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				hctx, release, err := m.Hold(ctx, "shared")
				if !assertNoErr(t, err) {
					return
				}
				tok, _ := kvlock.TokenFromContext(hctx)
				if res.enter(tok) != nil {
					t.Errorf("live holder refused (token %d)", tok)
				}
				res.leave()
				release()
			}
		}()
	}
	wg.Wait()
	require.Zero(t, res.rejected)
	require.Zero(t, res.overlaps)
}

func TestMemoryReportsToObserver(t *testing.T) {
	ctx := context.Background()
	rec := opstats.New()
	clock := kvlock.NewManualClock(time.Time{})
	m, err := kvlock.NewMemory(kvlock.Config{Name: "mem", TTL: 3 * time.Second, Observer: kvlock.RecorderObserver(rec)}, kvlock.WithClock(clock))
	require.NoError(t, err)
	defer m.Close(ctx)
	_, release, err := m.Hold(ctx, "h")
	require.NoError(t, err)
	clock.Advance(2 * time.Second) // two renewals at TTL/3
	release()
	k, err := m.Acquire(ctx, "x")
	require.NoError(t, err)
	_, ok, err := m.TryAcquire(ctx, "x")
	require.NoError(t, err)
	require.False(t, ok)
	clock.Advance(3 * time.Second) // x is never renewed
	require.ErrorIs(t, k.Err(), kvlock.ErrLost)
	l := func(op, out string) uint64 {
		return rec.Count(opstats.Labels{Component: "kvlock", Name: "mem", Op: op, Outcome: out})
	}
	require.EqualValues(t, 2, l("acquire", "ok"))
	require.EqualValues(t, 1, l("acquire", "contended"))
	require.EqualValues(t, 2, l("renew", "ok"))
	require.EqualValues(t, 1, l("release", "ok"))
	require.EqualValues(t, 1, l("lost", "lost"))

	_, err = kvlock.NewMemory(kvlock.Config{}, kvlock.WithClock(nil))
	require.ErrorIs(t, err, kvlock.ErrInvalidConfig)
	_, err = kvlock.NewMemory(kvlock.Config{TTL: 10 * time.Millisecond})
	require.ErrorIs(t, err, kvlock.ErrInvalidConfig, "the same TTL floor as the server's")
}
