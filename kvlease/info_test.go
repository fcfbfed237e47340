package kvlease_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// A lease acquired with info carries it in its value, through renewals,
// to every reader; an info above MaxInfoBytes is refused before anything
// is written.
func TestTryAcquireKeyInfoIsReadBack(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{Holder: "w1"})
	other := newManager(t, n.JS, kvlease.Config{})
	ctx := natstest.Context(t, 20*time.Second)

	g, ok, err := m.TryAcquireKeyInfo(ctx, "raw.info", 2*time.Second, `{"kinds":["mail"]}`)
	require.NoError(t, err)
	require.True(t, ok)
	h, held, err := other.HolderOfKey(ctx, "raw.info")
	require.NoError(t, err)
	require.True(t, held)
	require.Equal(t, "w1", h.ID)
	require.Equal(t, `{"kinds":["mail"]}`, h.Info)
	first := h.Revision
	require.NoError(t, g.StartRenewing(500*time.Millisecond))
	natstest.Eventually(t, 10*time.Second, func() bool {
		h, _, err = other.HolderOfKey(ctx, "raw.info")
		return err == nil && h.Revision > first
	}, "a renewal")
	require.Equal(t, `{"kinds":["mail"]}`, h.Info, "a renewal keeps it")
	require.NoError(t, g.Release(ctx))

	_, _, err = m.TryAcquireKeyInfo(ctx, "raw.big", time.Second, strings.Repeat("k", kvlease.MaxInfoBytes+1))
	require.ErrorIs(t, err, kvlease.ErrTooLarge)
	_, held, err = other.HolderOfKey(ctx, "raw.big")
	require.NoError(t, err)
	require.False(t, held)
}
