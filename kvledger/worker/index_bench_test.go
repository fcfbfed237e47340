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

// BenchmarkIndexPickGroups measures one filing and one pick on a ready
// queue that holds 4 tasks of each of g groups, for a kind that is fair
// (Config.FairKinds: groups taken in turn) and one that is not: the cost
// of the turns.
func BenchmarkIndexPickGroups(b *testing.B) {
	for _, fair := range []bool{false, true} {
		for _, g := range []int{1, 1_000} {
			b.Run(fmt.Sprintf("fair=%v/groups=%d", fair, g), func(b *testing.B) {
				ix := newIndex("kvledger.b.")
				ix.recSynced, ix.leaseSynced = true, true
				ix.fair["k"] = fair
				groups := make([]string, g)
				for i := range groups {
					groups[i] = fmt.Sprintf("tenant%d", i)
				}
				var rev uint64
				add := func(i int) {
					rev++
					k := kvledger.IdempotencyKey(fmt.Sprintf("t%d", i))
					ix.apply(&kvledger.Change{Key: k, Rev: rev, Record: kvledger.TaskState{Key: k, Status: kvledger.StatusPending, Kind: "k", Group: groups[i%g]}}, true)
					ix.enqueue(k, ix.recs[k])
				}
				for i := range 4 * g {
					add(i)
				}
				b.ResetTimer()
				for i := range b.N {
					add(4*g + i)
					it, ok := ix.ready["k"].pop()
					if !ok {
						b.Fatal("not picked")
					}
					delete(ix.queued, it.key)
					delete(ix.recs, it.key)
				}
			})
		}
	}
}
