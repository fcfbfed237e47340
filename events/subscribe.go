package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Live is a core NATS subscription to the live subjects a Source's stream
// republishes every write on: no storage, no acks, only what is stored
// while it runs, at most once (the server does not retry a republish; a
// slow subscriber drops messages). A write it can tell it missed (its
// key's next write names a previous revision it did not deliver) is
// reported as a Gap.
type Live struct {
	subs []*nats.Subscription
}

// LiveConfig configures SubscribeLive.
type LiveConfig struct {
	// Filter selects keys (one subject each) and names (a header).
	Filter Filter
	// OnGap is called, before the write that revealed it, for each gap.
	// Default: the error handler gets the Gap (it is an error).
	OnGap func(Gap)
}

// SubscribeLive subscribes to src's live subjects on nc and calls fn for
// every event, from the connection's dispatch goroutine, one at a time
// per subject. Messages that do not decode go to onErr when it is not
// nil. Close unsubscribes.
func SubscribeLive(nc *nats.Conn, src Source, cfg LiveConfig, fn func(Event), onErr func(error)) (*Live, error) {
	if nc == nil || fn == nil || !src.valid() {
		return nil, fmt.Errorf("%w: SubscribeLive needs a connection, a complete Source and a handler", ErrInvalidConfig)
	}
	if err := src.checkFilter(cfg.Filter); err != nil {
		return nil, err
	}
	report := reporter(onErr)
	rd := newReader(src, cfg.Filter, 0, gapHandler(cfg.OnGap, report), report)
	handle := func(m *nats.Msg) {
		rev, _ := strconv.ParseUint(m.Header.Get(hdrSequence), 10, 64)
		ts, _ := time.Parse(time.RFC3339Nano, m.Header.Get(hdrTimeStamp))
		if e, got := rd.read(Msg{Subject: m.Header.Get(hdrSubject), Header: m.Header, Data: m.Data, Revision: rev, Time: ts}); got == readEvent {
			fn(e)
		}
	}
	subjects := []string{src.Live}
	if len(cfg.Filter.Keys) > 0 {
		subjects = subjects[:0]
		for _, k := range cfg.Filter.Keys {
			subjects = append(subjects, src.LiveKeySubject(k))
		}
	}
	l := &Live{}
	for _, s := range subjects {
		sub, err := nc.Subscribe(s, handle)
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("events: subscribe %q: %w", s, err)
		}
		l.subs = append(l.subs, sub)
	}
	// Make sure the server has the interest before returning, so that
	// writes stored after SubscribeLive returns are seen.
	if err := nc.Flush(); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("events: subscribe %q: %w", subjects, err)
	}
	return l, nil
}

