package kvledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// RelayConfig configures StartRelay.
type RelayConfig struct {
	// Durable is the name of the relay's consumer on the store's change
	// log. Default "kvledger-relay". Every process of one ledger may run
	// a relay with the same name: they share the work.
	Durable string
	// AckWait is how long a record revision handed to a relay may stay
	// unpublished before the server hands it to another relay: a relay
	// that died (SIGKILL) holds its revisions this long. Default 2 s. A
	// publish that takes longer keeps its revision with in-progress acks
	// every AckWait/2, so a slow bus does not make relays publish twice.
	AckWait time.Duration
	// DrainTimeout bounds how long Ledger.Close waits for the relay to
	// drain (see Relay.Drain), whatever Close's ctx allows. Default 10 s.
	DrainTimeout time.Duration
	// OnError receives publish failures and undecodable records. Default:
	// ignore (failed publishes are retried).
	OnError func(error)
}

// Defaults of RelayConfig.
const (
	DefaultRelayAckWait      = 2 * time.Second
	DefaultRelayDrainTimeout = 10 * time.Second
)

func (c RelayConfig) withDefaults() (RelayConfig, error) {
	if c.Durable == "" {
		c.Durable = "kvledger-relay"
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultRelayAckWait
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultRelayDrainTimeout
	}
	if c.AckWait < 100*time.Millisecond || c.DrainTimeout < 0 || strings.ContainsAny(c.Durable, ".*> \t") {
		return c, fmt.Errorf("%w: relay durable %q, ack wait %v (at least 100ms), drain timeout %v",
			ErrInvalidConfig, c.Durable, c.AckWait, c.DrainTimeout)
	}
	return c, nil
}

// Relayer is an optional Store capability: a store that keeps a change
// log of every record revision (the KVStore: the bucket's stream) runs a
// relay over it, handing every stored revision that names an event to
// publish, in revision order, until publish succeeds for it. It is how
// the event of a key's last write is recovered when its writer died
// between the write and the publish.
type Relayer interface {
	StartRelay(ctx context.Context, cfg RelayConfig, publish func(context.Context, TaskState) error) (Relay, error)
}

// Relay is a running relay of a Relayer.
type Relay interface {
	// Drain waits until every revision up to the store's last revision
	// at the call is published (by this relay or another of the same
	// durable name), then stops the relay. It returns ctx's error, with
	// the relay stopped, when ctx ends first.
	Drain(ctx context.Context) error
	// Close stops the relay at once; revisions it held go to another
	// relay after AckWait.
	Close()
}

// StartRelay starts a relay that publishes, for every record revision
// the ledger's store holds, the event that revision names, with the same
// de-duplication id the writer used. The store must implement Relayer
// (the KVStore does). A relay resumes where its durable consumer stopped;
// a new one starts at the store's oldest record. Close drains it: it
// returns once every revision written before Close is published.
//
// The guarantee is exactly once within the bus's duplicate window: a
// relay that lags by more than the window (for example restarted after a
// long outage) publishes events again that were already delivered, with
// their original revision, which consumers can use to drop them.
func (l *Ledger) StartRelay(ctx context.Context, cfg RelayConfig) error {
	rl, ok := l.store.(Relayer)
	if !ok || l.bus == nil {
		return ErrNoRelay
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	r, err := rl.StartRelay(ctx, cfg, func(ctx context.Context, rec TaskState) error {
		if err := l.bus.Publish(ctx, l.eventOf(rec)); err != nil {
			return err
		}
		l.pub.add(rec.Key, rec.Rev)
		return nil
	})
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		r.Close()
		return ErrClosed
	}
	l.relays = append(l.relays, &relay{r: r, drain: cfg.DrainTimeout})
	return nil
}

// relay is a started relay and its drain bound.
type relay struct {
	r     Relay
	drain time.Duration
	once  sync.Once
	err   error
}

// stop drains the relay within its bound and ctx. A drain cancelled
// other than by the caller (the relay already stopped) is no error.
func (r *relay) stop(ctx context.Context) error {
	r.once.Do(func() {
		dctx, cancel := context.WithTimeout(ctx, r.drain)
		defer cancel()
		if err := r.r.Drain(dctx); err != nil && (ctx.Err() != nil || !errors.Is(err, context.Canceled)) {
			r.err = fmt.Errorf("kvledger: relay drain: %w", err)
		}
	})
	return r.err
}
