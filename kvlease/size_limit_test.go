package kvlease_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// A guarded write past the server's max_payload is refused before it is
// sent, naming the limit; the lease and the connection are unaffected.
func TestProofPutRefusesOversizedValue(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{})
	l := bind(t, jobs, m)
	ctx := natstest.Context(t, 20*time.Second)
	g, ok, err := l.TryAcquire(ctx, "big", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = g.Proof().Put(ctx, "data.big", []byte(strings.Repeat("x", int(n.NC.MaxPayload())+1)))
	require.ErrorIs(t, err, kvlease.ErrTooLarge)
	require.Contains(t, err.Error(), "max_payload")
	require.NoError(t, g.Err(), "the lease is not lost")
	_, err = g.Proof().Put(ctx, "data.big", []byte("small"))
	require.NoError(t, err, "the connection is still usable")
	require.NoError(t, g.Release(ctx))
}
