package kvx

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/retry"
)

// Starting a hub's watch creates its ordered consumer: a request to the
// server. It runs in a goroutine of the hub, without the hub's lock, so
// that a slow start stalls no other caller of the hub (Running, a Sub's
// Close, the view's reads, a running feed's Take), and each of its tries
// (startRetry) is bounded by the bucket's op timeout (OpTimeoutOf), not
// by nats.go's own request wait, which ignores the JetStream handle's
// timeout. Callers that need the watch (Subscribe, Feed, FeedKeys,
// SyncTo) wait for the one start in progress, each within its own ctx:
// a caller whose ctx ends first gets ctx's error while the start goes on
// for the others and for later callers (a hub that stops when idle drops
// a watch that started with nobody waiting for it).
//
// A start that fails is its callers' error, never turned into anything
// else; only a try that overran the op timeout is made again. kvlease
// returns it (View's Subscribe, SyncTo, SyncLatest, Feed and FeedKeys;
// an acquisition's wait as it is, unless the caller's wait had run out:
// wait.go's waitErr); kvlock's fair waits return it, their view syncs
// after trying again on the Retry policy (syncView); Election.Observe
// logs it and closes its channel, its documented end (call Observe
// again); kvledger's record watches and the worker's lease feed return
// it.

// hubStart is one start of the hub's watch in progress.
type hubStart struct {
	done   chan struct{} // closed when the start ended (a watch it did not keep ended too)
	err    error         // why it failed; set before done is closed
	cancel context.CancelFunc
	// waiters counts the callers waiting for the start: a hub that
	// stops when idle keeps no watch that nobody waits for any more.
	waiters int
}

// awaitStartLocked (h.mu held, the watch not running, the hub open)
// starts the watch, with filter (nil: the patterns), unless a start is in
// progress, and waits for the start within ctx, without the hub's lock.
// It returns with h.mu held. nil means the start it waited for succeeded;
// the caller looks at the hub again, since anything may have happened
// while it did not hold the lock (a watch ended at once, a Close).
func (h *Hub) awaitStartLocked(ctx context.Context, filter []string) error {
	notStarted := func() error {
		return fmt.Errorf("kvx: watch %q: not started when the caller's wait ended: %w", h.patterns, context.Cause(ctx))
	}
	st := h.starting
	if st == nil {
		// Feeds waiting for a watch (a restart stopped theirs, to widen
		// it or to take the view's values) have nobody else to start
		// one: a caller whose ctx has ended starts it all the same,
		// and only its own wait ends.
		if ctx.Err() != nil && len(h.feeds) == 0 {
			return notStarted()
		}
		st = h.beginStartLocked(filter)
	}
	if ctx.Err() != nil {
		return notStarted()
	}
	st.waiters++
	h.mu.Unlock()
	select {
	case <-st.done:
	case <-ctx.Done():
	}
	h.mu.Lock()
	st.waiters--
	select {
	case <-st.done:
		return st.err
	default:
		return notStarted()
	}
}

// beginStartLocked starts the watch's start in a goroutine of the hub,
// with what the hub keeps now: updates only, or, for a hub with a view,
// the current values of its keys too.
func (h *Hub) beginStartLocked(filter []string) *hubStart {
	// The watch's context is its lifetime (nats.go unsubscribes when it
	// ends), so the start's bound is a timer that cancels it, stopped
	// once the watch has started.
	wctx, cancel := context.WithCancel(context.Background())
	st := &hubStart{done: make(chan struct{}), cancel: cancel}
	h.starting = st
	withView, covered, opts := h.watchOptsLocked()
	go h.start(st, wctx, filter, withView, covered, opts)
	return st
}

// watchOptsLocked is what a new watch reads: updates only, or, for a hub
// with a view, the current values of its keys too (covering the view's
// first covered prefixes).
func (h *Hub) watchOptsLocked() (withView bool, covered int, opts []jetstream.WatchOpt) {
	if h.view != nil {
		return true, len(h.view.prefixes), nil
	}
	return false, 0, []jetstream.WatchOpt{jetstream.UpdatesOnly()}
}

// startRetry is the ceiling of one start's tries. A consumer creation
// that overran the op timeout is tried again, at once (the overrun was
// the pause), while anyone still waits for the watch: a caller, or feeds
// a restart left waiting. On a loaded cluster the creation of an ordered
// consumer, which the meta leader assigns, has taken over 5 s (CI: two
// cores, -race, R3 buckets) and the next try found the cluster caught
// up. A start takes at most three op timeouts; each caller's wait stays
// bounded by its own ctx. Any other failure is not tried again.
// ScanLatest's watch tries on it too, within its caller's ctx.
var startRetry = retry.Policy{Tries: 3}

