package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// The CLI reads lease values through kvlease's decoder: a value with a
// malformed owner hash is not shown as someone's lease.
func TestLeaseLsReadsHoldersThroughKvlease(t *testing.T) {
	c, n := newCLI(t)
	ctx := natstest.Context(t, 10*time.Second)
	m, err := kvlease.NewManager(ctx, n.NewJS(t), kvlease.Config{Holder: "holder-1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	kv, err := n.JS.KeyValue(ctx, kvlease.DefaultBucket)
	require.NoError(t, err)
	_, err = kv.Put(ctx, "jobs.forged", []byte(`{"holder":"mallory","ttl_ms":1000,"owner":"not-a-hash"}`))
	require.NoError(t, err)
	out := c.ok("lease", "ls")
	require.Regexp(t, `(?m)^jobs\.forged\s+!corrupt\s`, out)
	require.NotContains(t, out, "mallory")
}
