package kvlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nuid"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// Memory is the in-process lock backend: the same Service semantics as
// the NATS Locker, kept in this process's memory. It is for unit tests of
// code that depends on Service, and for single-replica development; it
// coordinates nothing across processes.
//
// What it shares with the NATS Locker (both pass kvlock/locktest):
// tokens rise with every acquisition; a lock that is not renewed ends
// with ErrLost when its validity window (last renewal + TTL - margin)
// closes, and the key is free from that instant; Hold renews every
// RenewInterval on the clock; ForceRelease ends the holder with ErrLost;
// Config is validated by the same rules (TTL floor included). A release
// hands the lock straight to the longest waiter, so waiting is
// first-come, first-served in both modes, and a fair-mode TryAcquire sees
// the queue. Time is the Clock given with WithClock (RealClock by
// default); with a ManualClock a test expires a lock by calling Advance.
// Fields of Config that only concern the server (Bucket, Replicas,
// OpTimeout, Retry, Breaker) are validated and ignored.
type Memory struct {
	cfg   Config
	clock Clock

	mu      sync.Mutex
	rev     uint64 // the last token handed out; every acquisition and renewal takes the next
	slots   map[string]*memSlot
	elects  map[string]*memElection
	closed  bool
	pending []Event // observer events, dispatched by unlock

	ctx    context.Context // cancelled by Close: waiters and observers stop
	cancel context.CancelFunc
	wgMu   sync.Mutex
	wgShut bool
	wg     sync.WaitGroup // observers and timer callbacks

	closeOnce sync.Once
	done      chan struct{}
}

// memSlot is one lockable key ("l.<key>", or "e.<election>").
type memSlot struct {
	holder  *memLock
	waiters []*memWaiter // arrival order
}

type memWaiter struct {
	ctx context.Context // the waiter's, whose values the lock's context keeps
	got chan *memLock   // buffered: the lock is handed over without blocking
}

// MemoryOption configures NewMemory.
type MemoryOption func(*Memory) error

// WithClock makes the Memory measure TTLs, windows and renewals on c
// (default RealClock). Pass a ManualClock to control time in tests.
func WithClock(c Clock) MemoryOption {
	return func(m *Memory) error {
		if c == nil {
			return fmt.Errorf("%w: nil Clock", ErrInvalidConfig)
		}
		m.clock = c
		return nil
	}
}

