package kvx

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Hub shares one watch of a bucket among many waiters, so that a thousand
// goroutines waiting for a thousand keys cost one ordered consumer, not a
// thousand. The watch starts on the first Subscribe (or Feed, or SyncTo)
// and runs until Close, or, for a hub told to StopWhenIdle, until its
// last subscriber leaves. Feeds (hub_feed.go) take every change in order
// from the same watch. When the connection comes back after a
// disconnect, the watch is replaced at once (hub_reconnect.go).
//
// Waiters must subscribe BEFORE they try the operation they may wait on:
// a change that lands between a failed try and a later Subscribe would
// otherwise be missed. Subscribe returns only once the watch is live.
type Hub struct {
	b        *Bucket
	patterns []string

	mu      sync.Mutex
	subs    map[string]map[*Sub]struct{}
	w       jetstream.KeyWatcher
	cancel  context.CancelFunc
	done    chan struct{} // closed when the current watch goroutine ends
	closed  bool
	running bool
	// starting is the watch start in progress, nil when none: its
	// request runs without the hub's lock (hub_start.go).
	starting *hubStart
	// replacing are the replacements of the watch after the connection
	// came back that are in progress (hub_reconnect.go).
	replacing map[*hubReplace]struct{}
	// last is the revision of the newest change the watch has delivered,
	// math.MaxUint64 until the first one after the watch (re)started:
	// changes from before the watch are never delivered.
	last uint64
	seen seenKeys // the latest change per key since the watch (re)started

	// view is nil until KeepView asks for one. The current
	// watch feeds it only when it was started with the keys' current
	// values (viewWatch); a hub that has watched updates only until then
	// restarts its watch the first time the view is synced.
	view      *view
	viewWatch bool

	// feeds are the ordered subscriptions (Feed), fed from the view.
	feeds map[*Feed]struct{}
	// gen counts the watches started: a watch that was stopped to be
	// replaced (SyncTo's or a Feed's restart, an idle stop, a reconnect's
	// swap) finds gen moved on and leaves the hub's state to its
	// successor.
	gen uint64
	// idleStop: the watch stops when its last subscriber leaves (a hub
	// whose owner has no Close; see StopWhenIdle).
	idleStop bool
	// subCount counts the open Subs (for idleStop).
	subCount int
	// maxFilter > 0 lets a hub whose feeds all name their keys watch
	// those keys only, up to maxFilter of them (FilterUpTo); filter is
	// what the running watch was started with (nil: the patterns).
	maxFilter int
	filter    []string
}

// NewHub returns a hub watching the keys of b that match pattern (">" for
// all), or any of more patterns. No I/O happens until the first
// Subscribe, Feed or SyncTo.
func (b *Bucket) NewHub(pattern string, more ...string) *Hub {
	return &Hub{b: b, patterns: append([]string{pattern}, more...), subs: make(map[string]map[*Sub]struct{}), feeds: make(map[*Feed]struct{})}
}

// Sub receives the changes of a set of keys.
type Sub struct {
	h      *Hub
	keys   []string
	c      chan Entry
	once   sync.Once
	from   uint64
	known  []Seen // per key of keys: its latest change as of from (zero: unknown)
	missed atomic.Bool
}

// From returns the revision after which every change of the subscribed
// keys reaches this subscription (math.MaxUint64 when the watch has not
// delivered anything yet, so nothing can be promised). A waiter that knows
// a key's revision rev >= From can therefore wait for the key's next
// change instead of reading the key: nothing newer can have been missed.
func (s *Sub) From() uint64 { return s.from }

// Missed reports, once, that an unread change of one key was replaced by
// a change of another of the subscription's keys: the subscriber no
// longer knows every key's latest change and should read them all.
// Single-key subscriptions never miss (a newer change of the same key
// supersedes the unread one).
func (s *Sub) Missed() bool { return s.missed.Swap(false) }

// C delivers the latest change of any subscribed key. It holds at most
// one entry (newer changes replace an unread one: waiters re-read the key
// anyway) and is closed when the hub's watch ends (Close, a watch
// failure, or a restart: SyncTo's, a Feed's that needs the view's
// values or wider keys, or a reconnect's that could not resume,
// hub_reconnect.go): a waiter that sees it closed re-checks and
// subscribes again.
func (s *Sub) C() <-chan Entry { return s.c }

// Close unsubscribes. It is idempotent.
func (s *Sub) Close() {
	s.once.Do(func() {
		h := s.h
		h.mu.Lock()
		registered := false
		for _, k := range s.keys {
			if m := h.subs[k]; m != nil {
				if _, ok := m[s]; ok {
					delete(m, s)
					registered = true
				}
				if len(m) == 0 {
					delete(h.subs, k)
				}
			}
		}
		if registered { // else the hub's end already closed it
			close(s.c)
		}
		h.subCount--
		stop := h.idleStopLocked()
		h.mu.Unlock()
		if stop != nil {
			stop()
		}
	})
}

