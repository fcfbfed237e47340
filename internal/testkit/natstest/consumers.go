package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// BucketConsumers counts the consumers the server runs on a KV bucket's
// stream: how many watches (and other consumers) the bucket costs it.
func BucketConsumers(t testing.TB, js jetstream.JetStream, bucket string) int {
	t.Helper()
	ctx := Context(t, 5*time.Second)
	s, err := js.Stream(ctx, "KV_"+bucket)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	return info.State.Consumers
}

// ConsumersSeen returns a count of the distinct consumers of a KV
// bucket's stream seen so far: each call lists them again and adds the
// new names (a watch's every try makes a consumer of its own name, so a
// second name is a second try, even if the first is gone).
func ConsumersSeen(t testing.TB, js jetstream.JetStream, bucket string) func() int {
	seen := map[string]bool{}
	return func() int {
		t.Helper()
		ctx := Context(t, 5*time.Second)
		s, err := js.Stream(ctx, "KV_"+bucket)
		require.NoError(t, err)
		lister := s.ConsumerNames(ctx)
		for name := range lister.Name() {
			seen[name] = true
		}
		require.NoError(t, lister.Err())
		return len(seen)
	}
}
