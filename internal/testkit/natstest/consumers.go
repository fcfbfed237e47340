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

// BucketConsumerNames lists the names of the consumers of a KV bucket's
// stream.
func BucketConsumerNames(t testing.TB, js jetstream.JetStream, bucket string) []string {
	t.Helper()
	ctx := Context(t, 5*time.Second)
	s, err := js.Stream(ctx, "KV_"+bucket)
	require.NoError(t, err)
	lister := s.ConsumerNames(ctx)
	var names []string
	for name := range lister.Name() {
		names = append(names, name)
	}
	require.NoError(t, lister.Err())
	return names
}
