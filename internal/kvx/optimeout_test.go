package kvx_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
)

func TestOpTimeoutBound(t *testing.T) {
	o := kvx.NewOpTimeout(time.Second)

	// A ctx that cannot end shares one context ending within d.
	start := time.Now()
	a, cancelA := o.Bound(context.Background())
	b, cancelB := o.Bound(context.WithoutCancel(context.Background()))
	cancelA()
	cancelB()
	require.Same(t, a, b)
	require.NoError(t, a.Err(), "cancel of a shared bound is a no-op")
	dl, ok := a.Deadline()
	require.True(t, ok)
	require.WithinRange(t, dl, start.Add(time.Second/2), time.Now().Add(time.Second))

	// A ctx whose own deadline comes within d is kept; a later deadline
	// does not lift the bound.
	own, cancelOwn := context.WithTimeout(context.Background(), time.Second/2)
	defer cancelOwn()
	c, cancelC := o.Bound(own)
	cancelC()
	require.Same(t, own, c)
	far, cancelFar := context.WithTimeout(context.Background(), time.Hour)
	defer cancelFar()
	f, cancelF := o.Bound(far)
	defer cancelF()
	dl, ok = f.Deadline()
	require.True(t, ok)
	require.WithinDuration(t, time.Now().Add(time.Second), dl, 100*time.Millisecond, "bounded by d, not the caller's hour")

	// A cancellable ctx without a deadline gets a timeout of its own that
	// follows the ctx.
	parent, cancelParent := context.WithCancel(context.Background())
	d, cancelD := o.Bound(parent)
	defer cancelD()
	_, ok = d.Deadline()
	require.True(t, ok)
	cancelParent()
	<-d.Done()
	require.NoError(t, a.Err())
}

// The shared context is replaced once less than half of it is left, and
// the one it replaces still ends by its own deadline.
func TestOpTimeoutReplacesShared(t *testing.T) {
	o := kvx.NewOpTimeout(400 * time.Millisecond)
	first := o.Shared()
	var next context.Context
	select {
	case <-first.Done():
		t.Fatal("ended before half of it had passed")
	case <-time.After(250 * time.Millisecond):
		next = o.Shared()
	}
	require.NotSame(t, first, next)
	select {
	case <-first.Done():
		require.ErrorIs(t, first.Err(), context.DeadlineExceeded)
	case <-time.After(5 * time.Second):
		t.Fatal("replaced context never ended")
	}
	require.NoError(t, next.Err())
}

// Detached keeps ctx's values, drops its cancellation and is bounded by
// d.
func TestDetached(t *testing.T) {
	type key struct{}
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	start := time.Now()
	ctx, cancel := kvx.Detached(parent, time.Second)
	defer cancel()
	cancelParent()
	require.NoError(t, ctx.Err(), "the caller's cancellation does not reach it")
	require.Equal(t, "v", ctx.Value(key{}))
	dl, ok := ctx.Deadline()
	require.True(t, ok)
	require.False(t, dl.Before(start.Add(time.Second)))
	require.False(t, dl.After(time.Now().Add(time.Second)))
	cancel()
	require.Error(t, ctx.Err())
}
