package kvlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
)

// TryAcquireKey tries once to acquire the raw lease key (a valid KV key of
// at most MaxKeyBytes; prefer a family from Define, which escapes keys and
// keeps families apart). It returns (nil, false, nil) when the key is held.
// It exists for packages layered on kvlease (kvlock) that keep their own
// key namespace.
func (m *Manager) TryAcquireKey(ctx context.Context, key string, ttl time.Duration) (*Guard, bool, error) {
	return m.AcquireKey(ctx, key, ttl, 0)
}

// AcquireKey is TryAcquireKey that waits up to wait while the key is held
// (see Leases.Acquire).
func (m *Manager) AcquireKey(ctx context.Context, key string, ttl, wait time.Duration) (*Guard, bool, error) {
	if err := m.checkRawKey(key); err != nil {
		return nil, false, err
	}
	return m.acquire(ctx, "", []string{key}, ttl, wait)
}

// ForceReleaseKey is ForceRelease for a raw lease key.
func (m *Manager) ForceReleaseKey(ctx context.Context, key string) (bool, error) {
	if err := m.checkRawKey(key); err != nil {
		return false, err
	}
	return m.forceRelease(ctx, key)
}

func (m *Manager) checkRawKey(key string) error {
	if !kvx.ValidKey(key) {
		return fmt.Errorf("%w: %q is not a valid KV key", ErrInvalidKey, key)
	}
	if len(key) > m.cfg.MaxKeyBytes {
		return fmt.Errorf("%w: %d bytes, above MaxKeyBytes %d", ErrInvalidKey, len(key), m.cfg.MaxKeyBytes)
	}
	return nil
}

func (m *Manager) checkWait(wait time.Duration) error {
	if wait < 0 || wait > m.cfg.MaxWait {
		return fmt.Errorf("%w: %v outside 0..%v (MaxWait)", ErrInvalidWait, wait, m.cfg.MaxWait)
	}
	return nil
}

