package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// Worker runs the handlers registered per kind on the ready tasks of one
// ledger, each under a claim that names the worker's one lease. See the package
// documentation for what it guarantees. Its methods are safe for
// concurrent use.
type Worker struct {
	l       *kvledger.Ledger
	watcher kvledger.RecordWatcher
	js      jetstream.JetStream
	cfg     Config
	leases  *kvlease.Manager
	ownsMgr bool
	bucket  string // the ledger's bucket (its store's name)
	prefix  string // lease key prefix: "kvledger.<bucket>."

	handlers  map[string]Handler
	schedules []*schedule // registered in code (Schedule)

	// Stored schedules (schedule_stored.go), which the record watch
	// delivers: by name, guarded by schedMu with the loop's state of
	// every schedule. schedWake (buffered 1) wakes the loop on a change.
	schedMu   sync.Mutex
	stored    map[string]*schedule
	schedWake chan struct{}
	storedOn  bool // the record watch delivers stored schedules

	// paused holds the kinds whose tasks the producer starts none of, as
	// the record watch delivered them (pause.go). Guarded by mu.
	paused map[string]kvledger.Pause

	mu      sync.Mutex
	ix      index
	running map[kvledger.IdempotencyKey]*run
	busy    int // runs holding a slot: claiming, claimed ahead or in the handler
	// inHandler counts the runs holding a handler slot (at most
	// Concurrency); ahead holds the claimed runs waiting for one, in
	// claim order (ahead.go).
	inHandler int
	ahead     []*run
	// claiming holds the runs holding a slot whose claim has not come
	// back yet: a handler slot is kept for the first of them in order
	// (grantLocked).
	claiming []*run
	// claimFails counts the claims that failed transiently in a row;
	// no claim starts before claimPause (retryLater, claimRetry).
	claimFails int
	claimPause time.Time
	// outcomes feeds the collector (collect.go) while collecting;
	// collected is closed when it ended. Guarded by mu.
	outcomes   chan *sentOutcome
	collecting bool
	collected  chan struct{}
	perKind    map[string]int // per kind, runs holding a slot
	started    bool
	draining   bool
	closed     bool
	fatal      error // a watch ended: reported by Close

	wake   chan struct{} // buffered 1: the dispatcher has work to look at
	ctx    context.Context
	cancel context.CancelFunc
	values context.Context // Start's ctx without its cancellation: handlers' values
	// storeBounds: the store bounds each of its operations within
	// OpTimeout and pipelines outcomes (ledgerCtx), decided once in New.
	storeBounds bool
	wg          sync.WaitGroup // dispatcher, schedule loop
	runs        sync.WaitGroup // attempts started and not ended
	pool        sync.WaitGroup // attempt goroutines, running or parked (pool.go)
	parked      []chan *run    // guarded by mu: parked attempt goroutines
	recWatch    *kvledger.RecordWatch
	leaseStop   func()
	leaseDone   chan struct{}
	// wlease is the worker's lease, which every claim of this worker
	// names (worker_lease.go): nil until the first claim, and after it
	// ended. wleaseWait is closed when an acquisition in flight ends.
	// Both guarded by mu.
	wlease     *kvlease.Guard
	wleaseWait chan struct{}
	idle       func() bool    // guarded by mu: stops the release of an idle worker's lease
	idleWG     sync.WaitGroup // idle releases in flight

	stats counters
	// startDone is closed when Start returns (Close waits for it before
	// it stops what Start made).
	startDone chan struct{}
	done      chan struct{} // closed by the first Close once it drained the worker (Done)
	// attemptsEnded is closed by windDown once every attempt goroutine
	// and the collector have ended: a handler that ignored its cancelled
	// context past Close's ctx included. stopped is closed, and closeErr
	// set, once the lease manager the worker made is closed too.
	attemptsEnded chan struct{}
	stopped       chan struct{}
	closeErr      error
}

