package kvledger_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// staleStore answers "no such record" for its first lies loads, as the
// stream leader of a minority does for a record written on the majority
// before it notices that it was deposed; everything else is its KVStore's.
type staleStore struct {
	*kvledger.KVStore
	lies atomic.Int64
}

func (s *staleStore) Load(ctx context.Context, key kvledger.IdempotencyKey) (kvledger.TaskState, bool, error) {
	if s.lies.Add(-1) >= 0 {
		return kvledger.TaskState{}, false, nil
	}
	return s.KVStore.Load(ctx, key)
}

// An owner-only operation does not act on a "no such record" read before
// a write has confirmed it: the record a stale read hid is found, a
// missing one is still ErrNoKey, and reads (State) stay reads.
func TestMissingRecordConfirmedByAWrite(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	kv := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	st := &staleStore{KVStore: kv}
	l := newLedger(t, st)
	ok, err := l.Admit(ctx, "a", "k", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)

	st.lies.Store(1)
	fence, err := l.Claim(ctx, "w", "k", "w", time.Minute, t0)
	require.NoError(t, err, "the claim believed a stale 'no such record'")
	require.NotZero(t, fence)
	bucket, err := n.JS.KeyValue(ctx, kv.Name())
	require.NoError(t, err)
	sync, err := bucket.Get(ctx, "sync")
	require.NoError(t, err, "the confirming write")
	rev := sync.Revision()

	_, err = l.Claim(ctx, "w", "missing", "w", time.Minute, t0)
	require.ErrorIs(t, err, kvledger.ErrNoKey)
	sync, err = bucket.Get(ctx, "sync")
	require.NoError(t, err)
	require.Greater(t, sync.Revision(), rev, "ErrNoKey only after a confirming write")
	rev = sync.Revision()

	_, found, err := l.State(ctx, "missing")
	require.NoError(t, err)
	require.False(t, found)
	sync, err = bucket.Get(ctx, "sync")
	require.NoError(t, err)
	require.Equal(t, rev, sync.Revision(), "State wrote")

	recs, err := l.Snapshot(ctx)
	require.NoError(t, err)
	require.Len(t, recs.Tasks, 1, "the sync key is not a record")
}
