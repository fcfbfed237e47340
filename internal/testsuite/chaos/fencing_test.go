package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvlock"
)

const (
	lockBucket = "chaos_locks"
	kvlkBucket = "chaos_kvlock"
	taskBucket = "chaos_tasks"
	lockTTL    = 2 * time.Second
	taskLease  = 2 * time.Second
)

var lockFamily = kvlease.Define[string]("chaos", kvlease.StringCodec{})

// TestFencingUnderFaults is the short fencing-safety run of `make test`:
// lease holders and ledger workers on a 3-node cluster (R3 buckets) while
// each fault kind but the full-cluster restart is injected once.
func TestFencingUnderFaults(t *testing.T) {
	runFencing(t, 0)
}

// TestFencingSoak is the long run (`make soak`): faults, including
// full-cluster restarts, in a loop for $NATSCOORD_SOAK.
func TestFencingSoak(t *testing.T) {
	runFencing(t, soakDuration(t))
}

// fencing is one fencing-safety run.
type fencing struct {
	cc       *chaosCluster
	lockRes  *Resource
	kvlkRes  *Resource
	taskMu   sync.Mutex
	taskRes  map[kvledger.IdempotencyKey]*Resource
	open     []kvledger.IdempotencyKey // admitted, not yet completed
	nextTask int

	pauseHolder, pauseWorker, pauseLocker chan struct{} // one token = pause the next one

	acquisitions, lockAcquisitions      counter
	claims, completions                 counter
	zombieRefused, zombieFenced         counter
	honestWrites, transient, reconnects counter
}

// newFencing creates the R3 buckets of a fencing run on cc.
func newFencing(t *testing.T, cc *chaosCluster) *fencing {
	f := &fencing{
		cc: cc, lockRes: NewResource(), kvlkRes: NewResource(),
		taskRes:     map[kvledger.IdempotencyKey]*Resource{},
		pauseHolder: make(chan struct{}, 1), pauseWorker: make(chan struct{}, 1),
		pauseLocker: make(chan struct{}, 1),
	}
	retryCreate(t, func(ctx context.Context) error {
		m, err := kvlease.NewManager(ctx, f.cc.c.JS, kvlease.Config{Bucket: lockBucket, Replicas: 3})
		if err != nil {
			return err
		}
		return m.Close(ctx)
	})
	retryCreate(t, func(ctx context.Context) error {
		_, err := kvledger.NewKVStore(ctx, f.cc.c.JS, kvledger.KVStoreConfig{Bucket: taskBucket, Replicas: 3})
		return err
	})
	retryCreate(t, func(ctx context.Context) error {
		l, err := kvlock.New(ctx, f.cc.c.JS, kvlock.Config{Bucket: kvlkBucket, Replicas: 3})
		if err != nil {
			return err
		}
		return l.Close(ctx)
	})
	return f
}

// start runs the clients (3 kvlease, 2 kvlock, 3 ledger workers) until
// ctx ends, on wg.
func (f *fencing) start(ctx context.Context, wg *sync.WaitGroup) {
	for i := range 3 {
		wg.Go(func() { f.lockClient(ctx, fmt.Sprintf("lock%d", i)) })
	}
	for i := range 2 {
		wg.Go(func() { f.kvlockClient(ctx, fmt.Sprintf("lockk%d", i)) })
	}
	for i := range 3 {
		wg.Go(func() { f.ledgerWorker(ctx, fmt.Sprintf("task%d", i)) })
	}
}

// fencingTotals is a snapshot of a fencing run's counters.
type fencingTotals struct {
	lease, kvlock, tasks                    Stats
	acquisitions, lockAcquisitions          int64
	claims, completions, transient, reconns int64
}

func (t fencingTotals) violations() int {
	return len(t.lease.Violations) + len(t.kvlock.Violations) + len(t.tasks.Violations)
}

func (f *fencing) totals() fencingTotals {
	var ts Stats
	f.taskMu.Lock()
	for _, r := range f.taskRes {
		s := r.Stats()
		ts.Accepted += s.Accepted
		ts.Refused += s.Refused
		ts.Holders += s.Holders
		ts.Violations = append(ts.Violations, s.Violations...)
	}
	f.taskMu.Unlock()
	return fencingTotals{
		lease: f.lockRes.Stats(), kvlock: f.kvlkRes.Stats(), tasks: ts,
		acquisitions: f.acquisitions.load(), lockAcquisitions: f.lockAcquisitions.load(),
		claims: f.claims.load(), completions: f.completions.load(),
		transient: f.transient.load(), reconns: f.reconnects.load(),
	}
}

