package kvlock_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

// A Locker writes through its manager's one handle of the bucket, the
// removal of an election's record included: resigning subscribes to
// nothing new (a second handle of the same bucket made a reply
// subscription of its own at its first write).
func TestLockerWritesThroughOneBucketHandle(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	nc := natstest.Connect(t, n.Server)
	l := newLocker(t, natstest.JetStream(t, nc), kvlock.Config{TTL: 2 * time.Second})
	e := newElection(t, l, "one")
	require.NoError(t, e.Campaign(ctx, "v"))
	kv, err := n.JS.KeyValue(ctx, "natscoord_leases")
	require.NoError(t, err)
	_, err = kv.Get(ctx, "lock.ev.one")
	require.NoError(t, err, "the election's record is stored while it leads")
	before := nc.NumSubscriptions()
	require.NoError(t, e.Resign(ctx))
	require.Equal(t, before, nc.NumSubscriptions(), "the record's removal used a handle of its own")
	_, err = kv.Get(ctx, "lock.ev.one")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "the record was removed")
}
