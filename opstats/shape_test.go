package opstats_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
	"github.com/natscoord/natscoord/kvlock"
	"github.com/natscoord/natscoord/opstats"
)

// The four observers of natscoord have one shape: On<Op>(ctx, payload)
// methods, and the same helpers. One type written for one package is
// written the same way for the others, and each package's Observers
// joins by opstats.Fan's rules (nil skipped, nil when none is left, the
// only one unwrapped).
type counting struct{ n int }

func (c *counting) OnAcquire(context.Context, kvlease.Event)     { c.n++ }
func (c *counting) OnRenew(context.Context, kvlease.Event)       { c.n++ }
func (c *counting) OnRelease(context.Context, kvlease.Event)     { c.n++ }
func (c *counting) OnLost(context.Context, kvlease.Event)        { c.n++ }
func (c *counting) OnWrite(context.Context, kvledger.WriteEvent) { c.n++ }
func (c *counting) OnStart(context.Context, worker.Event)        { c.n++ }
func (c *counting) OnFinish(context.Context, worker.Event)       { c.n++ }

type countingLock struct{ n int }

func (c *countingLock) OnAcquire(context.Context, kvlock.Event) { c.n++ }
func (c *countingLock) OnRenew(context.Context, kvlock.Event)   { c.n++ }
func (c *countingLock) OnRelease(context.Context, kvlock.Event) { c.n++ }
func (c *countingLock) OnLost(context.Context, kvlock.Event)    { c.n++ }

func TestObserversHaveOneShape(t *testing.T) {
	c, cl := &counting{}, &countingLock{}
	var (
		_ opstats.Hooks[kvlease.Event] = kvlease.Observer(c)
		_ opstats.Hooks[kvlock.Event]  = kvlock.Observer(cl)
	)
	require.Nil(t, kvlease.Observers(nil))
	require.Nil(t, kvlock.Observers(nil))
	require.Nil(t, kvledger.Observers(nil), "no observer left is none, as in every package")
	require.Nil(t, worker.Observers(nil))
	require.Same(t, c, kvlease.Observers(nil, c))
	require.Same(t, cl, kvlock.Observers(cl, nil))
	require.Same(t, c, kvledger.Observers(c, nil))
	require.Same(t, c, worker.Observers(nil, c))

	ctx := context.Background()
	kvlease.Observers(c, c).OnAcquire(ctx, kvlease.Event{})
	kvlock.Observers(cl, cl).OnLost(ctx, kvlock.Event{})
	kvledger.Observers(c, c).OnWrite(ctx, kvledger.WriteEvent{})
	worker.Observers(c, c).OnFinish(ctx, worker.Event{})
	require.Equal(t, 6, c.n)
	require.Equal(t, 2, cl.n)

	type outcome interface{ Outcome() string }
	for want, e := range map[string]outcome{
		"contended": kvlease.Event{Op: kvlease.OpAcquire},
		"lost":      kvlock.Event{Op: kvlock.OpLost},
		"conflict":  kvledger.WriteEvent{},
		"started":   worker.Event{},
		"retried":   worker.Event{Result: worker.ResultRetried},
	} {
		require.Equal(t, want, e.Outcome())
	}
}
