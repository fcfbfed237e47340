package worker

import (
	"fmt"
	"testing"
	"time"

	"github.com/natscoord/natscoord/kvledger"
)

// BenchmarkIndexPick measures the in-memory work of one task's life in
// the ready set (admitted, picked, claimed, completed, each as a watch
// change) on an index that already holds n completed records: the cost
// must not grow with n.
func BenchmarkIndexPick(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ix := newIndex("kvledger.b.")
			ix.recSynced, ix.leaseSynced = true, true
			var rev uint64
			change := func(k kvledger.IdempotencyKey, st kvledger.Status, needs []kvledger.IdempotencyKey) {
				rev++
				ix.apply(&kvledger.Change{Key: k, Rev: rev, Record: kvledger.TaskState{Key: k, Status: st, Kind: "k", Needs: needs}}, true)
			}
			for i := range n {
				change(kvledger.IdempotencyKey(fmt.Sprintf("old%d", i)), kvledger.StatusCompleted, nil)
			}
			need := []kvledger.IdempotencyKey{"old1"}
			now := time.Now()
			b.ResetTimer()
			for i := range b.N {
				k := kvledger.IdempotencyKey(fmt.Sprintf("new%d", i))
				change(k, kvledger.StatusPending, need)
				if r, _ := ix.judge(k, now); r != candidate {
					b.Fatal("not ready")
				}
				ix.enqueue(k, ix.recs[k])
				got, ok := ix.ready["k"].pop()
				if !ok || got.key != k {
					b.Fatal("not picked")
				}
				delete(ix.queued, got.key)
				change(k, kvledger.StatusClaimed, need)
				change(k, kvledger.StatusCompleted, need)
			}
		})
	}
}
