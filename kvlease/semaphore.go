package kvlease

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// MaxSemaphoreSlots bounds the slots of one semaphore.
const MaxSemaphoreSlots = 1024

// SemaphoreDeclaration is a typed counting semaphore family: at most Slots
// holders of each resource key at once, across every manager on the
// bucket. Slot i of key k is the ordinary lease "<family>.<token>.<i>", so
// each holder has its own fence, renewal, loss and release exactly like a
// lease.
type SemaphoreDeclaration[K any] struct {
	d     *decl[K]
	slots int
	err   error
}

// DefineSemaphore declares a semaphore family with slots (1..
// MaxSemaphoreSlots) holders per key. Errors are reported by Bind.
func DefineSemaphore[K any](name Name, slots int, codec Codec[K]) SemaphoreDeclaration[K] {
	d := Define(name, codec)
	s := SemaphoreDeclaration[K]{d: d.d, slots: slots, err: d.d.err}
	if s.err == nil && (slots < 1 || slots > MaxSemaphoreSlots) {
		s.err = fmt.Errorf("%w: semaphore %q: %d slots outside 1..%d", ErrInvalidConfig, name, slots, MaxSemaphoreSlots)
	}
	return s
}

// Name returns the family name.
func (d SemaphoreDeclaration[K]) Name() Name {
	if d.d == nil {
		return ""
	}
	return d.d.name
}

// Slots returns the number of holders allowed per key.
func (d SemaphoreDeclaration[K]) Slots() int { return d.slots }

// Validate reports a bad name, codec or slot count.
func (d SemaphoreDeclaration[K]) Validate() error {
	if d.d == nil {
		return fmt.Errorf("%w: zero SemaphoreDeclaration (use DefineSemaphore)", ErrInvalidName)
	}
	return d.err
}

// Bind attaches the semaphore family to m (see Declaration.Bind: a
// distinct declaration of a name already bound is ErrDuplicateName).
func (d SemaphoreDeclaration[K]) Bind(m *Manager) (Semaphore[K], error) {
	if err := d.Validate(); err != nil {
		return Semaphore[K]{}, err
	}
	if err := m.bindFamily(d.d.name, d.d); err != nil {
		return Semaphore[K]{}, err
	}
	return Semaphore[K]{m: m, d: d.d, slots: d.slots}, nil
}

// Semaphore is a semaphore family bound to a manager.
type Semaphore[K any] struct {
	m     *Manager
	d     *decl[K]
	slots int
}

// TryAcquire tries every slot of key once, in random order.
func (s Semaphore[K]) TryAcquire(ctx context.Context, key K, ttl time.Duration) (*Guard, bool, error) {
	return s.Acquire(ctx, key, ttl, 0)
}

// Acquire takes a free slot of key, waiting up to wait while all are held
// (woken by the watch on the slot keys, trying a freed slot first). The
// result follows Leases.Acquire: a guard of one slot, (nil, false, nil)
// when wait is 0 and every slot is held, context.DeadlineExceeded when a
// wait ran out, another error otherwise.
func (s Semaphore[K]) Acquire(ctx context.Context, key K, ttl, wait time.Duration) (*Guard, bool, error) {
	keys, err := s.slotKeys(key)
	if err != nil {
		return nil, false, err
	}
	rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return s.m.acquire(ctx, request{family: s.d.name, keys: keys, ttl: ttl}, wait)
}

// ForceRelease deletes every held slot of key and returns how many there
// were.
func (s Semaphore[K]) ForceRelease(ctx context.Context, key K) (int, error) {
	keys, err := s.slotKeys(key)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		ok, err := s.m.forceRelease(ctx, k)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// Slot returns the slot index a guard of this semaphore holds.
func (s Semaphore[K]) Slot(g *Guard) (int, error) {
	if s.m == nil || g == nil || g.m != s.m || g.family != s.d.name {
		return 0, ErrForeignGuard
	}
	i := len(g.key) - 1
	for i > 0 && g.key[i] != '.' {
		i--
	}
	return strconv.Atoi(g.key[i+1:])
}

func (s Semaphore[K]) slotKeys(key K) ([]string, error) {
	if s.m == nil {
		return nil, fmt.Errorf("%w: zero Semaphore (use SemaphoreDeclaration.Bind)", ErrInvalidConfig)
	}
	base, err := familyKey(s.m, s.d.name, s.d.codec, key, "."+strconv.Itoa(s.slots-1))
	if err != nil {
		return nil, err
	}
	base = base[:len(base)-len(strconv.Itoa(s.slots-1))]
	keys := make([]string, s.slots)
	for i := range keys {
		keys[i] = base + strconv.Itoa(i)
	}
	return keys, nil
}
