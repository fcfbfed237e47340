package kvledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// AdmitMany inserts new tasks in atomic batches when the stream allows
// them, falls back to one by one for a batch that holds a duplicate, and
// gives the same answers and records either way.
func TestAdmitManyAtomicBatches(t *testing.T) {
	n := natstest.WithServer(t)
	for _, atomic := range []bool{false, true} {
		t.Run(fmt.Sprint("atomic=", atomic), func(t *testing.T) {
			store := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
			ctx := natstest.Context(t, 60*time.Second)
			if atomic {
				require.NoError(t, store.EnableAtomicBatches(ctx))
			}
			log, bus := newRecorder()
			l, err := kvledger.New(store, bus)
			require.NoError(t, err)
			_, err = l.Admit(ctx, "t", "k1500", 1, nil, time.Now()) // a duplicate in the second batch
			require.NoError(t, err)
			subs := make([]kvledger.Submission, 2500)
			for i := range subs {
				subs[i] = kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("k%d", i)), Seq: 1, Kind: "bulk", Task: i}
			}
			subs[10].Needs = []kvledger.IdempotencyKey{"k0"} // needs go one by one
			start := time.Now()
			oks, err := l.AdmitMany(ctx, "t", subs)
			require.NoError(t, err)
			t.Logf("AdmitMany of %d: %v", len(subs), time.Since(start))
			for i, ok := range oks {
				require.Equal(t, i != 1500, ok, "k%d", i)
			}
			for _, i := range []int{0, 10, 999, 1000, 1499, 1501, 2499} {
				s, found, err := l.State(ctx, subs[i].Key)
				require.NoError(t, err)
				require.True(t, found)
				require.Equal(t, "bulk", s.Kind)
				require.Equal(t, kvledger.StatusPending, s.Status)
				require.Contains(t, log.byKey(string(subs[i].Key)), kvledger.AdmittedEvent)
			}
			fresh := make([]kvledger.Submission, 2000)
			for i := range fresh {
				fresh[i] = kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("f%d", i)), Kind: "bulk"}
			}
			start = time.Now()
			_, err = l.AdmitMany(ctx, "t", fresh)
			require.NoError(t, err)
			t.Logf("AdmitMany of %d new keys without needs: %v", len(fresh), time.Since(start))
			f, err := l.Claim(ctx, "t", "k5", "w", time.Minute, time.Now())
			require.NoError(t, err)
			s, _, _ := l.State(ctx, "k5")
			require.Equal(t, s.Fence, f)
			require.Greater(t, f, kvledger.FenceToken(1), "the fence starts at the insert's revision")
		})
	}
}
