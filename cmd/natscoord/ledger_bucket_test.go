package main

import (
	"strings"
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
	require.Equal(t, "KEY  KIND  PHASE  ATTEMPTS  OWNER  NEEDS  BLOCKED-BY  ERROR\n", c.ok("ledger", "ls"))
	require.Equal(t, "[]\n", c.ok("--json", "ledger", "ls"))
	require.False(t, bucketExists(t, n, defaultLedgerBucket), "listing created nothing")
	require.Contains(t, c.fail("ledger", "--bucket", "nope", "ls"), `bucket "nope" does not exist`)

	msg := c.fail("ledger", "--bucket", "nope", "admit", "--no-kind", "a", "--seq", "1")
	require.Contains(t, msg, `bucket "nope" does not exist`)
	require.Contains(t, msg, "--create")
	require.False(t, bucketExists(t, n, "nope"), "a refused admit created no bucket")

	require.Contains(t, c.ok("ledger", "--bucket", "nope", "admit", "--no-kind", "a", "--seq", "1", "--create"), "a admitted")
	require.Contains(t, c.ok("ledger", "--bucket", "nope", "admit", "--no-kind", "b", "--seq", "1"), "b admitted", "it exists now")
	require.Contains(t, c.ok("ledger", "admit", "--no-kind", "a", "--seq", "1"), "a admitted", "the default bucket is created")
	require.Regexp(t, `(?m)^a\s+-\s+pending\s`, c.ok("ledger", "ls"))
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
	out := c.ok("ledger", "--bucket", "oldledger", "migrate", "--delete-old-stream", "--yes")
	require.Contains(t, out, "oldledger: keeps 64 writes per key, live on ledger.oldledger.>")
	require.Contains(t, out, "deleted stream LEDGER")
	s, err := n.JS.Stream(ctx, "KV_oldledger")
	require.NoError(t, err)
	require.EqualValues(t, kvledger.EventHistory, s.CachedInfo().Config.MaxMsgsPerSubject)
	_, err = n.JS.Stream(ctx, "LEDGER")
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
	require.Contains(t, c.fail("ledger", "--bucket", "nope", "migrate"), `bucket "nope" does not exist`)
}

// After `ledger migrate`, the LEDGER stream of the layout before (shared
// by every bucket, on ledger.>) no longer records the migrated bucket's
// writes (its live feed, ledger.<bucket>.>) but still the old layout's
// events (ledger.<event>) that writers of buckets not migrated publish.
// --delete-old-stream refuses while a ledger bucket is not migrated,
// naming it, shows what it would delete without --yes, and refuses a
// stream named LEDGER that captures other subjects.
func TestLedgerMigrateOldStream(t *testing.T) {
	c, n := newCLI(t)
	ctx := natstest.Context(t, 20*time.Second)
	for _, b := range []string{"mig", "other"} {
		_, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b, History: 1})
		require.NoError(t, err)
	}
	// other holds a task record of the layout before (no description).
	kv, err := n.JS.KeyValue(ctx, "other")
	require.NoError(t, err)
	_, err = kv.Put(ctx, "task.x", []byte(`{"key":"x","status":"pending","seq":1}`))
	require.NoError(t, err)
	_, err = n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "LEDGER", Subjects: []string{"ledger.>"}})
	require.NoError(t, err)
	_, err = n.JS.Publish(ctx, "ledger.admitted", []byte(`{"name":"ledger.admitted","source":"other","key":"x"}`))
	require.NoError(t, err)
	msgs := func() uint64 {
		t.Helper()
		s, err := n.JS.Stream(ctx, "LEDGER")
		require.NoError(t, err)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs
	}

	out := c.ok("ledger", "--bucket", "mig", "migrate")
	require.Contains(t, out, "stream LEDGER: subjects ledger.> -> ledger.*")
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		c.ok("ledger", "--bucket", "mig", "admit", "--no-kind", k, "--seq", "1")
	}
	require.EqualValues(t, 1, msgs(), "the migrated bucket's 5 writes are not recorded in LEDGER")
	_, err = n.JS.Publish(ctx, "ledger.claimed", []byte(`{"name":"ledger.claimed","source":"other","key":"x"}`))
	require.NoError(t, err, "an old writer's event is still taken")
	require.EqualValues(t, 2, msgs())
	require.NotContains(t, c.ok("ledger", "--bucket", "mig", "migrate"), "stream LEDGER", "narrowed once")

	r := c.run("ledger", "--bucket", "mig", "migrate", "--delete-old-stream", "--yes")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "stream LEDGER not deleted: ledger bucket(s) other are not migrated")
	require.EqualValues(t, 2, msgs(), "kept")

	c.ok("ledger", "--bucket", "other", "migrate")
	r = c.run("ledger", "--bucket", "other", "migrate", "--delete-old-stream")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stdout, "would delete stream LEDGER (subjects ledger.*; 2 messages")
	require.Contains(t, r.stderr, "add --yes to delete it")
	require.EqualValues(t, 2, msgs(), "kept without --yes")
	require.Contains(t, c.fail("ledger", "--bucket", "other", "migrate", "--yes"), "--yes goes with --delete-old-stream")

	out = c.ok("ledger", "--bucket", "other", "migrate", "--delete-old-stream", "--yes")
	require.Contains(t, out, "deleted stream LEDGER (subjects ledger.*; 2 messages")
	_, err = n.JS.Stream(ctx, "LEDGER")
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)

	// A stream named LEDGER that is someone else's is neither narrowed
	// nor deleted.
	_, err = n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "LEDGER", Subjects: []string{"orders.>", "ledger.>"}})
	require.NoError(t, err)
	r = c.run("ledger", "--bucket", "other", "migrate", "--delete-old-stream", "--yes")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "stream LEDGER captures orders.>, ledger.>, so it records every write of bucket other")
	s, err := n.JS.Stream(ctx, "LEDGER")
	require.NoError(t, err)
	require.Equal(t, []string{"orders.>", "ledger.>"}, s.CachedInfo().Config.Subjects)
	_, err = n.JS.UpdateStream(ctx, jetstream.StreamConfig{Name: "LEDGER", Subjects: []string{"orders.>"}})
	require.NoError(t, err)
	require.NotContains(t, c.ok("ledger", "--bucket", "other", "migrate"), "LEDGER", "one that records no live feed is not touched")
	r = c.run("ledger", "--bucket", "other", "migrate", "--delete-old-stream", "--yes")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "stream LEDGER not deleted: it captures orders.>, not only the layout before's")
	_, err = n.JS.Stream(ctx, "LEDGER")
	require.NoError(t, err)
	require.True(t, strings.Contains(c.ok("ledger", "migrate", "--help"), "--yes"))
}
