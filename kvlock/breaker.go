package kvlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
)

// Defaults of BreakerPolicy.
const (
	DefaultBreakerFailures = 5
	DefaultBreakerCoolDown = 2 * time.Second
)

// ErrCircuitOpen means the Locker's circuit breaker is open: recent
// server operations kept failing transiently, so this one failed at once
// without being sent. It wraps the last transient error when there is
// one. Retry after BreakerPolicy.CoolDown.
var ErrCircuitOpen = errors.New("kvlock: circuit open")

// BreakerPolicy configures the circuit breaker of a NATS Locker. After
// Failures consecutive transient failures (the errors Retry retries:
// no responders, no stream leader, not connected, timed-out requests),
// acquisitions, fair-queue tickets and election writes fail fast with
// ErrCircuitOpen for CoolDown, instead of adding load to a server that is
// down or electing a leader. Then the breaker is half-open: one operation
// is let through as a probe (the others still fail fast); its success
// closes the breaker, a transient failure opens it for another CoolDown.
// Any answer from the server (success, contention, loss) counts as
// success; an operation cut short by its caller's context counts as
// neither.
//
// Renewals and releases of locks already held are never refused: failing
// them fast would turn an outage into lost locks, or into locks left
// until their TTL. Their outcomes still count, so a renewal that gets
// through closes the breaker. State changes go to a Config.Observer that
// implements BreakerObserver. The in-process Memory has no breaker.
type BreakerPolicy struct {
	// Failures is the number of consecutive transient failures that opens
	// the breaker. Default 5.
	Failures int
	// CoolDown is how long the breaker stays open before a probe.
	// Default 2s.
	CoolDown time.Duration
	// Disabled turns the breaker off. Default false (on).
	Disabled bool
}

func (p *BreakerPolicy) withDefaults() error {
	if p.Failures == 0 {
		p.Failures = DefaultBreakerFailures
	}
	if p.CoolDown == 0 {
		p.CoolDown = DefaultBreakerCoolDown
	}
	if p.Failures < 1 || p.Failures > 1000 || p.CoolDown < 0 {
		return fmt.Errorf("%w: Breaker %+v: Failures 1..1000, CoolDown >= 0", ErrInvalidConfig, *p)
	}
	return nil
}

// BreakerState is the state of a circuit breaker.
type BreakerState int

// The states of a circuit breaker.
const (
	BreakerClosed   BreakerState = iota // operations go through
	BreakerOpen                         // operations fail fast with ErrCircuitOpen
	BreakerHalfOpen                     // one probe goes through
)

func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("BreakerState(%d)", int(s))
}

// BreakerEvent is one state change of a Locker's circuit breaker.
type BreakerEvent struct {
	Name     string // Config.Name
	From, To BreakerState
	// Failures is the count of consecutive transient failures at the
	// change; Err the failure that caused it (nil when closing).
	Failures int
	Err      error
}

// BreakerObserver is implemented by observers that want the circuit
// breaker's state changes. It is optional, so that Observers written
// before it need no change.
type BreakerObserver interface {
	OnBreaker(ctx context.Context, e BreakerEvent)
}

// breaker is the state machine behind BreakerPolicy.
type breaker struct {
	p    BreakerPolicy
	cfg  Config
	mu   sync.Mutex
	st   BreakerState
	fail int
	// at is when it last opened, on real time (clock.Real): the breaker
	// is the NATS Locker's, which always runs on real time (see Clock), as
	// its cool-down bounds a wait for the server.
	at   time.Time
	last error // the failure that opened it
	prob bool  // a probe is in flight (half-open)
}

func newBreaker(cfg Config) *breaker {
	return &breaker{p: cfg.Breaker, cfg: cfg}
}

// allow reports whether an operation may go out; probe is true for the
// one half-open probe, which must be reported to done.
func (b *breaker) allow() (probe bool, err error) {
	if b == nil || b.p.Disabled {
		return false, nil
	}
	b.mu.Lock()
	switch b.st {
	case BreakerClosed:
		b.mu.Unlock()
		return false, nil
	case BreakerOpen:
		if clock.Real().Now().Sub(b.at) < b.p.CoolDown {
			break
		}
		ev := b.moveLocked(BreakerHalfOpen, b.last)
		b.prob = true
		b.mu.Unlock()
		b.notify(ev)
		return true, nil
	case BreakerHalfOpen:
		if !b.prob {
			b.prob = true
			b.mu.Unlock()
			return true, nil
		}
	}
	last, wait := b.last, b.p.CoolDown-clock.Real().Now().Sub(b.at)
	b.mu.Unlock()
	if last != nil {
		return false, fmt.Errorf("%w after %d transient failures (next probe in %v): %w", ErrCircuitOpen, b.p.Failures, max(wait, 0), last)
	}
	return false, ErrCircuitOpen
}

// done records an operation's outcome: failed says it failed transiently,
// cut that its caller's context ended (no verdict on the server). Only a
// success closes the breaker.
func (b *breaker) done(probe, failed, cut bool, err error) {
	if b == nil || b.p.Disabled {
		return
	}
	b.mu.Lock()
	if probe {
		b.prob = false
	}
	var ev *BreakerEvent
	switch {
	case cut:
	case !failed && err != nil:
		// A definite error that is not transient (the lock was lost, a
		// key is invalid) may have been decided without the server: it
		// proves nothing about the server's health either way.
	case !failed:
		b.fail = 0
		if b.st != BreakerClosed {
			ev = b.moveLocked(BreakerClosed, nil)
		}
	default:
		b.fail++
		if b.st == BreakerHalfOpen && probe || b.st == BreakerClosed && b.fail >= b.p.Failures {
			b.at, b.last = clock.Real().Now(), err
			ev = b.moveLocked(BreakerOpen, err)
		}
	}
	b.mu.Unlock()
	b.notify(ev)
}

func (b *breaker) moveLocked(to BreakerState, err error) *BreakerEvent {
	ev := &BreakerEvent{Name: b.cfg.Name, From: b.st, To: to, Failures: b.fail, Err: err}
	b.st = to
	return ev
}

func (b *breaker) notify(ev *BreakerEvent) {
	if ev == nil {
		return
	}
	b.cfg.Logger.Warn("kvlock: circuit breaker", "lock", ev.Name, "from", ev.From.String(), "to", ev.To.String(), "failures", ev.Failures, "err", ev.Err)
	if o, ok := b.cfg.Observer.(BreakerObserver); ok {
		o.OnBreaker(context.Background(), *ev)
	}
}

// State returns the breaker's current state.
func (b *breaker) state() BreakerState {
	if b == nil {
		return BreakerClosed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st
}
