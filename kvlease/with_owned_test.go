package kvlease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// Close waits for a running With callback, and Done closes only after it
// returned, also when the callback ignores its ctx.
func TestCloseWaitsForWithCallbacks(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	m, err := kvlease.NewManager(ctx, n.JS, kvlease.Config{})
	require.NoError(t, err)
	l := bind(t, jobs, m)

	started, proceed := make(chan struct{}), make(chan struct{})
	type result struct {
		ran bool
		err error
	}
	res := make(chan result, 1)
	go func() {
		ran, err := l.With(ctx, "owned", 2*time.Second, 0, func(context.Context) error {
			close(started)
			<-proceed // ignores its ctx on purpose
			return nil
		})
		res <- result{ran, err}
	}()
	natstest.WaitClosed(t, started, 10*time.Second, "callback start")

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, m.Close(short), context.DeadlineExceeded, "Close must wait for the callback")
	select {
	case <-m.Done():
		t.Fatal("Done closed while a With callback was still running")
	default:
	}
	close(proceed)
	natstest.WaitClosed(t, m.Done(), 10*time.Second, "Done after the callback returned")
	require.NoError(t, m.Close(ctx))
	r := <-res
	require.True(t, r.ran)
	require.NotErrorIs(t, r.err, kvlease.ErrPanicked)

	// A closed manager runs no callback.
	ran, err := l.With(ctx, "late", 2*time.Second, 0, func(context.Context) error { return nil })
	require.False(t, ran)
	require.ErrorIs(t, err, kvlease.ErrClosed)
}

// A panicking callback releases its lease and comes back as an error.
func TestWithPanicReleasesLease(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	ran, err := l1.With(ctx, "boom", 5*time.Second, 0, func(context.Context) error {
		panic("handler bug")
	})
	require.True(t, ran)
	require.ErrorIs(t, err, kvlease.ErrPanicked)
	require.Contains(t, err.Error(), "handler bug")
	require.EqualValues(t, 0, m1.Stats().Active, "no guard left behind")
	g, ok, err := l2.TryAcquire(ctx, "boom", time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the panicked callback's lease was released")
	require.NoError(t, g.Release(ctx))
	require.False(t, errors.Is(err, kvlease.ErrLost))
}
