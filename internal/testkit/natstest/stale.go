package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
)

// RefuseWrites answers every publish on subject (wildcards allowed) at
// once with the refusal a stream leader sends from a stale state ("wrong
// last sequence"), as a deposed or cut-off leader does: it needs no
// quorum, so it can be the first answer a client sees while the real
// leader goes on storing the write. Unsubscribe ends it; t.Cleanup does
// too.
func RefuseWrites(t testing.TB, nc *nats.Conn, subject string) *nats.Subscription {
	t.Helper()
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1"}}`))
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return sub
}

// CutOff makes KV bucket bucket on n answer as a stream leader cut off in
// a minority does: its stream stores no write of the bucket's keys any
// more (reads still answer what it holds) and every write is refused at
// once (RefuseWrites). heal undoes both.
func CutOff(t testing.TB, n *Node, bucket string) (heal func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := n.JS.Stream(ctx, embedded.KVStreamName(bucket))
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	subjects := cfg.Subjects
	cfg.Subjects = []string{"$KV." + bucket + ".other.>"}
	_, err = n.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	sub := RefuseWrites(t, n.NC, "$KV."+bucket+".>")
	return func() {
		t.Helper()
		require.NoError(t, sub.Unsubscribe())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cfg.Subjects = subjects
		_, err := n.JS.UpdateStream(ctx, cfg)
		require.NoError(t, err)
	}
}