// New returns a worker for the ledger l, whose store must push changes
// (kvledger.RecordWatcher: the KVStore does) and be named (its lease
// keys are "kvledger.<bucket>.<key>"). js reaches the lease bucket. No
// I/O happens except creating the lease manager when cfg.Leases is nil.
func New(ctx context.Context, js jetstream.JetStream, l *kvledger.Ledger, cfg Config) (*Worker, error) {
	if js == nil || l == nil {
		return nil, fmt.Errorf("%w: nil JetStream or Ledger", ErrInvalidConfig)
	}
	rw, ok := l.Store().(kvledger.RecordWatcher)
	if !ok {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, kvledger.ErrNoWatch)
	}
	named, ok := l.Store().(interface{ Name() string })
	if !ok || named.Name() == "" {
		return nil, fmt.Errorf("%w: the ledger's store has no name", ErrInvalidConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	prefix := leasePrefix(named.Name())
	w := &Worker{
		l: l, watcher: rw, js: js, cfg: cfg, leases: cfg.Leases,
		bucket:      named.Name(),
		prefix:      prefix,
		handlers:    make(map[string]Handler),
		ix:          newIndex(prefix),
		running:     make(map[kvledger.IdempotencyKey]*run),
		storeBounds: storeBoundsOps(l, cfg.OpTimeout),
		perKind:     make(map[string]int),
		paused:      make(map[string]kvledger.Pause),
		outcomes:    make(chan *sentOutcome, 2*cfg.Concurrency+cfg.ClaimAhead),
		wake:        make(chan struct{}, 1),
		done:        make(chan struct{}),
	}
	w.stored, w.schedWake = make(map[string]*schedule), make(chan struct{}, 1)
	w.attemptsEnded, w.stopped, w.startDone = make(chan struct{}), make(chan struct{}), make(chan struct{})
	if w.ix.groups, err = newGroups(prefix, cfg.GroupLimits); err != nil {
		return nil, err
	}
	if w.ix.rates, err = newRates(prefix, cfg.RateLimits); err != nil {
		return nil, err
	}
	for _, k := range cfg.FairKinds {
		w.ix.fair[k] = true
	}
	if w.leases == nil {
		m, err := kvlease.NewManager(ctx, js, kvlease.Config{Bucket: cfg.LeaseBucket, Replicas: cfg.LeaseReplicas, Holder: string(cfg.Owner), Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("worker: lease manager: %w", err)
		}
		w.leases, w.ownsMgr = m, true
	}
	if w.cfg.Owner == "" {
		w.cfg.Owner = kvledger.OwnerID(w.leases.Holder())
	}
	if w.cfg.Actor == "" {
		w.cfg.Actor = kvledger.Actor(w.cfg.Owner)
	}
	return w, nil
}

// Owner returns the owner id this worker claims under.
func (w *Worker) Owner() kvledger.OwnerID { return w.cfg.Owner }

// Handle registers h for tasks of kind. It must be called before Start;
// a kind has one handler.
func (w *Worker) Handle(kind string, h Handler) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler for kind %q", ErrInvalidConfig, kind)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return ErrStarted
	}
	if _, dup := w.handlers[kind]; dup {
		return fmt.Errorf("%w: kind %q already has a handler", ErrInvalidConfig, kind)
	}
	w.handlers[kind] = h
	return nil
}

// Start begins work: it watches the lease and record keys, returns once
// both watches have delivered the current state (bounded by ctx), and
// then claims ready tasks in the background until Close. ctx's values
// (not its cancellation) reach the handlers' contexts; use Run to tie
// the worker's life to a context.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	if w.started {
		w.mu.Unlock()
		return ErrStarted
	}
	// Set under the lock with started: a Close racing this Start reads
	// them, cancels the start's waits through w.ctx and waits for
	// startDone before it stops what the start made.
	w.started = true
	w.values = context.WithoutCancel(ctx)
	w.ctx, w.cancel = context.WithCancel(w.values)
	w.mu.Unlock()
	defer close(w.startDone)
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	defer context.AfterFunc(w.ctx, scancel)()
	leaseSynced := make(chan struct{})
	if err := w.watchLeases(sctx, leaseSynced); err != nil {
		return w.startErr(err)
	}
	if err := waitSynced(sctx, leaseSynced, "lease"); err != nil {
		w.stopWatches()
		return w.startErr(err)
	}
	recSynced := make(chan struct{})
	rw, err := w.watchRecords(sctx, func(c kvledger.Change) { w.onRecord(c, recSynced) })
	if err != nil {
		w.stopWatches()
		return w.startErr(fmt.Errorf("worker: %w", err))
	}
	w.mu.Lock()
	w.recWatch = rw
	w.mu.Unlock()
	if err := waitSynced(sctx, recSynced, "record"); err != nil {
		w.stopWatches()
		return w.startErr(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed { // Close came while the watches started: it stops them
		return ErrClosed
	}
	w.startCollectorLocked()
	w.wg.Add(2)
	go w.dispatch()
	go w.keepPresence()
	if len(w.schedules) > 0 || w.storedOn {
		w.wg.Add(1)
		go w.scheduleLoop()
	}
	return nil
}

// startErr is err, or ErrClosed when a Close that came during Start
// cut it short.
func (w *Worker) startErr(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("%w (during Start: %w)", ErrClosed, err)
	}
	return err
}

