package worker_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// With one worker and Concurrency 1, the ready tasks of a kind start
// highest priority first, and in the order they became ready within a
// priority. (No claims ahead: a task claimed ahead while the gate runs
// is claimed in the order it became ready; TestClaimAheadStartsByPriority
// covers the order among claimed tasks.)
func TestPriorityOrdersReadyTasks(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	g := startGated(t, e, worker.Config{Concurrency: 1, ClaimAhead: -1})
	w, gate := g.w, g.gate
	// The gate holds the worker's one slot while the others become ready.
	e.submit(kvledger.Submission{Key: "gate", Kind: "job"})
	natstest.Eventually(t, 10*time.Second, func() bool { return w.Stats().Running == 1 }, "the gate runs")
	subs := []struct {
		key  kvledger.IdempotencyKey
		prio int
	}{{"a", 0}, {"b", 1}, {"c", 1}, {"d", 5}, {"e", -2}, {"f", 5}}
	keys := []kvledger.IdempotencyKey{"gate"}
	for _, s := range subs {
		e.submit(kvledger.Submission{Key: s.key, Kind: "job", Priority: s.prio})
		require.Equal(t, s.prio, e.state(s.key).Priority, "the record keeps its priority")
		keys = append(keys, s.key)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return w.Stats().Ready == len(subs) }, "every task is in the ready set")
	close(gate)
	final := e.waitFinal(20*time.Second, keys...)
	for _, k := range keys {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status, k)
	}
	require.Equal(t, []kvledger.IdempotencyKey{"d", "f", "b", "c", "a", "e"}, g.started())
}

// Three workers on one server, each free to run 4 handlers at once, run
// at most GroupLimits["tenant"] = 2 tasks of the group at once between
// them; tasks of no group run beside them; a task that waited for a slot
// was not counted as an attempt.
func TestGroupLimitAcrossWorkers(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const limit, grouped, free = 2, 8, 4
	var running, peak atomic.Int32
	release := make(chan struct{})
	var freeDone atomic.Int32
	handler := func(ctx context.Context, task *worker.Task) error {
		if task.Group() == "" {
			freeDone.Add(1)
			return nil
		}
		now := running.Add(1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		defer running.Add(-1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}
	cfg := worker.Config{Concurrency: 4, GroupLimits: map[string]int{"tenant": limit}}
	var ws []*worker.Worker
	for i := range 3 {
		c := cfg
		c.Owner = kvledger.OwnerID(fmt.Sprintf("w%d", i))
		ws = append(ws, e.worker(c, func(w *worker.Worker) { require.NoError(t, w.Handle("job", handler)) }))
	}
	var keys []kvledger.IdempotencyKey
	for i := range grouped {
		k := kvledger.IdempotencyKey(fmt.Sprintf("g%d", i))
		e.submit(kvledger.Submission{Key: k, Kind: "job", Group: "tenant"})
		keys = append(keys, k)
	}
	for i := range free {
		k := kvledger.IdempotencyKey(fmt.Sprintf("f%d", i))
		e.submit(kvledger.Submission{Key: k, Kind: "job"})
		keys = append(keys, k)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return freeDone.Load() == free }, "tasks of no group run beside the full group")
	// Let the grouped tasks go one at a time, each time once the group
	// is full again (or nothing is left to fill it).
	for left := grouped; left > 0; left-- {
		want := int32(min(limit, left))
		natstest.Eventually(t, 10*time.Second, func() bool { return running.Load() == want }, "the group runs %d at once", want)
		require.LessOrEqual(t, peak.Load(), int32(limit))
		release <- struct{}{}
	}
	final := e.waitFinal(20*time.Second, keys...)
	require.LessOrEqual(t, peak.Load(), int32(limit), "never more than the limit at once across the workers")
	require.Equal(t, int32(limit), peak.Load())
	for _, k := range keys {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status, k)
		require.Equal(t, 1, final[k].Attempts, "%s: waiting for a slot is not an attempt: %+v %+v %+v %+v", k, final[k], ws[0].Stats(), ws[1].Stats(), ws[2].Stats())
	}
	for _, w := range ws {
		natstest.Eventually(t, 5*time.Second, func() bool { return w.Stats().Running == 0 }, "every attempt has ended")
	}
	// Every slot was given back.
	for _, k := range e.leaseKeys() {
		require.NotContains(t, k, ".g.", "slot %q still held", k)
	}
}

