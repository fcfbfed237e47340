package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// The task-runtime benchmarks compare kvledger's worker with the raw
// JetStream work queue a service would otherwise build: a work-queue
// stream, one publish per job, one durable pull consumer shared by the
// handlers, and an ack per job. It is the cheapest way to run jobs on NATS
// and has none of the ledger's guarantees (no idempotency key, no fence,
// no dependencies, a crashed handler's job waits AckWait).
const (
	// queueJobs is the size of one end-to-end round (override with
	// NATSCOORD_BENCH_TASKS).
	queueJobs = 20_000
	// queueHandlers is how many handlers run the jobs.
	queueHandlers = 8
	// pickupSamples is how many single jobs an idle-pickup round times.
	pickupSamples = 200
	// publishWindow bounds the asynchronous publishes in flight.
	publishWindow = 2048
)

var queueSeq atomic.Int64

// rawQueue is the raw work queue: a stream with work-queue retention on
// its own subject, a durable pull consumer and queueHandlers handlers on
// their own connection, each a Consume subscription whose callbacks run
// one at a time (one callback = one handler).
type rawQueue struct {
	pub     jetstream.JetStream
	subject string
	stream  jetstream.Stream
	// onJob runs in the handler for every job before its ack.
	onJob atomic.Pointer[func(jetstream.Msg)]
	// tail sums, over the rounds run, the time from the last handler's
	// start to the last ack stored (reportStarted).
	tail time.Duration
}

// newRawQueue creates the stream and consumer on n and starts the
// handlers; b.Cleanup stops them.
func newRawQueue(b *testing.B, n *natstest.Node, handlers int) *rawQueue {
	b.Helper()
	ctx := context.Background()
	id := strconv.FormatInt(queueSeq.Add(1), 10)
	q := &rawQueue{pub: n.JS, subject: "wq" + id + ".job"}
	s, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name: "WQ" + id, Subjects: []string{q.subject}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage,
	})
	require.NoError(b, err)
	q.stream = s
	cons, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "handlers", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: -1,
	})
	require.NoError(b, err)
	hjs := n.NewJS(b) // the handlers' own connection
	hcons, err := hjs.Consumer(ctx, s.CachedInfo().Config.Name, cons.CachedInfo().Name)
	require.NoError(b, err)
	for range handlers {
		cc, err := hcons.Consume(func(m jetstream.Msg) {
			if f := q.onJob.Load(); f != nil {
				(*f)(m)
			}
			_ = m.Ack()
		}, jetstream.PullMaxMessages(256))
		require.NoError(b, err)
		b.Cleanup(cc.Stop)
	}
	return q
}

// run publishes jobs (publishAll) and returns once every job's ack is
// stored (the stream holds no message), with the time from the first
// publish until then: a job is done when its ack is stored, as a
// runtime's task is done when its outcome is, and acks still in the
// server's queue would otherwise be paid for by whatever runs next (at
// SyncAlways each one is an fsync). The time from the last handler's start
// to the last ack stored is added to q.tail (reportStarted).
func (q *rawQueue) run(b *testing.B, jobs int) time.Duration {
	b.Helper()
	handled, done, count := countdown(jobs)
	f := func(jetstream.Msg) { handled() }
	q.onJob.Store(&f)
	defer q.onJob.Store(nil)
	payload := []byte(`{"job":"noop"}`)
	start := time.Now()
	q.publishAll(b, jobs, payload)
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		b.Fatalf("raw queue: %d of %d jobs handled", count.Load(), jobs)
	}
	started := time.Since(start)
	q.awaitAcksStored(b)
	all := time.Since(start)
	q.tail += all - started
	return all
}

// awaitAcksStored waits until the work-queue stream holds no message:
// every ack sent has been applied. The handlers' acks are not awaited
// (as a queue's handlers do not), so the stream's state is the one place
// that says when the last one landed; it is read between pauses that
// double from 1 ms up to 8 ms: each read is a request the measured server
// answers, so a fixed 1 ms (a thousand reads per second of a SyncAlways
// tail) would slow the raw side it times, while 8 ms at most is under 1%
// of such a tail.
func (q *rawQueue) awaitAcksStored(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	pause := time.Millisecond
	for {
		info, err := q.stream.Info(context.Background())
		if err != nil {
			b.Fatalf("raw queue: stream info: %v", err)
		}
		if info.State.Msgs == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("raw queue: %d acks not stored", info.State.Msgs)
		}
		time.Sleep(pause)
		pause = min(2*pause, 8*time.Millisecond)
	}
}

