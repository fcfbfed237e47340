package chaos

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// A partition run: a 3-node cluster (R3 buckets, SyncAlways) whose routes
// pass through a natstest.RouteNet, workloads whose clients are pinned to
// different nodes, and a schedule of faults applied one after another.
// Every fault is healed before the next starts; the run measures how long
// the cluster then takes to recover, and each workload reports what it saw
// during each fault's window (phase). Phase 0 is a fault-free baseline.

// partFault is one step of a fault schedule.
type partFault struct {
	name string
	// inject applies the fault, heals it before returning and describes
	// what it did (which nodes, which leaders).
	inject func(ctx context.Context, r *partRun) string
}

// partWorkload is what runs through a fault schedule: the fencing
// checker, the porcupine models, the acknowledged-writes check; the task
// runtime's DAG oracle plugs in the same way.
type partWorkload interface {
	name() string
	// setup creates the workload's buckets and binds its clients; the
	// cluster is healthy.
	setup(t *testing.T, r *partRun)
	// run starts the clients on wg; they run until ctx ends. An operation
	// belongs to the phase r.phase() reports when it starts.
	run(ctx context.Context, r *partRun, wg *sync.WaitGroup)
	// mark is called as phase p starts (and with p = number of phases
	// once the schedule is over).
	mark(p int)
	// results checks what was recorded, after the clients ended, and
	// returns the counts of each phase (index = phase). It must not fail
	// t: the runner reports every phase first, then fails.
	results(t *testing.T, r *partRun, phases int) []phaseCounts
}

// phaseCounts is what one workload saw during one phase.
type phaseCounts struct {
	ops          int // operations recorded
	acquisitions int // successful acquisitions and claims
	violations   int // must be 0
	unknown      int // operations whose outcome the client could not learn
	detail       string
}

// partRun is one run of a schedule.
type partRun struct {
	t       *testing.T
	cc      *chaosCluster
	net     *natstest.RouteNet
	cur     atomic.Int32
	streams []string // every workload's streams: recovery waits for them
	probes  []jetstream.KeyValue
	healMu  sync.Mutex
	heals   map[int]time.Time // phase -> when its fault was healed
}

func (r *partRun) phase() int { return int(r.cur.Load()) }

// healedAt returns when phase p's fault was healed (zero while it is
// not, and for the baseline).
func (r *partRun) healedAt(p int) time.Time {
	r.healMu.Lock()
	defer r.healMu.Unlock()
	return r.heals[p]
}

// addStreams registers streams whose leaders and replicas define recovery.
func (r *partRun) addStreams(s ...string) { r.streams = append(r.streams, s...) }

// phaseResult is one row of the report.
type phaseResult struct {
	fault, what        string
	window             time.Duration
	writable, caughtUp time.Duration // after the heal
	counts             map[string]phaseCounts
}

const probeBucket = "part_probe"

// newPartitionCluster starts the 3-node cluster of a partition run, every
// client pinned to node (last digit of its name) mod 3.
func newPartitionCluster(t *testing.T) (*chaosCluster, *natstest.RouteNet) {
	pc := natstest.WithPartitionCluster(t, 3, func(o *embedded.Options) { o.SyncAlways = true })
	cc := &chaosCluster{t: t, c: pc.Cluster, conns: map[string]jetstream.JetStream{}, faults: map[fault]int{}}
	cc.nodeOf = func(name string) int {
		if name == "" {
			return 0
		}
		return int(name[len(name)-1]-'0') % pc.Size()
	}
	return cc, pc.Net
}

