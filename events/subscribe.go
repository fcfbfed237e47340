package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Live is a core NATS subscription to events: no storage, no acks, only
// what is published while it runs. Because the ledger may publish a
// write twice (a retry or relay that the stream de-duplicates but core
// subscribers still see), Live drops every event whose Revision is not
// above the last one it delivered for the same (Source, Key), so the
// handler sees each write once and in order per key.
type Live struct {
	sub  *nats.Subscription
	mu   sync.Mutex
	last map[[2]string]uint64
}

// liveMemory bounds the per-key memory of Live; past it the memory is
// reset (at worst one duplicate per key gets through afterwards).
const liveMemory = 1 << 16

// SubscribeLive subscribes to subject (for example "ledger.>" or
// "ledger.blocked") on nc and calls fn for every event, from the
// connection's dispatch goroutine, one at a time. Messages that are not
// events go to onErr when it is not nil. Close unsubscribes.
func SubscribeLive(nc *nats.Conn, subject string, fn func(Event), onErr func(error)) (*Live, error) {
	if nc == nil || fn == nil || subject == "" {
		return nil, fmt.Errorf("%w: SubscribeLive needs a connection, a subject and a handler", ErrInvalidConfig)
	}
	l := &Live{last: make(map[[2]string]uint64)}
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		e, err := Unmarshal(m.Data)
		if err != nil {
			if onErr != nil {
				onErr(fmt.Errorf("events: %s: %w", m.Subject, err))
			}
			return
		}
		if l.fresh(e) {
			fn(e)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("events: subscribe %q: %w", subject, err)
	}
	// Make sure the server has the interest before returning, so that
	// events published after SubscribeLive returns are seen.
	if err := nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("events: subscribe %q: %w", subject, err)
	}
	l.sub = sub
	return l, nil
}

func (l *Live) fresh(e Event) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := [2]string{e.Source, e.Key}
	if r, ok := l.last[k]; ok && e.Revision <= r {
		return false
	}
	if len(l.last) >= liveMemory {
		clear(l.last)
	}
	l.last[k] = e.Revision
	return true
}

// Close unsubscribes. It is idempotent.
func (l *Live) Close() error {
	err := l.sub.Unsubscribe()
	if errors.Is(err, nats.ErrBadSubscription) || errors.Is(err, nats.ErrConnectionClosed) {
		return nil
	}
	return err
}

// DurableConfig describes a durable consumer of the event stream.
type DurableConfig struct {
	// Stream is the event stream. Default "LEDGER".
	Stream string
	// Durable is the consumer name (required). A consumer with this name
	// resumes after the last acknowledged event, also in another process
	// after a restart.
	Durable string
	// Subjects filters the events. Default: all of the stream.
	Subjects []string
	// AckWait is how long an event may stay unacknowledged before it is
	// redelivered. Default 30 s.
	AckWait time.Duration
	// MaxAckPending is how many events may be in flight. Default 1, which
	// keeps stream order also across redeliveries (a failed event is
	// retried before any later one is handled). Raise it for throughput
	// when handlers do not depend on order.
	MaxAckPending int
	// DeliverNew starts a newly created consumer at events published
	// after its creation. Default false: from the stream's first event.
	DeliverNew bool
}

// Durable consumes events through a durable JetStream consumer. A handler
// returning nil acknowledges the event; an error asks for redelivery
// after a short delay. Events that do not decode are terminated (never
// redelivered) and reported to onErr. Events are handled one at a time in
// stream order (see DurableConfig.MaxAckPending).
type Durable struct {
	c *kvx.Consuming
}

// SubscribeDurable creates or updates the consumer described by cfg and
// starts consuming. ctx bounds the set-up only; the handler's context is
// cancelled by Close.
func SubscribeDurable(ctx context.Context, js jetstream.JetStream, cfg DurableConfig, fn func(context.Context, Event) error, onErr func(error)) (*Durable, error) {
	if js == nil || fn == nil || cfg.Durable == "" {
		return nil, fmt.Errorf("%w: SubscribeDurable needs JetStream, a durable name and a handler", ErrInvalidConfig)
	}
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.MaxAckPending == 0 {
		cfg.MaxAckPending = 1
	}
	cc := jetstream.ConsumerConfig{
		MaxAckPending:  cfg.MaxAckPending,
		Durable:        cfg.Durable,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        cfg.AckWait,
		FilterSubjects: cfg.Subjects,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if cfg.DeliverNew {
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	cons, err := kvx.Durable(ctx, js, cfg.Stream, cc, kvx.OpTimeoutOf(js))
	if err != nil {
		return nil, fmt.Errorf("events: consumer %q on %q: %w", cfg.Durable, cfg.Stream, err)
	}
	report := func(err error) {
		if onErr != nil {
			onErr(err)
		}
	}
	consume, err := kvx.Consume(cons, func(hctx context.Context, m jetstream.Msg) {
		e, err := Unmarshal(m.Data())
		if err != nil {
			report(fmt.Errorf("events: %s: %w", m.Subject(), err))
			_ = m.Term()
			return
		}
		if err := fn(hctx, e); err != nil {
			report(fmt.Errorf("events: handler for %s %q revision %d: %w", e.Name, e.Key, e.Revision, err))
			_ = m.NakWithDelay(time.Second)
			return
		}
		// The ack outlives Close's cancel: a handled event should not be
		// redelivered just because Close came in between.
		actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer acancel()
		if err := m.DoubleAck(actx); err != nil {
			report(fmt.Errorf("events: ack %s %q revision %d: %w", e.Name, e.Key, e.Revision, err))
		}
	}, report)
	if err != nil {
		return nil, fmt.Errorf("events: consume %q: %w", cfg.Durable, err)
	}
	return &Durable{c: consume}, nil
}

// Close stops consuming and waits until the handler has returned. Events
// not yet acknowledged are redelivered to the next consumer with the same
// name. It is idempotent and returns nil; the error makes Durable an
// io.Closer like Live.
func (d *Durable) Close() error {
	d.c.Stop()
	return nil
}

// Done is closed once the Durable has stopped consuming (after Close):
// no handler runs after it.
func (d *Durable) Done() <-chan struct{} { return d.c.Done() }
