package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// The task crash test: a random DAG of 200 tasks with random handler
// failures runs on 4 worker processes (this test binary re-executed in the
// "taskworker" role); one worker is SIGKILLed while it runs a long
// handler, another drained while it runs one. Every handler reports to
// this process over NATS (the "taskres.*" subjects) when it starts,
// before it reports success and as it returns, and this process keeps a
// fence-checking Resource per task for those reports and checks that no
// two runs of a task overlapped (overlapsLocked).
const (
	crashTasks       = 200
	crashWorkers     = 4
	crashConcurrency = 4
	crashMaxAttempts = 3
	crashTTL         = 2 * time.Second        // the workers' claim TTL
	crashLongMS      = 1500                   // a long handler's run time
	crashLongs       = 4                      // long tasks in the DAG
	crashDrain       = 300 * time.Millisecond // the workers' DrainTimeout, shorter than a long handler
)

// taskReport is a handler's message to the parent.
type taskReport struct {
	Phase   string `json:"phase"` // "start", "done" (before it succeeds) or "end" (as the handler returns)
	Worker  string `json:"worker"`
	Key     string `json:"key"`
	Fence   uint64 `json:"fence"`
	Attempt int    `json:"attempt"`
}

// taskStart is a handler start the parent saw, and its end once the
// handler reported it.
type taskStart struct {
	key    string
	worker string
	fence  uint64
	at     time.Time
	end    time.Time // zero: no end reported
}

// taskResources is the parent's side: one Resource per task key, and the
// starts of every handler in the order they arrived.
type taskResources struct {
	mu         sync.Mutex
	res        map[string]*Resource
	starts     map[string][]taskStart
	doneFence  map[string]uint64 // fence of the accepted success report per key
	refused    int
	longStarts chan taskStart // starts of long tasks (the first 64)
	longs      map[string]bool
}

func newTaskResources(longs map[string]bool) *taskResources {
	return &taskResources{
		res: map[string]*Resource{}, starts: map[string][]taskStart{}, doneFence: map[string]uint64{},
		longStarts: make(chan taskStart, 64), longs: longs,
	}
}

// serve answers the handlers' reports on nc until the subscription ends:
// "ok" when the resource accepted the write, "refused" when its fence was
// stale.
func (tr *taskResources) serve(t *testing.T, nc *nats.Conn, subject string) {
	t.Helper()
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var r taskReport
		if err := json.Unmarshal(m.Data, &r); err != nil {
			_ = m.Respond([]byte("bad"))
			return
		}
		reply := "ok"
		if !tr.record(r) {
			reply = "refused"
		}
		_ = m.Respond([]byte(reply))
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
}

// record presents a handler's report to its task's Resource and reports
// whether the resource accepted it.
func (tr *taskResources) record(r taskReport) bool {
	now := time.Now()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if r.Phase == "end" {
		// Not a write: the handler is returning.
		runs := tr.starts[r.Key]
		for i := len(runs) - 1; i >= 0; i-- {
			if runs[i].worker == r.Worker && runs[i].fence == r.Fence && runs[i].end.IsZero() {
				runs[i].end = now
				break
			}
		}
		return true
	}
	res := tr.res[r.Key]
	if res == nil {
		res = NewResource()
		tr.res[r.Key] = res
	}
	// A nil check: the handler cannot check its claim atomically with
	// this write from another process, so the fence alone must refuse
	// a stale one.
	ok, _ := res.Write(r.Worker, r.Fence, nil)
	switch {
	case r.Phase == "start":
		tr.starts[r.Key] = append(tr.starts[r.Key], taskStart{worker: r.Worker, fence: r.Fence, at: now})
		if tr.longs[r.Key] {
			select {
			case tr.longStarts <- taskStart{key: r.Key, worker: r.Worker, fence: r.Fence, at: now}:
			default:
			}
		}
	case ok:
		tr.doneFence[r.Key] = r.Fence
	}
	if !ok {
		tr.refused++
	}
	return ok
}

// crashEnv is where the crash test runs: a server URL for the children, a
// JetStream handle for the parent, and the bucket's replicas.
type crashEnv struct {
	url      string
	nc       *nats.Conn
	js       jetstream.JetStream
	replicas int
}

func TestTaskRuntimeCrash(t *testing.T) {
	n := natstest.WithServer(t)
	runTaskCrash(t, crashEnv{url: n.Server.ClientURL(), nc: n.NC, js: n.JS, replicas: 1}, 1)
}