func runFencing(t *testing.T, soak time.Duration) {
	f := newFencing(t, newChaosCluster(t))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	f.start(ctx, &wg)

	// The injector runs in this goroutine; the clients run until it is done.
	fctx := context.Background()
	cc := f.cc
	streams := []string{streamOf(lockBucket), streamOf(taskBucket), streamOf(kvlkBucket)}
	round := func(full bool) {
		cc.pause(fctx, time.Second)
		cc.restartNode(fctx, rand.IntN(3), time.Second, streams...)
		cc.pause(fctx, time.Second)
		cc.stepDown(fctx, streamOf(lockBucket), faultStepDown)
		f.pauseHolder <- struct{}{}
		cc.count(faultPauseHolder)
		cc.pause(fctx, time.Second)
		cc.stepDown(fctx, streamOf(kvlkBucket), faultStepDown)
		f.pauseLocker <- struct{}{}
		cc.count(faultPauseHolder)
		cc.pause(fctx, time.Second)
		cc.stepDown(fctx, streamOf(taskBucket), faultStepDownTask)
		f.pauseWorker <- struct{}{}
		cc.count(faultPauseWorker)
		cc.pause(fctx, time.Second)
		if cc.cut("lock") {
			cc.count(faultConnCut)
		}
		if cc.cut("task") {
			cc.count(faultConnCut)
		}
		if full {
			cc.pause(fctx, time.Second)
			cc.fullRestart(fctx, streams...)
		}
		cc.pause(fctx, 5*time.Second) // let the paused ones be overtaken
	}
	start := time.Now()
	if soak == 0 {
		round(false)
	} else {
		for time.Since(start) < soak {
			round(true)
		}
	}
	stop()
	wg.Wait()

	tot := f.totals()
	ls, ks, ts := tot.lease, tot.kvlock, tot.tasks
	faults, nfaults := cc.faultSummary()
	violations := tot.violations()
	report(t, "fencing", fmt.Sprintf("fencing (%v, 3 nodes, R3): kvlease acquisitions %d (resource accepted %d writes, refused %d stale), "+
		"kvlock acquisitions %d (accepted %d, refused %d), "+
		"ledger claims %d, completions %d (resource accepted %d, refused %d); paused holders refused %d, stale Complete fenced %d; "+
		"faults %d (%s); transient client errors %d, reconnects %d; violations %d",
		time.Since(start).Round(time.Second), f.acquisitions.load(), ls.Accepted, ls.Refused,
		f.lockAcquisitions.load(), ks.Accepted, ks.Refused,
		f.claims.load(), f.completions.load(), ts.Accepted, ts.Refused, f.zombieRefused.load(), f.zombieFenced.load(),
		nfaults, faults, f.transient.load(), f.reconnects.load(), violations))
	require.Empty(t, ls.Violations, "lease resource")
	require.Empty(t, ts.Violations, "task resources")
	require.Empty(t, ks.Violations, "kvlock resource")
	require.Positive(t, f.lockAcquisitions.load())
	require.Positive(t, f.acquisitions.load())
	require.Positive(t, f.completions.load())
	require.Positive(t, f.zombieRefused.load(), "a paused holder must have been fenced off at least once")
}

// lockClient contends on one lease with its own connection; a cut
// connection makes it reconnect with a new manager.
func (f *fencing) lockClient(ctx context.Context, name string) {
	f.sessions(ctx, name, func(js jetstream.JetStream) error {
		m, err := kvlease.NewManager(ctx, js, kvlease.Config{Bucket: lockBucket, Holder: name, OpTimeout: 2 * time.Second})
		if err != nil {
			return err
		}
		defer within(10*time.Second, m.Close)
		leases, err := lockFamily.Bind(m)
		if err != nil {
			return err
		}
		f.lockLoop(ctx, name, js.Conn().IsClosed, leases)
		return nil
	})
}

// sessions runs a client until ctx ends, one session per connection:
// session returns when its connection is cut (or fails to set up, a
// transient error), and the client reconnects.
func (f *fencing) sessions(ctx context.Context, name string, session func(js jetstream.JetStream) error) {
	for ctx.Err() == nil {
		js, closeFn, err := f.cc.connect(name)
		if err != nil {
			f.transient.add()
			f.cc.pause(ctx, 100*time.Millisecond)
			continue
		}
		if err := session(js); err != nil {
			f.transient.add()
		}
		closeFn()
		f.reconnects.add()
	}
}

