package kvlease

import (
	"context"
	"errors"
	"fmt"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Renew extends the lease by its TTL with one compare-and-set on the
// current revision that also sets a fresh server-side TTL. On success the
// validity window restarts from the moment the renewal was sent and
// Revision changes (Fence does not). A key found at another revision
// (force-released, expired and re-acquired) ends the guard with ErrLost;
// a transient error is returned as it is and leaves the guard held until
// its window ends.
func (g *Guard) Renew(ctx context.Context) error {
	_, err := g.renew(ctx, false)
	return err
}

func (g *Guard) renewOnce(ctx context.Context) error {
	g.opMu.Lock()
	defer g.opMu.Unlock()
	if err := g.Err(); err != nil {
		return err
	}
	m := g.m
	g.mu.Lock()
	rev, vu := g.rev, g.validUntil
	g.mu.Unlock()
	// Waiting past the window is pointless: the guard is lost by then.
	var (
		wctx   context.Context
		cancel context.CancelFunc
	)
	if left := vu.Sub(m.now()); left < m.cfg.OpTimeout {
		wctx, cancel = context.WithTimeout(ctx, left)
	} else {
		wctx, cancel = m.opCtx(ctx)
	}
	sent := m.now()
	nrev, rev, err := g.casOwn(wctx, rev, func(ctx context.Context, rev uint64) (uint64, error) {
		return m.b.Update(ctx, g.key, g.value, rev, g.sttl)
	})
	cancel()
	if err != nil {
		switch {
		case kvx.IsConflict(err):
			cause := fmt.Errorf("%w: %q is no longer at revision %d (force-released or taken over)", ErrLost, g.key, rev)
			g.lose(cause, false)
			return cause
		case kvx.OutcomeUnknown(err):
			landed, taken := g.resolve(rev)
			if taken {
				cause := fmt.Errorf("%w: %q changed hands during an unanswered renewal", ErrLost, g.key)
				g.lose(cause, false)
				return cause
			}
			if landed == 0 {
				return fmt.Errorf("kvlease: renew %q: %w", g.key, closedErr(err))
			}
			nrev = landed
		default:
			return fmt.Errorf("kvlease: renew %q: %w", g.key, closedErr(err))
		}
	}
	m.stats.renewals.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rev = nrev // even when the guard ended meanwhile: cleanup deletes this revision
	if g.cause != nil {
		return g.cause
	}
	g.lastSent = sent
	g.validUntil = sent.Add(g.ttl - g.margin)
	if g.every > 0 {
		g.nextRenew = sent.Add(g.every)
	}
	m.sched.set(g, g.nextDueLocked())
	return nil
}

// resolve reads the key from the stream leader after a write of ours got
// no answer. It returns the revision at which our write landed (0 if it
// did not), or taken when the key holds no value of ours any more.
func (g *Guard) resolve(prev uint64) (landed uint64, taken bool) {
	ctx, cancel := g.m.cleanupCtx()
	defer cancel()
	e, err := g.m.b.Get(ctx, g.key)
	switch {
	case err == nil && ownedBy(e.Value, g.owner):
		if e.Revision != prev {
			return e.Revision, false
		}
		return 0, false
	case err == nil, errors.Is(err, kvx.ErrNotFound):
		return 0, true
	}
	return 0, false // the read failed too: stay undecided
}
