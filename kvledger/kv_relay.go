package kvledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/kvx"
)

var _ Relayer = (*KVStore)(nil)

// StartRelay implements Relayer: a durable consumer of the bucket's
// stream, filtered to task records, with explicit acks. A revision is
// acknowledged once publish returned nil for it; a failed publish is
// redelivered after a second.
func (s *KVStore) StartRelay(ctx context.Context, cfg RelayConfig, publish func(context.Context, TaskState) error) (Relay, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := s.b
	cons, err := kvx.Durable(ctx, b.JetStream(), b.Stream(), jetstream.ConsumerConfig{
		Durable:       cfg.Durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		FilterSubject: b.Subject(taskPrefix + ">"),
	}, s.ops.Duration())
	if err != nil {
		return nil, fmt.Errorf("kvledger: relay consumer: %w", err)
	}
	r := &kvRelay{s: s, cons: cons, cfg: cfg, publish: publish}
	// One message at a time: a revision's AckWait runs from its delivery
	// to the client, so revisions buffered behind a slow publish would
	// run out (and go to another relay) while only the one in hand is
	// kept alive with in-progress acks. The publish is a round trip
	// anyway; pulling one by one at most doubles that.
	r.c, err = kvx.Consume(cons, r.handle, r.report, jetstream.PullMaxMessages(1))
	if err != nil {
		return nil, fmt.Errorf("kvledger: relay consume: %w", err)
	}
	return r, nil
}

// kvRelay is the KVStore's relay.
type kvRelay struct {
	s       *KVStore
	cons    jetstream.Consumer
	cfg     RelayConfig
	publish func(context.Context, TaskState) error
	c       *kvx.Consuming
}

func (r *kvRelay) report(err error) {
	if r.cfg.OnError != nil {
		r.cfg.OnError(err)
	}
}

func (r *kvRelay) handle(ctx context.Context, m jetstream.Msg) {
	e, err := r.s.b.EntryOfMsg(m)
	if err != nil {
		r.report(fmt.Errorf("kvledger: relay: %w", err))
		_ = m.Term()
		return
	}
	if !e.Live() {
		_ = m.Ack() // a marker: no event
		return
	}
	key, err := keyOfTask(e.Key)
	var rec TaskState
	if err == nil {
		rec, err = decodeRecord(key, e.Value, e.Revision)
	}
	if err != nil {
		r.report(fmt.Errorf("kvledger: relay: %w", err))
		_ = m.Term()
		return
	}
	if rec.LastEvent == "" {
		_ = m.Ack()
		return
	}
	// Keep the revision while a slow publish runs, so the short AckWait
	// does not hand it to another relay meanwhile.
	stop := keepInProgress(m, r.cfg.AckWait/2)
	err = r.publish(ctx, rec)
	stop()
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			r.report(fmt.Errorf("kvledger: relay: %w", err))
		}
		_ = m.NakWithDelay(time.Second)
		return
	}
	_ = m.Ack()
}

// drainPoll is how often Drain asks the server how far the relay got.
// Drain runs only during Close; no idle relay polls.
const drainPoll = 20 * time.Millisecond

// Drain implements Relay: it keeps consuming until the consumer has
// nothing pending or unacknowledged up to the bucket's last revision at
// the call (revisions held by a dead relay come back after AckWait), then
// stops.
func (r *kvRelay) Drain(ctx context.Context) error {
	defer r.Close()
	last, err := r.s.b.LastRevision(ctx)
	if err != nil {
		return err
	}
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for {
		ci, err := r.cons.Info(ctx)
		if err == nil && (ci.AckFloor.Stream >= last || (ci.NumPending == 0 && ci.NumAckPending == 0)) {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("%d revisions pending, %d unacknowledged, up to revision %d", ci.NumPending, ci.NumAckPending, last)
			}
			return fmt.Errorf("%w: %w", context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

// Close implements Relay.
func (r *kvRelay) Close() { r.c.Stop() }

// keepInProgress sends an in-progress ack for m every interval until the
// returned stop is called. It holds a timer, not a goroutine.
func keepInProgress(m jetstream.Msg, every time.Duration) (stop func()) {
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		_ = m.InProgress()
		t.Reset(every)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}
