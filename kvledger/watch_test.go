package kvledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestWatchRecordsKeys: a watch given keys delivers the changes of those
// records only, whether it filters a few keys by subject or, for many
// (a consumer with thousands of filter subjects is too slow for the
// server to create), watches every record and drops the rest.
func TestWatchRecordsKeys(t *testing.T) {
	n := natstest.WithServer(t)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	l := newLedger(t, s)
	ctx := natstest.Context(t, 20*time.Second)
	for _, many := range []int{2, 500} {
		t.Run(fmt.Sprint(many), func(t *testing.T) {
			key := func(name string) kvledger.IdempotencyKey {
				return kvledger.IdempotencyKey(fmt.Sprintf("%d-%s", many, name))
			}
			admit := func(name string) {
				ok, err := l.Admit(ctx, "t", key(name), 1, nil, t0)
				require.NoError(t, err)
				require.True(t, ok)
			}
			admit("in0")
			admit("out0")
			keys := make([]kvledger.IdempotencyKey, many)
			for i := range keys {
				keys[i] = key(fmt.Sprintf("in%d", i))
			}
			changes := make(chan kvledger.Change, 64)
			w, err := s.WatchRecords(ctx, func(c kvledger.Change) { changes <- c }, keys...)
			require.NoError(t, err)
			defer w.Stop()
			c := natstest.Recv(t, changes, 10*time.Second, "the current record")
			require.Equal(t, key("in0"), c.Key)
			require.True(t, natstest.Recv(t, changes, 10*time.Second, "synced").Synced, "out0 is not delivered")

			admit("out1")
			admit("in1")
			c = natstest.Recv(t, changes, 10*time.Second, "in1's admission")
			require.Equal(t, key("in1"), c.Key, "out1 is not delivered")
			require.Equal(t, kvledger.StatusPending, c.Record.Status)
		})
	}
}