// watchWithin runs open, which starts a watch whose context cancel ends
// (the watch's lifetime), and cancels that context if open has not
// returned within d: overran then reports that the try ran out, and a
// watch open made all the same has its context ended (nats.go ends it;
// its caller drains it). The bound of one try of a watch's start, for
// the hub's start and ScanLatest, each trying again on startRetry.
func watchWithin(d time.Duration, cancel context.CancelFunc, open func() (jetstream.KeyWatcher, error)) (w jetstream.KeyWatcher, overran bool, err error) {
	t := time.AfterFunc(d, cancel)
	w, err = open()
	return w, !t.Stop(), err
}

// overrunErr is the error of a watch's start whose every try ran out of
// the op timeout d.
func overrunErr(d time.Duration) error {
	return fmt.Errorf("not started within the op timeout (%v): %w", d, context.DeadlineExceeded)
}

// start creates the watch and installs it, unless the hub was closed
// meanwhile, or stops when idle and nobody waits for it any more.
func (h *Hub) start(st *hubStart, wctx context.Context, filter []string, withView bool, covered int, opts []jetstream.WatchOpt) {
	d := OpTimeoutOf(h.b.js)
	// st.cancel is this try's: only this goroutine replaces it (under
	// h.mu, which Close reads it under).
	for l := startRetry.Start(context.Background()); l.Next(); {
		cancel := st.cancel
		// Listening before the request: a watch made just before the
		// connection went away is replaced as soon as it is back.
		rc := h.listenReconnects()
		w, overran, err := watchWithin(d, cancel, func() (jetstream.KeyWatcher, error) {
			return h.watchOpen(wctx, filter, opts...)
		})
		h.mu.Lock()
		again := overran && !l.Last() && !h.closed && (st.waiters > 0 || len(h.feeds) > 0)
		installed := false
		if again {
			wctx, st.cancel = context.WithCancel(context.Background())
		} else {
			installed = h.settleStartLocked(st, w, err, overran, d, filter, withView, covered, rc)
		}
		h.mu.Unlock()
		if !installed {
			rc.remove() // no watch to replace
			if err == nil {
				// A watch made and not kept: drained while it ends, or
				// nats.go's delivery stays blocked on its full channel.
				discardWatch(w, cancel, d)
			}
			cancel()
		}
		if !again {
			break
		}
	}
	close(st.done) // after the discard: Close waits for it here
}

// settleStartLocked decides what becomes of the watch a start made (w,
// or err; overran when the op timeout d ended its request): it is
// installed, unless the hub was closed meanwhile, or stops when idle and
// nobody waits for it any more, or the start failed, which ends the
// feeds waiting for it. It reports whether w was installed.
func (h *Hub) settleStartLocked(st *hubStart, w jetstream.KeyWatcher, err error, overran bool, d time.Duration,
	filter []string, withView bool, covered int, rc reconnects) bool {
	h.starting = nil
	switch {
	case h.closed:
		st.err = ErrHubClosed
		return false
	case err != nil || overran:
		if overran {
			err = overrunErr(d)
		}
		st.err = fmt.Errorf("kvx: watch %q: %w", h.patterns, err)
		// The feeds waiting for this watch (a restart's) have none
		// behind them: they end, as when a watch ends by itself,
		// rather than wait for changes that never come.
		for f := range h.feeds {
			f.endCausedLocked(st.err)
		}
		clear(h.feeds)
		return false
	case h.idleStop && st.waiters == 0 && h.subCount == 0 && len(h.feeds) == 0:
		return false // every caller gave up: an idle hub watches nothing
	}
	h.installLocked(w, st.cancel, filter, withView, covered, rc)
	return true
}

// installLocked makes w, a new watch (cancel ends its context), the
// hub's running watch, read by a goroutine of the hub.
func (h *Hub) installLocked(w jetstream.KeyWatcher, cancel context.CancelFunc, filter []string, withView bool, covered int, rc reconnects) {
	if withView {
		h.view.reset() // a new watch rebuilds the view from its initial values
		h.view.covered = covered
	}
	h.w, h.cancel, h.running, h.last = w, cancel, true, math.MaxUint64
	h.filter = filter
	h.viewWatch = withView
	h.seen = newSeenKeys()
	h.done = make(chan struct{})
	h.gen++
	go h.run(w, h.done, cancel, h.gen, rc, false)
}
