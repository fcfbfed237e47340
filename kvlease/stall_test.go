package kvlease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// On a connection that stalls (TCP open, nothing answered), every call
// returns within the bound doc.go states from OpTimeout, not when
// the caller's own (much later) deadline runs out.
func TestStalledConnectionBoundedByOperationTimeout(t *testing.T) {
	n := natstest.WithServer(t)
	p, js := natstest.ThroughProxy(t, n)
	const opTimeout = 500 * time.Millisecond
	m := newManager(t, js, kvlease.Config{OpTimeout: opTimeout})
	l := bind(t, jobs, m)
	ctx := natstest.Context(t, 30*time.Second)
	g, ok, err := l.TryAcquire(ctx, "held", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	p.Stall(true)
	t.Cleanup(func() { p.Stall(false) }) // before the manager's Close
	bound := kvlease.CallBound(kvlease.Config{OpTimeout: opTimeout}) + 500*time.Millisecond
	long, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for name, call := range map[string]func() error{
		"TryAcquire": func() error { _, _, err := l.TryAcquire(long, "stalled", 5*time.Second); return err },
		"Holder":     func() error { _, _, err := l.Holder(long, "held"); return err },
		"Renew":      func() error { return g.Renew(long) },
		"ForceRelease": func() error {
			_, err := l.ForceRelease(long, "other")
			return err
		},
	} {
		start := time.Now()
		err := call()
		took := time.Since(start)
		t.Logf("%s on a stalled connection: %v after %v (bound %v)", name, err, took, bound)
		require.Error(t, err, name)
		require.Less(t, took, bound, "%s must be bounded by OpTimeout", name)
	}
}

// A view's first Subscribe starts the manager's watch: on a stalled
// connection it returns when its ctx ends (or the bucket's op timeout
// passes), not after nats.go's own request wait (5 s).
func TestViewSubscribeOnAStalledConnectionEndsWithItsCtx(t *testing.T) {
	n := natstest.WithServer(t)
	p, js := natstest.ThroughProxy(t, n)
	m := newManager(t, js, kvlease.Config{})
	v, err := m.View("jobs")
	require.NoError(t, err)
	p.Stall(true)
	t.Cleanup(func() { p.Stall(false) }) // before the manager's Close
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = v.Subscribe(ctx, "jobs.a")
	took := time.Since(start)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, took, 3*time.Second, "Subscribe waited out nats.go's request wait")
}
