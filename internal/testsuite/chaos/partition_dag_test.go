package chaos

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// dagWL runs the task runtime through a partition schedule: 3 in-process
// workers, one pinned to each node, share an R3 ledger bucket, an R3 claim
// lease bucket and an R3 events stream. As each phase starts (the cluster
// healthy) a fresh random DAG is admitted, its keys carrying the phase,
// and the workers run it while the phase's fault is applied. Handlers
// report their start and, before they succeed, their result to a
// fence-checking Resource per task, as in the task crash test. After the
// schedule every DAG must end as predict says, given the attempts whose
// claims were taken over (read from the events), and every completed
// record must carry the fence of the one success report its resource
// accepted.
type dagWL struct {
	phases      int // phases of the schedule, baseline included
	tasks       int // tasks per phase
	longs       int // long tasks per phase (they span the fault)
	longMS      int
	sleepFactor int           // every other handler sleeps randomDAG's 1-10 ms times this
	waitMax     time.Duration // bound on the wait for a phase's DAG to end

	r       *partRun
	admin   *kvledger.Ledger
	workers []*worker.Worker
	closed  sync.Once
	tr      *taskResources
	waiters sync.WaitGroup

	log syncBuffer // the workers' warnings, logged when a DAG does not end

	mu       sync.Mutex
	dags     map[int][]dagTask
	started  map[int]time.Time // phase -> when its DAG was admitted
	finalAt  map[int]time.Time // phase -> when all its tasks were final
	final    map[int]map[kvledger.IdempotencyKey]kvledger.TaskState
	waitErr  map[int]error
	attempts map[int]int // handler starts per phase
	lost     map[int]int // attempts whose outcome the worker could not record
	// stuckTotal counts tasks not final waitMax after admission.
	stuckTotal int
}

const (
	dagBucket      = "part_dag"
	dagLeaseBucket = "part_dag_claims"
	dagMaxAttempts = 3
	dagClaimTTL    = 2 * time.Second
)

// newDAGWL returns the workload with 80 tasks per phase, 3 of them long
// (2.5 s); the tests adjust the fields.
func newDAGWL(phases int) *dagWL {
	return &dagWL{phases: phases, tasks: 80, longs: 3, longMS: 2500, sleepFactor: 30, waitMax: 90 * time.Second}
}

func (w *dagWL) name() string { return "task DAG" }

func (w *dagWL) setup(t *testing.T, r *partRun) {
	w.r = r
	w.dags, w.started, w.finalAt = map[int][]dagTask{}, map[int]time.Time{}, map[int]time.Time{}
	w.final, w.waitErr = map[int]map[kvledger.IdempotencyKey]kvledger.TaskState{}, map[int]error{}
	w.attempts, w.lost = map[int]int{}, map[int]int{}
	w.tr = newTaskResources(nil)
	open := func(js jetstream.JetStream) *kvledger.Ledger {
		var l *kvledger.Ledger
		retryCreate(t, func(ctx context.Context) error {
			store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: dagBucket, Replicas: 3})
			if err != nil {
				return err
			}
			l, err = kvledger.New(store)
			return err
		})
		return l
	}
	w.admin = open(r.cc.c.JS)
	r.addStreams(streamOf(dagBucket), streamOf(dagLeaseBucket))
	for i := range r.cc.c.Size() {
		name := fmt.Sprintf("dagworker%d", i)
		js, closeFn, err := r.cc.connect(name)
		if err != nil {
			t.Fatalf("task DAG: connect %s: %v", name, err)
		}
		t.Cleanup(closeFn)
		l := open(js)
		var wk *worker.Worker
		retryCreate(t, func(ctx context.Context) error {
			wk, err = worker.New(ctx, js, l, worker.Config{
				Owner: kvledger.OwnerID(name), ClaimTTL: dagClaimTTL, Concurrency: 4, MaxAttempts: dagMaxAttempts,
				BackoffBase: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, DrainTimeout: time.Second,
				OpTimeout: 2 * time.Second, LeaseBucket: dagLeaseBucket, LeaseReplicas: 3, Observer: w,
				Logger: slog.New(slog.NewTextHandler(&w.log, &slog.HandlerOptions{Level: slog.LevelWarn})).With("worker", name),
			})
			return err
		})
		if err := worker.HandleJSON(wk, "dag", w.handler(name)); err != nil {
			t.Fatalf("task DAG: handler: %v", err)
		}
		w.workers = append(w.workers, wk)
	}
	t.Cleanup(w.closeWorkers)
}

