package kvlease

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Proof lets a lease holder write other keys of the lease bucket only
// while it still holds the lease: each write is one publish that the
// server accepts only if the lease key is still at the guard's current
// revision (an atomic compare on the lease key, like etcd's
// Txn(If(IsOwner())).Then(Put)). A refused write writes nothing and ends
// the guard with ErrLost.
//
// A Proof is valid only in this process and only while its guard lives;
// it cannot be serialized.
type Proof struct{ g *Guard }

// Proof returns the guard's proof.
func (g *Guard) Proof() Proof { return Proof{g: g} }

// Guard returns the guard behind the proof.
func (p Proof) Guard() *Guard { return p.g }

// Put writes value to key (a valid KV key of the lease bucket, outside
// every lease family bound to the manager, e.g. "data.job-7") only while
// the lease is held at its current revision, and returns the written
// revision. Renewals of the same guard are serialized with it, so a
// renewal never makes a guarded write fail spuriously.
func (p Proof) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	g := p.g
	if g == nil {
		return 0, fmt.Errorf("%w: zero Proof", ErrForeignGuard)
	}
	if err := g.m.checkDataKey(key); err != nil {
		return 0, err
	}
	g.opMu.Lock()
	defer g.opMu.Unlock()
	if err := g.Err(); err != nil {
		return 0, err
	}
	g.mu.Lock()
	rev := g.rev
	g.mu.Unlock()
	octx, cancel := g.m.opCtx(ctx)
	defer cancel()
	r, rev, err := g.casOwn(octx, rev, func(ctx context.Context, rev uint64) (uint64, error) {
		return g.m.b.PutGuarded(ctx, key, value, g.key, rev)
	})
	switch {
	case err == nil:
		return r, nil
	case kvx.IsConflict(err):
		cause := fmt.Errorf("%w: guarded write to %q refused: %q is no longer at revision %d", ErrLost, key, g.key, rev)
		g.lose(cause, false)
		return 0, cause
	case errors.Is(err, kvx.ErrKeyTooLong) || errors.Is(err, kvx.ErrValueTooLarge):
		return 0, fmt.Errorf("%w: guarded write to %q: %w", ErrTooLarge, key, err)
	}
	return 0, fmt.Errorf("kvlease: guarded write to %q: %w", key, closedErr(err))
}

// Get reads key (a data key of the lease bucket) from the stream leader.
// ok is false (and err nil) when key has no value.
func (p Proof) Get(ctx context.Context, key string) (value []byte, revision uint64, ok bool, err error) {
	if p.g == nil {
		return nil, 0, false, fmt.Errorf("%w: zero Proof", ErrForeignGuard)
	}
	return p.g.m.ReadKey(ctx, key)
}

// checkDataKey refuses keys that are not KV keys or that fall inside a
// lease family of this manager (a guarded write there would corrupt a
// lease).
func (m *Manager) checkDataKey(key string) error {
	if err := m.checkRawKey(key); err != nil {
		return err
	}
	first, _, _ := strings.Cut(key, ".")
	m.mu.Lock()
	_, taken := m.families[Name(first)]
	m.mu.Unlock()
	if taken {
		return fmt.Errorf("%w: %q is inside lease family %q", ErrInvalidKey, key, first)
	}
	return nil
}
