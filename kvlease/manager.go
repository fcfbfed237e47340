package kvlease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/kvx"
)

// Manager holds leases in one KV bucket for one process: it acquires,
// renews (one scheduler for all guards), releases, and on Close releases
// everything it still holds. It is safe for concurrent use.
type Manager struct {
	cfg  Config
	b    *kvx.Bucket
	hub  *kvx.Hub
	log  *slog.Logger
	host string
	pid  int
	// prefix is the constant head of every lease value this manager
	// writes (see appendValue).
	prefix []byte
	clk    atomic.Pointer[clockOf] // the clock of validity windows (now); replaced in tests

	ctx    context.Context // cancelled by Close: waiters and renewals stop
	cancel context.CancelFunc
	sched  *scheduler
	pool   *renewPool
	wg     sync.WaitGroup // renewal and cleanup goroutines
	// callbacks counts With callbacks running; Close waits for them.
	// Added to only under mu while not closed (addCallback), so its Wait
	// in shutdown never races an Add.
	callbacks sync.WaitGroup
	// acquiring counts acquisitions (and adoptions, restores) in flight;
	// shutdown waits for them before it closes the bucket, as one that
	// lands after Close gives its lease back with a delete (abort), which
	// a closed bucket would refuse, leaving the lease held until its TTL.
	// Added to only under mu while not closed (begin), as callbacks is.
	// Each is bounded: Close ends waits, and a write by OpTimeout.
	acquiring sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	guards   map[*Guard]struct{}
	reserved int // acquisitions admitted and not yet registered or given up
	families map[Name]any

	hints     hintCache
	stats     counters
	opTimeout *kvx.OpTimeout

	closeOnce sync.Once
	done      chan struct{}
	closeErr  error
}

// NewManager binds cfg.Bucket through js, creating it (History 1, per-key
// TTLs, cfg.Replicas) when it does not exist, and starts the renewal
// scheduler. An existing bucket without per-key TTLs is refused.
func NewManager(ctx context.Context, js jetstream.JetStream, cfg Config) (*Manager, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: nil JetStream", ErrInvalidConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b, err := kvx.Open(ctx, js, kvx.Config{
		Bucket:         cfg.Bucket,
		Description:    "natscoord kvlease leases <family>.<key>; kvlock locks <name>.l.<key> and elections <name>.e.<election>; task runtime claims kvledger.<ledger>.w.<owner> and kvledger.<ledger>.g.<group>.<i>",
		Replicas:       cfg.Replicas,
		History:        1,
		LimitMarkerTTL: markerTTL,
		RequireTTL:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("kvlease: %w", err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		cfg: cfg, b: b, hub: b.NewHub(">"), log: cfg.Logger,
		host: hostname(), pid: os.Getpid(),
		ctx: mctx, cancel: cancel,
		guards: make(map[*Guard]struct{}), families: make(map[Name]any),
		done: make(chan struct{}),
	}
	m.clk.Store(&clockOf{clock.Real()})
	m.prefix = valuePrefix(cfg.Holder, m.host, m.pid)
	m.opTimeout = kvx.NewOpTimeout(cfg.OpTimeout)
	m.hints.init(4096)
	m.sched = newScheduler(clock.Real(), m.now, m.due)
	m.pool = newRenewPool()
	return m, nil
}

// Bucket returns the name of the manager's bucket.
func (m *Manager) Bucket() string { return m.b.Name() }

// OpTimeout returns Config.OpTimeout, the bound of one of the manager's
// KV operations (see bounds.go).
func (m *Manager) OpTimeout() time.Duration { return m.opTimeout.Duration() }

// Holder returns the public holder id written into this manager's leases.
func (m *Manager) Holder() string { return m.cfg.Holder }

// Done is closed when Close has finished: every guard released (or its
// cleanup attempt ended), every With callback returned and every
// goroutine of the manager stopped.
func (m *Manager) Done() <-chan struct{} { return m.done }

// Close refuses new acquisitions, ends waiting acquisitions with
// ErrClosed, releases every guard the manager holds (each release bounded
// by OpTimeout), which cancels the contexts of running With
// callbacks, waits for those callbacks to return and for acquisitions in
// flight (one that wins gives its lease back at once), stops the
// scheduler and waits for all of it. If
// ctx ends first Close returns ctx's error and the shutdown completes in
// the background (Done reports it). It is idempotent; later calls wait for
// the same shutdown and return its result.
func (m *Manager) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		gs := make([]*Guard, 0, len(m.guards))
		for g := range m.guards {
			gs = append(gs, g)
		}
		m.mu.Unlock()
		m.cancel()
		go m.shutdown(gs)
	})
	select {
	case <-m.done:
		return m.closeErr
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (m *Manager) shutdown(gs []*Guard) {
	var errs []error
	cause := fmt.Errorf("%w: %w", ErrReleased, ErrClosed)
	for _, g := range gs {
		g.startRelease(cause)
	}
	for _, g := range gs {
		<-g.done
		if g.releaseErr != nil && !errors.Is(g.releaseErr, ErrLost) {
			errs = append(errs, g.releaseErr)
		}
	}
	m.acquiring.Wait()
	m.callbacks.Wait()
	m.sched.close()
	m.pool.close()
	m.wg.Wait()
	if err := m.hub.Close(); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		m.log.Debug("kvlease: closing watch", "err", err)
	}
	m.b.Close() // the last write was a release above
	m.closeErr = errors.Join(errs...)
	close(m.done)
}

