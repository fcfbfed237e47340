package kvledger

import (
	"context"
	"testing"
)

// TestAdmitBatchNoRunAllocatesNothing: AdmitMany asks admitBatch again
// at every submission with needs, which it cannot batch; sizing the batch
// (MaxBatch records and a map) before looking at the head cost ~392 KB
// each time. A head of fewer than two submissions without needs is
// answered 0 without allocating.
func TestAdmitBatchNoRunAllocatesNothing(t *testing.T) {
	var l Ledger
	subs := make([]Submission, 2000)
	for i := range subs {
		subs[i].Key = IdempotencyKey("k" + string(rune('a'+i%26)))
	}
	out := make([]bool, len(subs))
	for _, head := range []int{0, 1} {
		subs[head].Needs = []IdempotencyKey{"need"}
		allocs := testing.AllocsPerRun(20, func() {
			n, refused, err := l.admitBatch(context.Background(), "a", nil, subs, out)
			if n != 0 || refused != 0 || err != nil {
				t.Fatalf("admitBatch = %d, %d, %v; want 0, 0, nil", n, refused, err)
			}
		})
		if allocs != 0 {
			t.Fatalf("needs at %d: %v allocations, want 0", head, allocs)
		}
		subs[head].Needs = nil
	}
}
