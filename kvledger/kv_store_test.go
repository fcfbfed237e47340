package kvledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/storetest"
)

var bucketSeq atomic.Int64

// newKVStore opens a fresh bucket; on a fresh cluster R3 creation may
// need a moment, so it retries within a bound.
func newKVStore(t testing.TB, js jetstream.JetStream, cfg kvledger.KVStoreConfig) *kvledger.KVStore {
	t.Helper()
	if cfg.Bucket == "" {
		cfg.Bucket = fmt.Sprintf("ledger%d", bucketSeq.Add(1))
	}
	ctx := natstest.Context(t, 30*time.Second)
	s := natstest.Open(t, "open bucket "+cfg.Bucket, func(ctx context.Context) (*kvledger.KVStore, error) {
		return kvledger.NewKVStore(ctx, js, cfg)
	})
	if cfg.Replicas > 1 {
		// A new replicated stream may answer before its leader is
		// elected: wait until a leader read succeeds and a write lands.
		natstest.Eventually(t, 20*time.Second, func() bool {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, _, err := s.Load(pctx, "probe")
			return err == nil
		}, "bucket %s has a leader", cfg.Bucket)
	}
	return s
}

func TestKVStoreConformance(t *testing.T) {
	n := natstest.WithServer(t)
	storetest.Run(t, func(t *testing.T) kvledger.Store {
		return newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	})
}

func TestKVStoreConformanceR3(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster run")
	}
	c := natstest.WithCluster(t, 3)
	storetest.Run(t, func(t *testing.T) kvledger.Store {
		return newKVStore(t, c.JS, kvledger.KVStoreConfig{Replicas: 3})
	})
}

func TestKVStoreConfig(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 10*time.Second)
	for _, cfg := range []kvledger.KVStoreConfig{
		{},
		{Bucket: "b", Retention: 500 * time.Millisecond},
		{Bucket: "b", Retention: -time.Second},
		{Bucket: "b", Replicas: -1},
		{Bucket: "b", Replicas: 6},
	} {
		_, err := kvledger.NewKVStore(ctx, n.JS, cfg)
		require.ErrorIs(t, err, kvledger.ErrInvalidConfig, "%+v", cfg)
	}
	_, err := kvledger.NewKVStore(ctx, nil, kvledger.KVStoreConfig{Bucket: "b"})
	require.ErrorIs(t, err, kvledger.ErrInvalidConfig)
	// A bucket created without retention cannot be bound with one.
	newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "plain"})
	_, err = kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: "plain", Retention: time.Second})
	require.Error(t, err)
}

// TestKVStoreRetention: final records expire after the retention, the key
// can be admitted again, and its fences keep rising.
func TestKVStoreRetention(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{Retention: time.Second})
	l, err := kvledger.New(s)
	require.NoError(t, err)

	ok, err := l.Admit(ctx, "a", "k", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)
	f1, err := l.Claim(ctx, "w", "k", "w", time.Minute, t0)
	require.NoError(t, err)
	// A live record has no TTL: it outlives the retention.
	ok, err = l.Admit(ctx, "a", "live", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, l.Complete(ctx, "w", "k", "w", f1, kvledger.StatusCompleted, t0))
	natstest.Eventually(t, 5*time.Second, func() bool {
		_, found, err := l.State(ctx, "k")
		return err == nil && !found
	}, "completed record expires")
	_, found, err := l.State(ctx, "live")
	require.NoError(t, err)
	require.True(t, found, "pending records never expire")

	ok, err = l.Admit(ctx, "a", "k", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok, "after expiry the key is admitted again")
	f2, err := l.Claim(ctx, "w", "k", "w", time.Minute, t0)
	require.NoError(t, err)
	require.Greater(t, f2, f1, "fences keep rising across expiry")
}

// TestKVStoreFenceAcrossDelete: a record deleted by an operator (delete
// marker) and re-admitted gets fences above all earlier ones, also once
// the marker itself is gone (purged).
func TestKVStoreFenceAcrossDelete(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "fences"})
	l, err := kvledger.New(s)
	require.NoError(t, err)
	kv, err := n.JS.KeyValue(ctx, "fences")
	require.NoError(t, err)

	var last kvledger.FenceToken
	for round := range 3 {
		ok, err := l.Admit(ctx, "a", "k", 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok, "round %d", round)
		for range 3 { // several claims per life
			f, err := l.Claim(ctx, "w", "k", "w", time.Second, t0.Add(time.Duration(round)*time.Hour))
			require.NoError(t, err)
			require.Greater(t, f, last)
			last = f
			require.NoError(t, l.Release(ctx, "w", "k", "w", f, t0))
		}
		// Unrelated writes move the bucket's revision.
		ok, err = l.Admit(ctx, "a", kvledger.IdempotencyKey(fmt.Sprintf("other%d", round)), 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
		if round%2 == 0 {
			require.NoError(t, kv.Delete(ctx, "task.k"))
		} else {
			require.NoError(t, kv.Purge(ctx, "task.k"))
			str, err := n.JS.Stream(ctx, "KV_fences")
			require.NoError(t, err)
			require.NoError(t, str.Purge(ctx, jetstream.WithPurgeSubject("$KV.fences.task.k")), "no marker left at all")
		}
	}
}