func TestTaskRuntimeCrashCluster(t *testing.T) {
	c := natstest.WithCluster(t, 3)
	nc := natstest.Connect(t, c.Node(0))
	runTaskCrash(t, crashEnv{url: c.ClientURLs(), nc: nc, js: c.JS, replicas: 3}, 2)
}

// TestTaskRuntimeCrashSoak repeats the crash test with new DAGs for the
// soak duration.
func TestTaskRuntimeCrashSoak(t *testing.T) {
	d := soakDuration(t)
	n := natstest.WithServer(t)
	env := crashEnv{url: n.Server.ClientURL(), nc: n.NC, js: n.JS, replicas: 1}
	for i, end := 0, time.Now().Add(d); time.Now().Before(end); i++ {
		t.Run(fmt.Sprintf("round%d", i), func(t *testing.T) { runTaskCrash(t, env, uint64(100+i)) })
	}
}

func runTaskCrash(t *testing.T, env crashEnv, seed uint64) {
	ctx := natstest.Context(t, 3*time.Minute)
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	dag := randomDAG(rng, crashTasks, crashMaxAttempts, crashLongs, crashLongMS)
	bucket := fmt.Sprintf("crashdag%d_%d", seed, time.Now().UnixNano()%1e6)
	subject := "taskres." + bucket

	longs := map[string]bool{}
	for _, d := range dag {
		if d.Long {
			longs[string(d.Key)] = true
		}
	}
	tr := newTaskResources(longs)
	tr.serve(t, env.nc, subject)

	store := natstest.Open(t, "ledger bucket", func(ctx context.Context) (*kvledger.KVStore, error) {
		return kvledger.NewKVStore(ctx, env.js, kvledger.KVStoreConfig{Bucket: bucket, Replicas: env.replicas})
	})
	l, err := kvledger.New(store)
	require.NoError(t, err)

	// Every task is admitted before any worker starts, so that who blocks
	// whom does not depend on timing.
	subs := make([]kvledger.Submission, len(dag))
	for i, d := range dag {
		subs[i] = kvledger.Submission{Key: d.Key, Seq: 1, Task: d, Needs: d.Needs, Kind: "dag", MaxAttempts: crashMaxAttempts}
	}
	admitted, err := l.AdmitMany(ctx, "parent", subs)
	require.NoError(t, err)
	for i, ok := range admitted {
		require.True(t, ok, dag[i].Key)
	}

	workers := make([]*child, crashWorkers)
	names := make([]string, crashWorkers)
	for i := range workers {
		names[i] = fmt.Sprintf("w%d", i+1)
		var line string
		workers[i], line = startChild(t, "taskworker",
			envURL+"="+env.url, envBucket+"="+bucket, envTTL+"="+crashTTL.String(),
			envWorker+"="+names[i], envSubject+"="+subject, envReplicas+"="+fmt.Sprint(env.replicas))
		require.Equal(t, "ready", line, workers[i].stderr.String())
	}

	// Kill the worker running the first long handler, mid-handler.
	first := natstest.Recv(t, tr.longStarts, time.Minute, "a long handler to start")
	victim := -1
	for i, n := range names {
		if n == first.worker {
			victim = i
		}
	}
	require.GreaterOrEqual(t, victim, 0, first.worker)
	require.NoError(t, workers[victim].cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	workers[victim].Kill(t)
	t.Logf("SIGKILLed %s %v after it started a long handler", first.worker, killed.Sub(first.at).Round(time.Millisecond))

	// The claims it held when it died.
	snap, err := l.Snapshot(ctx)
	require.NoError(t, err)
	var orphans []kvledger.TaskState
	for _, rec := range snap.Tasks {
		if rec.Status == kvledger.StatusClaimed && string(rec.Owner) == first.worker {
			orphans = append(orphans, rec)
		}
	}
	require.True(t, slices.ContainsFunc(orphans, func(r kvledger.TaskState) bool { return string(r.Key) == first.key }),
		"the victim was killed in %s's handler", first.key)

	// Drain a live worker (Stop: its Close, DrainTimeout 1 s) while it
	// runs a long handler, which outlives the drain and is slow to stop
	// (runDAGTask): its claim must be given back only once the handler
	// returned, never while another worker could start the task beside
	// it (the overlap checker, below).
	drained := -1
	var drainedRun taskStart
	for drained < 0 {
		s := natstest.Recv(t, tr.longStarts, time.Minute, "a long handler to start on a live worker")
		i := slices.Index(names, s.worker)
		// One that will still run when the drain's time is up.
		if s.at.After(killed) && i != victim && time.Since(s.at) < crashLongMS*time.Millisecond-crashDrain-200*time.Millisecond {
			drained, drainedRun = i, s
		}
	}
	workers[drained].Stop(t)
	t.Logf("drained %s %v into a long handler of %s", names[drained], time.Since(drainedRun.at).Round(time.Millisecond), drainedRun.key)

	// Pause another worker (SIGSTOP) while it holds claims, until every
	// one of them has started again elsewhere under a larger fence, then
	// let it go on (SIGCONT): it wakes believing in claims that were taken
	// over, and whatever it reports or completes late must be refused.
	held := func(snap kvledger.Snapshot, owner string) []kvledger.TaskState {
		var out []kvledger.TaskState
		for _, rec := range snap.Tasks {
			if rec.Status == kvledger.StatusClaimed && string(rec.Owner) == owner {
				out = append(out, rec)
			}
		}
		return out
	}
	zombie, paused := -1, []kvledger.TaskState(nil)
	var stopped time.Time
	for try := 0; zombie < 0 && try < 200; try++ {
		snap, err := l.Snapshot(ctx)
		require.NoError(t, err)
		for i := range workers {
			if i == victim || i == drained || len(held(snap, names[i])) == 0 {
				continue
			}
			require.NoError(t, workers[i].cmd.Process.Signal(syscall.SIGSTOP))
			stopped = time.Now()
			// What it holds once stopped (its claims may have ended or
			// begun since the first snapshot).
			snap, err = l.Snapshot(ctx)
			require.NoError(t, err)
			if paused = held(snap, names[i]); len(paused) > 0 {
				zombie = i
				break
			}
			require.NoError(t, workers[i].cmd.Process.Signal(syscall.SIGCONT))
		}
	}
	require.GreaterOrEqual(t, zombie, 0, "no worker was caught holding a claim")
	takenOver := func(rec kvledger.TaskState) bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return takenOverLocked(tr, rec, names[zombie])
	}
	natstest.Eventually(t, crashTTL+5*time.Second, func() bool {
		for _, rec := range paused {
			if !takenOver(rec) {
				if st, _, err := l.State(ctx, rec.Key); err == nil && st.Fence == rec.Fence && st.Status != kvledger.StatusClaimed {
					continue // it finished before the stop took hold
				}
				if st, _, err := l.State(ctx, rec.Key); err == nil && exhaustedTakeover(st, rec) {
					continue // taken over in its last attempt: failed, not run again
				}
				return false
			}
		}
		return true
	}, "the paused worker's claims to be taken over")
	pausedFor := time.Since(stopped)
	require.NoError(t, workers[zombie].cmd.Process.Signal(syscall.SIGCONT))
	resumed := time.Now()
	t.Logf("paused %s for %v holding %d claims", names[zombie], pausedFor.Round(time.Millisecond), len(paused))

	keys := make([]kvledger.IdempotencyKey, len(dag))
	for i, d := range dag {
		keys[i] = d.Key
	}
	wctx, wcancel := context.WithTimeout(ctx, 90*time.Second)
	final, err := l.WaitFinal(wctx, keys...)
	wcancel()
	if err != nil {
		snap, _ := l.Snapshot(ctx)
		for _, rec := range snap.Tasks {
			if !kvledger.IsFinal(rec.Status) {
				t.Logf("not final: %s %s owner %s fence %d attempts %d run_at %v last_error %q",
					rec.Key, rec.Status, rec.Owner, rec.Fence, rec.Attempts, rec.RunAt, rec.LastError)
			}
		}
	}
	require.NoError(t, err, "%d of %d tasks final", len(final), len(keys))
	want := predict(dag, crashMaxAttempts, killedAttempts(t, ctx, env.js, bucket))

	// 1. Every task ended as the DAG predicts.
	var wrong []string
	counts := map[kvledger.Status]int{}
	for _, d := range dag {
		rec, exp := final[d.Key], want[d.Key]
		counts[rec.Status]++
		if rec.Status != exp.status || (exp.attempts > 0 && rec.Attempts != exp.attempts) {
			wrong = append(wrong, fmt.Sprintf("%s: %s after %d attempts (%q), want %s after %d (task %+v)",
				d.Key, rec.Status, rec.Attempts, rec.LastError, exp.status, exp.attempts, d))
		}
	}
	require.Empty(t, wrong, "tasks that did not end as predicted")

	// 2. No completion from a worker whose claim was taken over: each
	// completed record carries the fence of the one success report the
	// resource accepted, and the resource saw no two holders share a
	// token nor an accepted token go down.
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, d := range dag {
		rec := final[d.Key]
		if rec.Status != kvledger.StatusCompleted {
			continue
		}
		require.Equal(t, uint64(rec.Fence), tr.doneFence[string(d.Key)], "%s: completed with fence %d", d.Key, rec.Fence)
		require.Empty(t, tr.res[string(d.Key)].Stats().Violations, d.Key)
	}

	// 3. No two runs of a task at once: the victim's runs ended when it
	// was killed; the paused worker's runs that spanned its pause are
	// not covered (its handlers could not be stopped while it was).
	runs, overlaps := tr.overlapsLocked(func(s taskStart) time.Time {
		if s.worker == first.worker {
			return killed
		}
		return time.Time{}
	}, func(a, b taskStart) bool {
		paused := func(s taskStart) bool { return s.worker == names[zombie] && s.at.Before(resumed) }
		return paused(a) || paused(b)
	})
	require.Empty(t, overlaps, "runs of a task that overlapped")

	// The paused worker's claims that were taken over never completed
	// under its old fence.
	for _, p := range paused {
		rec := final[p.Key]
		require.False(t, rec.Status == kvledger.StatusCompleted && rec.Fence == p.Fence && takenOverLocked(tr, p, names[zombie]),
			"%s completed by the paused worker after a takeover", p.Key)
	}

	// 4. Every claim of the victim was taken over within TTL + 1 s of the
	// kill, with a larger fence.
	var worst time.Duration
	for _, o := range orphans {
		var took time.Duration = -1
		for _, s := range tr.starts[string(o.Key)] {
			if s.worker != first.worker && s.at.After(killed) && s.fence > uint64(o.Fence) {
				took = s.at.Sub(killed)
				break
			}
		}
		if rec := final[o.Key]; took < 0 && exhaustedTakeover(rec, o) {
			took = rec.UpdatedAt.Sub(killed) // failed by the takeover, not run again
		}
		require.GreaterOrEqual(t, took, time.Duration(0), "%s: never started again after the kill", o.Key)
		require.LessOrEqual(t, took, crashTTL+time.Second, "%s taken over after %v", o.Key, took)
		require.NotEqual(t, first.worker, string(final[o.Key].Owner), "%s finished by the killed worker", o.Key)
		worst = max(worst, took)
	}
	for i, w := range workers {
		if i != victim {
			w.Stop(t)
		}
	}
	report(t, "taskcrash", fmt.Sprintf("%d tasks (%d completed, %d failed, %d blocked as predicted) on %d worker processes, R%d; "+
		"SIGKILL mid-handler orphaned %d claims, all taken over within %v (bound %v); a worker paused %v holding %d claims; %d stale reports refused; "+
		"%d handler runs, %d overlapping",
		len(dag), counts[kvledger.StatusCompleted], counts[kvledger.StatusFailed], counts[kvledger.StatusBlocked],
		crashWorkers, env.replicas, len(orphans), worst.Round(time.Millisecond), crashTTL+time.Second,
		pausedFor.Round(time.Millisecond), len(paused), tr.refused, runs, len(overlaps)))
}

