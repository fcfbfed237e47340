package bench

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvlock"
)

const benchTTL = 10 * time.Second

var benchFamily = kvlease.Define[string]("bench", kvlease.StringCodec{})

// BenchmarkLockCycle: uncontended acquire + release of one reused key,
// against the raw 2-round-trip cycle (create at the remembered marker's
// revision with Nats-TTL, then a conditional delete marker), interleaved
// op by op. Two baselines, each its own sub-benchmark:
//   - kvlease/, kvlock/: the raw cycle on a key of the lease bucket
//     itself, as the first benchmarks measured it. Target x_raw >= 0.9.
//   - kvlease-onepub/, kvlock-onepub/: the raw one-publish cycle on a
//     bucket of its own, configured like the lease bucket and watched by
//     nobody, so the primitive's stream carries only its own messages
//     (issue 24). Target x_raw >= 0.95 for kvlock.
func BenchmarkLockCycle(b *testing.B) {
	for _, sm := range syncModes {
		for _, onepub := range []bool{false, true} {
			suffix := "/"
			if onepub {
				suffix = "-onepub/"
			}
			b.Run("kvlease"+suffix+sm.name, func(b *testing.B) {
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
				runCycle(b, n, m.Bucket(), size, onepub, cycle)
			})
			b.Run("kvlock"+suffix+sm.name, func(b *testing.B) {
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
				runCycle(b, n, l.Manager().Bucket(), size, onepub, cycle)
			})
		}
	}
}

// runCycle interleaves the primitive's cycle with the raw cycle, on a key
// of the lease bucket or (onepub) on a bucket of its own, and reports.
func runCycle(b *testing.B, n *natstest.Node, bucket string, size int, onepub bool, cycle func()) {
	ctx := context.Background()
	var raw *rawLock
	if onepub {
		raw = newOnePublish(b, n, size)
	} else {
		raw = newRawLock(n.JS, bucket, "rawbench.k", size, benchTTL)
	}
	raw.cycle(b, ctx) // warm up both: first write of each key
	cycle()
	var s split
	for b.Loop() {
		s.pair(func() { raw.cycle(b, ctx) }, cycle)
	}
	s.report(b)
	s.reportMedians(b, "")
}

// newOnePublish is the raw one-publish cycle on a bucket of its own,
// created like the lease bucket (History 1, per-key TTLs with a
// one-minute marker limit) on the same connection as the primitive, so
// the only difference left is the primitive's own work.
func newOnePublish(b *testing.B, n *natstest.Node, size int) *rawLock {
	b.Helper()
	_, err := n.JS.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{
		Bucket: "rawonepub", History: 1, LimitMarkerTTL: time.Minute,
	})
	require.NoError(b, err)
	return newRawLock(n.JS, "rawonepub", "k", size, benchTTL)
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
