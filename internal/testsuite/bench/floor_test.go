package bench

import (
	"bytes"
	"context"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// ledgerFloor is the least any ledger-shaped task runtime stores per
// task, written with plain nats.go and no bookkeeping: the admission as a
// create of the task's key (pipelined, like AdmitMany), then, in one of
// queueHandlers handlers that learn of admissions from a watch of the
// bucket, a compare-and-set to "claimed" and a compare-and-set to "done".
// With events, each of the three writes also publishes one message to an
// events stream (pipelined). With the ledger's layout (logged), the bucket
// keeps 64 writes per key and republishes them (kvledger's event log) and
// each write carries its transition in a header: the design where the
// writes are the events and the client publishes nothing more. It has no
// idempotency records, no fence
// checks beyond the revisions, no JSON and no liveness: it is a floor to
// measure the runtime against, not a design.
//
// With shards > 1 the tasks' keys are spread by their hash over that many
// buckets, each with its own watch feeding the same handlers: the
// sharded ledger kvledger/doc.go describes, whose streams store (and, at
// SyncAlways, fsync) in parallel where one bucket's stream stores its
// writes one after the other.
type ledgerFloor struct {
	pub jetstream.JetStream
	// hjs is the handlers' connection: claims, outcomes and their events.
	hjs jetstream.JetStream
	// kvs and buckets are the shards' buckets, the i-th holding the keys
	// whose shard is i.
	kvs     []jetstream.KeyValue
	buckets []string
	// batches, when not nil, are the buckets' kvx handles on the
	// admitting connection: the admission is one atomic batch of up to
	// kvx.MaxBatch creates per bucket, as AdmitMany's, instead of one
	// pipelined create per task.
	batches []*kvx.Bucket
	// events is the events stream's subject prefix, "" for none.
	events string
	// logged: the bucket has kvledger's event-log layout (History 64, a
	// RePublish) and every write names its transition in a header.
	logged bool
	// ids: every write also carries a Nats-Msg-Id of its own, as each of
	// the ledger's writes does (its write id, by which a write whose
	// answer was lost is found on the key afterwards; the server keeps
	// it in the stream's duplicate window).
	ids bool
	// sized: every write's value is as long as the ledger's record of
	// that state in BenchmarkTaskRuntime's e2e (admitted 268 bytes,
	// claimed 470, completed 341: the JSON record `nats kv get` shows),
	// not the state's name alone.
	sized bool
	// acks, when not nil, receives the completions' ack futures: the
	// handler sends its completion without waiting for its ack and goes
	// on to the next task (the most a runtime could pipeline: the claim
	// must be confirmed before the handler runs, the outcome need not).
	acks   chan jetstream.PubAckFuture
	handle chan jetstream.KeyValueEntry
	stop   chan struct{}
	done   atomic.Pointer[func()]
}

// newLedgerFloor creates the shards buckets (and, with events, a stream
// on "floorev<id>.>") on n and starts the handlers on their own
// connection; b.Cleanup stops them. batched: admissions by atomic batches.
func newLedgerFloor(b *testing.B, n *natstest.Node, withEvents, pipelined, logged, ids bool, shards int, batched bool) *ledgerFloor {
	b.Helper()
	require.Positive(b, shards)
	ctx := context.Background()
	id := strconv.FormatInt(queueSeq.Add(1), 10)
	f := &ledgerFloor{pub: n.JS, hjs: n.NewJS(b), logged: logged, ids: ids,
		handle: make(chan jetstream.KeyValueEntry, 4096), stop: make(chan struct{})}
	if withEvents {
		f.events = "floorev" + id
		_, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "FLOOREV" + id, Subjects: []string{f.events + ".>"}})
		require.NoError(b, err)
	}
	stop := f.stop
	var (
		wg       sync.WaitGroup
		watchers []jetstream.KeyWatcher
	)
	for i := range shards {
		bucket := "floor" + id
		if shards > 1 {
			bucket += "s" + strconv.Itoa(i)
		}
		kvc := jetstream.KeyValueConfig{Bucket: bucket}
		if logged {
			kvc.History = kvledger.EventHistory
			kvc.RePublish = &jetstream.RePublish{Source: "$KV." + bucket + ".>", Destination: "floorlive" + id + ".>"}
		}
		_, err := n.JS.CreateKeyValue(ctx, kvc)
		require.NoError(b, err)
		if batched {
			kb, err := kvx.Bind(ctx, n.JS, bucket, false)
			require.NoError(b, err)
			require.NoError(b, kb.EnableAtomicBatches(ctx))
			f.batches = append(f.batches, kb)
		}
		kv, err := f.hjs.KeyValue(ctx, bucket)
		require.NoError(b, err)
		w, err := kv.WatchAll(ctx, jetstream.UpdatesOnly())
		require.NoError(b, err)
		f.kvs, f.buckets, watchers = append(f.kvs, kv), append(f.buckets, bucket), append(watchers, w)
		wg.Go(func() { // the bucket's watch: hands admissions to the handlers
			for {
				select {
				case e := <-w.Updates():
					if e != nil && e.Operation() == jetstream.KeyValuePut && bytes.HasPrefix(e.Value(), []byte("pending")) {
						select {
						case f.handle <- e:
						case <-stop:
							return
						}
					}
				case <-stop:
					return
				}
			}
		})
	}
	if pipelined {
		f.acks = make(chan jetstream.PubAckFuture, 4096)
		wg.Go(func() { // counts the completions as their acks arrive
			for {
				select {
				case a := <-f.acks:
					select {
					case <-a.Ok():
						f.completed()
					case err := <-a.Err():
						b.Errorf("floor done: %v", err)
					}
				case <-stop:
					return
				}
			}
		})
	}
	for range queueHandlers {
		wg.Go(func() {
			for {
				select {
				case e := <-f.handle:
					f.work(b, e)
				case <-stop:
					return
				}
			}
		})
	}
	b.Cleanup(func() {
		close(stop)
		for _, w := range watchers {
			_ = w.Stop()
		}
		for _, kb := range f.batches {
			kb.Close() // its reply subscription
		}
		all := make(chan struct{})
		go func() { wg.Wait(); close(all) }()
		natstest.WaitClosed(b, all, 10*time.Second, "the floor's goroutines")
	})
	return f
}

