package kvledger_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// A snapshot or a stored value (as `nats kv put` would write it) with a
// fence that has no room left is refused where it enters.
func TestFenceAboveMaxRefusedOnEntry(t *testing.T) {
	snap := fmt.Sprintf(`{"tasks":[{"key":"k","status":"pending","sequence":1,"fence":%d}]}`, uint64(math.MaxUint64))
	_, err := kvledger.Decode([]byte(snap))
	require.ErrorIs(t, err, kvledger.ErrFenceExhausted)

	n := natstest.WithServer(t)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	ctx := natstest.Context(t, 10*time.Second)
	kv, err := n.JS.KeyValue(ctx, s.Name())
	require.NoError(t, err)
	_, err = kv.Put(ctx, "task.k", []byte(fmt.Sprintf(`{"key":"k","status":"pending","sequence":1,"fence":%d}`, uint64(math.MaxUint64))))
	require.NoError(t, err)
	_, _, err = s.Load(ctx, "k")
	require.ErrorIs(t, err, kvledger.ErrCorruptRecord)
	require.ErrorIs(t, err, kvledger.ErrFenceExhausted)

	l := newLedger(t, s)
	_, err = l.Claim(ctx, "w", "k", "w", time.Minute, time.Now())
	require.ErrorIs(t, err, kvledger.ErrFenceExhausted, "never a wrapped fence 0")
}
