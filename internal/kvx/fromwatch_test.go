package kvx_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/natstest"
)

func TestFromWatch(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 10*time.Second)
	r, err := b.Create(ctx, "fw", []byte("v"), 0)
	require.NoError(t, err)
	// A watch of the stored value, not UpdatesOnly: an updates-only
	// consumer that the server has not set up yet when the put lands
	// starts after it (seen under load).
	w, err := b.KV().Watch(ctx, "fw")
	require.NoError(t, err)
	defer func() { _ = w.Stop() }()
	e := kvx.FromWatch(natstest.Recv(t, w.Updates(), 5*time.Second, "put"))
	require.Equal(t, kvx.Entry{Key: "fw", Value: []byte("v"), Revision: r, Op: kvx.OpPut, Created: e.Created}, e)
	require.Nil(t, natstest.Recv(t, w.Updates(), 5*time.Second, "end of initial values"))
	m, err := b.Delete(ctx, "fw", r)
	require.NoError(t, err)
	e = kvx.FromWatch(natstest.Recv(t, w.Updates(), 5*time.Second, "delete"))
	require.Equal(t, kvx.OpDelete, e.Op)
	require.Equal(t, m, e.Revision)
}
