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
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// ledgerFloor is the least any ledger-shaped task runtime stores per
// task, written with plain nats.go and no bookkeeping: the admission as a
// create of the task's key (pipelined, like AdmitMany), then, in one of
// queueHandlers handlers that learn of admissions from a watch of the
// bucket, a compare-and-set to "claimed" and a compare-and-set to "done".
// With events, each of the three writes also publishes one message to an
// events stream (pipelined). It has no idempotency records, no fence
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
func newLedgerFloor(b *testing.B, n *natstest.Node, withEvents, pipelined bool) *ledgerFloor {
	b.Helper()
	ctx := context.Background()
	id := strconv.FormatInt(queueSeq.Add(1), 10)
	f := &ledgerFloor{pub: n.JS, hjs: n.NewJS(b), bucket: "floor" + id,
		handle: make(chan jetstream.KeyValueEntry, 4096), stop: make(chan struct{})}
	_, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: f.bucket})
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
	rev, err := f.kv.Update(ctx, e.Key(), []byte("claimed"), e.Revision())
	if err != nil {
		b.Errorf("floor claim: %v", err)
		return
	}
	f.event(b, "claimed", e.Key())
	if f.acks != nil {
		m := nats.NewMsg("$KV." + f.bucket + "." + e.Key())
		m.Data = []byte("done")
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
		a, err := f.hjs.PublishMsgAsync(m)
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
	if _, err := f.kv.Update(ctx, e.Key(), []byte("done"), rev); err != nil {
		b.Errorf("floor done: %v", err)
		return
	}
	f.event(b, "done", e.Key())
	f.completed()
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
		m := nats.NewMsg("$KV." + f.bucket + "." + key)
		m.Data = []byte("pending")
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
		if _, err := f.pub.PublishMsgAsync(m); err != nil {
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
// queue the ledger's three stored writes per task (six with events) can
// come with no cost of the ledger's own. x_raw = floor tasks/s / raw
// jobs/s.
func BenchmarkLedgerFloor(b *testing.B) {
	jobs := queueJobCount(b)
	for _, c := range []struct {
		name          string
		events, piped bool
	}{
		{"writes3", false, false},
		{"writes3+events3", true, false},
		{"writes3/pipelined", false, true},
		{"writes3+events3/pipelined", true, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			n := newServer(b, false)
			q := newRawQueue(b, n, queueHandlers)
			f := newLedgerFloor(b, n, c.events, c.piped)
			var s split
			for b.Loop() {
				s.pair(func() { q.run(b, jobs) }, func() { f.run(b, jobs) })
			}
			s.reportTasks(b, jobs)
		})
	}
}
