package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// LiveWorker is a claimant of a ledger whose lease is live now (a worker
// of the runtime, or a Ledger claiming WithLeases) and the tasks its
// claims hold, or a worker that claims nothing now, listed by its
// presence. A worker holds its claim lease while it has claims and for
// ClaimTTL after its last one ends; from Start to Close it also holds a
// presence lease, renewed once a minute (its one write while idle), which
// lists it while it claims nothing, and for up to three minutes after it
// died.
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
	// Kinds are the task kinds the worker handles, sorted, as its lease
	// states them; KindsKnown is false for a claimant that states none (a
	// Ledger claiming WithLeases, a worker of an older version). A worker
	// with very many kinds states as many as fit in a lease value
	// (kvlease.MaxInfoBytes) and the number it left out (KindsLeftOut).
	Kinds        []string
	KindsKnown   bool
	KindsLeftOut int
	// Idle is set when the worker holds no claim lease now: it is listed
	// by its presence lease (Lease is that lease's key) and runs nothing.
	Idle bool
}

// workerInfo is the Info of a worker's leases (kvlease.Holder.Info).
type workerInfo struct {
	Kinds []string `json:"kinds"`
	More  int      `json:"more,omitempty"`
}

// presenceInfix follows kvledger.LeasePrefix in a worker's presence
// lease key: "<prefix>p.<token of owner and a nuid>". The dot keeps it
// apart from per-record lease keys (one token), as the claim and group
// infixes are.
const presenceInfix = "p."

// presenceKey is a fresh key for the presence lease of owner on the
// ledger in bucket.
func presenceKey(bucket string, owner kvledger.OwnerID) string {
	claim := kvledger.NewClaimLeaseKey(bucket, owner)
	return kvledger.LeasePrefix(bucket) + presenceInfix + strings.TrimPrefix(claim, kvledger.LeasePrefix(bucket)+kvledger.ClaimLeaseInfix)
}

// presenceOwner is the owner a presence lease key of the ledger in bucket
// names, and whether key is one.
func presenceOwner(bucket, key string) (kvledger.OwnerID, bool) {
	rest, ok := strings.CutPrefix(key, kvledger.LeasePrefix(bucket)+presenceInfix)
	if !ok {
		return "", false
	}
	return kvledger.ClaimLeaseOwner(bucket, kvledger.LeasePrefix(bucket)+kvledger.ClaimLeaseInfix+rest)
}

// IsWorkerLease reports whether key, a key of the lease bucket, is one
// LiveWorkersOf reads for the ledger in bucket: a claimant's lease or a
// worker's presence. A reader that keeps only those (the dashboard)
// filters by it.
func IsWorkerLease(bucket, key string) bool {
	if _, ok := kvledger.ClaimLeaseOwner(bucket, key); ok {
		return true
	}
	_, ok := presenceOwner(bucket, key)
	return ok
}

// kindsOf reads the kinds a lease's Info states.
func kindsOf(h kvlease.Holder) (info workerInfo, ok bool) {
	if h.Info == "" || json.Unmarshal([]byte(h.Info), &info) != nil {
		return workerInfo{}, false
	}
	return info, true
}

// LiveWorkersOf is the rule that finds a ledger's live workers: every
// live lease in leases (by lease key) that is a claimant's lease of the
// ledger in bucket (kvledger.ClaimLeaseOwner), with the claimed records
// of records that name it, and every worker's presence lease whose worker
// (owner and holder process) holds no claim lease, as an idle worker.
// Each states the kinds its lease names. A claimed record naming a lease
// not in leases is not listed: its claimant is gone and the claim is free
// for takeover. The result is ordered by owner, then lease key.
func LiveWorkersOf(bucket string, leases map[string]kvlease.Holder, records []kvledger.TaskState) []LiveWorker {
	type process struct {
		owner    kvledger.OwnerID
		id, host string
		pid      int
	}
	byLease := make(map[string]int)
	claiming := make(map[process]bool)
	var out []LiveWorker
	add := func(w LiveWorker) {
		info, ok := kindsOf(w.Holder)
		w.Kinds, w.KindsKnown, w.KindsLeftOut = info.Kinds, ok, info.More
		out = append(out, w)
	}
	for key, h := range leases {
		owner, ok := kvledger.ClaimLeaseOwner(bucket, key)
		if !ok {
			continue
		}
		byLease[key] = len(out)
		claiming[process{owner, h.ID, h.Host, h.PID}] = true
		add(LiveWorker{Owner: owner, Lease: key, Holder: h})
	}
	for key, h := range leases {
		if owner, ok := presenceOwner(bucket, key); ok && !claiming[process{owner, h.ID, h.Host, h.PID}] {
			add(LiveWorker{Owner: owner, Lease: key, Holder: h, Idle: true})
		}
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
	leases := make(map[string]kvlease.Holder)
	for _, infix := range []string{kvledger.ClaimLeaseInfix, presenceInfix} {
		parent := kvledger.LeasePrefix(bucket) + strings.TrimSuffix(infix, ".")
		v, err := m.View(parent)
		if err != nil {
			return nil, err
		}
		if err := v.SyncLatest(ctx); err != nil {
			return nil, err
		}
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
