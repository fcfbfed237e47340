package kvlease_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// DeleteKeyAt removes a data key only at the revision it names: a record
// that moved on is left; a key that is no data key, revision 0 and a
// negative marker TTL are refused.
func TestDeleteKeyAt(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	m := newManager(t, n.JS, kvlease.Config{Bucket: "delat"})
	g, ok, err := m.TryAcquireKey(ctx, "rec.lease", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	defer func() { require.NoError(t, g.Release(ctx)) }()
	old, err := g.Proof().Put(ctx, "rec.value", []byte("a"))
	require.NoError(t, err)
	cur, err := g.Proof().Put(ctx, "rec.value", []byte("b"))
	require.NoError(t, err)

	deleted, err := m.DeleteKeyAt(ctx, "rec.value", old, time.Second)
	require.NoError(t, err)
	require.False(t, deleted, "a record that moved on is left")
	_, _, ok, err = m.ReadKey(ctx, "rec.value")
	require.NoError(t, err)
	require.True(t, ok)

	deleted, err = m.DeleteKeyAt(ctx, "rec.value", cur, time.Second)
	require.NoError(t, err)
	require.True(t, deleted)
	_, _, ok, err = m.ReadKey(ctx, "rec.value")
	require.NoError(t, err)
	require.False(t, ok)

	_, err = m.DeleteKeyAt(ctx, "bad..key", cur, 0)
	require.ErrorIs(t, err, kvlease.ErrInvalidKey)
	_, err = m.DeleteKeyAt(ctx, "rec.other", 0, 0)
	require.ErrorIs(t, err, kvlease.ErrInvalidKey, "revision 0 names no record")
	_, err = m.DeleteKeyAt(ctx, "rec.other", cur, -time.Second)
	require.ErrorIs(t, err, kvlease.ErrInvalidTTL)
}
