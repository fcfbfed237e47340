package embedlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
	"github.com/natscoord/natscoord/kvlock/embedlock"
	"github.com/natscoord/natscoord/kvlock/locktest"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

func TestOpenURLEmbedded(t *testing.T) {
	ctx := natstest.Context(t, 20*time.Second)
	s, err := embedlock.OpenURL(ctx, "embedded:"+t.TempDir(), kvlock.Config{TTL: 2 * time.Second})
	require.NoError(t, err)
	l, ok, err := s.TryAcquire(ctx, "a")
	require.NoError(t, err)
	require.True(t, ok)
	require.Positive(t, l.Token())
	require.NoError(t, s.Close(ctx))
	require.NoError(t, s.Close(ctx), "idempotent")
	require.ErrorIs(t, context.Cause(l.Context()), kvlock.ErrReleased)
}

func TestOpenPassesOtherKindsToKvlock(t *testing.T) {
	ctx := natstest.Context(t, 10*time.Second)
	s, err := embedlock.OpenURL(ctx, "memory:", kvlock.Config{})
	require.NoError(t, err)
	require.IsType(t, &kvlock.Memory{}, s)
	require.NoError(t, s.Close(ctx))
	_, err = embedlock.OpenURL(ctx, "redis://x", kvlock.Config{})
	require.ErrorIs(t, err, kvlock.ErrUnknownBackend)
	_, err = embedlock.Open(ctx, kvlock.Backend{Kind: kvlock.KindEmbedded, Lock: kvlock.Config{TTL: -1}})
	require.ErrorIs(t, err, kvlock.ErrInvalidConfig, "the server started for a bad config is stopped again")
}

// The embedded backend passes the same conformance suite.
func TestConformanceEmbedded(t *testing.T) {
	locktest.Run(t, locktest.Harness{
		New: func(t *testing.T, cfg kvlock.Config) kvlock.Service {
			s, err := embedlock.Open(natstest.Context(t, 20*time.Second), kvlock.Backend{Kind: kvlock.KindEmbedded, Lock: cfg})
			require.NoError(t, err)
			return s
		},
	})
}
