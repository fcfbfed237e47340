package kvlease_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

type ctxKey struct{}

// A detached acquisition's lease outlives the acquiring context and
// carries its values; an attached one ends with it.
func TestAcquireKeyDetachedOutlivesContext(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{})
	ctx := natstest.Context(t, 20*time.Second)

	actx, cancel := context.WithCancel(context.WithValue(ctx, ctxKey{}, "v"))
	g, ok, err := m.TryAcquireKeyDetached(actx, "raw.detached", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	att, ok, err := m.TryAcquireKey(actx, "raw.attached", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	cancel()
	natstest.WaitClosed(t, att.Done(), 5*time.Second, "attached lease released with its context")
	require.ErrorIs(t, context.Cause(att.Context()), context.Canceled)
	require.NoError(t, g.Err(), "detached lease still held")
	require.NoError(t, g.Context().Err())
	require.Equal(t, "v", g.Context().Value(ctxKey{}), "values carried")
	h, held, err := m.HolderOfKey(ctx, "raw.detached")
	require.NoError(t, err)
	require.True(t, held)
	require.Equal(t, g.Revision(), h.Revision)
	require.NoError(t, g.Release(ctx))

	// A context that has ended gets no lease.
	_, ok, err = m.TryAcquireKeyDetached(actx, "raw.late", 5*time.Second)
	require.False(t, ok)
	require.ErrorIs(t, err, context.Canceled)
}

// The renewal hook sees every automatic renewal, and the loss.
func TestOnAutoRenewSeesRenewals(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{})
	ctx := natstest.Context(t, 20*time.Second)
	g, ok, err := m.TryAcquireKeyDetached(ctx, "raw.hooked", 2*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	var okRenewals, lost atomic.Int32
	g.OnAutoRenew(func(took time.Duration, err error) {
		switch {
		case err == nil:
			assert.Positive(t, took)
			okRenewals.Add(1)
		case errorsIsLost(err):
			lost.Add(1)
		}
	})
	require.NoError(t, g.StartRenewing(200*time.Millisecond))
	natstest.Eventually(t, 5*time.Second, func() bool { return okRenewals.Load() >= 3 }, "renewals reported")
	forced, err := m.ForceReleaseKey(ctx, "raw.hooked")
	require.NoError(t, err)
	require.True(t, forced)
	natstest.WaitClosed(t, g.Context().Done(), 5*time.Second, "loss")
	natstest.Eventually(t, 5*time.Second, func() bool { return lost.Load() == 1 }, "loss reported")
}

// DecodeHolder reads what a manager wrote, and refuses garbage.
func TestDecodeHolder(t *testing.T) {
	owner := strings.Repeat("ab", 32) // a hex SHA-256, as managers store it
	h, err := kvlease.DecodeHolder([]byte(`{"holder":"a","host":"h","pid":1,"acquired":"2026-01-01T00:00:00Z","ttl_ms":1000,"owner":"` + owner + `"}`))
	require.NoError(t, err)
	require.Equal(t, owner, h.OwnerHash)
	require.Equal(t, "a", h.ID)
	require.Equal(t, time.Second, h.TTL())
	for _, bad := range []string{"not json", `{"holder":"a","ttl_ms":1000,"owner":"x"}`, `{"holder":"a","owner":"` + owner + `"}`} {
		_, err = kvlease.DecodeHolder([]byte(bad))
		require.ErrorIs(t, err, kvlease.ErrCorruptValue, bad)
	}
}

func errorsIsLost(err error) bool { return errors.Is(err, kvlease.ErrLost) }