// NewMemory returns an in-process Service. cfg is validated like New's
// (invalid values return ErrInvalidConfig); the default Holder is
// "memory:<pid>:<nuid>".
func NewMemory(cfg Config, opts ...MemoryOption) (*Memory, error) {
	if cfg.Holder == "" {
		cfg.Holder = fmt.Sprintf("memory:%d:%s", os.Getpid(), nuid.Next())
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Memory{
		cfg: cfg, clock: RealClock(),
		slots: make(map[string]*memSlot), elects: make(map[string]*memElection),
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
	for _, o := range opts {
		if err := o(m); err != nil {
			cancel()
			return nil, err
		}
	}
	return m, nil
}

// Config returns the configuration with defaults filled in.
func (m *Memory) Config() Config { return m.cfg }

// unlock releases m.mu, then hands the events queued under it to the
// observer: an observer that calls back into m cannot deadlock.
func (m *Memory) unlock() {
	ev := m.pending
	m.pending = nil
	m.mu.Unlock()
	for _, e := range ev {
		dispatch(context.Background(), m.cfg, e)
	}
}

func (m *Memory) emitLocked(e Event) {
	if m.cfg.Observer != nil {
		m.pending = append(m.pending, e)
	}
}

// TryAcquire implements Service.
func (m *Memory) TryAcquire(ctx context.Context, key string) (Held, bool, error) {
	if err := ValidateKey(key); err != nil {
		return nil, false, err
	}
	k, err := m.acquire(ctx, "l."+key, key, false)
	if k == nil {
		return nil, false, err
	}
	return k, true, nil
}

// Acquire implements Service.
func (m *Memory) Acquire(ctx context.Context, key string) (Held, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	k, err := m.acquire(ctx, "l."+key, key, true)
	if k == nil {
		return nil, err
	}
	return k, nil
}

// Hold implements Service.
func (m *Memory) Hold(ctx context.Context, key string) (context.Context, func(), error) {
	if err := ValidateKey(key); err != nil {
		return nil, nil, err
	}
	k, err := m.acquire(ctx, "l."+key, key, true)
	if err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	m.autoRenewLocked(k)
	m.unlock()
	hctx, release := holdContext(ctx, k)
	return hctx, release, nil
}

// holdContext is Hold's context for a lock that renews itself: derived
// from ctx with k's token, cancelled with k's cause when k ends, and
// ending k when ctx ends. release cancels it (ErrReleased) and releases k.
func holdContext(ctx context.Context, k Held) (context.Context, func()) {
	hctx, cancel := context.WithCancelCause(context.WithValue(ctx, tokenKey{}, k.Token()))
	kctx := k.Context()
	stopLost := context.AfterFunc(kctx, func() { cancel(context.Cause(kctx)) })
	stopParent := context.AfterFunc(ctx, func() { _ = k.Release(context.Background()) })
	return hctx, func() {
		stopLost()
		stopParent()
		cancel(ErrReleased)
		_ = k.Release(context.Background())
	}
}

// ForceRelease ends key's holder with ErrLost and frees the key; it
// reports whether the key was held.
func (m *Memory) ForceRelease(_ context.Context, key string) (bool, error) {
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.unlock()
	if m.closed {
		return false, ErrClosed
	}
	s := m.slots["l."+key]
	if s == nil || s.holder == nil {
		return false, nil
	}
	m.loseLocked(s.holder, "force released")
	return true, nil
}

func (m *Memory) acquire(ctx context.Context, slot, key string, wait bool) (*memLock, error) {
	start := m.clock.Now()
	k, err := m.take(ctx, slot, key, wait)
	var tok uint64
	if k != nil {
		tok = k.token
	}
	dispatch(ctx, m.cfg, Event{Op: OpAcquire, Key: key, Token: tok, Duration: m.clock.Now().Sub(start),
		Acquired: k != nil, Fair: m.cfg.Fair, Err: err})
	return k, err
}

// take grants slot at once when it is free, else (wait) joins its queue
// until a release hands it over or ctx or the Memory ends.
func (m *Memory) take(ctx context.Context, slot, key string, wait bool) (*memLock, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	m.mu.Lock()
	if m.closed {
		m.unlock()
		return nil, ErrClosed
	}
	s := m.slots[slot]
	if s == nil {
		s = &memSlot{}
		m.slots[slot] = s
	}
	if s.holder == nil && len(s.waiters) == 0 {
		k := m.grantLocked(ctx, slot, key, s)
		m.unlock()
		return k, nil
	}
	if !wait {
		m.unlock()
		return nil, nil
	}
	w := &memWaiter{ctx: ctx, got: make(chan *memLock, 1)}
	s.waiters = append(s.waiters, w)
	m.unlock()
	select {
	case k := <-w.got:
		return k, nil
	case <-ctx.Done():
	case <-m.ctx.Done():
	}
	m.mu.Lock()
	defer m.unlock()
	select {
	case k := <-w.got: // handed over just as the wait ended: pass it on
		m.endLocked(k, errReleased)
	default:
		for i, x := range s.waiters {
			if x == w {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				break
			}
		}
		m.dropIfIdleLocked(slot, s)
	}
	if m.closed {
		return nil, ErrClosed
	}
	return nil, context.Cause(ctx)
}

func (m *Memory) dropIfIdleLocked(slot string, s *memSlot) {
	if s.holder == nil && len(s.waiters) == 0 && m.slots[slot] == s {
		delete(m.slots, slot)
	}
}

func (m *Memory) grantLocked(parent context.Context, slot, key string, s *memSlot) *memLock {
	m.rev++
	now := m.clock.Now()
	k := &memLock{m: m, key: key, slot: slot, token: m.rev, start: now}
	k.ctx, k.cancel = context.WithCancelCause(context.WithValue(context.WithoutCancel(parent), tokenKey{}, k.token))
	k.validUntil = now.Add(m.window())
	s.holder = k
	m.scheduleLocked(k)
	return k
}

// window is the length of a validity window: TTL - margin, as for a NATS
// lock.
func (m *Memory) window() time.Duration { return m.cfg.TTL - kvlease.Margin(m.cfg.TTL) }

// scheduleLocked sets k's one timer: its next renewal when it renews
// itself, else the end of its window.
func (m *Memory) scheduleLocked(k *memLock) {
	if k.stop != nil {
		k.stop()
	}
	d := k.validUntil.Sub(m.clock.Now())
	if k.auto {
		d = m.cfg.RenewInterval
	}
	k.stop = m.after(d, func() { m.tick(k) })
}

// after runs f on the clock after d, counted as owned work so that Close
// waits for a callback already running and refuses later ones.
func (m *Memory) after(d time.Duration, f func()) func() bool {
	return m.clock.AfterFunc(d, func() {
		if !m.addOwned() {
			return
		}
		defer m.wg.Done()
		f()
	})
}

// tick is k's timer: a renewal for a held lock, else the window's end.
func (m *Memory) tick(k *memLock) {
	m.mu.Lock()
	defer m.unlock()
	if k.cause != nil {
		return
	}
	if k.auto {
		m.renewLocked(k)
		return
	}
	if m.clock.Now().Before(k.validUntil) {
		m.scheduleLocked(k) // renewed while this timer was firing
		return
	}
	m.loseLocked(k, "validity window ended without a renewal")
}

func (m *Memory) autoRenewLocked(k *memLock) {
	if k.cause == nil && !k.auto {
		k.auto = true
		m.scheduleLocked(k)
	}
}

func (m *Memory) renewLocked(k *memLock) {
	start := m.clock.Now()
	m.rev++
	k.validUntil = start.Add(m.window())
	m.scheduleLocked(k)
	m.emitLocked(Event{Op: OpRenew, Key: k.key, Token: k.token, Acquired: true, Fair: m.cfg.Fair})
}

// checkLocked ends k with ErrLost if its window has closed (a timer may
// not have fired yet: a process paused, or a ManualClock not advanced
// past a timer it has already passed), and returns k's cause.
func (m *Memory) checkLocked(k *memLock) error {
	if k.cause == nil && !m.clock.Now().Before(k.validUntil) {
		m.loseLocked(k, "validity window ended without a renewal")
	}
	return k.cause
}

func (m *Memory) loseLocked(k *memLock, why string) {
	cause := fmt.Errorf("%w: %w: %q %s", ErrLost, kvlease.ErrLost, k.key, why)
	if m.endLocked(k, cause) {
		m.emitLocked(Event{Op: OpLost, Key: k.key, Token: k.token, Duration: m.clock.Now().Sub(k.start),
			Acquired: true, Fair: m.cfg.Fair, Err: cause})
	}
}

// endLocked ends k with cause (false when it had ended already) and hands
// its slot to the longest waiter.
func (m *Memory) endLocked(k *memLock, cause error) bool {
	if k.cause != nil {
		return false
	}
	k.cause = cause
	if k.stop != nil {
		k.stop()
	}
	k.cancel(cause)
	if k.onEnd != nil {
		k.onEnd()
	}
	s := m.slots[k.slot]
	if s == nil || s.holder != k {
		return true
	}
	s.holder = nil
	if !m.closed && len(s.waiters) > 0 {
		w := s.waiters[0]
		s.waiters = s.waiters[1:]
		w.got <- m.grantLocked(w.ctx, k.slot, k.key, s)
	}
	m.dropIfIdleLocked(k.slot, s)
	return true
}

// Done is closed when Close has finished.
func (m *Memory) Done() <-chan struct{} { return m.done }

// Close implements Service: every held lock ends with ErrReleased (and
// ErrClosed), waiters get ErrClosed, observers' channels close.
func (m *Memory) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		cause := fmt.Errorf("%w: %w", ErrReleased, ErrClosed)
		for _, s := range m.slots {
			if s.holder != nil {
				m.endLocked(s.holder, cause)
			}
		}
		m.unlock()
		m.cancel()
		go func() {
			m.wgMu.Lock()
			m.wgShut = true
			m.wgMu.Unlock()
			m.wg.Wait()
			close(m.done)
		}()
	})
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (m *Memory) addOwned() bool {
	m.wgMu.Lock()
	defer m.wgMu.Unlock()
	if m.wgShut {
		return false
	}
	m.wg.Add(1)
	return true
}

