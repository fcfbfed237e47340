package kvlock

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
func transientAcquire(err error) bool {
	return notSent(err) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// retry runs op up to Retry.Attempts times while it fails with an error
// transient reports, sleeping a doubling backoff in between. It stops at
// once when ctx ends (returning the last error).
func (l *Locker) retry(ctx context.Context, transient func(error) bool, op func() error) error {
	p := l.cfg.Retry
	wait := p.Backoff
	var err error
	for attempt := 1; ; attempt++ {
		err = op()
		if err == nil || attempt >= p.Attempts || ctx.Err() != nil || !transient(err) {
			return err
		}
		l.log.Debug("kvlock: transient error, retrying", "lock", l.cfg.Name, "attempt", attempt, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, p.MaxBackoff)
	}
}
