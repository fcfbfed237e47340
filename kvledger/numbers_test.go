package kvledger_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/jsonx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestKVStoreKeepsLargeNumbers: integers above 2^53 and beyond uint64
// in a payload come back with every digit, and the claim, which rewrites
// the record with the payload it read, stores the same digits (issue 25
// item 5: the read went through float64 and the claim stored the
// rounding).
func TestKVStoreKeepsLargeNumbers(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	l, err := kvledger.New(store)
	require.NoError(t, err)

	const payload = `{"big":12345678901234567890,"frac":0.10000000000000000001,"id":9007199254740993}`
	var task any
	require.NoError(t, jsonx.Unmarshal([]byte(payload), &task))
	ok, err := l.Admit(ctx, "a", "k", 1, task, t0)
	require.NoError(t, err)
	require.True(t, ok)

	s, _, err := l.State(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, json.Number("9007199254740993"), s.Task.(map[string]any)["id"])

	_, err = l.Claim(ctx, "w", "k", "w", time.Minute, t0)
	require.NoError(t, err)
	kv, err := n.JS.KeyValue(ctx, store.Name())
	require.NoError(t, err)
	e, err := kv.Get(ctx, "task.k")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(e.Value()), `"task":`+payload), "stored after the claim: %s", e.Value())

	s, _, err = l.State(ctx, "k")
	require.NoError(t, err)
	out, err := json.Marshal(s.Task)
	require.NoError(t, err)
	require.Equal(t, payload, string(out))
}

// TestSnapshotKeepsLargeNumbers: Decode keeps a task's numbers exactly,
// so Encode after Decode writes the same bytes.
func TestSnapshotKeepsLargeNumbers(t *testing.T) {
	in := `{"tasks":[{"key":"k","status":"pending","sequence":1,"fence":0,"task":{"id":9007199254740993,"x":[1.50,-0]},"rev":0}]}`
	s, err := kvledger.Decode([]byte(in))
	require.NoError(t, err)
	out, err := kvledger.Encode(s)
	require.NoError(t, err)
	require.Equal(t, in, string(out))
}
