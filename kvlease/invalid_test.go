package kvlease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

func TestInvalidConfig(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	for name, cfg := range map[string]kvlease.Config{
		"bucket":    {Bucket: "a.b"},
		"replicas":  {Replicas: 7},
		"maxactive": {MaxActive: -1},
		"keybytes":  {MaxKeyBytes: 8},
		"timeout":   {OpTimeout: time.Millisecond},
		"maxwait":   {MaxWait: -time.Second},
		"holder":    {Holder: strings.Repeat("h", 300)},
	} {
		_, err := kvlease.NewManager(ctx, n.JS, cfg)
		require.ErrorIs(t, err, kvlease.ErrInvalidConfig, name)
	}
	_, err := kvlease.NewManager(ctx, nil, kvlease.Config{})
	require.ErrorIs(t, err, kvlease.ErrInvalidConfig)

	// A bucket without per-key TTLs is refused.
	_, err = n.JS.CreateKeyValue(ctx, jetstreamKV("nottl"))
	require.NoError(t, err)
	_, err = kvlease.NewManager(ctx, n.JS, kvlease.Config{Bucket: "nottl"})
	require.Error(t, err)
}

func TestInvalidKeysTTLsAndNames(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{MaxKeyBytes: 32, MaxActive: 2, MaxWait: time.Second})
	l := bind(t, jobs, m)
	ctx := natstest.Context(t, 20*time.Second)

	_, _, err := l.TryAcquire(ctx, "", time.Second)
	require.ErrorIs(t, err, kvlease.ErrInvalidKey)
	_, _, err = l.TryAcquire(ctx, strings.Repeat("k", 40), time.Second)
	require.ErrorIs(t, err, kvlease.ErrInvalidKey)
	for _, ttl := range []time.Duration{0, -time.Second, 999 * time.Millisecond, 25 * time.Hour} {
		_, _, err = l.TryAcquire(ctx, "k", ttl)
		require.ErrorIs(t, err, kvlease.ErrInvalidTTL, ttl)
	}
	for _, wait := range []time.Duration{-time.Second, 2 * time.Second} {
		_, _, err = l.Acquire(ctx, "k", time.Second, wait)
		require.ErrorIs(t, err, kvlease.ErrInvalidWait, wait)
	}
	for _, k := range []string{"", "a..b", ".a", "a b", strings.Repeat("k", 40)} {
		_, _, err = m.TryAcquireKey(ctx, k, time.Second)
		require.ErrorIs(t, err, kvlease.ErrInvalidKey, k)
	}
	for _, name := range []kvlease.Name{"", "a.b", "a b", "*", kvlease.Name(strings.Repeat("n", 65))} {
		_, err = kvlease.Define[string](name, kvlease.StringCodec{}).Bind(m)
		require.ErrorIs(t, err, kvlease.ErrInvalidName, name)
	}
	_, err = kvlease.Define[string]("nilcodec", nil).Bind(m)
	require.ErrorIs(t, err, kvlease.ErrInvalidConfig)
	_, err = kvlease.Declaration[string]{}.Bind(m)
	require.ErrorIs(t, err, kvlease.ErrInvalidName)
	_, _, err = kvlease.Leases[string]{}.TryAcquire(ctx, "k", time.Second)
	require.ErrorIs(t, err, kvlease.ErrInvalidConfig)

	// The same declaration binds twice; a distinct one of the same name not.
	_, err = jobs.Bind(m)
	require.NoError(t, err)
	_, err = kvlease.Define[string]("jobs", kvlease.StringCodec{}).Bind(m)
	require.ErrorIs(t, err, kvlease.ErrDuplicateName)

	// Fractions of a second are accepted: the server TTL is rounded up.
	g, ok, err := l.TryAcquire(ctx, "frac", 1500*time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	require.Error(t, g.StartRenewing(-time.Second))
	require.ErrorIs(t, g.StartRenewing(1500*time.Millisecond), kvlease.ErrNotRenewable)

	// MaxActive.
	g2, ok, err := l.TryAcquire(ctx, "second", time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	_, _, err = l.TryAcquire(ctx, "third", time.Second)
	require.ErrorIs(t, err, kvlease.ErrTooManyActive)
	require.NoError(t, g.Release(ctx))
	require.NoError(t, g2.Release(ctx))

	// Codec failures are invalid keys.
	bad := kvlease.Define[int]("bad", kvlease.CodecFunc(
		func(int) (string, error) { return "", errors.New("no") },
		func(string) (int, error) { return 0, errors.New("no") }))
	lb := bind(t, bad, m)
	_, _, err = lb.TryAcquire(ctx, 1, time.Second)
	require.ErrorIs(t, err, kvlease.ErrInvalidKey)

	// A nil guard releases nothing; a canceled wait is the caller's error.
	require.NoError(t, (*kvlease.Guard)(nil).Release(ctx))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = l.TryAcquire(cctx, "k", time.Second)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, kvlease.ErrLost)
}

// MaxActive counts acquisitions in flight: concurrent acquisitions of
// distinct keys never leave more guards than the limit, and refused or
// failed attempts give their room back.
func TestMaxActiveUnderConcurrency(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{MaxActive: 3})
	l := bind(t, jobs, m)
	ctx := natstest.Context(t, 20*time.Second)

	for round := range 3 {
		const tries = 12
		var (
			mu     sync.Mutex
			guards []*kvlease.Guard
			wg     sync.WaitGroup
		)
		for i := range tries {
			wg.Go(func() {
				g, ok, err := l.TryAcquire(ctx, fmt.Sprintf("r%d-%d", round, i), 5*time.Second)
				if err != nil {
					assert.ErrorIs(t, err, kvlease.ErrTooManyActive)
					return
				}
				assert.True(t, ok)
				mu.Lock()
				guards = append(guards, g)
				mu.Unlock()
			})
		}
		wg.Wait()
		require.NotEmpty(t, guards)
		require.LessOrEqual(t, len(guards), 3, "round %d", round)
		require.Equal(t, int64(len(guards)), m.Stats().Active)
		for _, g := range guards {
			require.NoError(t, g.Release(ctx))
		}
	}
	// Every reservation came back: the full limit is available again.
	var held []*kvlease.Guard
	for i := range 3 {
		g, ok, err := l.TryAcquire(ctx, fmt.Sprintf("after-%d", i), 5*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		held = append(held, g)
	}
	_, _, err := l.TryAcquire(ctx, "one-too-many", 5*time.Second)
	require.ErrorIs(t, err, kvlease.ErrTooManyActive)
	for _, g := range held {
		require.NoError(t, g.Release(ctx))
	}
}