func (m *Memory) goOwned(f func()) bool {
	if m.ctx.Err() != nil || !m.addOwned() {
		return false
	}
	go func() {
		defer m.wg.Done()
		f()
	}()
	return true
}

// memLock is one held lock of a Memory; it implements Held.
type memLock struct {
	m          *Memory
	key, slot  string
	token      uint64
	start      time.Time
	ctx        context.Context
	cancel     context.CancelCauseFunc
	validUntil time.Time   // under m.mu, as are the fields below
	auto       bool        // renews itself (Hold, an election's leader)
	stop       func() bool // the pending timer
	cause      error       // why it ended; nil while held
	onEnd      func()      // run under m.mu when it ends (elections)

	relOnce sync.Once
	relErr  error
}

func (k *memLock) Key() string              { return k.key }
func (k *memLock) Token() uint64            { return k.token }
func (k *memLock) Context() context.Context { return k.ctx }
func (k *memLock) Done() <-chan struct{}    { return k.ctx.Done() }

func (k *memLock) Err() error {
	k.m.mu.Lock()
	defer k.m.unlock()
	return k.m.checkLocked(k)
}

func (k *memLock) ValidUntil() time.Time {
	k.m.mu.Lock()
	defer k.m.unlock()
	return k.validUntil
}

func (k *memLock) Renew(context.Context) error {
	k.m.mu.Lock()
	defer k.m.unlock()
	if err := k.m.checkLocked(k); err != nil {
		return err
	}
	k.m.renewLocked(k)
	return nil
}

func (k *memLock) Release(ctx context.Context) error {
	k.relOnce.Do(func() {
		m := k.m
		start := m.clock.Now()
		m.mu.Lock()
		switch err := m.checkLocked(k); {
		case err == nil:
			m.endLocked(k, errReleased)
		case errors.Is(err, ErrLost):
			k.relErr = err
		}
		m.unlock()
		dispatch(ctx, m.cfg, Event{Op: OpRelease, Key: k.key, Token: k.token, Duration: m.clock.Now().Sub(start),
			Acquired: true, Fair: m.cfg.Fair, Err: k.relErr})
	})
	return k.relErr
}

// electionSlot is the slot of an election's lock.
func electionSlot(name string) (string, error) {
	tok := kvx.EncodeToken(name)
	if name == "" || len(tok) > MaxKeyBytes {
		return "", fmt.Errorf("%w: election name must be 1..%d bytes once escaped, got %d", ErrInvalidKey, MaxKeyBytes, len(tok))
	}
	return "e." + tok, nil
}