// within runs an end-of-session call (a Release, a Close) bounded by d and
// independent of the run's context, ignoring its error: a fault may have
// made it fail, and the checks judge only what the resource saw.
func within(d time.Duration, end func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = end(ctx)
}

// writeHonestly writes to res n times under fence while valid holds, gap
// apart (cut short when ctx ends): the work of a holder that is not
// paused.
func (f *fencing) writeHonestly(ctx context.Context, res *Resource, section string, fence uint64, valid func() error, n int, gap time.Duration) {
	for range n {
		if _, err := res.Write(section, fence, valid); err != nil {
			return
		}
		f.honestWrites.add()
		f.cc.pause(ctx, gap)
	}
}

// zombieWrite plays a holder that was paused: it writes under fence once
// (accepted only while valid still holds), waits until another holder has
// written under a higher fence, then writes under its old fence again,
// which res must refuse. It reports whether that takeover came in time
// (false when the run ended first: nothing to prove).
func (f *fencing) zombieWrite(ctx context.Context, res *Resource, section string, fence uint64, valid func() error) bool {
	if _, err := res.Write(section, fence, valid); err == nil {
		f.honestWrites.add()
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if res.WaitAbove(wctx, fence) != nil {
		return false
	}
	if ok, _ := res.Write(section, fence, nil); !ok {
		f.zombieRefused.add()
	}
	return true
}

func (f *fencing) lockLoop(ctx context.Context, name string, closed func() bool, leases kvlease.Leases[string]) {
	for i := 0; ctx.Err() == nil && !closed(); i++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		g, ok, err := leases.Acquire(context.WithoutCancel(actx), "resource", lockTTL, 4*time.Second)
		cancel()
		if err != nil || !ok {
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				f.transient.add()
				// A client whose connection is reconnecting fails at once:
				// without a pause it would spin.
				f.cc.pause(ctx, 20*time.Millisecond)
			}
			continue
		}
		f.acquisitions.add()
		section := fmt.Sprintf("%s#%d", name, i)
		if err := g.StartRenewing(0); err != nil {
			panic(err)
		}
		select {
		case <-f.pauseHolder:
			f.zombieLock(ctx, section, g)
			continue
		default:
		}
		f.writeHonestly(g.Context(), f.lockRes, section, g.Fence(), g.Err, 5, 20*time.Millisecond)
		within(5*time.Second, g.Release)
	}
}

// zombieLock plays a holder that stops renewing (a process pause), keeps
// working, and writes after another holder has taken the lease: the
// resource must refuse it.
func (f *fencing) zombieLock(ctx context.Context, section string, g *kvlease.Guard) {
	g.StopRenewing()
	f.zombieWrite(ctx, f.lockRes, section, g.Fence(), g.Err)
}

// ledgerWorker claims open tasks, writes under the claim's fence and
// completes them; a cut connection makes it reconnect.
func (f *fencing) ledgerWorker(ctx context.Context, name string) {
	f.sessions(ctx, name, func(js jetstream.JetStream) error {
		store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: taskBucket})
		if err != nil {
			return err
		}
		l, err := kvledger.New(store)
		if err != nil {
			return err
		}
		f.workLoop(ctx, name, js.Conn().IsClosed, l)
		return nil
	})
}

// pick returns a random open task, admitting new ones while fewer than 6
// are open.
func (f *fencing) pick(ctx context.Context, l *kvledger.Ledger) (kvledger.IdempotencyKey, *Resource, error) {
	f.taskMu.Lock()
	defer f.taskMu.Unlock()
	for len(f.open) < 6 {
		key := kvledger.IdempotencyKey(fmt.Sprintf("t%d", f.nextTask))
		octx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := l.Admit(octx, "chaos", key, 1, nil, time.Now())
		cancel()
		if err != nil {
			return "", nil, err
		}
		f.nextTask++
		f.open = append(f.open, key)
		f.taskRes[key] = NewResource()
	}
	key := f.open[rand.IntN(len(f.open))]
	return key, f.taskRes[key], nil
}

func (f *fencing) done(key kvledger.IdempotencyKey) {
	f.taskMu.Lock()
	defer f.taskMu.Unlock()
	for i, k := range f.open {
		if k == key {
			f.open = append(f.open[:i], f.open[i+1:]...)
			return
		}
	}
}