// acquire takes the first free key of keys (one key for a lease, the slots
// of a semaphore), waiting up to wait while all are held.
//
// Waiting is push: after a first failed round the waiter subscribes to the
// keys in the manager's Hub, tries again (a release between the first
// round and the subscription is therefore never missed) and then sleeps
// until a watch event on one of the keys, re-trying the changed key first
// with the marker's revision as hint (one publish). The only timer is a
// safety re-check after the longest TTL a holder could still have.
func (m *Manager) acquire(ctx context.Context, family Name, keys []string, ttl, wait time.Duration) (*Guard, bool, error) {
	if err := ValidateTTL(ttl); err != nil {
		return nil, false, err
	}
	if err := m.checkWait(wait); err != nil {
		return nil, false, err
	}
	g, _, err := m.tryKeys(ctx, family, keys, ttl, nil)
	if err != nil || g != nil || wait == 0 {
		return g, g != nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	stop := context.AfterFunc(m.ctx, cancel)
	defer stop()
	hints := make(map[string]uint64)
	for {
		sub, err := m.hub.Subscribe(wctx, keys...)
		if err != nil {
			return nil, false, m.waitErr(ctx, wctx, err)
		}
		g, recheck, err := m.tryKeys(ctx, family, keys, ttl, hints)
		if err != nil || g != nil {
			sub.Close()
			return g, g != nil, err
		}
		g, err = m.waitLoop(ctx, wctx, sub, family, keys, ttl, hints, recheck)
		sub.Close()
		if err != nil || g != nil {
			return g, g != nil, m.waitErr(ctx, wctx, err)
		}
		if wctx.Err() != nil {
			return nil, false, m.waitErr(ctx, wctx, nil)
		}
		// The hub's watch ended (reconnect, server restart): subscribe again.
	}
}

// waitLoop waits on one subscription. It returns (nil, nil) when the
// subscription's channel closed and the caller should subscribe again.
func (m *Manager) waitLoop(ctx, wctx context.Context, sub *kvx.Sub, family Name, keys []string,
	ttl time.Duration, hints map[string]uint64, recheck time.Duration) (*Guard, error) {
	t := time.NewTimer(recheck)
	defer t.Stop()
	for {
		select {
		case <-wctx.Done():
			return nil, nil
		case <-t.C:
			g, rc, err := m.tryKeys(ctx, family, keys, ttl, hints)
			if err != nil || g != nil {
				return g, err
			}
			t.Reset(rc)
		case e, ok := <-sub.C():
			if !ok {
				return nil, nil
			}
			if e.Live() {
				// Acquired or renewed by someone else: the re-check bound moves.
				t.Reset(holderBound(e, ttl))
				continue
			}
			hints[e.Key] = e.Revision
			g, rc, err := m.tryKeys(ctx, family, moveFirst(keys, e.Key), ttl, hints)
			if err != nil || g != nil {
				return g, err
			}
			t.Reset(rc)
		}
	}
}

// waitErr maps the end of a wait: the caller's context ending is its
// error; Close is ErrClosed; the wait running out with the key still held
// is context.DeadlineExceeded (as in the library kvlease replaces), so a
// caller can tell "gave up waiting" from "tried once and it was held".
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

func moveFirst(keys []string, k string) []string {
	if len(keys) == 1 || keys[0] == k {
		return keys
	}
	out := make([]string, 0, len(keys))
	out = append(out, k)
	for _, x := range keys {
		if x != k {
			out = append(out, x)
		}
	}
	return out
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

// tryKeys tries each key once, in order. It returns the first guard, or
// the re-check bound of the holders it met.
func (m *Manager) tryKeys(ctx context.Context, family Name, keys []string, ttl time.Duration, hints map[string]uint64) (*Guard, time.Duration, error) {
	recheck := time.Duration(0)
	for _, k := range keys {
		g, cur, err := m.tryKey(ctx, family, k, ttl, hints[k])
		if err != nil || g != nil {
			return g, 0, err
		}
		delete(hints, k)
		recheck = max(recheck, holderBound(cur, ttl))
	}
	return nil, recheck, nil
}

// tryKey is one acquisition attempt: create-if-absent with a per-key TTL,
// in one publish when the key's last marker revision is known.
// Contention returns (nil, holder, nil); errors are never contention.
func (m *Manager) tryKey(ctx context.Context, family Name, key string, ttl time.Duration, hint uint64) (*Guard, kvx.Entry, error) {
	if err := m.admit(); err != nil {
		return nil, kvx.Entry{}, err
	}
	if ctx.Err() != nil {
		return nil, kvx.Entry{}, context.Cause(ctx)
	}
	sec := newSecret()
	owner := sec.hash()
	value := m.encodeValue(ttl, owner)
	if hint == 0 {
		hint = m.hints.get(key)
	}
	octx, cancel := m.opCtx(ctx)
	sent := m.now()
	rev, cur, err := m.b.Acquire(octx, key, value, serverTTL(ttl), hint)
	cancel()
	if err != nil {
		switch {
		case kvx.IsConflict(err) && cur.Live() && ownedBy(cur.Value, owner):
			// Our own write, found as the holder: a publish that landed
			// but was answered as a conflict (e.g. re-sent after a
			// reconnect). The owner hash is fresh for this attempt.
			rev = cur.Revision
		case kvx.IsConflict(err):
			m.stats.contended.Add(1)
			return nil, cur, nil
		case kvx.OutcomeUnknown(err):
			rctx, rcancel := m.cleanupCtx()
			e, rerr := m.b.Get(rctx, key)
			rcancel()
			if rerr != nil || !ownedBy(e.Value, owner) {
				return nil, kvx.Entry{}, fmt.Errorf("kvlease: acquire %q: %w", key, err)
			}
			rev = e.Revision // the unanswered write did land: we hold it
		default:
			return nil, kvx.Entry{}, fmt.Errorf("kvlease: acquire %q: %w", key, err)
		}
	}
	m.hints.drop(key)
	g := m.newGuard(ctx, family, key, rev, sent, ttl, sec, owner, value)
	if !g.start(ctx) {
		g.abort()
		return nil, kvx.Entry{}, ErrClosed
	}
	m.stats.acquired.Add(1)
	return g, kvx.Entry{}, nil
}

// forceRelease deletes key's live value whoever holds it.
func (m *Manager) forceRelease(ctx context.Context, key string) (bool, error) {
	for range 4 {
		octx, cancel := m.opCtx(ctx)
		e, err := m.b.Get(octx, key)
		if errors.Is(err, kvx.ErrNotFound) {
			cancel()
			return false, nil
		}
		if err != nil {
			cancel()
			return false, fmt.Errorf("kvlease: force release %q: %w", key, err)
		}
		marker, err := m.b.DeleteTTL(octx, key, e.Revision, markerKeep)
		cancel()
		switch {
		case err == nil:
			m.hints.put(key, marker)
			m.stats.forced.Add(1)
			return true, nil
		case kvx.IsConflict(err):
			continue // renewed or replaced between the read and the delete
		default:
			return false, fmt.Errorf("kvlease: force release %q: %w", key, err)
		}
	}
	return false, fmt.Errorf("%w: force release %q", ErrBusy, key)
}
