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
	return answerWrites(t, nc, subject, staleAnswer)
}

// The answers of a stream leader from a stale state, and of JetStream
// while a stream has no quorum.
var (
	staleAnswer       = []byte(`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1"}}`)
	unavailableAnswer = []byte(`{"error":{"code":503,"err_code":10008,"description":"JetStream system temporarily unavailable"}}`)
)

func answerWrites(t testing.TB, nc *nats.Conn, subject string, answer []byte) *nats.Subscription {
	t.Helper()
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond(answer) })
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
	return divert(t, n, bucket, staleAnswer)
}

// Unavailable makes KV bucket bucket on n answer every write at once as
// JetStream does while the bucket's stream has no quorum (503, "JetStream
// system temporarily unavailable"), storing none of them; reads still
// answer. heal undoes it.
func Unavailable(t testing.TB, n *Node, bucket string) (heal func()) {
	t.Helper()
	return divert(t, n, bucket, unavailableAnswer)
}

// divert takes the writes of bucket's keys away from its stream and
// answers each with answer.
func divert(t testing.TB, n *Node, bucket string, answer []byte) (heal func()) {
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
	sub := answerWrites(t, n.NC, "$KV."+bucket+".>", answer)
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
