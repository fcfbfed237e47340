package kvlease_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

var jobs = kvlease.Define[string]("jobs", kvlease.StringCodec{})

// newManager starts a manager closed by t.Cleanup.
func newManager(t *testing.T, js jetstream.JetStream, cfg kvlease.Config) *kvlease.Manager {
	t.Helper()
	m := natstest.Open(t, "new manager", func(ctx context.Context) (*kvlease.Manager, error) {
		return kvlease.NewManager(ctx, js, cfg)
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, m.Close(ctx))
	})
	return m
}

// pair returns two managers on separate connections to one server: two
// "processes" sharing a bucket.
func pair(t *testing.T) (*kvlease.Manager, *kvlease.Manager) {
	t.Helper()
	n := natstest.WithServer(t)
	return newManager(t, n.JS, kvlease.Config{Holder: "one"}), newManager(t, n.NewJS(t), kvlease.Config{Holder: "two"})
}

func bind[K any](t *testing.T, d kvlease.Declaration[K], m *kvlease.Manager) kvlease.Leases[K] {
	t.Helper()
	l, err := d.Bind(m)
	require.NoError(t, err)
	return l
}

func jetstreamKV(bucket string) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: bucket}
}