// Running reports whether the hub's watch is live, so that Subscribe
// costs no I/O. A waiter that expects to wait can then subscribe before
// its first try instead of trying twice (once before subscribing, once
// after).
func (h *Hub) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running && !h.closed
}

// ErrHubClosed is returned by Subscribe after Close, and by the Take of a
// feed whose hub was closed.
var ErrHubClosed = fmt.Errorf("kvx: hub closed")

// Subscribe registers interest in keys and returns once the hub's watch is
// live. Starting the watch takes a request (hub_start.go): Subscribe waits
// for it at most until ctx ends, and then returns ctx's error.
func (h *Hub) Subscribe(ctx context.Context, keys ...string) (*Sub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if h.closed {
			return nil, ErrHubClosed
		}
		if h.maxFilter > 0 {
			return nil, errFiltering
		}
		if h.running {
			break
		}
		if err := h.awaitStartLocked(ctx, nil); err != nil {
			return nil, err
		}
	}
	s := &Sub{h: h, keys: keys, c: make(chan Entry, 1), from: h.last, known: make([]Seen, len(keys))}
	h.subCount++
	for i, k := range keys {
		s.known[i], _ = h.seen.Get(k)
		m := h.subs[k]
		if m == nil {
			m = make(map[*Sub]struct{})
			h.subs[k] = m
		}
		m[s] = struct{}{}
	}
	return s, nil
}

// watchOpen starts a watch of the hub's patterns, or of the keys of
// filter (nil: the patterns). WatchFiltered rewrites the slice it is
// given into subjects in place, so it gets a copy: the hub's own lists
// serve every restart.
func (h *Hub) watchOpen(ctx context.Context, filter []string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	if filter != nil {
		return h.b.kv.WatchFiltered(ctx, slices.Clone(filter), opts...)
	}
	if len(h.patterns) == 1 {
		return h.b.kv.Watch(ctx, h.patterns[0], opts...)
	}
	return h.b.kv.WatchFiltered(ctx, slices.Clone(h.patterns), opts...)
}

// stopLocked takes the running watch off the hub so that another can
// replace it (SyncTo's restart, a Feed's, an idle stop): Subs' channels
// are closed (they subscribe again, as after any restart) and feeds
// will catch up from the view once the next watch has refilled it. The
// watch's goroutine finds gen moved on and leaves the hub alone. It
// returns stop, which the caller runs after unlocking the hub: it ends
// the old watch (its consumer is deleted by a request, not to be made
// under the hub's lock) and waits for its goroutine.
func (h *Hub) stopLocked() (stop func()) {
	w, cancel, done := h.w, h.cancel, h.done
	h.gen++
	for rp := range h.replacing {
		rp.abort() // it would replace the watch being stopped
	}
	h.running, h.viewWatch = false, false
	h.releaseSubsLocked()
	for f := range h.feeds {
		f.restartLocked(h.view) // before the view empties
	}
	if h.view != nil {
		h.view.reset()
	}
	d := OpTimeoutOf(h.b.js)
	return func() { _ = endWatch(w, cancel, done, d) }
}

// idleStopLocked takes the watch off a StopWhenIdle hub that no one
// subscribes to any more; it returns the stop to run after unlocking,
// or nil.
func (h *Hub) idleStopLocked() (stop func()) {
	if !h.idleStop || !h.running || h.subCount > 0 || len(h.feeds) > 0 {
		return nil
	}
	return h.stopLocked()
}

// StopWhenIdle makes the hub stop its watch when its last subscriber
// (Sub or Feed) leaves, and start it again at the next Subscribe or Feed:
// for an owner that has no Close of its own to end the watch with. The
// price is one read of the watched keys per start when subscribers come
// and go one at a time.
func (h *Hub) StopWhenIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.idleStop = true
}

// releaseSubsLocked closes every Sub's channel (the watch behind them
// ended): each waiter re-checks and subscribes again.
func (h *Hub) releaseSubsLocked() {
	ended := make(map[*Sub]struct{})
	for _, m := range h.subs {
		for s := range m {
			ended[s] = struct{}{}
		}
	}
	clear(h.subs) // Sub.Close now finds nothing to close twice
	for s := range ended {
		close(s.c)
	}
}

// run reads the watch w of generation gen until it ends. rc tells it
// that the connection came back (hub_reconnect.go). A watch that
// resumed its predecessor's (resumed) may deliver again revisions the
// predecessor delivered before it was replaced: those are dropped.
func (h *Hub) run(w jetstream.KeyWatcher, done chan struct{}, cancel context.CancelFunc, gen uint64, rc reconnects, resumed bool) {
	defer close(done)
	// The watch may end by itself (connection closed, consumer lost):
	// cancel its context too, or nats.go's goroutine waiting on it
	// outlives the hub.
	defer cancel()
	defer rc.remove()
	updates, back := w.Updates(), rc.ch
loop:
	for {
		select {
		case _, ok := <-back:
			if !ok {
				back = nil // no more reports
				continue
			}
			h.reconnected(gen)
		case e, ok := <-updates:
			if !ok {
				break loop
			}
			h.deliver(e, gen, resumed)
		}
	}
	// The watch ended (Close, or the subscription was closed under us):
	// release every waiter so it re-checks; the next Subscribe restarts.
	// Feeds end: their owners are told the watch ended.
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gen != gen {
		return // replaced: the successor owns the hub's state
	}
	if rp := h.replacingLocked(gen); rp != nil && !h.closed {
		// A replacement is being made (the connection came back, and
		// nats.go ended this watch when it could not make its own new
		// consumer): it takes the hub's state over, or ends it as
		// below if it cannot (replaced).
		rp.orphaned = true
		return
	}
	h.endRunLocked()
}

