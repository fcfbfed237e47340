package bench

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// rawUpdate is plain kv.Update (a CAS on the revision, no TTL) of a key
// "rawbench.u" holding a value as large as the primitive's key like.
type rawUpdate struct {
	kv  jetstream.KeyValue
	key string
	val []byte
	rev uint64
}

func newRawUpdate(b *testing.B, js jetstream.JetStream, bucket, like string) *rawUpdate {
	b.Helper()
	ctx := context.Background()
	size := valueLen(b, js, bucket, like)
	kv, err := js.KeyValue(ctx, bucket)
	require.NoError(b, err)
	r := &rawUpdate{kv: kv, key: "rawbench.u", val: make([]byte, size)}
	r.rev, err = kv.Put(ctx, r.key, r.val)
	require.NoError(b, err)
	return r
}

func (r *rawUpdate) update(b *testing.B, ctx context.Context) {
	rev, err := r.kv.Update(ctx, r.key, r.val, r.rev)
	if err != nil {
		b.Fatalf("kv.Update: %v", err)
	}
	r.rev = rev
}