// A worker that dies holding its group's only slot loses it when the
// server expires it: another worker, which waited without claiming, then
// runs the group's tasks (the dead worker's, taken over, and its own).
func TestGroupSlotOfKilledWorkerComesBack(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const ttl = 2 * time.Second
	limits := map[string]int{"tenant": 1}
	jsA := natstest.JetStream(t, natstest.Connect(t, n.Server))
	ledA := e.ledgerOn(jsA)
	startedA := make(chan struct{}, 1)
	a := e.startOn(jsA, ledA, worker.Config{ClaimTTL: ttl, Owner: "A", GroupLimits: limits}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			startedA <- struct{}{}
			<-ctx.Done()
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "first", Kind: "job", Group: "tenant"})
	natstest.Recv(t, startedA, 10*time.Second, "A runs the first task")

	var killed atomic.Int64
	var startedB sync.Map
	b := e.worker(worker.Config{ClaimTTL: ttl, Owner: "B", GroupLimits: limits}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			startedB.Store(task.Key(), time.Now().UnixNano())
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "second", Kind: "job", Group: "tenant"})
	natstest.Eventually(t, 10*time.Second, func() bool { return b.Stats().Ready == 1 }, "B has the second task ready")
	require.Equal(t, kvledger.StatusPending, e.state("second").Status, "B waits for the slot without claiming")

	killed.Store(time.Now().UnixNano())
	jsA.Conn().Close() // A can no longer renew its slot or its lease
	final := e.waitFinal(ttl+10*time.Second, "first", "second")
	for _, k := range []kvledger.IdempotencyKey{"first", "second"} {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status, k)
		require.Equal(t, kvledger.OwnerID("B"), final[k].Owner, k)
		at, ok := startedB.Load(k)
		require.True(t, ok, k)
		require.Greater(t, at.(int64), killed.Load(), "%s started only after A's slot ended", k)
	}
	require.Equal(t, 1, final["second"].Attempts, "waiting for the slot is not an attempt")
	_ = closeWorker(a) // its connection is closed: errors are expected
}

// A worker that closes gives its slot back at once: the task it was
// running is released, and another worker runs it and the group's next
// task, before any TTL could have run out.
func TestGroupSlotOfClosedWorkerComesBack(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	limits := map[string]int{"tenant": 1}
	ttl := 30 * time.Second // far longer than the test's bound: only a release frees the slot in time
	startedA := make(chan struct{}, 1)
	a := e.startOn(n.JS, e.led, worker.Config{ClaimTTL: ttl, Owner: "A", GroupLimits: limits, DrainTimeout: -1}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			startedA <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}))
	})
	e.submit(kvledger.Submission{Key: "first", Kind: "job", Group: "tenant"})
	natstest.Recv(t, startedA, 10*time.Second, "A runs the first task")
	var startedB sync.Map
	b := e.worker(worker.Config{ClaimTTL: ttl, Owner: "B", GroupLimits: limits}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			startedB.Store(task.Key(), time.Now().UnixNano())
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "second", Kind: "job", Group: "tenant"})
	natstest.Eventually(t, 10*time.Second, func() bool { return b.Stats().Ready == 1 }, "B has the second task ready")
	closing := time.Now().UnixNano()
	require.NoError(t, closeWorker(a))
	final := e.waitFinal(10*time.Second, "first", "second")
	for _, k := range []kvledger.IdempotencyKey{"first", "second"} {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status, k)
		require.Equal(t, kvledger.OwnerID("B"), final[k].Owner, k)
		at, ok := startedB.Load(k)
		require.True(t, ok, k)
		require.Greater(t, at.(int64), closing, "%s started only after A gave its slot back", k)
	}
	require.Equal(t, 1, final["first"].Attempts, "the released attempt is not counted")
	require.Equal(t, 1, final["second"].Attempts)
}