// endRunLocked is the end of the running watch that ended by itself:
// every waiter is released so it re-checks (the next Subscribe restarts
// the watch) and the feeds end, their owners told the watch ended.
func (h *Hub) endRunLocked() {
	h.releaseSubsLocked()
	for f := range h.feeds {
		f.endLocked()
	}
	clear(h.feeds)
	h.running, h.viewWatch = false, false
	if h.view != nil {
		h.view.reset() // invalid without its watch; Sync restarts it
	}
}

// deliver hands one update of the watch of generation gen to the view,
// the feeds and the Subs; nil is the end of the initial values.
func (h *Hub) deliver(e jetstream.KeyValueEntry, gen uint64, resumed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gen != gen {
		return // stopped or replaced for a successor: drain
	}
	if e == nil {
		if h.viewWatch {
			h.view.markReady()
			for f := range h.feeds {
				f.wakeLocked()
			}
		}
		return
	}
	ent := fromWatch(e)
	if resumed && ent.Revision <= h.last {
		return // its predecessor delivered it
	}
	if h.viewWatch {
		h.view.apply(ent)
		for f := range h.feeds {
			f.pushLocked(ent)
		}
	}
	if h.last == math.MaxUint64 || ent.Revision > h.last {
		h.last = ent.Revision
	}
	if h.maxFilter == 0 { // a hub that filters has no Subs to tell (errFiltering)
		h.seen.note(ent)
		for s := range h.subs[ent.Key] {
			s.offer(ent)
		}
	}
}

// offer replaces an unread entry with e without blocking (only the hub's
// goroutine sends, so the second send finds room). Replacing another
// key's entry is recorded for Missed.
func (s *Sub) offer(e Entry) {
	select {
	case s.c <- e:
		return
	default:
	}
	select {
	case old := <-s.c:
		if old.Key != e.Key {
			s.missed.Store(true)
		}
	default:
	}
	select {
	case s.c <- e:
	default:
	}
}

// Close stops the watch and waits for its goroutine. Subscribers' channels
// are closed. A start in progress is abandoned (its request cancelled)
// and waited for. Close waits at most the bucket's op timeout
// (OpTimeoutOf) for the delete of the watch's consumer (endWatch), and,
// while the watch is being replaced after a reconnect, up to twice that
// before, for the replacement (its request in flight, then the delete
// of the consumer it made or replaced: hub_reconnect.go). It is
// idempotent.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	for f := range h.feeds {
		f.endLocked()
	}
	clear(h.feeds)
	st := h.starting
	if st != nil {
		st.cancel() // the start finds the hub closed and keeps nothing
	}
	var replacing []chan struct{}
	for rp := range h.replacing {
		rp.abort() // the replacement finds the hub closed and keeps nothing
		replacing = append(replacing, rp.done)
	}
	w, cancel, done, running := h.w, h.cancel, h.done, h.running
	h.mu.Unlock()
	if st != nil {
		<-st.done
	}
	for _, done := range replacing {
		<-done // it has ended the watch it replaced, or its own
	}
	if !running {
		// A watch stopped for a successor may still be draining.
		if done != nil {
			<-done
		}
		return nil
	}
	return endWatch(w, cancel, done, OpTimeoutOf(h.b.js))
}

// endWatch ends a watch the hub has let go of: it stops w (its
// subscription ends at once, then its consumer is deleted by a request),
// cancels its context and waits for its goroutine (done). nats.go's
// KeyWatcher.Stop takes no context: its delete request is bounded by
// nats.go's own request wait (5 s, whatever the JetStream handle's
// timeout), so endWatch waits for it at most d, the bucket's op timeout,
// and then reports the delete unanswered and returns. The subscription
// has ended by then (the watch's goroutine is waited for); the Stop
// goroutine ends with nats.go's wait, and the server removes an
// ephemeral consumer whose subscriber left by itself.
func endWatch(w jetstream.KeyWatcher, cancel context.CancelFunc, done <-chan struct{}, d time.Duration) error {
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop() }()
	t := time.NewTimer(d)
	defer t.Stop()
	var err error
	select {
	case err = <-stopped:
	case <-t.C:
		err = fmt.Errorf("kvx: deleting the watch's consumer: no answer within %v: %w", d, context.DeadlineExceeded)
	}
	cancel()
	<-done
	return err
}
