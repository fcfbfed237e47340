package bench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/stretchr/testify/require"

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
type ledgerFloor struct {
	pub jetstream.JetStream
	// hjs is the handlers' connection: claims, outcomes and their events.
	hjs    jetstream.JetStream
	kv     jetstream.KeyValue
	bucket string
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
	// acks, when not nil, receives the completions' ack futures: the
	// handler sends its completion without waiting for its ack and goes
	// on to the next task (the most a runtime could pipeline: the claim
	// must be confirmed before the handler runs, the outcome need not).
	acks   chan jetstream.PubAckFuture
	handle chan jetstream.KeyValueEntry
	stop   chan struct{}
	done   atomic.Pointer[func()]
}

// newLedgerFloor creates the bucket (and, with events, a stream on
// "floorev<id>.>") on n and starts the handlers on their own connection;
// b.Cleanup stops them.
func newLedgerFloor(b *testing.B, n *natstest.Node, withEvents, pipelined, logged, ids bool) *ledgerFloor {
	b.Helper()
	ctx := context.Background()
	id := strconv.FormatInt(queueSeq.Add(1), 10)
	f := &ledgerFloor{pub: n.JS, hjs: n.NewJS(b), bucket: "floor" + id, logged: logged, ids: ids,
		handle: make(chan jetstream.KeyValueEntry, 4096), stop: make(chan struct{})}
	kvc := jetstream.KeyValueConfig{Bucket: f.bucket}
	if logged {
		kvc.History = kvledger.EventHistory
		kvc.RePublish = &jetstream.RePublish{Source: "$KV." + f.bucket + ".>", Destination: "floorlive" + id + ".>"}
	}
	_, err := n.JS.CreateKeyValue(ctx, kvc)
	require.NoError(b, err)
	if withEvents {
		f.events = "floorev" + id
		_, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "FLOOREV" + id, Subjects: []string{f.events + ".>"}})
		require.NoError(b, err)
	}
	f.kv, err = f.hjs.KeyValue(ctx, f.bucket)
	require.NoError(b, err)
	w, err := f.kv.WatchAll(ctx, jetstream.UpdatesOnly())
	require.NoError(b, err)
	stop := f.stop
	var wg sync.WaitGroup
	wg.Go(func() { // the watch: hands admissions to the handlers
		for {
			select {
			case e := <-w.Updates():
				if e != nil && e.Operation() == jetstream.KeyValuePut && string(e.Value()) == "pending" {
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
		_ = w.Stop()
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
		rev, err = f.kv.Update(ctx, e.Key(), []byte("claimed"), e.Revision())
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
		_, err = f.kv.Update(ctx, e.Key(), []byte("done"), rev)
	}
	if err != nil {
		b.Errorf("floor done: %v", err)
		return
	}
	f.event(b, "done", e.Key())
	f.completed()
}

// write is the compare-and-set of key to value at revision rev, named by
// its transition in kvledger's header when the floor is logged.
func (f *ledgerFloor) write(key, value string, rev uint64) *nats.Msg {
	m := nats.NewMsg("$KV." + f.bucket + "." + key)
	m.Data = []byte(value)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	if f.logged {
		m.Header.Set(kvledger.EventHeader, "ledger."+value)
	}
	if f.ids {
		m.Header.Set(jetstream.MsgIDHeader, nuid.Next())
	}
	return m
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

// BenchmarkLedgerFloor measures ledgerFloor, without and with events,
// against the raw work queue in the same run: how close to 0.2x the raw
// queue the ledger's three stored writes per task (six with client
// events) can come with no cost of the ledger's own. "logged" is the
// ledger's design: three stored writes with their transition header in a
// bucket that keeps and republishes them, no client events. x_raw = floor
// tasks/s / raw jobs/s.
func BenchmarkLedgerFloor(b *testing.B) {
	jobs := queueJobCount(b)
	for _, c := range []struct {
		name                       string
		events, piped, logged, ids bool
	}{
		{"writes3", false, false, false, false},
		{"writes3+events3", true, false, false, false},
		{"writes3/pipelined", false, true, false, false},
		{"writes3+events3/pipelined", true, true, false, false},
		{"writes3+logged", false, false, true, false},
		{"writes3+logged/pipelined", false, true, true, false},
		// The ledger's writes as the runtime must make them: each with
		// its write id (a Nats-Msg-Id) too.
		{"writes3+logged+ids", false, false, true, true},
		{"writes3+logged+ids/pipelined", false, true, true, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			n := newServer(b, false)
			q := newRawQueue(b, n, queueHandlers)
			f := newLedgerFloor(b, n, c.events, c.piped, c.logged, c.ids)
			var s split
			for b.Loop() {
				s.pair(func() { q.run(b, jobs) }, func() { f.run(b, jobs) })
			}
			s.reportTasks(b, jobs)
			s.reportStarted(b, q.tail)
		})
	}
}
