package dashboard

import (
	"fmt"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// workersHandler is a Handler with what the workers page reads: one lease
// bucket of locks leases other leases (10,000 locks) and 20 workers'
// claimant leases, and a task view of 10,000 completed tasks and 40
// claims naming those leases.
func workersHandler(tb testing.TB) *Handler {
	tb.Helper()
	const bucket = "natscoord_ledger"
	h := &Handler{cfg: Config{Ledger: bucket}, tasks: newTaskView(clock.Real())}
	v := newLeaseView(worker.DefaultLeaseBucket, func(key string) bool { return worker.IsWorkerLease(bucket, key) })
	now := time.Now()
	for i := range 10_000 {
		key := fmt.Sprintf("kvlock.nightly.job-%05d", i)
		v.set(leaseRow{Bucket: v.bucket, Key: key, Kind: kindLock, Holder: "cron", holder: kvlease.Holder{ID: "cron", Expires: now}})
		h.tasks.put(taskSummary{Key: kvledger.IdempotencyKey(fmt.Sprintf("done-%05d", i)), Status: kvledger.StatusCompleted, Rev: uint64(i + 1)})
	}
	for i := range 20 {
		owner := kvledger.OwnerID(fmt.Sprintf("worker-%02d", i))
		key := kvledger.NewClaimLeaseKey(bucket, owner)
		v.set(leaseRow{Bucket: v.bucket, Key: key, Kind: kindLease, Holder: string(owner), holder: kvlease.Holder{ID: string(owner), Expires: now}})
		for j := range 2 {
			h.tasks.put(taskSummary{Key: kvledger.IdempotencyKey(fmt.Sprintf("run-%02d-%d", i, j)), Status: kvledger.StatusClaimed,
				Owner: owner, Fence: 1, Lease: key, Rev: uint64(20_000 + 2*i + j)})
		}
	}
	h.leases = []*leaseView{v}
	return h
}

// BenchmarkWorkerRows measures the workers page's rows read from the
// claimant leases alone against the baseline of copying (and sorting)
// every lease of the bucket per render, as the page did before.
func BenchmarkWorkerRows(b *testing.B) {
	h := workersHandler(b)
	b.Run("claimants", func(b *testing.B) {
		for b.Loop() {
			if rows := h.workerRows(); len(rows) != 20 {
				b.Fatalf("%d rows", len(rows))
			}
		}
	})
	b.Run("baseline/copy-every-lease", func(b *testing.B) {
		for b.Loop() {
			rows := make(map[string]leaseRow)
			holders := make(map[string]kvlease.Holder)
			for _, v := range h.leases {
				for _, l := range v.list("") {
					rows[l.Key], holders[l.Key] = l, l.holder
				}
			}
			claims, _ := h.tasks.claims()
			if ws := worker.LiveWorkersOf(h.cfg.Ledger, holders, claims); len(ws) != 20 {
				b.Fatalf("%d workers", len(ws))
			}
		}
	})
}

// The claimant rows are the rows of the claimant leases, kept through
// every change: a row set, replaced, removed, or dropped by keepOnly.
func TestLeaseViewClaimants(t *testing.T) {
	h := workersHandler(t)
	v := h.leases[0]
	count := func() int {
		n := 0
		v.eachClaimant(func(leaseRow) { n++ })
		return n
	}
	if n := count(); n != 20 {
		t.Fatalf("%d claimants", n)
	}
	keep := map[string]bool{}
	var gone string
	for k := range v.claimants {
		if gone == "" {
			gone = k
			continue
		}
		keep[k] = true
	}
	v.mu.Lock()
	v.remove(gone)
	v.mu.Unlock()
	if n := count(); n != 19 || len(h.workerRows()) != 19 {
		t.Fatalf("%d claimants after a removal", n)
	}
	v.keepOnly(keep)
	if n := count(); n != 19 || len(v.rows) != 19 {
		t.Fatalf("%d claimants, %d rows after keepOnly", n, len(v.rows))
	}
}
