package kvlock

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/retry"
)

// notSent reports errors that prove a request never reached (or was never
// processed by) the stream: retrying it cannot duplicate a write.
func notSent(err error) bool {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) {
		return true
	}
	var apiErr *jetstream.APIError
	// 503: JetStream temporarily unavailable (no stream leader, no quorum).
	return errors.As(err, &apiErr) && apiErr.Code == 503
}

// transientAcquire reports errors after which an acquisition may be tried
// again: those of notSent, and timeouts, because an acquisition is a
// create-if-absent that kvlease has already tried to resolve by reading;
// if it did land unnoticed, the retry simply finds the key held (by an
// orphan that expires by TTL) and can never remove another holder. A
// TryAcquire whose retry finds the key held after such a timeout returns
// the timeout, not contention: the key may be held by its own orphan.
// A view sync (syncView) retries on the same errors (a timeout there is
// its try's bound running out while the watch started or the view caught
// up): a sync writes nothing, so retrying it can duplicate nothing.
func transientAcquire(err error) bool {
	return notSent(err) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// retry runs op up to Retry.Attempts times while it fails with an error
// transient reports, pausing a doubling backoff in between (RetryPolicy
// on internal/retry). It stops at once when ctx ends (returning the last
// error). Every attempt asks the
// circuit breaker first and reports its outcome to it.
func (l *Locker) retry(ctx context.Context, transient func(error) bool, op func() error) error {
	return l.retryBy(ctx, transient, op, breakerGates)
}

// retryHeld is retry for operations on a lock already held (renewals):
// the breaker counts their outcomes but never refuses them.
func (l *Locker) retryHeld(ctx context.Context, transient func(error) bool, op func() error) error {
	return l.retryBy(ctx, transient, op, breakerCounts)
}

// retryRead is retry for the view syncs of an acquisition under way
// (syncView): reads, which the breaker neither gates nor counts, so that
// one slow watch start waited for by several acquirers does not open it
// for every write of the Locker.
func (l *Locker) retryRead(ctx context.Context, transient func(error) bool, op func() error) error {
	return l.retryBy(ctx, transient, op, breakerIgnores)
}

// breakerUse is what a retry loop's tries are to the circuit breaker.
type breakerUse int

const (
	breakerGates   breakerUse = iota // asked before each try, told its outcome
	breakerCounts                    // told each try's outcome only
	breakerIgnores                   // neither
)

func (l *Locker) retryBy(ctx context.Context, transient func(error) bool, op func() error, use breakerUse) error {
	var err error
	for r := l.cfg.Retry.policy(l.cfg.OpTimeout).Start(ctx); r.Next(); {
		probe := false
		if use == breakerGates {
			var berr error
			if probe, berr = l.brk.allow(); berr != nil {
				return berr
			}
		}
		err = op()
		failed := err != nil && transient(err)
		if use != breakerIgnores {
			l.brk.done(probe, failed, err != nil && ctx.Err() != nil, err)
		}
		if err == nil || r.Last() || ctx.Err() != nil || !failed {
			return err
		}
		l.log.Debug("kvlock: transient error, retrying", "lock", l.cfg.Name, "attempt", r.Try()+1, "err", err)
	}
	return err // ctx ended during the pause
}

// policy is p on the one retry primitive (internal/retry): Attempts
// tries, pauses from Backoff doubling up to MaxBackoff, each try a
// kvlease operation of at most 2 × opTimeout (see CallCeiling).
func (p RetryPolicy) policy(opTimeout time.Duration) retry.Policy {
	return retry.Policy{Tries: p.Attempts, Pause: p.Backoff, MaxPause: p.MaxBackoff, PerTry: 2 * opTimeout}
}

// BreakerState returns the state of the Locker's circuit breaker.
func (l *Locker) BreakerState() BreakerState { return l.brk.state() }
