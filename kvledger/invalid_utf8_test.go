package kvledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestAdmitRefusesInvalidUTF8Key: a key, a need or an owner that is not
// valid UTF-8 is refused before anything is written, on both stores. The
// KVStore's JSON record would otherwise hold another key (invalid bytes
// replaced by U+FFFD) than its bucket key, and every Range and Snapshot of
// the ledger would then report it as corrupt.
func TestAdmitRefusesInvalidUTF8Key(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	stores := map[string]kvledger.Store{
		"mem": kvledger.NewMemStore(),
		"kv":  newKVStore(t, n.JS, kvledger.KVStoreConfig{}),
	}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			l, err := kvledger.New(s)
			require.NoError(t, err)

			ok, err := l.Admit(ctx, "x", "a\xffb", 1, nil, t0)
			require.ErrorIs(t, err, kvledger.ErrInvalidState)
			require.ErrorContains(t, err, "not valid UTF-8")
			require.False(t, ok)
			ok, err = l.Admit(ctx, "x", "c", 1, nil, t0, "\xfe")
			require.ErrorIs(t, err, kvledger.ErrInvalidState)
			require.False(t, ok)

			ok, err = l.Admit(ctx, "x", "ü d.e", 1, nil, t0) // any valid UTF-8 still works
			require.NoError(t, err)
			require.True(t, ok)
			_, err = l.Claim(ctx, "x", "ü d.e", "w\xff", time.Minute, t0)
			require.ErrorIs(t, err, kvledger.ErrInvalidState)

			snap, err := l.Snapshot(ctx)
			require.NoError(t, err, "nothing was stored under a mangled key")
			require.Len(t, snap.Tasks, 1)
			require.Equal(t, kvledger.IdempotencyKey("ü d.e"), snap.Tasks[0].Key)
			require.Equal(t, kvledger.StatusPending, snap.Tasks[0].Status)
		})
	}
}

// TestKVStoreRefusesInvalidUTF8Key: the store refuses such a key too,
// for callers that write through it without a Ledger.
func TestKVStoreRefusesInvalidUTF8Key(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	_, ok, _, _, err := s.Insert(ctx, "a\xffb", kvledger.TaskState{Key: "a\xffb", Status: kvledger.StatusPending})
	require.ErrorIs(t, err, kvledger.ErrInvalidState)
	require.False(t, ok)
	require.NoError(t, s.Range(ctx, func(kvledger.TaskState) bool { return true }))
}

// TestRangeNamesMangledRecord: a record stored before invalid keys were
// refused (its JSON key holds U+FFFD where its bucket key holds the raw
// byte) is one corrupt record, not a failed listing: Range and Snapshot
// return every other record and name it with its real key, and
// ForceDelete removes it by that key.
func TestRangeNamesMangledRecord(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	l, err := kvledger.New(s)
	require.NoError(t, err)
	for _, k := range []kvledger.IdempotencyKey{"a", "c"} {
		ok, err := l.Admit(ctx, "x", k, 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
	}
	kv, err := n.JS.KeyValue(ctx, s.Name())
	require.NoError(t, err)
	_, err = kv.Put(ctx, "task."+kvx.EncodeToken("b\xff"), []byte(`{"key":"b\ufffd","status":"pending","sequence":1,"fence":0,"ins":true}`))
	require.NoError(t, err)

	snap, err := l.Snapshot(ctx)
	var bad *kvledger.CorruptRecordsError
	require.True(t, errors.As(err, &bad), "got %v", err)
	require.Len(t, bad.Records, 1)
	require.Equal(t, kvledger.IdempotencyKey("b\xff"), bad.Records[0].Key)
	require.Len(t, snap.Tasks, 2, "the other records are all listed")

	removed, err := s.ForceDelete(ctx, "b\xff")
	require.NoError(t, err)
	require.True(t, removed)
	_, err = l.Snapshot(ctx)
	require.NoError(t, err)
}
