package kvlease_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// TestCloseRacesGuardContexts cancels the contexts of many guards at the
// same moment as their manager closes. A release a cancellation starts is
// one of the manager's goroutines like any other: Close waits for it (no
// goroutine added after Close stopped counting, which -race reports), and
// once Close returns every key is free again.
func TestCloseRacesGuardContexts(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	other := bind(t, jobs, newManager(t, n.NewJS(t), kvlease.Config{Holder: "other"}))
	const rounds, guards = 8, 40
	for round := range rounds {
		m, err := kvlease.NewManager(ctx, n.JS, kvlease.Config{})
		require.NoError(t, err)
		l := bind(t, jobs, m)
		keys := make([]string, guards)
		cancels := make([]context.CancelFunc, guards)
		for i := range guards {
			gctx, cancel := context.WithCancel(ctx)
			t.Cleanup(cancel)
			keys[i], cancels[i] = fmt.Sprintf("r%d-%d", round, i), cancel
			_, ok, err := l.TryAcquire(gctx, keys[i], 30*time.Second)
			require.NoError(t, err)
			require.True(t, ok)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, cancel := range cancels {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				cancel()
			}()
		}
		close(start)
		require.NoError(t, m.Close(ctx))
		wg.Wait()
		for _, k := range keys {
			g, ok, err := other.TryAcquire(ctx, k, 30*time.Second)
			require.NoError(t, err)
			require.True(t, ok, "round %d: %q still held after Close returned", round, k)
			require.NoError(t, g.Release(ctx))
		}
	}
}

// TestCloseWaitsForEndedGuardsDelete puts Close exactly between a guard
// leaving the manager (its context was cancelled) and the delete of its
// lease starting: Close must wait for that delete instead of returning
// with the lease still stored and a goroutine of the manager yet to start.
func TestCloseWaitsForEndedGuardsDelete(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	m, err := kvlease.NewManager(ctx, n.JS, kvlease.Config{})
	require.NoError(t, err)
	g, ok, err := bind(t, jobs, m).TryAcquire(ctx, "ending", 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	deleteLease := g.EndThenDelete()
	closed := make(chan error, 1)
	go func() { closed <- m.Close(ctx) }()
	select {
	case err := <-closed:
		require.FailNow(t, "Close returned before the ended guard's delete ran", "Close: %v", err)
	case <-time.After(200 * time.Millisecond): // asserting an absence: Close is still waiting
	}
	deleteLease()
	require.NoError(t, natstest.Recv(t, closed, 10*time.Second, "Close after the delete"))
	require.NoError(t, g.Release(ctx))

	other := bind(t, jobs, newManager(t, n.NewJS(t), kvlease.Config{Holder: "other"}))
	g2, ok, err := other.TryAcquire(ctx, "ending", 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the lease is gone once Close returned")
	require.NoError(t, g2.Release(ctx))
}
