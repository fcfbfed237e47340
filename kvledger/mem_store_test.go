package kvledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/storetest"
)

func TestMemStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) kvledger.Store { return kvledger.NewMemStore() })
}

func TestMemStoreConformanceWithEviction(t *testing.T) {
	// A cap far above what the suite stores changes nothing.
	storetest.Run(t, func(t *testing.T) kvledger.Store {
		s, err := kvledger.NewMemStoreWithOptions(kvledger.MemStoreOptions{MaxEntries: 1000})
		require.NoError(t, err)
		return s
	})
}

func TestMemStoreInvalidMaxEntries(t *testing.T) {
	_, err := kvledger.NewMemStoreWithOptions(kvledger.MemStoreOptions{MaxEntries: -1})
	require.ErrorIs(t, err, kvledger.ErrInvalidMaxEntries)
}

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func TestMemStoreEviction(t *testing.T) {
	ctx := context.Background()
	now := t0
	s, err := kvledger.NewMemStoreWithOptions(kvledger.MemStoreOptions{MaxEntries: 2, Clock: clock.Func(func() time.Time { return now })})
	require.NoError(t, err)
	l, err := kvledger.New(s)
	require.NoError(t, err)
	admitOK := func(k kvledger.IdempotencyKey) {
		t.Helper()
		ok, err := l.Admit(ctx, "a", k, 1, nil, now)
		require.NoError(t, err)
		require.True(t, ok)
	}
	found := func(k kvledger.IdempotencyKey) bool {
		t.Helper()
		_, ok, err := l.State(ctx, k)
		require.NoError(t, err)
		return ok
	}

	admitOK("a")
	fa, err := l.Claim(ctx, "w", "a", "w", time.Minute, now) // live lease
	require.NoError(t, err)
	admitOK("b")
	admitOK("c") // over the cap: b is the oldest evictable, a is live
	require.True(t, found("a"), "a live claim is never evicted")
	require.False(t, found("b"))
	require.True(t, found("c"))
	require.Equal(t, 2, s.Len())

	// Only live claims left besides the new record: the count may exceed
	// the cap, the new record survives its own insert.
	_, err = l.Claim(ctx, "w", "c", "w", time.Minute, now)
	require.NoError(t, err)
	admitOK("d")
	require.True(t, found("a") && found("c") && found("d"))
	require.Equal(t, 3, s.Len())

	// Once a's lease ran out it is evictable (oldest first).
	now = now.Add(2 * time.Minute)
	admitOK("e")
	require.False(t, found("a"))
	require.False(t, found("c"), "c's lease ran out too; still over the cap")
	require.True(t, found("d") && found("e"))
	require.Equal(t, 2, s.Len())

	// Evicted keys: ErrNoKey for the old owner, and re-admission works
	// with a fence above every earlier token of that key.
	require.ErrorIs(t, l.Complete(ctx, "w", "a", "w", fa, kvledger.StatusCompleted, now), kvledger.ErrNoKey)
	admitOK("a")
	fa2, err := l.Claim(ctx, "w", "a", "w2", time.Minute, now)
	require.NoError(t, err)
	require.Greater(t, fa2, fa, "fences never go back after eviction")

	// An evicted failed need no longer blocks late dependents.
	s2, err := kvledger.NewMemStoreWithOptions(kvledger.MemStoreOptions{MaxEntries: 2})
	require.NoError(t, err)
	l, err = kvledger.New(s2)
	require.NoError(t, err)
	admitOK("x")
	fx, err := l.Claim(ctx, "w", "x", "w", time.Second, now)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "w", "x", "w", fx, kvledger.StatusFailed, now))
	admitOK("z1")
	admitOK("z2")
	require.False(t, found("x"))
	ok, err := l.Admit(ctx, "a", "late", 1, nil, now, "x")
	require.NoError(t, err)
	require.True(t, ok)
	_, blocked, err := l.Blocked(ctx, "late")
	require.NoError(t, err)
	require.False(t, blocked)
}

func TestLedgerNilStoreAndBus(t *testing.T) {
	l, err := kvledger.New(nil)
	require.NoError(t, err)
	ok, err := l.Admit(context.Background(), "a", "k", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)
	require.IsType(t, &kvledger.MemStore{}, l.Store())
	_, err = kvledger.New(nil, kvledger.WithSource(""))
	require.ErrorIs(t, err, kvledger.ErrInvalidConfig)
}

// MemStore.Follow delivers every write in order from a revision on, and a
// follower behind the writes the store keeps in order gets an events.Gap
// naming what it missed, never a silent skip.
func TestMemStoreFollow(t *testing.T) {
	ctx := t.Context()
	s := kvledger.NewMemStore()
	l, err := kvledger.New(s)
	require.NoError(t, err)
	_, err = l.Admit(ctx, "t", "a", 1, nil, t0)
	require.NoError(t, err)
	_, err = l.Claim(ctx, "w", "a", "w", time.Minute, t0)
	require.NoError(t, err)
	var got []events.Event
	require.NoError(t, s.Follow(ctx, 0, func(e events.Event) bool { got = append(got, e); return len(got) < 2 }))
	require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent}, []events.Name{got[0].Name, got[1].Name})
	require.Equal(t, got[0].Revision, got[1].PrevRevision)

	for i := range 1 << 16 {
		_, err := l.Admit(ctx, "t", kvledger.IdempotencyKey(fmt.Sprintf("k%d", i)), 1, nil, t0)
		require.NoError(t, err)
	}
	err = s.Follow(ctx, got[1].Revision, func(events.Event) bool { return false })
	var gap events.Gap
	require.ErrorAs(t, err, &gap)
	require.Equal(t, got[1].Revision, gap.After)
	require.Greater(t, gap.Through, gap.After)
}