// handler does what a task's payload says, reporting to the task's
// resource when it starts and before it succeeds; a refused report fails
// the attempt (its claim was taken over).
func (w *dagWL) handler(name string) func(ctx context.Context, t *worker.Task, d dagTask) error {
	return func(ctx context.Context, t *worker.Task, d dagTask) error {
		rep := func(phase string) error {
			if !w.tr.record(taskReport{Phase: phase, Worker: name, Key: string(t.Key()), Fence: uint64(t.Fence()), Attempt: t.Attempt()}) {
				return fmt.Errorf("resource refused %s of %s with fence %d", phase, t.Key(), t.Fence())
			}
			return nil
		}
		return runDAGTask(ctx, t, d, rep)
	}
}

// OnStart and OnFinish count attempts and unknown outcomes per phase.
func (w *dagWL) OnStart(_ context.Context, e worker.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.attempts[keyPhase(string(e.Key))]++
}

func (w *dagWL) OnFinish(_ context.Context, e worker.Event) {
	if e.Result != worker.ResultLost {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lost[keyPhase(string(e.Key))]++
}

func (w *dagWL) run(_ context.Context, r *partRun, _ *sync.WaitGroup) {
	// The workers outlive the schedule's clients: the DAGs of the last
	// phases must still end, so results closes them.
	for _, wk := range w.workers {
		retryOp(r, func(ctx context.Context) error { return wk.Start(ctx) }, "start a DAG worker")
	}
}

func (w *dagWL) closeWorkers() {
	w.closed.Do(func() {
		var wg sync.WaitGroup
		for _, wk := range w.workers {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				_ = wk.Close(ctx)
			})
		}
		wg.Wait()
	})
}

