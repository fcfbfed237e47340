package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// LiveWorker is a claimant of a ledger whose lease is live now (a worker
// of the runtime, or a Ledger claiming WithLeases) and the tasks its
// claims hold. A worker holds its lease while it has claims and for
// ClaimTTL after its last one ends (an idle worker releases it), so a
// worker that has claimed nothing lately is not listed.
type LiveWorker struct {
	// Owner is the claimant's owner id (Config.Owner), as its lease key
	// names it.
	Owner kvledger.OwnerID
	// Lease is the lease's key in the lease bucket; the claimed records
	// name it (TaskState.Lease).
	Lease string
	// Holder is the lease as kvlease reads it (kvlease.HolderOf): the
	// holder's process (ID, Host, PID), its TTL, the key's revision, and
	// Expires, when the server expires the lease unless it is renewed
	// first (the server's time of the last renewal plus the TTL as the
	// server counts it).
	Holder kvlease.Holder
	// Tasks are the claimed records that name Lease, by key.
	Tasks []kvledger.TaskState
}

// LiveWorkersOf is the rule that finds a ledger's live workers: every
// live lease in leases (by lease key) that is a claimant's lease of the
// ledger in bucket (kvledger.ClaimLeaseOwner), with the claimed records
// of records that name it. A claimed record naming a lease not in leases
// is not listed: its claimant is gone and the claim is free for takeover.
// The result is ordered by owner, then lease key.
func LiveWorkersOf(bucket string, leases map[string]kvlease.Holder, records []kvledger.TaskState) []LiveWorker {
	byLease := make(map[string]int)
	var out []LiveWorker
	for key, h := range leases {
		owner, ok := kvledger.ClaimLeaseOwner(bucket, key)
		if !ok {
			continue
		}
		byLease[key] = len(out)
		out = append(out, LiveWorker{Owner: owner, Lease: key, Holder: h})
	}
	for _, r := range records {
		if i, ok := byLease[r.Lease]; ok && r.Status == kvledger.StatusClaimed {
			out[i].Tasks = append(out[i].Tasks, r)
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Tasks, func(a, b kvledger.TaskState) int { return strings.Compare(string(a.Key), string(b.Key)) })
	}
	slices.SortFunc(out, func(a, b LiveWorker) int {
		return cmp.Or(strings.Compare(string(a.Owner), string(b.Owner)), strings.Compare(a.Lease, b.Lease))
	})
	return out
}

// LiveWorkers reads the live workers of the ledger l (whose store is
// named: a KVStore) from the lease bucket of m, through m's view of the
// claimant leases (kvlease.View, synced to the bucket's last revision, so
// every lease acknowledged before the call is seen), and the claimed
// records from a snapshot of the ledger (a scan: for an operator, not a
// hot path). A corrupt record does not hide the others: the workers are
// returned with the *kvledger.CorruptRecordsError.
func LiveWorkers(ctx context.Context, m *kvlease.Manager, l *kvledger.Ledger) ([]LiveWorker, error) {
	if m == nil || l == nil {
		return nil, fmt.Errorf("%w: nil lease manager or ledger", ErrInvalidConfig)
	}
	named, ok := l.Store().(interface{ Name() string })
	if !ok || named.Name() == "" {
		return nil, fmt.Errorf("%w: the ledger's store has no name", ErrInvalidConfig)
	}
	bucket := named.Name()
	parent := kvledger.LeasePrefix(bucket) + strings.TrimSuffix(kvledger.ClaimLeaseInfix, ".")
	v, err := m.View(parent)
	if err != nil {
		return nil, err
	}
	if err := v.SyncLatest(ctx); err != nil {
		return nil, err
	}
	leases := make(map[string]kvlease.Holder)
	err = v.Children(parent, func(c kvlease.Change) bool {
		// A value kvlease cannot read as a holder is left out of this
		// display: no claim is judged by it (a takeover reads the lease
		// from the server itself, kvledger.LeaseEnded), and
		// `natscoord lease ls` names such a value.
		if h, err := kvlease.HolderOf(c); err == nil {
			leases[c.Key] = h
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	snap, err := l.Snapshot(ctx)
	var corrupt *kvledger.CorruptRecordsError
	if err != nil && !errors.As(err, &corrupt) {
		return nil, err
	}
	return LiveWorkersOf(bucket, leases, snap.Tasks), err
}

// LiveWorkers is the package's LiveWorkers for w's ledger, read through
// w's lease manager.
func (w *Worker) LiveWorkers(ctx context.Context) ([]LiveWorker, error) {
	return LiveWorkers(ctx, w.leases, w.l)
}
