package bench

import (
	"context"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvlock"
)

// syncModes are the server durability settings the uncontended and ledger
// figures are taken at: the default lazy fsync and SyncAlways.
var syncModes = []struct {
	name   string
	always bool
}{{"sync=lazy", false}, {"sync=always", true}}

// newServer starts an embedded server (stopped by b.Cleanup).
func newServer(b *testing.B, syncAlways bool) *natstest.Node {
	b.Helper()
	return natstest.WithServer(b, func(o *embedded.Options) { o.SyncAlways = syncAlways })
}

// newManager opens a kvlease manager on the default bucket, closed by
// b.Cleanup.
func newManager(b *testing.B, js jetstream.JetStream) *kvlease.Manager {
	b.Helper()
	m, err := kvlease.NewManager(context.Background(), js, kvlease.Config{})
	require.NoError(b, err)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(b, m.Close(ctx))
	})
	return m
}

// newLocker opens a kvlock Locker, closed by b.Cleanup.
func newLocker(b *testing.B, js jetstream.JetStream, cfg kvlock.Config) *kvlock.Locker {
	b.Helper()
	l, err := kvlock.New(context.Background(), js, cfg)
	require.NoError(b, err)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(b, l.Close(ctx))
	})
	return l
}

// valueLen returns the length of key's stored value, so raw baselines
// can write values of the same size as the primitive.
func valueLen(b *testing.B, js jetstream.JetStream, bucket, key string) int {
	b.Helper()
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, bucket)
	require.NoError(b, err)
	e, err := kv.Get(ctx, key)
	require.NoError(b, err)
	return len(e.Value())
}

// split accumulates the time of a raw operation and of the primitive
// built from it, measured alternately in the same loop.
type split struct {
	raw, prim time.Duration
	// rawCPU and primCPU are the process CPU time each side used (see
	// processCPU): a steadier figure than the wall time on a shared
	// machine, and the one that says where a CPU-bound run spends.
	rawCPU, primCPU time.Duration
	n               int
	// extra is an optional second baseline, timed by timeExtra and
	// reported by reportExtra.
	extra time.Duration
	nx    int
	// rawOps, primOps and extraOps are each operation's time, for the
	// medians (reportMedians).
	rawOps, primOps, extraOps []time.Duration
}

// pair runs raw and prim once each, alternating which goes first so that
// neither always runs on the other's warm caches.
func (s *split) pair(raw, prim func()) {
	if s.n%2 == 0 {
		s.timeRaw(raw)
		s.timePrim(prim)
	} else {
		s.timePrim(prim)
		s.timeRaw(raw)
	}
	s.n++
}

func (s *split) timeRaw(f func()) {
	t, c := time.Now(), processCPU()
	f()
	d := time.Since(t)
	s.raw += d
	s.rawOps = append(s.rawOps, d)
	s.rawCPU += processCPU() - c
}

func (s *split) timePrim(f func()) {
	t, c := time.Now(), processCPU()
	f()
	d := time.Since(t)
	s.prim += d
	s.primOps = append(s.primOps, d)
	s.primCPU += processCPU() - c
}

func (s *split) timeExtra(f func()) {
	t := time.Now()
	f()
	d := time.Since(t)
	s.extra += d
	s.extraOps = append(s.extraOps, d)
	s.nx++
}

// reportExtra adds the second baseline's time per op and the ratio
// x_<name> = its time / the primitive's time.
func (s *split) reportExtra(b *testing.B, name string) {
	if s.nx == 0 || s.n == 0 || s.prim == 0 {
		return
	}
	per := float64(s.extra.Nanoseconds()) / float64(s.nx)
	b.ReportMetric(per, name+"-ns/op")
	b.ReportMetric(1e9/per, name+"-ops/s")
	b.ReportMetric(per/(float64(s.prim.Nanoseconds())/float64(s.n)), "x_"+name)
}

// reportMedians adds the ratios of the median operation times, raw (and
// the extra baseline, named name) over the primitive: x_raw_p50 and
// x_<name>_p50. On a loaded machine a burst of other work slows whichever
// side runs during it, which moves the ratios of total times (x_raw) by
// several hundredths between runs; the medians are what a typical
// operation costs and move much less. x_raw stays the figure of record.
func (s *split) reportMedians(b *testing.B, name string) {
	p := percentile(slices.Clone(s.primOps), 50)
	if p <= 0 {
		return
	}
	if r := percentile(slices.Clone(s.rawOps), 50); r > 0 {
		b.ReportMetric(float64(r)/float64(p), "x_raw_p50")
	}
	if x := percentile(slices.Clone(s.extraOps), 50); x > 0 && name != "" {
		b.ReportMetric(float64(x)/float64(p), "x_"+name+"_p50")
	}
}

