package kvlease_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/opstats"
)

type opLog struct {
	mu  sync.Mutex
	ops []kvlease.Op
}

func (o *opLog) add(e kvlease.Event) {
	o.mu.Lock()
	o.ops = append(o.ops, e.Op)
	o.mu.Unlock()
}
func (o *opLog) OnAcquire(_ context.Context, e kvlease.Event) { o.add(e) }
func (o *opLog) OnRenew(_ context.Context, e kvlease.Event)   { o.add(e) }
func (o *opLog) OnRelease(_ context.Context, e kvlease.Event) { o.add(e) }
func (o *opLog) OnLost(_ context.Context, e kvlease.Event)    { o.add(e) }

func TestObserverAndRecorder(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	rec := opstats.New()
	var log opLog
	m := newManager(t, n.JS, kvlease.Config{Observer: kvlease.Observers(&log, nil, kvlease.RecorderObserver(rec))})
	other := newManager(t, n.NewJS(t), kvlease.Config{})
	jobs := bind(t, kvlease.Define("jobs", kvlease.StringCodec{}), m)

	g, ok, err := jobs.TryAcquire(ctx, "a", 2*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = jobs.TryAcquire(ctx, "a", 2*time.Second)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, g.Renew(ctx))
	require.NoError(t, g.Release(ctx))

	g, _, err = jobs.TryAcquire(ctx, "b", 2*time.Second)
	require.NoError(t, err)
	forced, err := other.ForceReleaseKey(ctx, g.Key())
	require.NoError(t, err)
	require.True(t, forced)
	require.ErrorIs(t, g.Renew(ctx), kvlease.ErrLost)

	log.mu.Lock()
	require.Equal(t, []kvlease.Op{kvlease.OpAcquire, kvlease.OpAcquire, kvlease.OpRenew, kvlease.OpRelease,
		kvlease.OpAcquire, kvlease.OpLost, kvlease.OpRenew}, log.ops)
	log.mu.Unlock()
	l := func(op, out string) opstats.Labels {
		return opstats.Labels{Component: "kvlease", Name: m.Bucket(), Op: op, Outcome: out}
	}
	require.EqualValues(t, 2, rec.Count(l("acquire", "ok")))
	require.EqualValues(t, 1, rec.Count(l("acquire", "contended")))
	require.EqualValues(t, 1, rec.Count(l("renew", "ok")))
	require.EqualValues(t, 1, rec.Count(l("release", "ok")))
	require.EqualValues(t, 1, rec.Count(l("lost", "lost")))
	require.EqualValues(t, 1, rec.Count(l("renew", "lost")))
}