// TestKVStoreCorruptRecord: a value written by someone else yields a
// clear error and is never overwritten.
func TestKVStoreCorruptRecord(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "corrupt"})
	l, err := kvledger.New(s)
	require.NoError(t, err)
	kv, err := n.JS.KeyValue(ctx, "corrupt")
	require.NoError(t, err)
	for _, v := range []string{"not json", `{"key":"other","status":"pending"}`, `{"key":"k","status":"zombie"}`, `[]`} {
		_, err := kv.Put(ctx, "task.k", []byte(v))
		require.NoError(t, err)
		_, _, err = l.State(ctx, "k")
		require.ErrorIs(t, err, kvledger.ErrCorruptRecord, v)
		_, err = l.Admit(ctx, "a", "k", 1, nil, t0)
		require.ErrorIs(t, err, kvledger.ErrCorruptRecord, v)
		_, err = l.Claim(ctx, "a", "k", "w", time.Second, t0)
		require.ErrorIs(t, err, kvledger.ErrCorruptRecord, v)
		_, err = l.Snapshot(ctx)
		require.ErrorIs(t, err, kvledger.ErrCorruptRecord, v)
		ok, err := s.CompareAndSwap(ctx, "k", kvledger.TaskState{}, kvledger.TaskState{Key: "k", Status: kvledger.StatusPending})
		require.NoError(t, err)
		require.False(t, ok, "insert never replaces a foreign value")
		e, err := kv.Get(ctx, "task.k")
		require.NoError(t, err)
		require.Equal(t, v, string(e.Value()), "left as it was")
	}
}

func TestDecodeTask(t *testing.T) {
	type job struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	n := natstest.WithServer(t)
	ctx := context.Background()
	l, err := kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{}))
	require.NoError(t, err)
	ok, err := l.Admit(ctx, "a", "k", 1, job{Name: "x", N: 3}, t0)
	require.NoError(t, err)
	require.True(t, ok)
	s, _, err := l.State(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, map[string]any{"name": "x", "n": json.Number("3")}, s.Task)
	j, err := kvledger.DecodeTask[job](s)
	require.NoError(t, err)
	require.Equal(t, job{Name: "x", N: 3}, j)
}

// TestKVStoreRetentionRemovesIndex: under retention, a final record's
// reverse-dependency entries leave the bucket with it, and a key admitted
// again after its record expired is indexed again (over the old marker),
// so a later failure of its need still blocks it.
func TestKVStoreRetentionRemovesIndex(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{Retention: time.Second})
	l, err := kvledger.New(s)
	require.NoError(t, err)
	kv, err := n.JS.KeyValue(ctx, s.Name())
	require.NoError(t, err)
	indexKeys := func() []string {
		lister, err := kv.ListKeysFiltered(ctx, "rdep.>")
		require.NoError(t, err)
		var keys []string
		for k := range lister.Keys() {
			keys = append(keys, k)
		}
		return keys
	}

	for _, k := range []kvledger.IdempotencyKey{"need", "other"} {
		ok, err := l.Admit(ctx, "a", k, 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
	}
	ok, err := l.Admit(ctx, "a", "dep", 1, nil, t0, "need", "other")
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, indexKeys(), 2)

	// The dependent ends (blocked by a failed need): its entries go.
	f, err := l.Claim(ctx, "w", "need", "w", time.Minute, t0)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "w", "need", "w", f, kvledger.StatusFailed, t0))
	st, found, err := l.State(ctx, "dep")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, kvledger.StatusBlocked, st.Status)
	require.Empty(t, indexKeys(), "a final dependent keeps no index entries")

	// Once the records have expired, the dependent is admitted again and
	// indexed again; a new failure of its need blocks it again.
	natstest.Eventually(t, 10*time.Second, func() bool {
		_, f1, err1 := l.State(ctx, "dep")
		_, f2, err2 := l.State(ctx, "need")
		return err1 == nil && err2 == nil && !f1 && !f2
	}, "final records expire")
	ok, err = l.Admit(ctx, "a", "need", 2, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = l.Admit(ctx, "a", "dep", 2, nil, t0, "need")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{"rdep.need.dep"}, indexKeys())
	f, err = l.Claim(ctx, "w", "need", "w", time.Minute, t0)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "w", "need", "w", f, kvledger.StatusFailed, t0))
	st, _, err = l.State(ctx, "dep")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusBlocked, st.Status)
}

// newLedger is kvledger.New(store, opts...) that fails the test on an
// error.
func newLedger(t testing.TB, store kvledger.Store, opts ...kvledger.Option) *kvledger.Ledger {
	t.Helper()
	l, err := kvledger.New(store, opts...)
	require.NoError(t, err)
	return l
}
