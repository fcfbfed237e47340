package main

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// On a fresh server `ledger ls` lists nothing, as lease ls and lock ls do,
// and creates nothing; a --bucket that does not exist is an error for ls,
// and admit refuses it (creating nothing) unless --create is given. The
// default bucket is created by the first admit.
func TestLedgerBucketMissing(t *testing.T) {
	c, n := newCLI(t)
	require.Equal(t, "KEY  STATUS  PHASE  SEQ  OWNER  FENCE  NEEDS  BLOCKED-BY  REV\n", c.ok("ledger", "ls"))
	require.Equal(t, "[]\n", c.ok("--json", "ledger", "ls"))
	require.False(t, bucketExists(t, n, defaultLedgerBucket), "listing created nothing")
	require.Contains(t, c.fail("ledger", "--bucket", "nope", "ls"), `bucket "nope" does not exist`)

	msg := c.fail("ledger", "--bucket", "nope", "admit", "a", "--seq", "1")
	require.Contains(t, msg, `bucket "nope" does not exist`)
	require.Contains(t, msg, "--create")
	require.False(t, bucketExists(t, n, "nope"), "a refused admit created no bucket")

	require.Contains(t, c.ok("ledger", "--bucket", "nope", "admit", "a", "--seq", "1", "--create"), "a admitted")
	require.Contains(t, c.ok("ledger", "--bucket", "nope", "admit", "b", "--seq", "1"), "b admitted", "it exists now")
	require.Contains(t, c.ok("ledger", "admit", "a", "--seq", "1"), "a admitted", "the default bucket is created")
	require.Regexp(t, `(?m)^a\s+pending\s`, c.ok("ledger", "ls"))
}

// A bucket of the layout before events came from its stream (History 1,
// no live feed) is given the new layout by `ledger migrate`, which can
// also delete the old events stream; afterwards the bucket keeps each
// key's writes.
func TestLedgerMigrate(t *testing.T) {
	c, n := newCLI(t)
	ctx := natstest.Context(t, 10*time.Second)
	_, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "oldledger", History: 1})
	require.NoError(t, err)
	_, err = n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "LEDGER", Subjects: []string{"ledger.admitted"}})
	require.NoError(t, err)
	out := c.ok("ledger", "--bucket", "oldledger", "migrate", "--delete-old-stream")
	require.Contains(t, out, "oldledger: keeps 64 writes per key, live on ledger.oldledger.>")
	require.Contains(t, out, "deleted stream LEDGER")
	s, err := n.JS.Stream(ctx, "KV_oldledger")
	require.NoError(t, err)
	require.EqualValues(t, kvledger.EventHistory, s.CachedInfo().Config.MaxMsgsPerSubject)
	_, err = n.JS.Stream(ctx, "LEDGER")
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
	require.Contains(t, c.fail("ledger", "--bucket", "nope", "migrate"), `bucket "nope" does not exist`)
}
