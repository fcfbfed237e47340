package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvlock"
)

// history collects porcupine operations from concurrent clients.
type history struct {
	start   time.Time
	mu      sync.Mutex
	ops     []porcupine.Operation
	unknown int
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return time.Since(h.start).Nanoseconds() }

// add records an operation called at call; an unknown outcome gets return
// time "infinity" (it may take effect at any time after its call).
func (h *history) add(client int, call int64, in, out any, unknown bool) {
	ret := h.now()
	if unknown {
		ret = math.MaxInt64
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if unknown {
		h.unknown++
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// check runs porcupine and fails t on a non-linearizable history, writing
// a visualization next to the test's temp files.
func (h *history) check(t *testing.T, name string, m porcupine.NondeterministicModel) porcupine.CheckResult {
	t.Helper()
	res := h.verdict(t, name, m)
	require.NotEqual(t, porcupine.Illegal, res, "%s history is not linearizable", name)
	return res
}

// subset returns the operations whose input keep accepts, as a history of
// their own.
func (h *history) subset(keep func(in any) bool) *history {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := &history{start: h.start}
	for _, op := range h.ops {
		if keep(op.Input) {
			out.ops = append(out.ops, op)
			if op.Return == math.MaxInt64 {
				out.unknown++
			}
		}
	}
	return out
}

// verdict runs porcupine; on a non-linearizable history it logs the first
// illegal partition and writes a visualization next to the test's temp
// files, and leaves failing to the caller.
func (h *history) verdict(t *testing.T, name string, m porcupine.NondeterministicModel) porcupine.CheckResult {
	t.Helper()
	model := m.ToModel()
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	res, info := porcupine.CheckOperationsVerbose(model, ops, 2*time.Minute)
	if res == porcupine.Illegal {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("natscoord-%s-%d.html", name, time.Now().UnixNano()))
		if err := porcupine.VisualizePath(model, info, path); err == nil {
			t.Logf("visualization: %s", path)
		}
		h.logIllegal(t, model)
	}
	return res
}

// logIllegal logs the operations of the first partition that is not
// linearizable, in call order.
func (h *history) logIllegal(t *testing.T, model porcupine.Model) {
	parts := [][]porcupine.Operation{h.ops}
	if model.Partition != nil {
		parts = model.Partition(h.ops)
	}
	for _, p := range parts {
		if porcupine.CheckOperations(model, p) {
			continue
		}
		slices.SortFunc(p, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		for _, op := range p {
			ret := "inf"
			if op.Return != math.MaxInt64 {
				ret = fmt.Sprint(op.Return / 1000)
			}
			t.Logf("c%d [%d, %s]us %s", op.ClientId, op.Call/1000, ret, model.DescribeOperation(op.Input, op.Output))
		}
		return
	}
}

// TestLinearizableLeaseLock records TryAcquire/Release of one kvlease key
// by 4 clients on a 3-node cluster (R3, one stream leader step-down in the
// middle) and checks the history against a lock model: one holder at a
// time, fences strictly increasing, a release succeeds only for the
// current holder.
func TestLinearizableLeaseLock(t *testing.T) {
	runLeaseLinearizability(t, 0, leaseBackend)
}

// TestLinearizableKVLock is the same for kvlock's TryAcquire/Release.
func TestLinearizableKVLock(t *testing.T) {
	runLeaseLinearizability(t, 0, kvlockBackend)
}

// TestLinearizableKVLockSoak: kvlock under faults for $NATSCOORD_SOAK.
func TestLinearizableKVLockSoak(t *testing.T) {
	runLeaseLinearizability(t, soakDuration(t), kvlockBackend)
}

// tryLock tries once to take the lock; on success it returns the fence and
// a release function (nil error, an error matching kvlease.ErrLost, or an
// error of unknown outcome).
type tryLock func(key string) (fence uint64, release func() error, ok bool, err error)

// lockBackend sets up one client of a lock implementation on js, in its
// bucket.
type lockBackend struct {
	name   string
	bucket string
	create func(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (tryLock, func(), error)
}

// heldLock is what a backend's acquisition returns: a kvlease.Guard or a
// kvlock.Lock.
type heldLock interface {
	Release(ctx context.Context) error
}

// asTryLock is the one tryLock wrapper of the backends: acquire tries
// once, fence reads the holder's fencing token.
func asTryLock[H heldLock](acquire func(key string) (H, bool, error), fence func(H) uint64) tryLock {
	return func(key string) (uint64, func() error, bool, error) {
		held, ok, err := acquire(key)
		if err != nil || !ok {
			return 0, nil, ok, err
		}
		return fence(held), func() error { return held.Release(context.Background()) }, true, nil
	}
}

var leaseBackend = lockBackend{name: "kvlease", bucket: "lin_locks", create: func(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (tryLock, func(), error) {
	m, err := kvlease.NewManager(ctx, js, kvlease.Config{Bucket: bucket, Replicas: replicas, OpTimeout: 2 * time.Second})
	if err != nil {
		return nil, nil, err
	}
	closeFn := func() { _ = m.Close(context.Background()) }
	leases, err := lockFamily.Bind(m)
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	return asTryLock(func(key string) (*kvlease.Guard, bool, error) {
		// A long TTL: in this run leases end by release, not expiry (an
		// orphan is the model's one exception).
		return leases.TryAcquire(context.Background(), key, 30*time.Second)
	}, (*kvlease.Guard).Fence), closeFn, nil
}}

// kvlockBackendOf is kvlock's backend; acquire is one try of l's.
func kvlockBackendOf(name string, fair bool, acquire func(l *kvlock.Locker, key string) (*kvlock.Lock, bool, error)) lockBackend {
	return lockBackend{name: name, bucket: "lin_kvlock", create: func(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (tryLock, func(), error) {
		l, err := kvlock.New(ctx, js, kvlock.Config{Bucket: bucket, Replicas: replicas, TTL: 30 * time.Second, OpTimeout: 2 * time.Second, Fair: fair})
		if err != nil {
			return nil, nil, err
		}
		return asTryLock(func(key string) (*kvlock.Lock, bool, error) { return acquire(l, key) }, (*kvlock.Lock).Token),
			func() { _ = l.Close(context.Background()) }, nil
	}}
}

var kvlockBackend = kvlockBackendOf("kvlock", false, func(l *kvlock.Locker, key string) (*kvlock.Lock, bool, error) {
	return l.TryAcquire(context.Background(), key)
})

// kvlockFairBackend: kvlock in fair mode. A try is an Acquire bounded by
// 500 ms, so the four clients queue behind each other and most locks
// change hands by a release's hand-over to the longest waiter, not by a
// fresh acquisition. A wait that runs out is recorded with an unknown
// outcome: a waiter that gives up just as the lock is handed to it holds
// it for an instant (its Locker passes it on), which the model allows as
// an orphan.
var kvlockFairBackend = kvlockBackendOf("kvlock-fair", true, func(l *kvlock.Locker, key string) (*kvlock.Lock, bool, error) {
	actx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	k, err := l.Acquire(actx, key)
	return k, err == nil, err
})

// TestLinearizableKVLockFair: kvlock's fair mode (hand-over on release)
// under a leader step-down, checked against the lock model.
func TestLinearizableKVLockFair(t *testing.T) {
	runLeaseLinearizability(t, 0, kvlockFairBackend)
}

// TestLinearizableLeaseLockSoak is the same under node restarts and
// step-downs for $NATSCOORD_SOAK.
func TestLinearizableLeaseLockSoak(t *testing.T) {
	runLeaseLinearizability(t, soakDuration(t), leaseBackend)
}

func runLeaseLinearizability(t *testing.T, soak time.Duration, b lockBackend) {
	cc := newChaosCluster(t)
	retryCreate(t, func(ctx context.Context) error {
		_, closeFn, err := b.create(ctx, cc.c.JS, b.bucket, 3)
		if err == nil {
			closeFn()
		}
		return err
	})
	h := newHistory()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	opsPer := 60
	if soak > 0 {
		opsPer = math.MaxInt
	}
	var wg sync.WaitGroup
	for c := range 4 {
		js, closeFn, err := cc.connect(fmt.Sprintf("lin%d", c))
		require.NoError(t, err)
		t.Cleanup(closeFn)
		// Binding the bucket right after the previous test's cluster went
		// down can time out on a loaded machine: retry it like creation.
		var (
			try       tryLock
			closeLock func()
		)
		retryCreate(t, func(cctx context.Context) error {
			var err error
			try, closeLock, err = b.create(cctx, js, b.bucket, 1)
			return err
		})
		t.Cleanup(closeLock)
		// A fresh key every 100 operations of a client keeps each
		// partition of a long (soak) history small.
		wg.Go(func() {
			lockLinClient(ctx, cc, h, c, try, opsPer, func(i int) string { return fmt.Sprintf("L%d", i/100) })
		})
	}
	faults := injectLinFaults(ctx, cc, soak, streamOf(b.bucket))
	if soak > 0 {
		stop() // soak clients run until the faults end
	}
	wg.Wait()
	res := h.check(t, b.name, lockModel)
	f, _ := cc.faultSummary()
	report(t, "linearizability", fmt.Sprintf("linearizability, %s TryAcquire/Release: %d operations (%d with unknown outcome) by 4 clients, %d faults (%s): %s",
		b.name, len(h.ops), h.unknown, faults, f, res))
}

// lockLinClient runs up to ops TryAcquire/Release pairs as client c,
// recording them in h; key names the lock of the i-th operation.
func lockLinClient(ctx context.Context, cc *chaosCluster, h *history, c int, try tryLock, ops int, key func(i int) string) {
	for i := 0; i < ops && ctx.Err() == nil; i++ {
		key := key(i)
		call := h.now()
		fence, release, ok, err := try(key)
		if err != nil {
			h.add(c, call, lockIn{Key: key, Acquire: true}, lockOut{Unknown: true}, true)
			continue
		}
		h.add(c, call, lockIn{Key: key, Acquire: true}, lockOut{OK: ok, Fence: fence}, false)
		if !ok {
			cc.pause(ctx, time.Duration(rand.IntN(5))*time.Millisecond)
			continue
		}
		cc.pause(ctx, time.Duration(rand.IntN(5))*time.Millisecond)
		call = h.now()
		err = release()
		switch {
		case err == nil:
			h.add(c, call, lockIn{Key: key, Fence: fence}, lockOut{OK: true}, false)
		case errors.Is(err, kvlease.ErrLost):
			h.add(c, call, lockIn{Key: key, Fence: fence}, lockOut{}, false)
		default:
			h.add(c, call, lockIn{Key: key, Fence: fence}, lockOut{Unknown: true}, true)
		}
	}
}

// injectLinFaults steps a stream's leader down once (short run) or loops
// restarts and step-downs until soak has passed; it returns the count.
func injectLinFaults(ctx context.Context, cc *chaosCluster, soak time.Duration, streams ...string) int {
	if soak == 0 {
		cc.pause(ctx, 300*time.Millisecond)
		cc.stepDown(context.Background(), streams[0], faultStepDown)
		return 1
	}
	n := 0
	for start := time.Now(); time.Since(start) < soak; n += 2 {
		cc.pause(ctx, 2*time.Second)
		cc.restartNode(context.Background(), rand.IntN(3), time.Second, streams...)
		cc.pause(ctx, 2*time.Second)
		cc.stepDown(context.Background(), streams[rand.IntN(len(streams))], faultStepDown)
	}
	return n
}

// TestLinearizableLedger records Admit, Claim, Takeover, Release and
// Complete on four keys by four workers against a KVStore (R3, a step-down
// in the middle) and checks each key's history against the ledger's
// sequential specification (ledgerApply).
func TestLinearizableLedger(t *testing.T) {
	runLedgerLinearizability(t, 0)
}

// TestLinearizableLedgerSoak is the same under node restarts and
// step-downs for $NATSCOORD_SOAK, with a fresh key set every 200
// operations per worker so each key's history stays small enough to check.
func TestLinearizableLedgerSoak(t *testing.T) {
	runLedgerLinearizability(t, soakDuration(t))
}

func runLedgerLinearizability(t *testing.T, soak time.Duration) {
	cc := newChaosCluster(t)
	const bucket = "lin_tasks"
	retryCreate(t, func(ctx context.Context) error {
		_, err := kvledger.NewKVStore(ctx, cc.c.JS, kvledger.KVStoreConfig{Bucket: bucket, Replicas: 3})
		return err
	})
	h := newHistory()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	opsPer := 80
	if soak > 0 {
		opsPer = math.MaxInt
	}
	var wg sync.WaitGroup
	for w := range 4 {
		js, closeFn, err := cc.connect(fmt.Sprintf("lin%d", w))
		require.NoError(t, err)
		t.Cleanup(closeFn)
		l := openLedger(t, js, bucket)
		owner := fmt.Sprintf("w%d", w)
		// A fresh key set every 200 operations per worker.
		wg.Go(func() {
			ledgerLinWorker(ctx, h, w, owner, l, opsPer, 0, false, func(i int) string { return fmt.Sprintf("g%d-k%d", i/200, rand.IntN(4)) })
		})
	}
	faults := injectLinFaults(ctx, cc, soak, streamOf(bucket))
	if soak > 0 {
		stop() // soak clients run until the faults end
	}
	wg.Wait()
	res := h.check(t, "ledger", ledgerModel)
	f, _ := cc.faultSummary()
	report(t, "linearizability", fmt.Sprintf("linearizability, kvledger KVStore: %d operations (%d with unknown outcome) by 4 workers, %d faults (%s): %s",
		len(h.ops), h.unknown, faults, f, res))
}

// ledgerLinWorker runs up to ops random ledger operations as worker w
// (owner), recording them in h; key names the task of the i-th operation.
// After an operation of unknown outcome it pauses for backoff. With
// uniqueAdmits every Admit passes its own now (the model ignores it), so
// no two admissions store identical bytes.
func ledgerLinWorker(ctx context.Context, h *history, w int, owner string, l *kvledger.Ledger, ops int, backoff time.Duration,
	uniqueAdmits bool, key func(i int) string) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(logical int) time.Time { return base.Add(time.Duration(logical) * time.Minute) }
	admitAt := func(i int) time.Time {
		if uniqueAdmits {
			return at(0).Add(time.Duration(i*16+w) * time.Microsecond)
		}
		return at(0)
	}
	fences := map[string]uint64{}
	for i := 0; i < ops && ctx.Err() == nil; i++ {
		key := key(i)
		in := ledgerIn{Key: key, Owner: owner}
		switch r := rand.IntN(10); {
		case r < 2:
			in.Op, in.Seq = opAdmit, uint64(1+rand.IntN(3))
		case r < 5:
			in.Op = opClaim
		case r < 6:
			in.Op = opTakeover
		case r < 7:
			in.Op, in.Fence = opRelease, fences[key]
		default:
			in.Op, in.Fence = opComplete, fences[key]
		}
		if rand.IntN(8) == 0 && in.Fence > 0 {
			in.Fence-- // a stale token now and then
		}
		octx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		call := h.now()
		var out ledgerOut
		var err error
		k := kvledger.IdempotencyKey(key)
		switch in.Op {
		case opAdmit:
			out.OK, err = l.Admit(octx, "lin", k, kvledger.Sequence(in.Seq), nil, admitAt(i))
		case opClaim:
			var f kvledger.FenceToken
			f, err = l.Claim(octx, "lin", k, kvledger.OwnerID(owner), 60*time.Minute, at(0))
			out.Fence = uint64(f)
		case opTakeover:
			var f kvledger.FenceToken
			f, err = l.Takeover(octx, "lin", k, kvledger.OwnerID(owner), 60*time.Minute, at(120))
			out.Fence = uint64(f)
		case opRelease:
			err = l.Release(octx, "lin", k, kvledger.OwnerID(owner), kvledger.FenceToken(in.Fence), at(0))
		case opComplete:
			err = l.Complete(octx, "lin", k, kvledger.OwnerID(owner), kvledger.FenceToken(in.Fence), kvledger.StatusCompleted, at(0))
		}
		cancel()
		out.Err = errClass(err)
		if out.Err == "unknown" {
			h.add(w, call, in, ledgerOut{Unknown: true}, true)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			continue
		}
		if out.Err == "" && out.Fence > 0 {
			fences[key] = out.Fence
		}
		h.add(w, call, in, out, false)
	}
}

// errClass maps a ledger error to the model's error classes; anything else
// (timeouts, lost connections) is an unknown outcome.
func errClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, kvledger.ErrNoKey):
		return "nokey"
	case errors.Is(err, kvledger.ErrLeaseActive):
		return "active"
	case errors.Is(err, kvledger.ErrNotClaimed):
		return "notclaimed"
	case errors.Is(err, kvledger.ErrNotStale):
		return "notstale"
	case errors.Is(err, kvledger.ErrFenced):
		return "fenced"
	}
	return "unknown"
}