// Close unsubscribes. It is idempotent.
func (l *Live) Close() error {
	var errs []error
	for _, s := range l.subs {
		err := s.Unsubscribe()
		if err != nil && !errors.Is(err, nats.ErrBadSubscription) && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DurableConfig describes a durable consumer of a Source's stream.
type DurableConfig struct {
	// Durable is the consumer name (required). A consumer with this name
	// resumes after the last acknowledged event, also in another process
	// and after a server restart.
	Durable string
	// Filter selects keys (the consumer's subject filters: the server
	// sends only their writes) and names (a header, read before the body
	// is decoded; the others are acknowledged unseen). Changing the keys
	// of an existing consumer updates it.
	Filter Filter
	// AckWait is how long an event may stay unacknowledged before it is
	// redelivered. Default 30 s.
	AckWait time.Duration
	// MaxAckPending is how many events may be in flight. Default 1, which
	// keeps stream order also across redeliveries (a failed event is
	// retried before any later one is handled). Raise it for throughput
	// when handlers do not depend on order. With more than one in flight,
	// a consumer resumed in a new process may report a Gap for a key whose
	// previous write it acknowledged above its acknowledgement floor (the
	// floor is all the server keeps of the order of acks).
	MaxAckPending int
	// DeliverNew starts a newly created consumer at writes stored after
	// its creation. Default false: from the stream's first message.
	DeliverNew bool
	// OnGap is called, before the write that revealed it, for each gap
	// (see Gap). Default: the error handler gets the Gap (it is an error).
	OnGap func(Gap)
}

// Durable consumes events through a durable JetStream consumer on the
// stream whose writes are the events. A handler returning nil
// acknowledges the event; an error asks for redelivery after a short
// delay. Writes that do not decode are terminated (never redelivered) and
// reported to onErr. Events are handled one at a time in stream order
// (see DurableConfig.MaxAckPending), so per key in write order.
type Durable struct {
	c *kvx.Consuming
}

// SubscribeDurable creates or updates the consumer described by cfg on
// src's stream and starts consuming. ctx bounds the set-up only; the
// handler's context is cancelled by Close.
func SubscribeDurable(ctx context.Context, js jetstream.JetStream, src Source, cfg DurableConfig, fn func(context.Context, Event) error, onErr func(error)) (*Durable, error) {
	if js == nil || fn == nil || cfg.Durable == "" || !src.valid() {
		return nil, fmt.Errorf("%w: SubscribeDurable needs JetStream, a complete Source, a durable name and a handler", ErrInvalidConfig)
	}
	if err := src.checkFilter(cfg.Filter); err != nil {
		return nil, err
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.MaxAckPending == 0 {
		cfg.MaxAckPending = 1
	}
	cc := jetstream.ConsumerConfig{
		// What `nats consumer ls` shows: whose it is, and that it stays
		// until removed (a durable subscription never expires).
		Description:   "natscoord events: durable subscription to " + src.Name + "'s events; stays until nats consumer rm",
		MaxAckPending: cfg.MaxAckPending,
		Durable:       cfg.Durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	if len(cfg.Filter.Keys) == 0 {
		cc.FilterSubject = src.Subject
	}
	for _, k := range cfg.Filter.Keys {
		cc.FilterSubjects = append(cc.FilterSubjects, src.KeySubject(k))
	}
	if cfg.DeliverNew {
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	cons, err := kvx.Durable(ctx, js, src.Stream, cc, kvx.OpTimeoutOf(js))
	if err != nil {
		return nil, fmt.Errorf("events: consumer %q on %q: %w", cfg.Durable, src.Stream, err)
	}
	report := reporter(onErr)
	onGap := gapHandler(cfg.OnGap, report)
	start, err := resumeAt(ctx, js, src, cons, onGap)
	if err != nil {
		return nil, err
	}
	rd := newReader(src, cfg.Filter, start, onGap, report)
	consume, err := kvx.Consume(cons, func(hctx context.Context, m jetstream.Msg) {
		meta, err := m.Metadata()
		if err != nil {
			report(fmt.Errorf("events: %s: %w", m.Subject(), err))
			_ = m.Term()
			return
		}
		e, got := rd.read(Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Revision: meta.Sequence.Stream, Time: meta.Timestamp})
		switch got {
		case readSkipped:
			ackSkipped(m)
			return
		case readBroken:
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

// resumeAt returns the first stream sequence this session of cons can
// deliver and reports a gap over the whole stream when a resuming
// consumer's next message is no longer in the stream: messages from its
// acknowledgment floor on were dropped (a key's History exceeded, a purge,
// the bucket's limits) before it read them. A new consumer starts at what
// the stream holds (or at the next write, with DeliverNew): it is told of
// a key's gap only when a write it should have seen is missing.
func resumeAt(ctx context.Context, js jetstream.JetStream, src Source, cons jetstream.Consumer, onGap func(Gap)) (uint64, error) {
	ci := cons.CachedInfo() // as the create-or-update answered
	s, err := js.Stream(ctx, src.Stream)
	if err != nil {
		return 0, fmt.Errorf("events: stream %q: %w", src.Stream, err)
	}
	st := s.CachedInfo().State
	if ci.AckFloor.Stream == 0 && ci.Delivered.Stream == 0 {
		if ci.Config.DeliverPolicy == jetstream.DeliverNewPolicy {
			return st.LastSeq + 1, nil
		}
		return max(st.FirstSeq, 1), nil
	}
	start := ci.AckFloor.Stream + 1
	if st.FirstSeq > start {
		onGap(Gap{Source: src.Name, After: start - 1, Through: st.FirstSeq - 1})
	}
	return start, nil
}

// ackSkipped acknowledges a message the handler is not given.
func ackSkipped(m jetstream.Msg) { _ = m.Ack() }

func reporter(onErr func(error)) func(error) {
	return func(err error) {
		if onErr != nil {
			onErr(err)
		}
	}
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