// work claims e's task, runs nothing, and records it done.
func (f *ledgerFloor) work(b *testing.B, e jetstream.KeyValueEntry) {
	ctx := context.Background()
	var rev uint64
	var err error
	if f.logged {
		var a *jetstream.PubAck
		if a, err = f.hjs.PublishMsg(ctx, f.write(e.Key(), "claimed", e.Revision())); err == nil {
			rev = a.Sequence
		}
	} else {
		rev, err = f.kvs[f.shard(e.Key())].Update(ctx, e.Key(), []byte("claimed"), e.Revision())
	}
	if err != nil {
		b.Errorf("floor claim: %v", err)
		return
	}
	f.event(b, "claimed", e.Key())
	if f.acks != nil {
		a, err := f.hjs.PublishMsgAsync(f.write(e.Key(), "done", rev))
		if err != nil {
			b.Errorf("floor done: %v", err)
			return
		}
		f.event(b, "done", e.Key())
		select {
		case f.acks <- a:
		case <-f.stop:
		}
		return
	}
	if f.logged {
		_, err = f.hjs.PublishMsg(ctx, f.write(e.Key(), "done", rev))
	} else {
		_, err = f.kvs[f.shard(e.Key())].Update(ctx, e.Key(), []byte("done"), rev)
	}
	if err != nil {
		b.Errorf("floor done: %v", err)
		return
	}
	f.event(b, "done", e.Key())
	f.completed()
}

// shard is the index of the bucket that holds key.
func (f *ledgerFloor) shard(key string) int {
	if len(f.buckets) == 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(f.buckets)))
}