func waitSynced(ctx context.Context, ch <-chan struct{}, what string) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("worker: waiting for the %s watch: %w", what, context.Cause(ctx))
	}
}

// Run is Start, then Close when ctx ends (the drain is bounded by
// DrainTimeout plus the time to release claims), or when the worker
// closed itself because its record or lease watch ended for good. It
// returns Start's error or Close's (which names the watch that ended).
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		_ = w.Close(context.WithoutCancel(ctx))
		return err
	}
	select {
	case <-ctx.Done():
	case <-w.done:
	}
	return w.Close(context.WithoutCancel(ctx))
}

// Stats returns a snapshot of the worker's counters.
func (w *Worker) Stats() Stats {
	w.mu.Lock()
	running, ready := len(w.running), len(w.ix.queued)
	w.mu.Unlock()
	c := &w.stats
	return Stats{
		Running: running, Ready: ready,
		Started: c.started.Load(), Completed: c.completed.Load(), Retried: c.retried.Load(),
		Failed: c.failed.Load(), Released: c.released.Load(), Cancelled: c.cancelled.Load(), Snoozed: c.snoozed.Load(),
		Lost: c.lost.Load(), Panics: c.panics.Load(), Contended: c.contended.Load(),
		TakenOver: c.takenOver.Load(), Scheduled: c.scheduled.Load(), GroupFull: c.groupFull.Load(),
	}
}

