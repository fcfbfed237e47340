package kvlock_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
	"github.com/natscoord/natscoord/opstats"
)

// breakerLog records breaker changes.
type breakerLog struct {
	kvlock.SlogObserver
	mu  sync.Mutex
	evs []kvlock.BreakerEvent
}

func (b *breakerLog) OnBreaker(_ context.Context, e kvlock.BreakerEvent) {
	b.mu.Lock()
	b.evs = append(b.evs, e)
	b.mu.Unlock()
}

func (b *breakerLog) states() []kvlock.BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s []kvlock.BreakerState
	for _, e := range b.evs {
		s = append(s, e.To)
	}
	return s
}

func TestBreakerOpensFailsFastAndRecovers(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	log := &breakerLog{SlogObserver: kvlock.SlogObserver{Logger: slog.New(slog.DiscardHandler)}}
	rec := opstats.New()
	const coolDown = 300 * time.Millisecond
	l := newLocker(t, n.NewJS(t), kvlock.Config{
		TTL: 2 * time.Second, OpTimeout: 200 * time.Millisecond,
		Retry:    kvlock.RetryPolicy{Attempts: 1},
		Breaker:  kvlock.BreakerPolicy{Failures: 2, CoolDown: coolDown},
		Observer: kvlock.Observers(log, nil, kvlock.RecorderObserver(rec)),
	})
	held, ok, err := l.TryAcquire(ctx, "held")
	require.NoError(t, err)
	require.True(t, ok)

	// The bucket goes away: every publish finds no stream (no responders).
	require.NoError(t, n.JS.DeleteKeyValue(ctx, "natscoord_leases"))
	for range 2 {
		_, _, err := l.TryAcquire(ctx, "k")
		require.Error(t, err)
		require.NotErrorIs(t, err, kvlock.ErrCircuitOpen)
	}
	require.Equal(t, kvlock.BreakerOpen, l.BreakerState())
	start := time.Now()
	_, _, err = l.TryAcquire(ctx, "k")
	require.ErrorIs(t, err, kvlock.ErrCircuitOpen)
	require.Less(t, time.Since(start), 100*time.Millisecond, "fails fast, without a request")
	// Renewals of a held lock are not refused: they still reach the server.
	require.NotErrorIs(t, held.Renew(ctx), kvlock.ErrCircuitOpen)

	// The bucket comes back; after the cool-down a probe closes the breaker.
	newLocker(t, n.JS, kvlock.Config{})
	var k *kvlock.Lock
	natstest.Eventually(t, 10*time.Second, func() bool {
		var ok bool
		k, ok, _ = l.TryAcquire(ctx, "k")
		return ok
	}, "an acquisition after the cool-down")
	require.Equal(t, kvlock.BreakerClosed, l.BreakerState())
	require.NoError(t, k.Release(ctx))
	st := log.states()
	require.GreaterOrEqual(t, len(st), 3)
	require.Equal(t, kvlock.BreakerOpen, st[0])
	require.Equal(t, kvlock.BreakerHalfOpen, st[1])
	require.Equal(t, kvlock.BreakerClosed, st[len(st)-1])

	name := l.Config().Name
	require.EqualValues(t, 1, rec.Count(opstats.Labels{Component: "kvlock", Name: name, Op: "breaker", Outcome: "open"}))
	require.GreaterOrEqual(t, rec.Count(opstats.Labels{Component: "kvlock", Name: name, Op: "acquire", Outcome: "circuit_open"}), uint64(1))
	require.GreaterOrEqual(t, rec.Count(opstats.Labels{Component: "kvlock", Name: name, Op: "acquire", Outcome: "ok"}), uint64(2))
}

func TestBreakerConfig(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 10*time.Second)
	c := newLocker(t, n.JS, kvlock.Config{}).Config()
	require.Equal(t, kvlock.DefaultBreakerFailures, c.Breaker.Failures)
	require.Equal(t, kvlock.DefaultBreakerCoolDown, c.Breaker.CoolDown)
	for _, p := range []kvlock.BreakerPolicy{{Failures: -1}, {CoolDown: -time.Second}} {
		_, err := kvlock.New(ctx, n.JS, kvlock.Config{Breaker: p})
		require.ErrorIs(t, err, kvlock.ErrInvalidConfig, "%+v", p)
	}
	require.Nil(t, kvlock.Observers(nil, nil))
}