// runPartitionSchedule runs workloads on cc while sched's faults are
// applied in order, after a fault-free baseline of baseline, and returns
// one result per phase (baseline first). It is the hook for anything that
// must survive the same faults: give it a cluster from
// newPartitionCluster, a schedule and a partWorkload.
func runPartitionSchedule(t *testing.T, cc *chaosCluster, net *natstest.RouteNet, baseline time.Duration,
	sched []partFault, ws ...partWorkload) []phaseResult {
	r := &partRun{t: t, cc: cc, net: net, heals: map[int]time.Time{}}
	retryCreate(t, func(ctx context.Context) error {
		_, err := cc.c.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: probeBucket, Replicas: 3})
		return err
	})
	r.addStreams(streamOf(probeBucket))
	for i := range cc.c.Size() {
		js, closeFn, err := cc.connectNode(i)
		require.NoError(t, err)
		t.Cleanup(closeFn)
		kv := bindKV(t, js, probeBucket)
		r.probes = append(r.probes, kv)
	}
	for _, w := range ws {
		w.setup(t, r)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	for _, w := range ws {
		w.run(ctx, r, &wg)
	}
	fctx := context.Background()
	results := make([]phaseResult, 0, len(sched)+1)
	for _, w := range ws {
		w.mark(0)
	}
	start := time.Now()
	cc.pause(fctx, baseline)
	results = append(results, phaseResult{fault: "none (baseline)", window: time.Since(start)})
	for i, f := range sched {
		p := i + 1
		r.cur.Store(int32(p))
		for _, w := range ws {
			w.mark(p)
		}
		start := time.Now()
		what := f.inject(fctx, r)
		r.healMu.Lock()
		r.heals[p] = time.Now()
		r.healMu.Unlock()
		writable, caughtUp := r.recover(fctx)
		cc.pause(fctx, 500*time.Millisecond) // a settled moment inside the window
		t.Logf("phase %d, %s: %s; writable after %v, caught up after %v", p, f.name, what, writable, caughtUp)
		results = append(results, phaseResult{fault: f.name, what: what, window: time.Since(start),
			writable: writable, caughtUp: caughtUp})
	}
	for _, w := range ws {
		w.mark(len(sched) + 1)
	}
	stop()
	stopped := time.Now()
	wg.Wait()
	t.Logf("clients stopped in %v", time.Since(stopped).Round(time.Millisecond))
	for _, w := range ws {
		checked := time.Now()
		counts := w.results(t, r, len(sched)+1)
		t.Logf("%s: results checked in %v", w.name(), time.Since(checked).Round(time.Millisecond))
		for p := range results {
			if results[p].counts == nil {
				results[p].counts = map[string]phaseCounts{}
			}
			if p < len(counts) {
				results[p].counts[w.name()] = counts[p]
			}
		}
	}
	return results
}

// recover waits, after a heal, until a write through every node succeeds
// (writable) and every stream has a leader whose replicas all caught up
// (caughtUp), and returns both times since the heal. A cluster that does
// not recover within a minute fails the test.
func (r *partRun) recover(ctx context.Context) (writable, caughtUp time.Duration) {
	healed := time.Now()
	var wg sync.WaitGroup
	for i, kv := range r.probes {
		wg.Go(func() {
			natstest.Eventually(r.t, time.Minute, func() bool {
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				_, err := kv.Put(pctx, fmt.Sprintf("n%d", i), []byte(time.Now().UTC().Format(time.RFC3339Nano)))
				return err == nil
			}, "write through node %d after the heal", i)
		})
	}
	wg.Wait()
	writable = time.Since(healed)
	all := make([]int, r.cc.c.Size())
	for i := range all {
		all[i] = i
	}
	r.cc.waitCaughtUp(ctx, all, r.streams...)
	return writable, time.Since(healed)
}

// partWorkloads are the checkers every partition run carries.
func partWorkloads() []partWorkload {
	return []partWorkload{&fencingWL{}, &linLockWL{b: leaseBackend}, &linLockWL{b: kvlockBackend}, &linLedgerWL{}, &ackedWL{}}
}

// TestPartitions is the short partition suite of `make test`: each fault
// once (the stream leader isolated in a minority, a symmetric 2/1 split,
// a flapping partition, one-way loss, a partition with a node restart)
// while the fencing checker, the porcupine models of kvlease, kvlock and
// kvledger and the acknowledged-writes check run with clients on every
// node.
func TestPartitions(t *testing.T) {
	runPartitions(t, shortSchedule())
}

// TestPartitionsSoak repeats longer partitions (long enough for elections
// and for a cut-off leader to step down) for about $NATSCOORD_SOAK.
func TestPartitionsSoak(t *testing.T) {
	runPartitions(t, soakSchedule(soakDuration(t)))
}

func runPartitions(t *testing.T, sched []partFault) {
	cc, net := newPartitionCluster(t)
	ws := partWorkloads()
	start := time.Now()
	res := runPartitionSchedule(t, cc, net, time.Second, sched, ws...)
	violations := 0
	for p, r := range res {
		line := fmt.Sprintf("partition phase %d, %s (window %v", p, r.fault, r.window.Round(100*time.Millisecond))
		if p > 0 {
			line += fmt.Sprintf(", writable through every node %v and caught up %v after the heal; %s",
				r.writable.Round(10*time.Millisecond), r.caughtUp.Round(10*time.Millisecond), r.what)
		}
		line += "):"
		for _, w := range ws {
			c := r.counts[w.name()]
			violations += c.violations
			line += fmt.Sprintf(" [%s: ops %d, acquisitions %d, violations %d, unknown %d; %s]",
				w.name(), c.ops, c.acquisitions, c.violations, c.unknown, c.detail)
		}
		report(t, "partitions", line)
	}
	report(t, "partitions", fmt.Sprintf("partitions: %d faults in %v, violations %d",
		len(sched), time.Since(start).Round(time.Second), violations))
	require.Zero(t, violations, "violations under partitions")
	for _, w := range ws {
		total := 0
		for _, r := range res {
			total += r.counts[w.name()].acquisitions
		}
		require.Positive(t, total, "%s made no progress", w.name())
	}
}