// write is the compare-and-set of key to value at revision rev in key's
// bucket, named by its transition in kvledger's header when the floor is
// logged.
func (f *ledgerFloor) write(key, value string, rev uint64) *nats.Msg {
	m := nats.NewMsg("$KV." + f.buckets[f.shard(key)] + "." + key)
	m.Data = f.value(value)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	if f.logged {
		m.Header.Set(kvledger.EventHeader, "ledger."+value)
	}
	if f.ids {
		m.Header.Set(jetstream.MsgIDHeader, nuid.Next())
	}
	return m
}

// recordSizes are the lengths of the ledger's stored records of a no-op
// task in BenchmarkTaskRuntime's e2e, by the state the floor names.
var recordSizes = map[string]int{"pending": 268, "claimed": 470, "done": 341}

// value is what the floor stores for state: its name, padded to the
// ledger's record size when the floor is sized.
func (f *ledgerFloor) value(state string) []byte {
	if !f.sized {
		return []byte(state)
	}
	v := make([]byte, recordSizes[state])
	copy(v, state)
	for i := len(state); i < len(v); i++ {
		v[i] = ' '
	}
	return v
}

func (f *ledgerFloor) completed() {
	if d := f.done.Load(); d != nil {
		(*d)()
	}
}

// event publishes one event without waiting for its ack, as the
// ledger's PublishAsync does.
func (f *ledgerFloor) event(b *testing.B, kind, key string) {
	if f.events == "" {
		return
	}
	if _, err := f.hjs.PublishAsync(f.events+"."+kind+"."+key, []byte(kind)); err != nil {
		b.Errorf("floor event: %v", err)
	}
}

// run admits count tasks and returns the time until every one is done
// and every publish of both connections (admissions and, with events,
// every event) is acknowledged.
func (f *ledgerFloor) run(b *testing.B, count int) time.Duration {
	b.Helper()
	d, all, completed := countdown(count)
	f.done.Store(&d)
	defer f.done.Store(nil)
	round := strconv.FormatInt(roundSeq.Add(1), 10)
	start := time.Now()
	if f.batches != nil {
		f.admitBatched(b, round, count)
	} else {
		f.admitEach(b, round, count)
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("floor: %d of %d tasks done", completed.Load(), count)
	}
	select {
	case <-f.hjs.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		b.Fatal("floor: the handlers' publish acks did not arrive")
	}
	return time.Since(start)
}

// admitEach admits the round's count tasks with one pipelined create each.
func (f *ledgerFloor) admitEach(b *testing.B, round string, count int) {
	b.Helper()
	publishWindowed(b, f.pub, count, func(i int) error {
		key := "f" + round + "-" + strconv.Itoa(i)
		if _, err := f.pub.PublishMsgAsync(f.write(key, "pending", 0)); err != nil {
			return err
		}
		if f.events == "" {
			return nil
		}
		_, err := f.pub.PublishAsync(f.events+".admitted."+key, []byte("admitted"))
		return err
	})
}

// admitBatched admits the round's count tasks in atomic batches of up to
// kvx.MaxBatch creates, each of one bucket's keys, sent one after the
// other (as AdmitMany sends its batches; events are not published).
func (f *ledgerFloor) admitBatched(b *testing.B, round string, count int) {
	b.Helper()
	ctx := context.Background()
	keys := make([][]string, len(f.buckets))
	for i := range count {
		key := "f" + round + "-" + strconv.Itoa(i)
		s := f.shard(key)
		keys[s] = append(keys[s], key)
	}
	value := f.value("pending")
	var hdr nats.Header
	if f.logged {
		hdr = nats.Header{kvledger.EventHeader: []string{"ledger.pending"}}
	}
	for s, ks := range keys {
		for i := 0; i < len(ks); i += kvx.MaxBatch {
			part := ks[i:min(i+kvx.MaxBatch, len(ks))]
			values, hdrs := make([][]byte, len(part)), make([]nats.Header, len(part))
			for j := range part {
				values[j], hdrs[j] = value, hdr
				if f.ids {
					hdrs[j] = nats.Header{kvledger.EventHeader: hdr[kvledger.EventHeader], jetstream.MsgIDHeader: []string{nuid.Next()}}
				}
			}
			_, err := f.batches[s].CreateBatchAs(ctx, nuid.Next(), part, values, hdrs)
			require.NoError(b, err, "floor admission batch")
		}
	}
}