func (f *fencing) workLoop(ctx context.Context, owner string, closed func() bool, l *kvledger.Ledger) {
	for ctx.Err() == nil && !closed() {
		key, res, err := f.pick(ctx, l)
		if err != nil {
			f.transient.add()
			continue
		}
		now := time.Now()
		octx, cancel := context.WithTimeout(ctx, 3*time.Second)
		fence, err := l.Claim(octx, "chaos", key, kvledger.OwnerID(owner), taskLease, now)
		cancel()
		switch {
		case errors.Is(err, kvledger.ErrLeaseActive):
			f.cc.pause(ctx, 10*time.Millisecond) // someone works on it; try another
			continue
		case errors.Is(err, kvledger.ErrNotClaimed):
			f.done(key)
			continue
		case err != nil:
			f.transient.add()
			continue
		}
		f.claims.add()
		until := now.Add(taskLease)
		section := fmt.Sprintf("%s@%s#%d", owner, key, fence)
		valid := func() error {
			if time.Now().Before(until) {
				return nil
			}
			return errors.New("claim expired")
		}
		select {
		case <-f.pauseWorker:
			f.zombieTask(ctx, l, key, owner, section, uint64(fence), res, valid)
			continue
		default:
		}
		f.writeHonestly(ctx, res, section, uint64(fence), valid, 3, 10*time.Millisecond)
		octx, cancel = context.WithTimeout(ctx, 3*time.Second)
		err = l.Complete(octx, "chaos", key, kvledger.OwnerID(owner), fence, kvledger.StatusCompleted, time.Now())
		cancel()
		if err == nil {
			f.completions.add()
			f.done(key)
		} else if !errors.Is(err, kvledger.ErrFenced) && !errors.Is(err, kvledger.ErrNotClaimed) {
			// Refused as fenced (a newer claim took it, finished or
			// not), or as not claimed at the caller's own fence (its
			// claim was blocked, or an earlier try of this Complete
			// landed unanswered): both are the fence at work.
			f.transient.add()
		}
	}
}

// zombieTask plays a worker paused past its lease: another worker takes
// the task over (Claim of a stale claim), then the paused one wakes and
// writes and completes with its old fence; both must be refused.
func (f *fencing) zombieTask(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, owner, section string,
	fence uint64, res *Resource, valid func() error) {
	if !f.zombieWrite(ctx, res, section, fence, valid) {
		return
	}
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := l.Complete(octx, "chaos", key, kvledger.OwnerID(owner), kvledger.FenceToken(fence), kvledger.StatusCompleted, time.Now())
	// Fenced, also when the taker has finished already (a stale token is
	// judged before the record's status); not claimed only when its own
	// claim ended another way (blocked) before any takeover.
	if errors.Is(err, kvledger.ErrFenced) || errors.Is(err, kvledger.ErrNotClaimed) {
		f.zombieFenced.add()
	}
}

// kvlockClient contends on one kvlock lock (TTL 2s, no watchdog: each
// critical section is shorter than the validity window) with its own
// connection; a cut connection makes it reconnect with a new Locker.
func (f *fencing) kvlockClient(ctx context.Context, name string) {
	f.sessions(ctx, name, func(js jetstream.JetStream) error {
		l, err := kvlock.New(ctx, js, kvlock.Config{Bucket: kvlkBucket, TTL: lockTTL, OpTimeout: 2 * time.Second, Holder: name})
		if err != nil {
			return err
		}
		defer within(10*time.Second, l.Close)
		for i := 0; ctx.Err() == nil && !js.Conn().IsClosed(); i++ {
			f.kvlockSection(ctx, l, fmt.Sprintf("%s#%d", name, i))
		}
		return nil
	})
}

func (f *fencing) kvlockSection(ctx context.Context, l *kvlock.Locker, section string) {
	actx, cancel := context.WithTimeout(ctx, 4*time.Second)
	lk, err := l.Acquire(actx, "resource")
	cancel()
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			f.transient.add()
			f.cc.pause(ctx, 20*time.Millisecond) // do not spin on instant failures
		}
		return
	}
	f.lockAcquisitions.add()
	select {
	case <-f.pauseLocker: // paused: no renewal, no release, wakes late
		f.zombieWrite(ctx, f.kvlkRes, section, lk.Token(), lk.Err)
		return
	default:
	}
	f.writeHonestly(lk.Context(), f.kvlkRes, section, lk.Token(), lk.Err, 5, 20*time.Millisecond)
	within(5*time.Second, lk.Release)
}
