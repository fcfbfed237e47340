package embedded_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
)

// BenchmarkStartToReady measures Start (temporary data dir, JetStream on,
// listening on loopback) until it returns ready. ns/op also includes
// Shutdown; ms/start is the start alone.
func BenchmarkStartToReady(b *testing.B) {
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		t0 := time.Now()
		s, err := embedded.Start(ctx, embedded.Options{})
		total += time.Since(t0)
		require.NoError(b, err)
		require.NoError(b, s.Shutdown(ctx))
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/start")
}

// BenchmarkStartToFirstKVPut measures Start until the first value is
// stored: start, JetStream handle, create a bucket, put one key.
func BenchmarkStartToFirstKVPut(b *testing.B) {
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		t0 := time.Now()
		s, err := embedded.Start(ctx, embedded.Options{})
		require.NoError(b, err)
		js, err := s.JetStream()
		require.NoError(b, err)
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "bench"})
		require.NoError(b, err)
		_, err = kv.Put(ctx, "k", []byte("v"))
		require.NoError(b, err)
		total += time.Since(t0)
		require.NoError(b, s.Shutdown(ctx))
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/first-put")
}