// BenchmarkLedgerFloor measures ledgerFloor, without and with events,
// against the raw work queue in the same run: how close to 0.2x the raw
// queue the ledger's three stored writes per task (six with client
// events) can come with no cost of the ledger's own. "logged" is the
// ledger's design: three stored writes with their transition header in a
// bucket that keeps and republishes them, no client events. x_raw = floor
// tasks/s / raw jobs/s.
//
// The sync=always rows ask whether a sharded ledger would reach 0.5x the
// raw queue at fsync-every-write (issue 22): the logged floor with
// AdmitMany's atomic batches ("batch"), on one bucket and with its keys
// spread over 2 and 4 buckets ("shardsN"), against the raw queue on the
// same SyncAlways server, with a quarter of the tasks as
// BenchmarkTaskRuntime's e2e-syncalways. The lazy shards2 rows say what
// sharding costs when the run is CPU-bound.
func BenchmarkLedgerFloor(b *testing.B) {
	jobs := queueJobCount(b)
	for _, c := range []struct {
		name                       string
		events, piped, logged, ids bool
		always, batched, sized     bool
		shards                     int
	}{
		{name: "writes3"},
		{name: "writes3+events3", events: true},
		{name: "writes3/pipelined", piped: true},
		{name: "writes3+events3/pipelined", events: true, piped: true},
		{name: "writes3+logged", logged: true},
		{name: "writes3+logged/pipelined", piped: true, logged: true},
		// The ledger's writes as the runtime must make them: each with
		// its write id (a Nats-Msg-Id) too.
		{name: "writes3+logged+ids", logged: true, ids: true},
		{name: "writes3+logged+ids/pipelined", piped: true, logged: true, ids: true},
		// And with values as long as the ledger's JSON records, admitted
		// in atomic batches as AdmitMany does: the floor of the runtime's
		// own design, its writes as the server stores them.
		{name: "writes3+logged+ids+records", logged: true, ids: true, sized: true},
		{name: "writes3+logged+ids+records/pipelined", piped: true, logged: true, ids: true, sized: true},
		{name: "writes3+logged+ids+records+batch/pipelined", piped: true, logged: true, ids: true, sized: true, batched: true},
		{name: "writes3+logged+shards2", logged: true, shards: 2},
		{name: "writes3+logged+shards2/pipelined", piped: true, logged: true, shards: 2},
		{name: "sync=always/writes3+logged", logged: true, always: true},
		{name: "sync=always/writes3+logged+batch", logged: true, always: true, batched: true},
		{name: "sync=always/writes3+logged+batch/pipelined", piped: true, logged: true, always: true, batched: true},
		{name: "sync=always/writes3+logged+batch+shards2", logged: true, always: true, batched: true, shards: 2},
		{name: "sync=always/writes3+logged+batch+shards2/pipelined", piped: true, logged: true, always: true, batched: true, shards: 2},
		{name: "sync=always/writes3+logged+batch+shards4", logged: true, always: true, batched: true, shards: 4},
		{name: "sync=always/writes3+logged+batch+shards4/pipelined", piped: true, logged: true, always: true, batched: true, shards: 4},
	} {
		b.Run(c.name, func(b *testing.B) {
			count := jobs
			if c.always {
				count = jobs / 4 // every stored message waits for the disk
			}
			n := newServer(b, c.always)
			q := newRawQueue(b, n, queueHandlers)
			f := newLedgerFloor(b, n, c.events, c.piped, c.logged, c.ids, max(c.shards, 1), c.batched)
			f.sized = c.sized
			var s split
			for b.Loop() {
				s.pair(func() { q.run(b, count) }, func() { f.run(b, count) })
			}
			s.reportTasks(b, count)
			s.reportStarted(b, q.tail)
		})
	}
}
