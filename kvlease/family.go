package kvlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Declaration is a typed lease family: a name (the first token of its
// lease keys) and a codec for its resource keys. Define it once (a
// package-level variable) and Bind it to each manager.
type Declaration[K any] struct{ d *decl[K] }

type decl[K any] struct {
	name  Name
	codec Codec[K]
	err   error
}

// Define declares a lease family. Errors (a bad name, a nil codec) are
// reported by Bind and Validate.
func Define[K any](name Name, codec Codec[K]) Declaration[K] {
	d := &decl[K]{name: name, codec: codec}
	if err := name.Validate(); err != nil {
		d.err = err
	} else if codec == nil {
		d.err = fmt.Errorf("%w: family %q has a nil codec", ErrInvalidConfig, name)
	}
	return Declaration[K]{d}
}

// Name returns the family name ("" for the zero Declaration).
func (d Declaration[K]) Name() Name {
	if d.d == nil {
		return ""
	}
	return d.d.name
}

// Validate reports a bad name or codec; the zero Declaration is invalid.
func (d Declaration[K]) Validate() error {
	if d.d == nil {
		return fmt.Errorf("%w: zero Declaration (use Define)", ErrInvalidName)
	}
	return d.d.err
}

// Bind attaches the family to m. Binding the same declaration again
// returns an equivalent handle; binding a second, distinct declaration of
// the same name returns ErrDuplicateName, so two parts of a program cannot
// unknowingly share (and fight over) one key space.
func (d Declaration[K]) Bind(m *Manager) (Leases[K], error) {
	if err := d.Validate(); err != nil {
		return Leases[K]{}, err
	}
	if err := m.bindFamily(d.d.name, d.d); err != nil {
		return Leases[K]{}, err
	}
	return Leases[K]{m: m, d: d.d}, nil
}

func (m *Manager) bindFamily(name Name, owner any) error {
	if m == nil {
		return fmt.Errorf("%w: nil Manager", ErrInvalidConfig)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if cur, ok := m.families[name]; ok && cur != owner {
		return fmt.Errorf("%w: %q is already bound to this manager by another declaration", ErrDuplicateName, name)
	}
	m.families[name] = owner
	return nil
}

// Leases is a family bound to a manager: the typed entry point for
// acquiring, transferring and force-releasing its leases.
type Leases[K any] struct {
	m *Manager
	d *decl[K]
}

// LeaseKey returns the KV key of key's lease: "<family>.<token>", where
// the token is the codec's string escaped so that any bytes fit (bytes
// outside [A-Za-z0-9_/-] become "=HH").
func (l Leases[K]) LeaseKey(key K) (string, error) {
	if l.m == nil {
		return "", fmt.Errorf("%w: zero Leases (use Declaration.Bind)", ErrInvalidConfig)
	}
	return familyKey(l.m, l.d.name, l.d.codec, key, "")
}

func familyKey[K any](m *Manager, name Name, codec Codec[K], key K, suffix string) (string, error) {
	s, err := codec.Encode(key)
	if err != nil {
		return "", fmt.Errorf("%w: family %q: %w", ErrInvalidKey, name, err)
	}
	if s == "" {
		return "", fmt.Errorf("%w: family %q: empty key", ErrInvalidKey, name)
	}
	k := string(name) + "." + kvx.EncodeToken(s) + suffix
	if len(k) > m.cfg.MaxKeyBytes {
		return "", fmt.Errorf("%w: family %q: lease key is %d bytes, above MaxKeyBytes %d", ErrInvalidKey, name, len(k), m.cfg.MaxKeyBytes)
	}
	return k, nil
}

func (l Leases[K]) key(key K) (string, error) { return l.LeaseKey(key) }

// TryAcquire tries once to acquire key's lease for ttl (MinTTL..MaxTTL).
// It returns (guard, true, nil) on success and (nil, false, nil) when the
// lease is held by someone else; any error is a real failure, never
// contention. The guard does not renew itself: call Renew, StartRenewing,
// or use With. Cancelling ctx releases the guard (see Guard).
func (l Leases[K]) TryAcquire(ctx context.Context, key K, ttl time.Duration) (*Guard, bool, error) {
	return l.Acquire(ctx, key, ttl, 0)
}

// Acquire is TryAcquire that, when the lease is held, waits up to wait
// (0..Config.MaxWait; 0 tries once) for it to be released or to expire.
// Waiting is woken by the manager's watch of the bucket, never by polling.
// When wait runs out with the lease still held it returns (nil, false,
// context.DeadlineExceeded); when ctx ends first, ctx's error; after
// Close, ErrClosed.
func (l Leases[K]) Acquire(ctx context.Context, key K, ttl, wait time.Duration) (*Guard, bool, error) {
	k, err := l.key(key)
	if err != nil {
		return nil, false, err
	}
	return l.m.acquire(ctx, request{family: l.d.name, keys: []string{k}, ttl: ttl}, wait)
}

// ForceRelease deletes key's lease whoever holds it and reports whether
// there was one. It is an administrative tool (a holder known to be gone,
// a stuck job): the holder is not asked, it learns at its next renewal or
// guarded write (within one renew interval when it renews automatically)
// and its context is then cancelled with ErrLost. Work the holder does in
// between is excluded only by fencing.
func (l Leases[K]) ForceRelease(ctx context.Context, key K) (bool, error) {
	k, err := l.key(key)
	if err != nil {
		return false, err
	}
	return l.m.forceRelease(ctx, k)
}

// Holder reads key's lease from the stream leader and returns who holds
// it (Revision set) and whether it is held at all.
func (l Leases[K]) Holder(ctx context.Context, key K) (Holder, bool, error) {
	k, err := l.key(key)
	if err != nil {
		return Holder{}, false, err
	}
	return l.m.holder(ctx, k)
}

// KeyOf decodes the resource key of a guard of this family.
func (l Leases[K]) KeyOf(g *Guard) (K, error) {
	var zero K
	if l.m == nil || g == nil || g.m != l.m || g.family != l.d.name {
		return zero, ErrForeignGuard
	}
	tok := g.key[len(l.d.name)+1:]
	s, err := kvx.DecodeToken(tok)
	if err != nil {
		return zero, fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	return l.d.codec.Decode(s)
}

func (m *Manager) holder(ctx context.Context, key string) (Holder, bool, error) {
	octx, cancel := m.opCtx(ctx)
	defer cancel()
	e, err := m.b.Get(octx, key)
	if errors.Is(err, kvx.ErrNotFound) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, fmt.Errorf("kvlease: read %q: %w", key, err)
	}
	h, err := HolderOf(e)
	if err != nil {
		return Holder{}, true, err
	}
	return h, true, nil
}
