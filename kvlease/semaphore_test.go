package kvlease_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

var pool = kvlease.DefineSemaphore[int64]("pool", 3, kvlease.Int64Codec{})

func TestSemaphoreThreeSlotsTenContenders(t *testing.T) {
	m1, m2 := pair(t)
	s1, err := pool.Bind(m1)
	require.NoError(t, err)
	s2, err := pool.Bind(m2)
	require.NoError(t, err)
	ctx := natstest.Context(t, 30*time.Second)

	var cur, peak, done atomic.Int32
	var wg sync.WaitGroup
	for i := range 10 {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		wg.Go(func() {
			g, ok, err := s.Acquire(ctx, 42, 5*time.Second, 20*time.Second)
			if !ok || err != nil {
				t.Errorf("contender %d: ok=%v err=%v", i, ok, err)
				return
			}
			slot, err := s.Slot(g)
			require.NoError(t, err)
			require.True(t, slot >= 0 && slot < 3)
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(30 * time.Millisecond) // hold the slot for a moment of work
			cur.Add(-1)
			require.NoError(t, g.Release(ctx))
			done.Add(1)
		})
	}
	wg.Wait()
	require.EqualValues(t, 10, done.Load())
	require.LessOrEqual(t, peak.Load(), int32(3), "never more than 3 holders")
	require.GreaterOrEqual(t, peak.Load(), int32(2), "slots are actually shared")

	// All three slots held: a fourth try fails; each slot has its own fence.
	var gs []*kvlease.Guard
	fences := map[uint64]bool{}
	for range 3 {
		g, ok, err := s1.TryAcquire(ctx, 7, 5*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		fences[g.Fence()] = true
		gs = append(gs, g)
	}
	require.Len(t, fences, 3)
	_, ok, err := s2.TryAcquire(ctx, 7, 5*time.Second)
	require.NoError(t, err)
	require.False(t, ok)
	n, err := s2.ForceRelease(ctx, 7)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, g := range gs {
		require.ErrorIs(t, g.Release(ctx), kvlease.ErrLost)
	}
}

func TestSemaphoreDeclarationErrors(t *testing.T) {
	m1, _ := pair(t)
	for _, slots := range []int{0, -1, kvlease.MaxSemaphoreSlots + 1} {
		_, err := kvlease.DefineSemaphore[string]("s", slots, kvlease.StringCodec{}).Bind(m1)
		require.ErrorIs(t, err, kvlease.ErrInvalidConfig)
	}
	_, err := kvlease.SemaphoreDeclaration[string]{}.Bind(m1)
	require.ErrorIs(t, err, kvlease.ErrInvalidName)
	_, err = kvlease.DefineSemaphore[string]("jobs", 2, kvlease.StringCodec{}).Bind(m1)
	require.NoError(t, err, "first binding of the name")
	_, err = jobs.Bind(m1)
	require.ErrorIs(t, err, kvlease.ErrDuplicateName, "a lease family cannot reuse a semaphore's name")
}
