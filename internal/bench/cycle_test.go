package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvlock"
)

const benchTTL = 10 * time.Second

var benchFamily = kvlease.Define[string]("bench", kvlease.StringCodec{})

// BenchmarkLockCycle: uncontended acquire + release of one reused key,
// against the raw 2-round-trip cycle (create at the remembered marker's
// revision with Nats-TTL, then a conditional delete marker). Target
// x_raw >= 0.9.
func BenchmarkLockCycle(b *testing.B) {
	for _, sm := range syncModes {
		b.Run("kvlease/"+sm.name, func(b *testing.B) {
			n := newServer(b, sm.always)
			ctx := context.Background()
			m := newManager(b, n.JS)
			leases, err := benchFamily.Bind(m)
			require.NoError(b, err)
			cycle := func() {
				g, ok, err := leases.TryAcquire(ctx, "k", benchTTL)
				if err != nil || !ok {
					b.Fatalf("TryAcquire: %v %v", ok, err)
				}
				if err := g.Release(ctx); err != nil {
					b.Fatalf("Release: %v", err)
				}
			}
			g, ok, err := leases.TryAcquire(ctx, "k", benchTTL)
			require.NoError(b, err)
			require.True(b, ok)
			size := valueLen(b, n.JS, m.Bucket(), g.Key())
			require.NoError(b, g.Release(ctx))
			raw := newRawLock(n.JS, m.Bucket(), "rawbench.k", size, benchTTL)
			raw.cycle(b, ctx) // warm up both: first write of each key
			cycle()
			var s split
			for b.Loop() {
				s.pair(func() { raw.cycle(b, ctx) }, cycle)
			}
			s.report(b)
		})
		b.Run("kvlock/"+sm.name, func(b *testing.B) {
			n := newServer(b, sm.always)
			ctx := context.Background()
			l := newLocker(b, n.JS, kvlock.Config{TTL: benchTTL})
			cycle := func() {
				k, ok, err := l.TryAcquire(ctx, "k")
				if err != nil || !ok {
					b.Fatalf("TryAcquire: %v %v", ok, err)
				}
				if err := k.Release(ctx); err != nil {
					b.Fatalf("Release: %v", err)
				}
			}
			k, ok, err := l.TryAcquire(ctx, "k")
			require.NoError(b, err)
			require.True(b, ok)
			lk, err := l.LeaseKey("k")
			require.NoError(b, err)
			size := valueLen(b, n.JS, l.Manager().Bucket(), lk)
			require.NoError(b, k.Release(ctx))
			raw := newRawLock(n.JS, l.Manager().Bucket(), "rawbench.k", size, benchTTL)
			raw.cycle(b, ctx)
			cycle()
			var s split
			for b.Loop() {
				s.pair(func() { raw.cycle(b, ctx) }, cycle)
			}
			s.report(b)
		})
	}
}

// BenchmarkRenew: one CAS+TTL renewal of a held lease (Guard.Renew,
// Lock.Renew) against raw kv.Update of a key of the same size. Target
// x_raw >= 0.9.
func BenchmarkRenew(b *testing.B) {
	b.Run("kvlease", func(b *testing.B) {
		n := newServer(b, false)
		ctx := context.Background()
		m := newManager(b, n.JS)
		leases, err := benchFamily.Bind(m)
		require.NoError(b, err)
		g, ok, err := leases.TryAcquire(ctx, "r", benchTTL)
		require.NoError(b, err)
		require.True(b, ok)
		raw := newRawUpdate(b, n.JS, m.Bucket(), g.Key())
		var s split
		for b.Loop() {
			s.pair(func() { raw.update(b, ctx) }, func() {
				if err := g.Renew(ctx); err != nil {
					b.Fatalf("Renew: %v", err)
				}
			})
		}
		s.report(b)
		require.NoError(b, g.Release(ctx))
	})
	b.Run("kvlock", func(b *testing.B) {
		n := newServer(b, false)
		ctx := context.Background()
		l := newLocker(b, n.JS, kvlock.Config{TTL: benchTTL})
		k, ok, err := l.TryAcquire(ctx, "r")
		require.NoError(b, err)
		require.True(b, ok)
		lk, err := l.LeaseKey("r")
		require.NoError(b, err)
		raw := newRawUpdate(b, n.JS, l.Manager().Bucket(), lk)
		var s split
		for b.Loop() {
			s.pair(func() { raw.update(b, ctx) }, func() {
				if err := k.Renew(ctx); err != nil {
					b.Fatalf("Renew: %v", err)
				}
			})
		}
		s.report(b)
		require.NoError(b, k.Release(ctx))
	})
}
