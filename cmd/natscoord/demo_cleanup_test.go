package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// requireDemoLeftNothing checks that a demo run against a server removed
// its ledger bucket (whose stream held its events) and left no election
// record in the lease bucket.
func requireDemoLeftNothing(t *testing.T, n *natstest.Node, bucket string) {
	t.Helper()
	ctx := natstest.Context(t, 5*time.Second)
	_, err := n.JS.Stream(ctx, "KV_"+bucket)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "the run's ledger bucket is deleted")
	s, err := n.JS.Stream(ctx, "KV_"+kvlease.DefaultBucket)
	require.NoError(t, err)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter("$KV."+kvlease.DefaultBucket+".>"))
	require.NoError(t, err)
	require.Empty(t, info.State.Subjects, "no election record left in the lease bucket")
	var left []string
	for name := range n.JS.StreamNames(ctx).Name() {
		left = append(left, name)
	}
	require.Equal(t, []string{"KV_" + kvlease.DefaultBucket}, left, "no bucket but the (empty) lease bucket is left")
}

// --keep keeps the ledger and its stream, for inspection.
func TestDemoKeep(t *testing.T) {
	demoChildren(t)
	n := natstest.WithServer(t)
	r := runCLI(t, "demo", "--server", n.Server.ClientURL(), "--keep", "--json", "--workers", "2")
	require.Equal(t, 0, r.code, r.stderr)
	c := &cli{t: t, url: n.Server.ClientURL()}
	var s demoSummary
	require.NoError(t, jsonUnmarshal(r.stdout, &s))
	out := c.ok("--json", "events", "tail", "--bucket", s.Bucket, "--durable", "look", "--count", "1")
	require.Contains(t, out, `"source":"`+s.Bucket+`"`)
	require.Contains(t, c.ok("ledger", "--bucket", s.Bucket, "ls"), "integ-test")
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
