package kvledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// batched reports whether key's record was stored by an atomic batch
// (its message carries the batch's id).
func batched(t *testing.T, js jetstream.JetStream, bucket string, key kvledger.IdempotencyKey) bool {
	t.Helper()
	ctx := natstest.Context(t, 5*time.Second)
	s, err := js.Stream(ctx, "KV_"+bucket)
	require.NoError(t, err)
	m, err := s.GetLastMsgForSubject(ctx, "$KV."+bucket+"."+kvledger.TaskKey(key))
	require.NoError(t, err)
	return m.Header.Get("Nats-Batch-Id") != ""
}

func bulk(prefix string, n int) []kvledger.Submission {
	subs := make([]kvledger.Submission, n)
	for i := range subs {
		subs[i] = kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("%s%d", prefix, i)), Seq: 1, Task: i}
	}
	return subs
}

// AdmitMany batches with no enabling step, on a bucket NewKVStore
// creates and on one created before it allowed batches; a batch refused
// because one key already has a record admits the rest in a batch, and
// answers false for exactly that key.
func TestAdmitManyBatchesByDefault(t *testing.T) {
	for _, replicas := range []int{1, 3} {
		t.Run(fmt.Sprint("R", replicas), func(t *testing.T) {
			var js jetstream.JetStream
			if replicas == 1 {
				js = natstest.WithServer(t).JS
			} else {
				js = natstest.WithCluster(t, 3).JS
			}
			ctx := natstest.Context(t, 60*time.Second)

			fresh := newKVStore(t, js, kvledger.KVStoreConfig{Bucket: fmt.Sprintf("fresh%d", replicas), Replicas: replicas})
			l, err := kvledger.New(fresh)
			require.NoError(t, err)
			_, err = l.Admit(ctx, "t", "a7", 1, nil, time.Now())
			require.NoError(t, err)
			oks, err := l.AdmitMany(ctx, "t", bulk("a", 20))
			require.NoError(t, err)
			for i, ok := range oks {
				require.Equal(t, i != 7, ok, "a%d", i)
			}
			for _, k := range []kvledger.IdempotencyKey{"a0", "a6", "a8", "a19"} {
				require.True(t, batched(t, js, "fresh"+fmt.Sprint(replicas), k), "%s was admitted in a batch", k)
			}
			s, _, err := l.State(ctx, "a7")
			require.NoError(t, err)
			require.Nil(t, s.Task, "the existing record is left as it was")

			// A bucket made without atomic batches (as NewKVStore did
			// before): the first AdmitMany allows them.
			old := fmt.Sprintf("old%d", replicas)
			_, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: old, Replicas: replicas})
			require.NoError(t, err)
			l2, err := kvledger.New(newKVStore(t, js, kvledger.KVStoreConfig{Bucket: old}))
			require.NoError(t, err)
			oks, err = l2.AdmitMany(ctx, "t", bulk("b", 5))
			require.NoError(t, err)
			require.Equal(t, []bool{true, true, true, true, true}, oks)
			require.True(t, batched(t, js, old, "b3"))
		})
	}
}