// killedAttempts reads the run's events from stream and returns, per
// task of bucket, the attempts whose claim ended in a takeover: a
// taken-over event, or a failure written under another fence than the
// claim's (the takeover of the last allowed attempt fails the task with
// a new fence instead of claiming it). A read that fails (a consumer not
// yet reachable after a fault) starts over, for up to 30 s.
func killedAttempts(t *testing.T, ctx context.Context, js jetstream.JetStream, bucket string) map[kvledger.IdempotencyKey][]int {
	t.Helper()
	var out map[kvledger.IdempotencyKey][]int
	var err error
	for end := time.Now().Add(30 * time.Second); ; {
		if out, err = readKilledAttempts(ctx, js, bucket); err == nil || time.Now().After(end) || ctx.Err() != nil {
			break
		}
		t.Logf("reading %s's events again: %v", bucket, err)
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, err, "read the events of %s", bucket)
	return out
}

// readKilledAttempts reads the ledger's events: its bucket's writes.
func readKilledAttempts(ctx context.Context, js jetstream.JetStream, bucket string) (map[kvledger.IdempotencyKey][]int, error) {
	src := kvledger.EventSource(bucket)
	cons, err := js.OrderedConsumer(ctx, src.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{src.Subject}})
	if err != nil {
		return nil, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	pending := info.NumPending
	type claimed struct {
		attempt int
		fence   uint64
	}
	claim := map[string]claimed{} // each task's current claim
	out := map[kvledger.IdempotencyKey][]int{}
	for pending > 0 {
		batch, err := cons.Fetch(int(min(pending, 500)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			e, ok, err := kvledger.DecodeEvent(events.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Revision: md.Sequence.Stream})
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			c, held := claim[e.Key]
			lost := held && (e.Name == kvledger.TakenOverEvent ||
				e.Status == string(kvledger.StatusFailed) && e.Fence != c.fence)
			if lost {
				out[kvledger.IdempotencyKey(e.Key)] = append(out[kvledger.IdempotencyKey(e.Key)], c.attempt)
			}
			switch e.Name {
			case kvledger.TakenOverEvent, kvledger.ClaimedEvent:
				claim[e.Key] = claimed{attempt: e.Attempts, fence: e.Fence}
			default:
				delete(claim, e.Key)
			}
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if got == 0 {
			return nil, fmt.Errorf("events stopped with %d pending", pending)
		}
		pending -= uint64(got)
	}
	return out, nil
}

// exhaustedTakeover reports whether st is claim's record failed by a
// takeover of its last allowed attempt: a larger fence, the claim's
// attempt count, and no run after it.
func exhaustedTakeover(st, claim kvledger.TaskState) bool {
	return st.Status == kvledger.StatusFailed && st.Fence > claim.Fence && st.Attempts == claim.Attempts &&
		strings.Contains(st.LastError, "lost: its claimant's lease ended")
}

// takenOverLocked reports whether another worker than owner started rec's
// task under a larger fence (tr.mu held).
func takenOverLocked(tr *taskResources, rec kvledger.TaskState, owner string) bool {
	for _, s := range tr.starts[string(rec.Key)] {
		if s.worker != owner && s.fence > uint64(rec.Fence) {
			return true
		}
	}
	return false
}

// crashHandlerError is what a child's handler returns for an injected
// failure; the text is checked in LastError.
func crashHandlerError(key string, attempt int) error {
	return fmt.Errorf("injected failure of %s, attempt %d", key, attempt)
}

// taskOverlap is two runs of a task at once.
type taskOverlap struct{ key, what string }

// overlapsLocked is the overlap checker (tr.mu held): it lists every two
// runs of a task whose handlers ran at the same time, one starting
// before the other ended, which the runtime promises never happens
// (kvledger/worker/doc.go). Starts and ends are the handlers' own
// reports, each sent before the handler goes on (start) or returns
// (end) and answered by this process, so a run that began only after
// another was given back is never seen overlapping it. endOf says when
// a run that reported no end stopped (its worker was killed), zero for
// never; exempt leaves out a pair the promise does not cover (a worker
// stopped by SIGSTOP, whose handler the worker cannot stop).
func (tr *taskResources) overlapsLocked(endOf func(taskStart) time.Time, exempt func(a, b taskStart) bool) (runs int, overlaps []taskOverlap) {
	for key, ss := range tr.starts {
		runs += len(ss)
		for i, a := range ss {
			end := a.end
			if end.IsZero() {
				end = endOf(a)
			}
			for _, b := range ss[i+1:] {
				// ss is in start order: b started after a did.
				if (end.IsZero() || b.at.Before(end)) && !exempt(a, b) {
					overlaps = append(overlaps, taskOverlap{key: key, what: fmt.Sprintf("%s: %s's run (fence %d, %s..%s) overlaps %s's (fence %d, from %s)",
						key, a.worker, a.fence, a.at.Format(time.StampMicro), end.Format(time.StampMicro),
						b.worker, b.fence, b.at.Format(time.StampMicro))})
				}
			}
		}
	}
	return runs, overlaps
}