func TestGroupLimitsConfig(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	for _, limits := range []map[string]int{
		{"g": 0}, {"g": -1}, {"g": 1025}, {"": 1}, {"\xff": 1}, {string(make([]byte, kvledger.MaxGroupBytes+1)): 1},
	} {
		_, err := worker.New(context.Background(), n.JS, e.led, worker.Config{LeaseBucket: e.leases, GroupLimits: limits})
		require.ErrorIs(t, err, worker.ErrInvalidConfig, "%q", limits)
	}
	// A slot key must fit a lease key: a long group on a ledger with a
	// long bucket name is refused up front, not retried for ever.
	store := natstest.Open(t, "ledger bucket", func(ctx context.Context) (*kvledger.KVStore, error) {
		return kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: strings.Repeat("b", 150)})
	})
	long, err := kvledger.New(store)
	require.NoError(t, err)
	group := strings.Repeat("é", kvledger.MaxGroupBytes/2) // escaped: 3 bytes per byte
	_, err = worker.New(context.Background(), n.JS, long, worker.Config{LeaseBucket: e.leases, GroupLimits: map[string]int{group: 2}})
	require.ErrorIs(t, err, worker.ErrInvalidConfig)
	require.Contains(t, err.Error(), "DefaultMaxKeyBytes")
	w, err := worker.New(context.Background(), n.JS, long, worker.Config{LeaseBucket: e.leases, GroupLimits: map[string]int{"tenant": 2}})
	require.NoError(t, err)
	require.NoError(t, w.Close(context.Background()))
}

// A worker whose ready task waits for a group slot sends nothing while
// it waits (no polling: the lease watch tells it when a slot frees up),
// and starts the task once the slot's holder gives it back.
func TestGroupWaitSendsNothing(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	limits := map[string]int{"tenant": 1}
	release := make(chan struct{})
	startedA := make(chan struct{}, 1)
	e.worker(worker.Config{ClaimTTL: 2 * time.Second, Owner: "A", GroupLimits: limits}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("hold", func(ctx context.Context, task *worker.Task) error {
			startedA <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "first", Kind: "hold", Group: "tenant"})
	natstest.Recv(t, startedA, 10*time.Second, "A holds the group's slot")

	nc := natstest.Connect(t, n.Server)
	js := natstest.JetStream(t, nc)
	startedB := make(chan time.Time, 1)
	b := e.startOn(js, e.ledgerOn(js), worker.Config{ClaimTTL: 2 * time.Second, Owner: "B", GroupLimits: limits}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			startedB <- time.Now()
			return nil
		}))
	})
	t.Cleanup(func() { require.NoError(t, closeWorker(b)) })
	e.submit(kvledger.Submission{Key: "second", Kind: "job", Group: "tenant"})
	natstest.Eventually(t, 10*time.Second, func() bool { return b.Stats().Ready == 1 && b.Stats().Running == 0 }, "B waits for the slot")

	before := nc.Stats()
	time.Sleep(time.Second) // the measurement interval itself; A renews its slot meanwhile
	after := nc.Stats()
	t.Logf("waiting second: out %d msgs / %d bytes, in %d msgs", after.OutMsgs-before.OutMsgs, after.OutBytes-before.OutBytes, after.InMsgs-before.InMsgs)
	require.Zero(t, after.OutMsgs-before.OutMsgs, "messages sent by a worker waiting for a group slot")
	require.Equal(t, kvledger.StatusPending, e.state("second").Status)

	released := time.Now()
	close(release)
	at := natstest.Recv(t, startedB, 5*time.Second, "B starts the task once the slot is free")
	t.Logf("picked up %v after the slot's holder finished", at.Sub(released))
	final := e.waitFinal(5*time.Second, "first", "second")
	require.Equal(t, kvledger.StatusCompleted, final["second"].Status)
	require.Equal(t, 1, final["second"].Attempts)
}

