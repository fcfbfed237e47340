package kvlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/kvx"
)

// verifyAfter is how long a waiter whose publish lost a race without a
// read-back waits for the watch to report the winner before it reads the
// key itself. The winner's write normally arrives within a round trip;
// the timer only matters when it does not (a refusal that was not a lost
// race, seen on R3 under leader changes), and keeps that case from
// costing a whole TTL.
const verifyAfter = 250 * time.Millisecond

// waitLoop waits on one subscription. It returns (nil, nil) when the
// subscription's channel closed and the caller should subscribe again.
//
// A publish tried on a watch event's hint that loses is left pending: the
// next live event of its key settles it. Normally that event is the
// winner's write; if it carries the pending attempt's owner hash, the
// publish did land (answered as a conflict, e.g. re-sent after a
// reconnect) and the lease is ours.
func (m *Manager) waitLoop(ctx, wctx context.Context, sub *kvx.Sub, r *request,
	hints map[string]uint64, recheck time.Duration, pending *attempt) (*Guard, error) {
	// Real time: the re-check bounds a wait on the server's TTLs.
	t := clock.NewTimer(clock.Real())
	t.Reset(recheck)
	defer t.Stop()
	for {
		select {
		case <-wctx.Done():
			return nil, nil
		case <-t.C:
			// verify by reading: only the key of a lost publish whose
			// winner the watch has not reported yet, else every key (the
			// safety re-check after the longest TTL a holder could have)
			try := r.keys
			if pending != nil {
				try = []string{pending.key}
			}
			clear(hints)
			g, rc, _, err := m.tryKeys(ctx, r, try, hints, unsubscribed)
			if err != nil || g != nil {
				return g, err
			}
			pending = nil
			t.Reset(rc)
		case e, ok := <-sub.C():
			if !ok {
				return nil, nil
			}
			from := sub.From()
			try := r.keys
			switch {
			case sub.Missed():
				// Another key's change was dropped unread: read them all.
				clear(hints)
				from = unsubscribed
			case e.Live() && pending != nil && e.Key == pending.key && ownedBy(e.Value, pending.owner):
				m.reserve()
				g, err := m.won(ctx, r, pending, e.Revision)
				if g == nil {
					m.unadmit()
				}
				return g, err
			case corruptEntry(e):
				return nil, corruptErr(e.Key, e.Revision)
			case e.Live():
				if pending == nil || e.Key == pending.key {
					// Acquired or renewed by someone else: the re-check
					// bound moves (a pending try on another key keeps its
					// short timer).
					pending = nil
					t.Reset(holderBound(e, r.ttl))
				}
				continue
			default:
				// A key was freed: it is the only one worth a publish. The
				// others were held when last seen and their own events
				// will say when they are not; trying them all would cost
				// every waiter of a semaphore one try per held slot on
				// every release.
				hints[e.Key] = e.Revision
				try = []string{e.Key}
			}
			g, rc, lost, err := m.tryKeys(ctx, r, try, hints, from)
			if err != nil || g != nil {
				return g, err
			}
			pending = lost
			t.Reset(rc)
		}
	}
}

// waitErr maps the end of a wait: the caller's context ending is its
// error; Close is ErrClosed; the wait running out with the key still held
// is context.DeadlineExceeded, never ErrHeld, so a caller can tell "gave
// up waiting" from "tried once and it was held".
func (m *Manager) waitErr(ctx, wctx context.Context, err error) error {
	switch {
	case err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, kvx.ErrHubClosed):
		return err
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case m.ctx.Err() != nil || errors.Is(err, kvx.ErrHubClosed):
		return ErrClosed
	case err != nil && wctx.Err() == nil:
		return err
	case wctx.Err() != nil:
		return fmt.Errorf("kvlease: wait ran out: %w", context.DeadlineExceeded)
	}
	return nil
}

// holderBound is the longest a live entry can stay without another write:
// its TTL (from the stored value, else ours) as the server applies it,
// plus a little for the expiry marker to arrive.
func holderBound(e kvx.Entry, ttl time.Duration) time.Duration {
	if t, ok := valueTTL(e.Value); ok && t >= MinTTL && t <= MaxTTL {
		ttl = t
	}
	return serverTTL(ttl) + 250*time.Millisecond
}
