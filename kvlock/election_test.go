package kvlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

func newElection(t *testing.T, l *kvlock.Locker, name string) *kvlock.Election {
	t.Helper()
	e, err := kvlock.NewElection(l, name)
	require.NoError(t, err)
	return e
}

func recvEvent(t *testing.T, ch <-chan kvlock.LeaderEvent) kvlock.LeaderEvent {
	t.Helper()
	return natstest.Recv(t, ch, 5*time.Second, "leader event")
}

func TestElectionHandoverWhenLeaderStops(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	const ttl = time.Second
	cfg := kvlock.Config{TTL: ttl, RenewInterval: 300 * time.Millisecond}
	leaderNC := natstest.Connect(t, n.Server)
	l1 := newLocker(t, natstest.JetStream(t, leaderNC), cfg)
	l2 := newLocker(t, n.NewJS(t), cfg)
	watcher := newLocker(t, n.JS, cfg)
	e1, e2, ew := newElection(t, l1, "svc/a b"), newElection(t, l2, "svc/a b"), newElection(t, watcher, "svc/a b")

	_, err := ew.Leader(ctx)
	require.ErrorIs(t, err, kvlock.ErrNoLeader)
	events := ew.Observe(ctx)
	require.Equal(t, kvlock.LeaderEvent{Vacant: true}, recvEvent(t, events))

	require.NoError(t, e1.Campaign(ctx, "one"))
	require.ErrorIs(t, e1.Campaign(ctx, "again"), kvlock.ErrCampaigning)
	ev := recvEvent(t, events)
	require.False(t, ev.Vacant)
	require.Equal(t, "one", ev.Info.Value)
	term1 := ev.Info.Term
	require.Equal(t, e1.Term(), term1)
	info, err := ew.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, ev.Info, info)
	tok, ok := kvlock.TokenFromContext(e1.Context())
	require.True(t, ok)
	require.Equal(t, term1, tok)

	require.NoError(t, e1.Proclaim(ctx, "one'"))
	require.Equal(t, "one'", recvEvent(t, events).Info.Value)
	require.ErrorIs(t, e2.Proclaim(ctx, "x"), kvlock.ErrNotLeader)

	won := make(chan time.Time, 1)
	go func() {
		if assertNoErr(t, e2.Campaign(ctx, "two")) {
			won <- time.Now()
		}
	}()
	// The leader stops without resigning: its process loses the server.
	stopped := time.Now()
	leaderNC.Close()
	natstest.WaitClosed(t, e1.Done(), ttl, "the old leader stops leading within its window")
	require.ErrorIs(t, context.Cause(e1.Context()), kvlock.ErrLost)
	at := natstest.Recv(t, won, 5*time.Second, "new leader")
	t.Logf("handover took %v (TTL %v)", at.Sub(stopped), ttl)
	require.LessOrEqual(t, at.Sub(stopped), ttl+time.Second)

	require.True(t, recvEvent(t, events).Vacant, "Observe reports the vacancy")
	ev = recvEvent(t, events)
	require.Equal(t, "two", ev.Info.Value)
	require.Greater(t, ev.Info.Term, term1, "terms grow")
	require.Equal(t, e2.Term(), ev.Info.Term)
	info, err = ew.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "two", info.Value)

	require.NoError(t, e2.Resign(ctx))
	require.True(t, recvEvent(t, events).Vacant, "resignation is a vacancy")
	natstest.WaitClosed(t, e2.Done(), time.Second, "resigned")
	require.ErrorIs(t, e2.Resign(ctx), kvlock.ErrNotLeader)
	require.ErrorIs(t, e2.Proclaim(ctx, "late"), kvlock.ErrNotLeader)
	_, err = ew.Leader(ctx)
	require.ErrorIs(t, err, kvlock.ErrNoLeader)
}

func TestElectionObserveEndsWithContextAndClose(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	l := newLocker(t, n.JS, kvlock.Config{TTL: 2 * time.Second})
	e := newElection(t, l, "x")
	octx, cancel := context.WithCancel(ctx)
	ch := e.Observe(octx)
	require.True(t, recvEvent(t, ch).Vacant)
	cancel()
	natstest.Eventually(t, 5*time.Second, func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	}, "channel closed with ctx")

	ch = e.Observe(ctx)
	require.True(t, recvEvent(t, ch).Vacant)
	require.NoError(t, l.Close(ctx))
	_, ok := <-ch
	require.False(t, ok, "Close ends observers")
	_, ok = <-e.Observe(ctx)
	require.False(t, ok, "Observe after Close returns a closed channel")
	require.ErrorIs(t, e.Campaign(ctx, "v"), kvlock.ErrClosed)
}

func TestFairElectionServesCandidatesInOrder(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	cfg := kvlock.Config{TTL: 2 * time.Second, Fair: true}
	var es []*kvlock.Election
	for range 3 {
		es = append(es, newElection(t, newLocker(t, n.NewJS(t), cfg), "ordered"))
	}
	require.NoError(t, es[0].Campaign(ctx, "0"))
	won := make(chan string, 2)
	for i := 1; i < 3; i++ {
		go func() {
			if assertNoErr(t, es[i].Campaign(ctx, string(rune('0'+i)))) {
				won <- string(rune('0' + i))
			}
		}()
		natstest.Eventually(t, 5*time.Second, func() bool { return queueLen(t, n.JS, "lock.eq.ordered") == i }, "candidate queued")
	}
	require.NoError(t, es[0].Resign(ctx))
	require.Equal(t, "1", natstest.Recv(t, won, 5*time.Second, "second leader"))
	require.NoError(t, es[1].Resign(ctx))
	require.Equal(t, "2", natstest.Recv(t, won, 5*time.Second, "third leader"))
	require.NoError(t, es[2].Resign(ctx))
}

func TestElectionResignRemovesValueRecord(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	l := newLocker(t, n.JS, kvlock.Config{TTL: 2 * time.Second})
	kv, err := n.JS.KeyValue(ctx, "natscoord_leases")
	require.NoError(t, err)
	a, b := newElection(t, l, "rec"), newElection(t, newLocker(t, n.NewJS(t), kvlock.Config{TTL: 2 * time.Second}), "rec")

	require.NoError(t, a.Campaign(ctx, "a"))
	require.NoError(t, a.Proclaim(ctx, "a'"))
	ent, err := kv.Get(ctx, "lock.ev.rec")
	require.NoError(t, err)
	require.Contains(t, string(ent.Value()), `"a'"`)
	require.NoError(t, a.Resign(ctx))
	_, err = kv.Get(ctx, "lock.ev.rec")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "no record of an ended term stays")

	// A successor's record is never removed by a late resignation.
	require.NoError(t, b.Campaign(ctx, "b"))
	require.ErrorIs(t, a.Resign(ctx), kvlock.ErrNotLeader)
	info, err := b.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "b", info.Value)
	require.NoError(t, b.Resign(ctx))
	_, err = kv.Get(ctx, "lock.ev.rec")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound)

	// A leader whose Locker closes (or whose lease is lost) takes its
	// record along too.
	cl := newLocker(t, n.NewJS(t), kvlock.Config{TTL: 2 * time.Second})
	c := newElection(t, cl, "rec")
	require.NoError(t, c.Campaign(ctx, "c"))
	_, err = kv.Get(ctx, "lock.ev.rec")
	require.NoError(t, err)
	require.NoError(t, cl.Close(ctx))
	_, err = kv.Get(ctx, "lock.ev.rec")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "Close removes the record")
}