// Done is closed when Close has drained the worker, also the Close the
// worker makes itself when its record or lease watch ends for good: it
// claims no more and has given back its claims. A handler that ignores
// its cancelled context may still be running then, its claim kept (the
// worker's lease renewed) until it returns; Close waits for it.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Close drains the worker: it stops claiming and gives back at once the
// tasks it claimed ahead (their attempts not counted), lets running
// handlers finish for up to DrainTimeout, then cancels the rest (cause
// ErrDraining) and, as each returns, gives its claim back (pending
// again, the attempt not counted) so other workers start it at once; it
// waits for the outcomes already sent to be settled; then it stops the
// watches, deletes the worker's lease (a claim it could not give back is
// free for takeover at once) and, if it made it, closes the lease
// manager. Every goroutine of the worker has ended when it returns nil,
// or the error of a watch that ended or of closing the lease manager it
// made.
//
// A claim is given back only after its handler has returned, never
// while it runs, so no other worker starts the task meanwhile. ctx
// bounds how long Close waits, not that rule: when ctx ends first (a
// handler ignores its cancelled context), Close returns ctx's cause with
// that handler still running and its claim kept, the worker's lease
// renewed, until the handler returns; then the claim is given back and
// the lease deleted. Close is idempotent: a later call waits, bounded by
// its own ctx, for the last such handler to return and returns the same
// result as every call that saw the worker stopped.
//
// Close must not be called from a handler or an Observer with a ctx that
// never ends: it waits for every running handler (the caller's too) and
// for the observers' goroutine. Cancel Run's ctx instead, or bound ctx.
func (w *Worker) Close(ctx context.Context) error {
	// Only the first call drains; a call that comes while it does waits
	// for the same end below, bounded by its own ctx (a sync.Once would
	// hold it until the first call's drain returned).
	w.mu.Lock()
	first := !w.closed
	w.draining, w.closed = true, true
	started := w.started
	w.mu.Unlock()
	if first {
		if started {
			w.cancel()    // dispatcher and schedules stop; handlers keep their own contexts
			<-w.startDone // a Start in progress returns at once (w.ctx ended its waits)
			w.wg.Wait()
			w.releaseAhead()
			w.drain(ctx)
			w.stopCollector(ctx)
			w.mu.Lock()
			if w.idle != nil {
				w.idle()
			}
			w.mu.Unlock()
			w.idleWG.Wait()
			w.stopWatches()
		}
		w.mu.Lock()
		collected := w.collected
		w.mu.Unlock()
		// windDown deletes the worker's lease and closes the lease
		// manager once every handler has returned, not before: a
		// handler that outlives ctx keeps its claim (and its group
		// slot), renewed, until then.
		go w.windDown(collected)
		select { // the attempt goroutines, parked or finishing
		case <-w.attemptsEnded:
		case <-ctx.Done():
		}
		close(w.done)
	}
	select {
	case <-w.stopped: // preferred when ctx has ended too
		return w.closeErr
	default:
	}
	select {
	case <-w.stopped:
		return w.closeErr
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// windDown is the end of Close that waits for no ctx: once the attempt
// goroutines (parked or finishing a handler that outlived Close's ctx)
// and the collector (nil when it never started) have ended, it deletes
// the worker's lease (renewed until then), closes attemptsEnded, closes
// the lease manager the worker made (its own operation bounds limit
// that) and closes stopped. Only Close starts it, once.
func (w *Worker) windDown(collected <-chan struct{}) {
	w.pool.Wait()
	if collected != nil {
		<-collected
	}
	w.mu.Lock()
	g := w.wlease
	w.wlease = nil
	w.mu.Unlock()
	if g != nil {
		// After every claim was given back: what is still claimed
		// under it (a give-back that failed) is free for other
		// workers at once.
		w.releaseWorkerLease(g)
	}
	close(w.attemptsEnded)
	var errs []error
	if w.ownsMgr {
		if err := w.leases.Close(context.Background()); err != nil {
			errs = append(errs, err)
		}
	}
	w.mu.Lock()
	if w.fatal != nil {
		errs = append(errs, w.fatal)
	}
	w.mu.Unlock()
	w.closeErr = errors.Join(errs...)
	close(w.stopped)
}

// drain waits for running handlers up to DrainTimeout, then cancels
// the rest (ErrDraining) and waits, bounded by ctx, for them to return
// and give their claims back (record).
func (w *Worker) drain(ctx context.Context) {
	idle := doneOf(&w.runs)
	if w.cfg.DrainTimeout > 0 {
		t := clock.NewTimer(clock.Real()) // real time: handlers run in it
		t.Reset(w.cfg.DrainTimeout)
		select {
		case <-idle:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	w.mu.Lock()
	rs := make([]*run, 0, len(w.running))
	for _, r := range w.running {
		rs = append(rs, r)
	}
	w.mu.Unlock()
	for _, r := range rs {
		w.stopHandler(r)
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// doneOf returns a channel closed when wg's count reaches zero. The
// goroutine behind it ends then; a handler that ignores its cancelled
// context keeps it past Close (see doc.go).
func doneOf(wg *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

func (w *Worker) stopWatches() {
	w.mu.Lock()
	rw, ls, ld := w.recWatch, w.leaseStop, w.leaseDone
	w.recWatch, w.leaseStop = nil, nil
	w.mu.Unlock()
	if rw != nil {
		rw.Stop()
	}
	if ls != nil {
		ls()
		<-ld
	}
}

// poke wakes the dispatcher.
func (w *Worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Worker) now() time.Time { return w.cfg.Clock.Now() }

// LeaseKey returns the per-record lease key of the record key in the
// ledger bucket bucket, in the lease bucket. Workers claim under their
// own lease (one per worker, named in each claimed record's Lease), but
// they keep off a pending record whose per-record lease is held, and
// judge a claimed record that names no lease (written before records
// named their lease) by this key. A process that claims a record with
// kvledger.Ledger.ClaimLeased beside workers holds this lease first,
// so that no worker claims the record meanwhile; any lease it claims
// under must be a key under the ledger's prefix ("kvledger.<bucket>."),
// which the workers watch.
func LeaseKey(bucket string, key kvledger.IdempotencyKey) string {
	return recordLeaseKey(leasePrefix(bucket), key)
}

// recordLeaseKey is LeaseKey under the ledger's lease prefix.
func recordLeaseKey(prefix string, key kvledger.IdempotencyKey) string {
	return prefix + kvx.EncodeToken(string(key))
}

func leasePrefix(bucket string) string { return kvledger.LeasePrefix(bucket) }