// mark admits phase p's DAG (the previous fault is healed and the cluster
// has recovered) and starts waiting for it to end.
func (w *dagWL) mark(p int) {
	if p >= w.phases {
		return
	}
	rng := rand.New(rand.NewPCG(uint64(p), uint64(time.Now().UnixNano())))
	dag := randomDAG(rng, w.tasks, dagMaxAttempts, w.longs, w.longMS)
	rename := map[kvledger.IdempotencyKey]kvledger.IdempotencyKey{}
	for i := range dag {
		k := kvledger.IdempotencyKey(phaseKey(p, string(dag[i].Key)))
		rename[dag[i].Key], dag[i].Key = k, k
		for j, n := range dag[i].Needs {
			dag[i].Needs[j] = rename[n]
		}
		if !dag[i].Long {
			dag[i].SleepMS *= w.sleepFactor
		}
	}
	subs := make([]kvledger.Submission, len(dag))
	keys := make([]kvledger.IdempotencyKey, len(dag))
	for i, d := range dag {
		subs[i] = kvledger.Submission{Key: d.Key, Seq: 1, Task: d, Needs: d.Needs, Kind: "dag", MaxAttempts: dagMaxAttempts}
		keys[i] = d.Key
	}
	// A retry after an unknown outcome finds the admitted ones already
	// there (false): admission by key is idempotent.
	retryOp(w.r, func(ctx context.Context) error {
		_, err := w.admin.AdmitMany(ctx, "parent", subs)
		return err
	}, "admit phase %d's DAG", p)
	w.mu.Lock()
	w.dags[p], w.started[p] = dag, time.Now()
	w.mu.Unlock()
	w.waiters.Go(func() {
		// WaitFinal watches the bucket; a watch broken by a fault is
		// retried until every task is final, for at most waitMax.
		deadline := time.Now().Add(w.waitMax)
		for {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			final, err := w.admin.WaitFinal(ctx, keys...)
			cancel()
			w.mu.Lock()
			if err == nil || time.Now().After(deadline) {
				w.final[p], w.waitErr[p], w.finalAt[p] = final, err, time.Now()
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// retryOp retries op (each try bounded by 10 s) for up to a
// minute, failing the run's test if it never succeeds.
func retryOp(r *partRun, op func(ctx context.Context) error, format string, args ...any) {
	r.t.Helper()
	var last error
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		last = op(ctx)
		cancel()
		if last == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.t.Fatalf("task DAG: %s: %v", fmt.Sprintf(format, args...), last)
}

func (w *dagWL) results(t *testing.T, r *partRun, phases int) []phaseCounts {
	w.waiters.Wait()
	w.closeWorkers()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	killed := killedAttempts(t, ctx, r.cc.c.JS, dagBucket)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tr.mu.Lock()
	defer w.tr.mu.Unlock()
	out := make([]phaseCounts, phases)
	// The overlap checker: every handler here returns when its context
	// ends, so no two runs of a task may overlap, whatever the fault.
	runs, overlaps := w.tr.overlapsLocked(func(taskStart) time.Time { return time.Time{} }, func(a, b taskStart) bool { return false })
	overlapsOf := map[int]int{}
	for _, o := range overlaps {
		overlapsOf[keyPhase(o.key)]++
		t.Logf("task DAG: two runs at once: %s", o.what)
	}
	t.Logf("task DAG: %d handler runs, %d overlapping", runs, len(overlaps))
	logWorkers := false
	defer func() {
		if logWorkers {
			t.Logf("task DAG: the workers' warnings:\n%s", w.log.String())
		}
	}()
	for p := range out {
		dag := w.dags[p]
		if dag == nil {
			continue
		}
		c := phaseCounts{ops: w.attempts[p], unknown: w.lost[p], violations: overlapsOf[p]}
		final := w.final[p]
		stuck := 0
		if err := w.waitErr[p]; err != nil {
			stuck = len(dag) - len(final)
			w.stuckTotal += stuck
			t.Logf("task DAG phase %d: %d of %d tasks final after %v: %v", p, len(final), len(dag), w.waitMax, err)
			w.logUnfinished(t, p, dag, final)
			logWorkers = true
		}
		want := predict(dag, dagMaxAttempts, killed)
		counts := map[kvledger.Status]int{}
		takeovers, refused := 0, 0
		for _, d := range dag {
			takeovers += len(killed[d.Key])
			rec, ok := final[d.Key]
			if !ok {
				continue
			}
			c.acquisitions++ // a task finished
			exp := want[d.Key]
			if rec.Status != exp.status || (exp.attempts > 0 && rec.Attempts != exp.attempts) {
				c.violations++
				t.Logf("task DAG phase %d: %s ended %s after %d attempts (%q), want %s after %d (task %+v, taken over in attempts %v)",
					p, d.Key, rec.Status, rec.Attempts, rec.LastError, exp.status, exp.attempts, d, killed[d.Key])
				continue
			}
			counts[rec.Status]++
			res := w.tr.res[string(d.Key)]
			if res != nil {
				st := res.Stats()
				refused += st.Refused
				for _, v := range st.Violations {
					c.violations++
					t.Logf("task DAG phase %d: %s: fencing violation: %s", p, d.Key, v)
				}
			}
			if rec.Status == kvledger.StatusCompleted && uint64(rec.Fence) != w.tr.doneFence[string(d.Key)] {
				c.violations++
				t.Logf("task DAG phase %d: %s completed with fence %d, the accepted success report had fence %d",
					p, d.Key, rec.Fence, w.tr.doneFence[string(d.Key)])
			}
		}
		took := w.finalAt[p].Sub(w.started[p])
		after := "before the heal"
		if h := r.healedAt(p); !h.IsZero() && w.finalAt[p].After(h) {
			after = fmt.Sprintf("%v after the heal", w.finalAt[p].Sub(h).Round(10*time.Millisecond))
		}
		if stuck > 0 {
			after = fmt.Sprintf("%d NEVER FINISHED (waited %v)", stuck, w.waitMax)
		}
		c.detail = fmt.Sprintf("%d tasks: %d completed, %d failed, %d blocked as predicted; %d takeovers, %d stale reports refused, %d runs overlapping; all final %v after admission, %s",
			len(dag), counts[kvledger.StatusCompleted], counts[kvledger.StatusFailed], counts[kvledger.StatusBlocked],
			takeovers, refused, overlapsOf[p], took.Round(10*time.Millisecond), after)
		out[p] = c
	}
	return out
}

// logUnfinished logs, for a DAG that did not end, each task that is not
// final as stored (read again now) and as its last handler reports saw it.
func (w *dagWL) logUnfinished(t *testing.T, p int, dag []dagTask, final map[kvledger.IdempotencyKey]kvledger.TaskState) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, d := range dag {
		if _, ok := final[d.Key]; ok {
			continue
		}
		st, found, err := w.admin.State(ctx, d.Key)
		lease := "no lease key"
		if kv, kerr := w.r.cc.c.JS.KeyValue(ctx, dagLeaseBucket); kerr == nil {
			if e, gerr := kv.Get(ctx, "kvledger."+dagBucket+"."+string(d.Key)); gerr == nil {
				lease = fmt.Sprintf("lease key at revision %d, %d bytes, op %v", e.Revision(), len(e.Value()), e.Operation())
			} else {
				lease = gerr.Error()
			}
		}
		var needs []string
		for _, n := range d.Needs {
			ns, _, _ := w.admin.State(ctx, n)
			needs = append(needs, fmt.Sprintf("%s %s (blocked by %q, attempts %d)", n, ns.Status, ns.BlockedBy, ns.Attempts))
		}
		t.Logf("task DAG phase %d: not final: %s %s attempts %d fence %d owner %q (found %v, err %v); needs %v; claim lease: %s; starts %+v",
			p, d.Key, st.Status, st.Attempts, st.Fence, st.Owner, found, err, needs, lease, w.tr.starts[string(d.Key)])
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var _ worker.Observer = (*dagWL)(nil)

// dagShortSchedule is every fault of the short schedule once, shorter,
// so that the DAG run fits in `make test`.
func dagShortSchedule() []partFault {
	return []partFault{
		faultLeaderIsolated(4 * time.Second),
		faultSplit(3 * time.Second),
		faultFlapping(2, time.Second, 600*time.Millisecond),
		faultOneWay(3*time.Second, true),
		faultPartitionRestart(4*time.Second, time.Second),
	}
}

// TestPartitionsDAG runs the task runtime and its DAG oracle through a
// short form of the partition schedule (60 tasks per fault).
func TestPartitionsDAG(t *testing.T) {
	sched := dagShortSchedule()
	w := newDAGWL(len(sched) + 1)
	w.tasks, w.longs, w.longMS, w.waitMax = 60, 2, 2000, 30*time.Second
	runPartitionsDAG(t, sched, w)
}

// TestPartitionsDAGSoak runs it through the soak schedule for about
// $NATSCOORD_SOAK (100 tasks per fault).
func TestPartitionsDAGSoak(t *testing.T) {
	sched := soakSchedule(soakDuration(t))
	w := newDAGWL(len(sched) + 1)
	w.tasks, w.sleepFactor = 100, 50
	runPartitionsDAG(t, sched, w)
}

func runPartitionsDAG(t *testing.T, sched []partFault, w *dagWL) {
	cc, net := newPartitionCluster(t)
	start := time.Now()
	res := runPartitionSchedule(t, cc, net, time.Second, sched, w)
	violations, finished := 0, 0
	for p, r := range res {
		c := r.counts[w.name()]
		violations += c.violations
		finished += c.acquisitions
		line := fmt.Sprintf("partition DAG phase %d, %s (window %v", p, r.fault, r.window.Round(100*time.Millisecond))
		if p > 0 {
			line += fmt.Sprintf(", writable %v, caught up %v after the heal", r.writable.Round(10*time.Millisecond), r.caughtUp.Round(10*time.Millisecond))
		}
		report(t, "partitions", fmt.Sprintf("%s): attempts %d, finished %d, violations %d, unknown %d; %s",
			line, c.ops, c.acquisitions, c.violations, c.unknown, c.detail))
	}
	w.mu.Lock()
	stuck := w.stuckTotal
	w.mu.Unlock()
	report(t, "partitions", fmt.Sprintf("partition DAG: %d faults in %v, %d tasks finished, violations %d, tasks never finished %d",
		len(sched), time.Since(start).Round(time.Second), finished, violations, stuck))
	require.Zero(t, violations, "violations under partitions")
	require.Positive(t, finished, "no task finished")
	// Every task must end: a pending task whose need failed or was
	// blocked is blocked even when the failure's walk was cut short.
	require.Zero(t, stuck, "tasks never finished")
}