// report replaces ns/op with the primitive's time per operation and adds
// the raw time, both rates and the ratio x_raw = raw time / primitive time
// (the primitive's throughput as a fraction of the raw throughput).
func (s *split) report(b *testing.B) {
	if s.n == 0 || s.prim == 0 || s.raw == 0 {
		return
	}
	n := float64(s.n)
	b.ReportMetric(float64(s.prim.Nanoseconds())/n, "ns/op")
	b.ReportMetric(float64(s.raw.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(n/s.prim.Seconds(), "ops/s")
	b.ReportMetric(n/s.raw.Seconds(), "raw-ops/s")
	b.ReportMetric(s.raw.Seconds()/s.prim.Seconds(), "x_raw")
}

// reportStarted adds x_raw_started: x_raw against the raw queue timed
// until its handlers started every job, without the wait for their acks
// to be stored (tail, rawQueue.tail), the comparison these benchmarks
// made before 2026-12-02 (eighth session). x_raw itself times the raw
// queue until its acks are stored, as the runtime is timed until its
// outcomes are.
func (s *split) reportStarted(b *testing.B, tail time.Duration) {
	if s.n == 0 || s.prim == 0 || s.raw <= tail {
		return
	}
	b.ReportMetric((s.raw-tail).Seconds()/s.prim.Seconds(), "x_raw_started")
}

// reportTasks is report for benchmarks whose rounds run perRound tasks
// (primitive) and jobs (raw): rates per task instead of per round, and
// the CPU time per task and per raw job (server included; the runs are
// CPU-bound on 2 cores, so this is the figure to compare across loaded
// runs).
func (s *split) reportTasks(b *testing.B, perRound int) {
	s.report(b)
	if s.n == 0 || s.prim == 0 || s.raw == 0 {
		return
	}
	all := float64(perRound * s.n)
	b.ReportMetric(all/s.prim.Seconds(), "tasks/s")
	b.ReportMetric(all/s.raw.Seconds(), "raw-jobs/s")
	b.ReportMetric(float64(s.primCPU.Microseconds())/all, "cpu-µs/task")
	b.ReportMetric(float64(s.rawCPU.Microseconds())/all, "raw-cpu-µs/job")
	b.ReportMetric(0, "ops/s")
	b.ReportMetric(0, "raw-ops/s")
}

// rawLock is the raw lock cycle a lease is built from: one publish that
// creates the key with a TTL while its last revision is the remembered
// delete marker's, and one delete marker conditional on the acquired
// revision (2 round trips, plain nats.go jetstream).
type rawLock struct {
	js     jetstream.JetStream
	subj   string
	val    []byte
	ttl    time.Duration
	marker uint64 // revision of the last delete marker (0: no message yet)
}

func newRawLock(js jetstream.JetStream, bucket, key string, size int, ttl time.Duration) *rawLock {
	return &rawLock{js: js, subj: "$KV." + bucket + "." + key, val: make([]byte, size), ttl: ttl}
}

// acquire publishes the create; it returns the new revision or the
// publish error (a conflict when the key is held or the marker is stale).
func (r *rawLock) acquire(ctx context.Context) (uint64, error) {
	ack, err := r.js.PublishMsg(ctx, &nats.Msg{Subject: r.subj, Data: r.val},
		jetstream.WithExpectLastSequencePerSubject(r.marker), jetstream.WithMsgTTL(r.ttl))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// release writes the delete marker on condition of rev and remembers it.
func (r *rawLock) release(ctx context.Context, rev uint64) error {
	m := &nats.Msg{Subject: r.subj, Header: nats.Header{"KV-Operation": []string{"DEL"}}}
	ack, err := r.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev))
	if err != nil {
		return err
	}
	r.marker = ack.Sequence
	return nil
}

func (r *rawLock) cycle(b *testing.B, ctx context.Context) {
	rev, err := r.acquire(ctx)
	if err != nil {
		b.Fatalf("raw acquire: %v", err)
	}
	if err := r.release(ctx, rev); err != nil {
		b.Fatalf("raw release: %v", err)
	}
}

// envDuration reads a duration from the environment, def when unset.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	require.NoError(b, err, "%s", name)
	return d
}

// percentile returns the p-th percentile (0..100) of ds (sorted in place).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds)-1) * p / 100)
	return ds[i]
}

// countdown returns a function to call once per finished item, a channel
// closed at the n-th call, and the count so far.
func countdown(n int) (func(), <-chan struct{}, *atomic.Int64) {
	var count atomic.Int64
	all := make(chan struct{})
	return func() {
		if count.Add(1) == int64(n) {
			close(all)
		}
	}, all, &count
}

// publishWindowed calls send for i in [0, n), which publishes
// asynchronously on js, with at most publishWindow calls' publishes
// unacknowledged, and waits for every ack.
func publishWindowed(b *testing.B, js jetstream.JetStream, n int, send func(i int) error) {
	b.Helper()
	wait := func() {
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(2 * time.Minute):
			b.Fatal("publish acks did not arrive")
		}
	}
	for i := range n {
		// nats.go stalls past 4000 unacknowledged publishes; a window
		// below that keeps the pipeline full without hitting it.
		if i > 0 && i%publishWindow == 0 {
			wait()
		}
		if err := send(i); err != nil {
			b.Fatalf("publish %d: %v", i, err)
		}
	}
	wait()
}