// Tasks waiting for their group's slot start, once it frees up, in
// priority order, and ready tasks of other groups are not held up behind
// them.
func TestGroupWaitKeepsPriority(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	g := startGated(t, e, worker.Config{Concurrency: 4, GroupLimits: map[string]int{"tenant": 1}})
	w, gate := g.w, g.gate
	e.submit(kvledger.Submission{Key: "gate", Kind: "job", Group: "tenant"})
	natstest.Eventually(t, 10*time.Second, func() bool { return w.Stats().Running == 1 }, "the gate holds the slot")
	keys := []kvledger.IdempotencyKey{"gate"}
	for i, prio := range []int{0, 2, 1, 2, -1} {
		k := kvledger.IdempotencyKey(fmt.Sprintf("t%d", i))
		e.submit(kvledger.Submission{Key: k, Kind: "job", Group: "tenant", Priority: prio})
		keys = append(keys, k)
	}
	e.submit(kvledger.Submission{Key: "other", Kind: "job", Group: "elsewhere"})
	require.Equal(t, kvledger.StatusCompleted, e.waitFinal(10*time.Second, "other")["other"].Status, "another group is not held up")
	natstest.Eventually(t, 10*time.Second, func() bool { return w.Stats().Ready == 5 && w.Stats().Running == 1 }, "the group's tasks wait")
	close(gate)
	final := e.waitFinal(20*time.Second, keys...)
	for _, k := range keys {
		require.Equal(t, 1, final[k].Attempts, k)
	}
	require.Equal(t, []kvledger.IdempotencyKey{"other", "t1", "t3", "t2", "t0", "t4"}, g.started())
}

// Workers that disagree on a group's limit share its slot keys: the
// largest limit bounds the group, and a worker stating a smaller one
// runs at most that many of the group's tasks itself.
func TestGroupLimitsDisagree(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const tasks = 8
	var total, peak, small, smallPeak atomic.Int32
	raise := func(p *atomic.Int32, v int32) {
		for {
			old := p.Load()
			if v <= old || p.CompareAndSwap(old, v) {
				return
			}
		}
	}
	release := make(chan struct{})
	handler := func(own *atomic.Int32, ownPeak *atomic.Int32) worker.Handler {
		return func(ctx context.Context, task *worker.Task) error {
			raise(&peak, total.Add(1))
			defer total.Add(-1)
			if own != nil {
				raise(ownPeak, own.Add(1))
				defer own.Add(-1)
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}
	}
	e.worker(worker.Config{Owner: "big", Concurrency: 8, GroupLimits: map[string]int{"tenant": 3}}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", handler(nil, nil)))
	})
	e.worker(worker.Config{Owner: "small", Concurrency: 8, GroupLimits: map[string]int{"tenant": 1}}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", handler(&small, &smallPeak)))
	})
	var keys []kvledger.IdempotencyKey
	for i := range tasks {
		k := kvledger.IdempotencyKey(fmt.Sprintf("t%d", i))
		e.submit(kvledger.Submission{Key: k, Kind: "job", Group: "tenant"})
		keys = append(keys, k)
	}
	for left := tasks; left > 0; left-- {
		want := int32(min(3, left))
		natstest.Eventually(t, 10*time.Second, func() bool { return total.Load() == want }, "the group runs %d at once", want)
		release <- struct{}{}
	}
	final := e.waitFinal(20*time.Second, keys...)
	for _, k := range keys {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status, k)
	}
	require.Equal(t, int32(3), peak.Load(), "the largest limit bounds the group")
	require.LessOrEqual(t, smallPeak.Load(), int32(1), "the worker stating 1 ran at most 1 at once")
}

// gated is a worker whose "job" handler holds the task "gate" until gate
// is closed and records the order in which the other tasks start.
type gated struct {
	w     *worker.Worker
	gate  chan struct{}
	mu    sync.Mutex
	order []kvledger.IdempotencyKey
}

func startGated(t *testing.T, e *env, cfg worker.Config) *gated {
	t.Helper()
	g := &gated{gate: make(chan struct{})}
	g.w = e.worker(cfg, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			if task.Key() == "gate" {
				select {
				case <-g.gate:
				case <-ctx.Done():
				}
				return nil
			}
			g.mu.Lock()
			g.order = append(g.order, task.Key())
			g.mu.Unlock()
			return nil
		}))
	})
	return g
}

// started returns the order in which the tasks other than the gate started.
func (g *gated) started() []kvledger.IdempotencyKey {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]kvledger.IdempotencyKey(nil), g.order...)
}
