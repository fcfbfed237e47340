package kvlease

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	return m.acquire(ctx, request{keys: []string{key}, ttl: ttl}, wait)
}

// MaxInfoBytes bounds a lease value's Info (TryAcquireKeyInfo): every
// watcher of the bucket receives the value with each renewal.
const MaxInfoBytes = 4096

// TryAcquireKeyInfo is TryAcquireKey whose lease value also carries info
// (Holder.Info, at most MaxInfoBytes; longer is refused with
// ErrTooLarge before anything is sent): what the holder says of itself
// to whoever reads the bucket, written with the lease and each renewal,
// so it costs no write of its own.
func (m *Manager) TryAcquireKeyInfo(ctx context.Context, key string, ttl time.Duration, info string) (*Guard, bool, error) {
	if err := m.checkRawKey(key); err != nil {
		return nil, false, err
	}
	if len(info) > MaxInfoBytes {
		return nil, false, fmt.Errorf("%w: info is %d bytes, above MaxInfoBytes %d", ErrTooLarge, len(info), MaxInfoBytes)
	}
	return m.acquire(ctx, request{keys: []string{key}, ttl: ttl, info: info}, 0)
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

// acquireKeys takes the first free key of keys (one key for a lease, the slots
// of a semaphore), waiting up to wait while all are held.
//
// Waiting is push: after a first failed round (at once when the hub's
// watch is already running) the waiter subscribes to the keys in the
// manager's Hub, tries again (a release between the first round and the
// subscription is therefore never missed) and then sleeps
// until a watch event on one of the keys, re-trying the changed key first
// with the marker's revision as hint (one publish). The only timer is a
// safety re-check after the longest TTL a holder could still have.
func (m *Manager) acquireKeys(ctx context.Context, r request, wait time.Duration) (*Guard, bool, error) {
	if err := ValidateTTL(r.ttl); err != nil {
		return nil, false, err
	}
	if err := m.checkWait(wait); err != nil {
		return nil, false, err
	}
	if err := m.begin(); err != nil {
		return nil, false, err
	}
	defer m.acquiring.Done()
	if wait == 0 || !m.hub.Running() {
		// Try before subscribing: a subscription would start the hub's
		// watch (an ordered consumer) for what may never need to wait.
		// Once the watch runs, subscribing costs nothing and a waiter
		// subscribes first, saving a try (and its read-back) per wait.
		g, _, _, err := m.tryKeys(ctx, &r, r.keys, nil, unsubscribed)
		if err != nil || g != nil || wait == 0 {
			return g, g != nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	stop := context.AfterFunc(m.ctx, cancel)
	defer stop()
	hints := make(map[string]uint64)
	for {
		sub, err := m.hub.Subscribe(wctx, r.keys...)
		if err != nil {
			return nil, false, m.waitErr(ctx, wctx, err)
		}
		g, recheck, pending, err := m.trySubscribed(ctx, sub, &r, hints)
		if err != nil || g != nil {
			sub.Close()
			return g, g != nil, err
		}
		g, err = m.waitLoop(ctx, wctx, sub, &r, hints, recheck, pending)
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

// trySubscribed is the first round of a waiter that has just subscribed.
// Keys whose latest change the hub remembers (kvx.Sub.Known) need no read:
// a key held as of the subscription is not tried at all (its release
// will be reported), and a free one is tried at its marker's revision
// with one publish.
func (m *Manager) trySubscribed(ctx context.Context, sub *kvx.Sub, r *request,
	hints map[string]uint64) (*Guard, time.Duration, *attempt, error) {
	clear(hints) // any left were reported to an earlier subscription
	try := make([]string, 0, len(r.keys))
	recheck := time.Duration(0)
	for _, k := range r.keys {
		seen, ok := sub.Known(k)
		if own := m.hints.get(k); ok && own > seen.Revision {
			// Our own release is newer than what the watch has reported
			// (it lags by a moment): its marker is the better hint, and a
			// fresh one, since the watch had not delivered it by From.
			hints[k] = own
			try = append(try, k)
			continue
		}
		switch {
		case ok && seen.Live:
			// The holder's TTL is not known here; a shorter guess only
			// makes the safety re-check come early.
			recheck = max(recheck, holderBound(kvx.Entry{}, r.ttl))
			m.stats.contended.Add(1)
			continue
		case ok:
			hints[k] = seen.Revision
		}
		try = append(try, k)
	}
	if len(try) == 0 {
		return nil, recheck, nil, nil
	}
	g, rc, pending, err := m.tryKeys(ctx, r, try, hints, sub.From())
	return g, max(recheck, rc), pending, err
}

// unsubscribed is the "from" of a try made without a subscription (or
// after one missed changes): no revision is recent enough to skip a read.
const unsubscribed = math.MaxUint64

// tryKeys tries each key once, in order. It returns the first guard, or
// the re-check bound of the holders it met. hints holds marker revisions
// the watch reported; other keys use the manager's hint cache. A key whose
// hint is at or above from (see kvx.Sub.From: every later change of the
// key will reach the waiter) is tried with one publish and no read-back;
// such a try that loses is returned as pending, for the wait loop to
// settle from the watch (see waitLoop).
func (m *Manager) tryKeys(ctx context.Context, r *request, keys []string,
	hints map[string]uint64, from uint64) (*Guard, time.Duration, *attempt, error) {
	recheck := time.Duration(0)
	var pending *attempt
	for _, k := range keys {
		hint, fresh := hints[k] // reported by the watch after from
		if !fresh {
			hint = m.hints.get(k)
			fresh = hint != 0 && hint >= from
		}
		g, cur, lost, err := m.tryKey(ctx, r, k, hint, fresh)
		if err != nil || g != nil {
			return g, 0, nil, err
		}
		delete(hints, k)
		if lost != nil {
			pending = lost
			continue
		}
		recheck = max(recheck, holderBound(cur, r.ttl))
	}
	if pending != nil {
		// The winner's write reaches us through the watch within a round
		// trip or so; if nothing comes, look again soon rather than after
		// a whole TTL.
		recheck = verifyAfter
	}
	return nil, recheck, pending, nil
}

// attempt is an acquisition publish: the value it wrote and the owner
// secret in it.
type attempt struct {
	key   string
	sec   secret
	owner string
	value []byte
	sent  time.Time
}

// tryKey is one acquisition attempt: create-if-absent with a per-key TTL,
// in one publish when the key's last marker revision is known.
// Contention returns (nil, holder, nil, nil); errors are never contention.
//
// fresh says every change of the key after hint will reach the caller
// through the watch. Then a lost race is not read back (the read would
// cost a round trip per waiter per release, and the watch is about to
// report the winner anyway): tryKey returns the attempt as lost instead,
// holder unknown.
func (m *Manager) tryKey(ctx context.Context, r *request, key string,
	hint uint64, fresh bool) (*Guard, kvx.Entry, *attempt, error) {
	if err := m.admit(); err != nil {
		return nil, kvx.Entry{}, nil, err
	}
	g, cur, lost, err := m.tryAdmitted(ctx, r, key, hint, fresh)
	if g == nil {
		m.unadmit()
	}
	return g, cur, lost, err
}

func (m *Manager) tryAdmitted(ctx context.Context, r *request, key string,
	hint uint64, fresh bool) (*Guard, kvx.Entry, *attempt, error) {
	ttl := r.ttl
	if ctx.Err() != nil {
		return nil, kvx.Entry{}, nil, context.Cause(ctx)
	}
	a := &attempt{key: key, sec: newSecret()}
	a.owner = a.sec.hash()
	octx, cancel := m.opCtx(ctx)
	a.sent = m.now()
	a.value = m.encodeValue(a.sent, ttl, a.owner, r.info)
	m.stats.attempts.Add(1)
	var (
		rev uint64
		cur kvx.Entry
		err error
	)
	if fresh {
		rev, err = m.b.Update(octx, key, a.value, hint, serverTTL(ttl))
	} else {
		rev, cur, err = m.b.Acquire(octx, key, a.value, serverTTL(ttl), hint)
	}
	cancel()
	if err != nil {
		switch {
		case kvx.IsConflict(err) && fresh:
			m.stats.contended.Add(1)
			return nil, kvx.Entry{}, a, nil
		case kvx.IsConflict(err) && cur.Live() && ownedBy(cur.Value, a.owner):
			// Our own write, found as the holder: a publish that landed
			// but was answered as a conflict (e.g. re-sent after a
			// reconnect). The owner hash is fresh for this attempt.
			rev = cur.Revision
		case kvx.IsConflict(err) && corruptEntry(cur):
			return nil, kvx.Entry{}, nil, corruptErr(key, cur.Revision)
		case kvx.IsConflict(err):
			m.stats.contended.Add(1)
			return nil, cur, nil, nil
		case kvx.OutcomeUnknown(err):
			rctx, rcancel := m.cleanupCtx()
			e, rerr := m.b.Get(rctx, key)
			rcancel()
			if rerr != nil || !ownedBy(e.Value, a.owner) {
				return nil, kvx.Entry{}, nil, fmt.Errorf("kvlease: acquire %q: %w", key, closedErr(err))
			}
			rev = e.Revision // the unanswered write did land: we hold it
		default:
			return nil, kvx.Entry{}, nil, fmt.Errorf("kvlease: acquire %q: %w", key, closedErr(err))
		}
	}
	g, err := m.won(ctx, r, a, rev)
	return g, kvx.Entry{}, nil, err
}

// won turns an attempt that holds its key at rev into a running guard. The
// caller holds a reservation (admit or reserve), which registering the
// guard consumes; on failure the caller gives it back.
func (m *Manager) won(ctx context.Context, r *request, a *attempt, rev uint64) (*Guard, error) {
	m.hints.drop(a.key)
	life := ctx
	if r.detached {
		life = context.WithoutCancel(ctx)
	}
	g := m.newGuard(life, r.family, a.key, rev, a.sent, r.ttl, a.sec, a.owner, a.value)
	if !g.start(life) {
		g.abort()
		return nil, ErrClosed
	}
	m.stats.acquired.Add(1)
	return g, nil
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
			return false, fmt.Errorf("kvlease: force release %q: %w", key, closedErr(err))
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
			return false, fmt.Errorf("kvlease: force release %q: %w", key, closedErr(err))
		}
	}
	return false, fmt.Errorf("%w: force release %q", ErrBusy, key)
}

// request is one acquisition: the keys to take the first free one of, the
// lease's TTL and family, and how the guard's life relates to the
// acquiring context.
type request struct {
	family Name // "" for raw keys
	keys   []string
	ttl    time.Duration
	// detached: the acquiring context bounds only the attempt and the
	// wait; the guard lives until Release, loss or Close (see
	// AcquireKeyDetached).
	detached bool
	// info is the holder's Info stored in the value (TryAcquireKeyInfo).
	info string
}
