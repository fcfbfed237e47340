package kvledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// RelayConfig configures StartRelay.
type RelayConfig struct {
	// Durable is the name of the relay's consumer on the bucket's stream.
	// Default "kvledger-relay". Every process of one ledger may run a
	// relay with the same name: they share the work.
	Durable string
	// AckWait is how long a record revision may stay unpublished before
	// the server hands it to another relay. Default 30 s.
	AckWait time.Duration
	// OnError receives publish failures and undecodable records. Default:
	// ignore (failed publishes are retried).
	OnError func(error)
}

// relay re-publishes the event of every record revision in the bucket.
type relay struct {
	cc     jetstream.ConsumeContext
	cancel context.CancelFunc
	once   sync.Once
}

// StartRelay starts a relay that publishes, for every record revision
// written to the ledger's KVStore bucket, the event that revision names,
// with the same de-duplication id the writer used. It recovers the event
// of a key's last write when its writer died before publishing it (an
// earlier write's lost event is recovered by the writer of the next one;
// see write.go). The relay is a durable consumer on the bucket's stream,
// so it resumes where it stopped; a newly created one starts at the
// bucket's oldest record. Close stops it.
//
// The guarantee is exactly once within the bus's duplicate window: a
// relay that lags by more than the window (for example restarted after a
// long outage) publishes events again that were already delivered, with
// their original revision, which consumers can use to drop them.
func (l *Ledger) StartRelay(ctx context.Context, cfg RelayConfig) error {
	kvs, ok := l.store.(*KVStore)
	if !ok || l.bus == nil {
		return ErrNoRelay
	}
	if cfg.Durable == "" {
		cfg.Durable = "kvledger-relay"
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.AckWait < 0 || strings.ContainsAny(cfg.Durable, ".*> \t") {
		return fmt.Errorf("%w: relay durable %q, ack wait %v", ErrInvalidConfig, cfg.Durable, cfg.AckWait)
	}
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	b := kvs.b
	cons, err := b.JetStream().CreateOrUpdateConsumer(ctx, b.Stream(), jetstream.ConsumerConfig{
		Durable:       cfg.Durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		FilterSubject: b.Subject(taskPrefix + ">"),
	})
	if err != nil {
		return fmt.Errorf("kvledger: relay consumer: %w", err)
	}
	report := func(err error) {
		if cfg.OnError != nil {
			cfg.OnError(err)
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	prefix := b.Subject("")
	cc, err := cons.Consume(func(m jetstream.Msg) {
		l.relayOne(rctx, prefix, m, report)
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) { report(err) }))
	if err != nil {
		cancel()
		return fmt.Errorf("kvledger: relay consume: %w", err)
	}
	r := &relay{cc: cc, cancel: cancel}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = r.stop()
		return ErrClosed
	}
	l.relays = append(l.relays, r)
	return nil
}

func (l *Ledger) relayOne(ctx context.Context, prefix string, m jetstream.Msg, report func(error)) {
	meta, err := m.Metadata()
	if err != nil {
		report(fmt.Errorf("kvledger: relay: %w", err))
		_ = m.Term()
		return
	}
	if len(m.Data()) == 0 || m.Headers().Get("KV-Operation") != "" || m.Headers().Get(jetstream.MarkerReasonHeader) != "" {
		_ = m.Ack() // a marker: no event
		return
	}
	key, err := keyOfTask(strings.TrimPrefix(m.Subject(), prefix))
	var rec TaskState
	if err == nil {
		rec, err = decodeRecord(key, m.Data(), meta.Sequence.Stream)
	}
	if err != nil {
		report(fmt.Errorf("kvledger: relay: %w", err))
		_ = m.Term()
		return
	}
	if rec.LastEvent == "" {
		_ = m.Ack()
		return
	}
	if err := l.bus.Publish(ctx, l.eventOf(rec)); err != nil {
		if !errors.Is(err, context.Canceled) {
			report(fmt.Errorf("kvledger: relay: %w", err))
		}
		_ = m.NakWithDelay(time.Second)
		return
	}
	l.pub.add(rec.Key, rec.Rev)
	_ = m.Ack()
}

func (r *relay) stop() error {
	r.once.Do(func() {
		r.cc.Stop()
		r.cancel()
		<-r.cc.Closed()
	})
	return nil
}
