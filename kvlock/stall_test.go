package kvlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

// On a stalled connection, TryAcquire and Release return within
// Config.CallCeiling (retries included), not at the caller's deadline.
func TestStalledConnectionBoundedByCallCeiling(t *testing.T) {
	n := natstest.WithServer(t)
	p, js := natstest.ThroughProxy(t, n)
	cfg := kvlock.Config{OpTimeout: 300 * time.Millisecond}
	l := newLocker(t, js, cfg)
	ctx := natstest.Context(t, 60*time.Second)
	k, ok, err := l.TryAcquire(ctx, "held")
	require.NoError(t, err)
	require.True(t, ok)

	p.Stall(true)
	t.Cleanup(func() { p.Stall(false) })
	ceiling := cfg.CallCeiling()
	require.Equal(t, 3*2*300*time.Millisecond+150*time.Millisecond, ceiling, "defaults: 3 attempts, 50ms+100ms backoff")
	long, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for name, call := range map[string]func() error{
		"TryAcquire": func() error { _, _, err := l.TryAcquire(long, "stalled"); return err },
		"Release":    func() error { return k.Release(long) },
	} {
		start := time.Now()
		err := call()
		took := time.Since(start)
		t.Logf("%s on a stalled connection: %v after %v (ceiling %v)", name, err, took, ceiling)
		require.Error(t, err, name)
		require.Less(t, took, ceiling+500*time.Millisecond, name)
	}
}

func TestCallCeilingDefaults(t *testing.T) {
	require.Equal(t, 3*2*5*time.Second+150*time.Millisecond, kvlock.Config{}.CallCeiling())
}