// publishAll publishes jobs messages asynchronously, at most
// publishWindow unacknowledged, and waits for every publish ack.
func (q *rawQueue) publishAll(b *testing.B, jobs int, payload []byte) {
	b.Helper()
	publishWindowed(b, q.pub, jobs, func(int) error {
		_, err := q.pub.PublishAsync(q.subject, payload)
		return err
	})
}

// pickup times samples single jobs on idle handlers, one after the other:
// from just before the publish to the start of the handler.
func (q *rawQueue) pickup(b *testing.B, samples int) []time.Duration {
	b.Helper()
	ctx := context.Background()
	started := make(chan time.Time, 1)
	f := func(jetstream.Msg) { started <- time.Now() }
	q.onJob.Store(&f)
	defer q.onJob.Store(nil)
	out := make([]time.Duration, 0, samples)
	for range samples {
		t := time.Now()
		if _, err := q.pub.Publish(ctx, q.subject, []byte(`{"job":"noop"}`)); err != nil {
			b.Fatalf("raw publish: %v", err)
		}
		select {
		case s := <-started:
			out = append(out, s.Sub(t))
		case <-time.After(10 * time.Second):
			b.Fatal("raw queue: job not picked up")
		}
	}
	return out
}

// rawEnqueue is the raw side of bulk admission: jobs publishes to a
// work-queue stream without consumers, one awaited publish at a time
// (sync) or pipelined (async); the stream is purged afterwards.
func rawEnqueue(b *testing.B, js jetstream.JetStream, jobs int, async bool) time.Duration {
	b.Helper()
	ctx := context.Background()
	id := strconv.FormatInt(queueSeq.Add(1), 10)
	subj := "wqe" + id + ".job"
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "WQE" + id, Subjects: []string{subj}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
	})
	require.NoError(b, err)
	defer func() { _ = js.DeleteStream(ctx, s.CachedInfo().Config.Name) }()
	payload := []byte(`{"job":"noop"}`)
	start := time.Now()
	if async {
		(&rawQueue{pub: js, subject: subj}).publishAll(b, jobs, payload)
	} else {
		for i := range jobs {
			if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: payload}); err != nil {
				b.Fatalf("raw publish %d: %v", i, err)
			}
		}
	}
	return time.Since(start)
}

// reportRate adds a rate metric (jobs per second).
func reportRate(b *testing.B, name string, jobs int, d time.Duration) float64 {
	r := float64(jobs) / d.Seconds()
	b.ReportMetric(r, name)
	return r
}

// reportPercentiles adds p50 and p99 (in ms) of ds under prefix.
func reportPercentiles(b *testing.B, prefix string, ds []time.Duration) (p50, p99 time.Duration) {
	p50, p99 = percentile(ds, 50), percentile(ds, 99)
	b.ReportMetric(float64(p50.Microseconds())/1000, prefix+"-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, prefix+"-p99-ms")
	return p50, p99
}

// queueJobCount is queueJobs or NATSCOORD_BENCH_TASKS.
func queueJobCount(b *testing.B) int {
	b.Helper()
	n := envInt(b, "NATSCOORD_BENCH_TASKS", queueJobs)
	require.Positive(b, n)
	return n
}

// envInt reads an integer from the environment, def when unset.
func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	require.NoError(b, err, "%s", name)
	return v
}

// BenchmarkWorkQueueRaw: the raw work queue alone, on a lazy and a
// SyncAlways server: end to end (queueJobs no-op jobs, queueHandlers
// handlers), idle pickup p50/p99, and enqueue rates (sync and pipelined
// publishes). It calibrates the baseline the runtime benchmarks divide by.
func BenchmarkWorkQueueRaw(b *testing.B) {
	jobs := queueJobCount(b)
	for _, sm := range syncModes {
		b.Run(sm.name, func(b *testing.B) {
			n := newServer(b, sm.always)
			q := newRawQueue(b, n, queueHandlers)
			var e2e, enqSync, enqAsync time.Duration
			var lat []time.Duration
			rounds := 0
			for b.Loop() {
				e2e += q.run(b, jobs)
				lat = append(lat, q.pickup(b, pickupSamples)...)
				enqSync += rawEnqueue(b, n.JS, min(jobs, 2000), false)
				enqAsync += rawEnqueue(b, n.JS, jobs, true)
				rounds++
			}
			reportRate(b, "e2e-jobs/s", jobs*rounds, e2e)
			reportPercentiles(b, "pickup", lat)
			reportRate(b, "enqueue-sync/s", min(jobs, 2000)*rounds, enqSync)
			reportRate(b, "enqueue-async/s", jobs*rounds, enqAsync)
			b.ReportMetric(0, "ns/op")
			b.Logf("%s: %s", sm.name, fmt.Sprintf("%d rounds", rounds))
		})
	}
}