// addCallback counts a With callback that is about to run, or refuses it
// when the manager is closing.
func (m *Manager) addCallback() error { return m.count(&m.callbacks) }

// begin counts an acquisition about to start (Manager.acquireKeys,
// Adopt, Restore), or refuses it when the manager is closing. The caller
// calls m.acquiring.Done when it has returned: its guard registered, or
// its lease given back (abort), or nothing won.
func (m *Manager) begin() error { return m.count(&m.acquiring) }

// count adds one to wg, which shutdown waits for, unless the manager is
// closing: checked under m.mu, which Close holds when it sets closed,
// so nothing is added once shutdown may be waiting.
func (m *Manager) count(wg *sync.WaitGroup) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	wg.Add(1)
	return nil
}

// register adds a new guard in place of its admission's reservation, or
// refuses it when the manager closed while the acquisition was in flight
// (the caller then gives the reservation back with unadmit).
func (m *Manager) register(g *Guard) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.reserved--
	m.guards[g] = struct{}{}
	m.stats.active.Add(1)
	return true
}

func (m *Manager) unregister(g *Guard) {
	m.mu.Lock()
	if _, ok := m.guards[g]; ok {
		delete(m.guards, g)
		m.stats.active.Add(-1)
	}
	m.mu.Unlock()
}

// admit reserves room for one more guard under MaxActive, counting the
// acquisitions in flight, so concurrent acquisitions cannot overshoot it.
// Every admit is followed by register (success) or unadmit.
func (m *Manager) admit() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if n := len(m.guards) + m.reserved; n >= m.cfg.MaxActive {
		return fmt.Errorf("%w: %d held or being acquired (MaxActive)", ErrTooManyActive, n)
	}
	m.reserved++
	return nil
}

// reserve is admit for a lease that is already ours (a publish found to
// have landed after all): it is registered even above MaxActive, since
// refusing it would orphan the lease until its TTL.
func (m *Manager) reserve() {
	m.mu.Lock()
	m.reserved++
	m.mu.Unlock()
}

// unadmit gives back a reservation that did not become a guard.
func (m *Manager) unadmit() {
	m.mu.Lock()
	m.reserved--
	m.mu.Unlock()
}

// opCtx bounds ctx by OpTimeout unless it already has a deadline
// (see kvx.OpTimeout: a ctx that cannot end shares one context).
func (m *Manager) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return m.opTimeout.Bound(ctx)
}

// cleanupCtx is the context of work that must not depend on a caller's
// cancellation (release, loss cleanup, outcome resolution): the
// manager's shared op-bounded context (OpTimeout.Shared), which no
// caller can cancel and which has no caller's values to keep. Its cancel
// func does nothing: the shared context is never cancelled. Release paths
// that must also stop when a waiter gives up derive their own from it.
func (m *Manager) cleanupCtx() (context.Context, context.CancelFunc) {
	return m.opTimeout.Shared(), func() {}
}

// go runs f in a goroutine owned by the manager (Close waits for it).
func (m *Manager) goOwned(f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// hintCache remembers, per key, the revision of the marker (delete or
// expiry) this manager last saw, so the next acquisition of that key is
// one publish instead of three. Bounded: when full an arbitrary entry goes.
type hintCache struct {
	mu sync.Mutex
	m  kvx.BoundedMap[uint64]
}

func (h *hintCache) init(n int) { h.m = kvx.NewBoundedMap[uint64](n) }

func (h *hintCache) get(key string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, _ := h.m.Get(key)
	return v
}

func (h *hintCache) put(key string, rev uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m.Put(key, rev)
}

func (h *hintCache) drop(key string) {
	h.mu.Lock()
	h.m.Delete(key)
	h.mu.Unlock()
}

// now is the time on the manager's clock (validity windows, renewal
// deadlines).
func (m *Manager) now() time.Time { return m.clk.Load().Now() }

// clockOf holds the manager's clock, which a test may replace while the
// scheduler reads it.
type clockOf struct{ clock.Clock }
