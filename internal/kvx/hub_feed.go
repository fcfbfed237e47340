package kvx

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// A Feed is the hub's ordered subscription: every change of the keys it
// matches, in stream order, starting with their current values, for a
// subscriber that keeps its own copy of a part of the bucket (the
// worker's index, a dashboard, a tally) rather than waking on one key's
// latest change as a Sub does. Feeds are served from the hub's view, so a
// process's feeds of one bucket cost the server one consumer (the hub's),
// and a feed that starts late gets the current values from memory rather
// than from a consumer of its own.
//
// Each feed queues at most its max changes. The hub never waits for a
// feed: a feed whose reader falls further behind than that (or whose
// watch was restarted) is lagged. Its queue is dropped, and its next Take
// returns, once the view is whole, a catch-up: a Resync item, then the
// current value of each matched key that changed since the feed last
// handed it out, a delete marker (OpDelete, at the view's revision) for
// each such key that is gone (a key that came and went while the feed
// lagged may get one too, though its reader never held it), and a Synced
// item. Nothing is lost, only coalesced: the reader sees each key's latest
// state, never an older one after a newer, but not every state between.
//
// A feed that keeps up costs the hub an append per change and nothing
// per key: what its reader holds is the view less the changes still
// queued, so the feed notes keys only once it lags (dirty) or its watch
// restarts (held).
type Feed struct {
	h      *Hub
	prefix string // a kept view prefix ("" for every key)
	match  func(key string) bool
	// keys are FeedKeys's keys, each once; nil for a Feed of every key
	// under prefix.
	keys []string
	max  int

	// Guarded by the hub's mutex.
	q       []FeedItem
	changes int  // changes in q (markers and catch-ups not counted)
	lagged  bool // q is void: the next Take catches up from the view
	started bool // a snapshot has been handed out (a catch-up says Resync)
	resumed bool // the watch resumed while the feed lagged: its catch-up says Resumed
	ended   bool
	err     error
	// dirty, while the feed lags behind a watch that goes on, holds the
	// keys of the changes its reader was not handed: those the catch-up
	// sends. Every other key the reader holds as the view does.
	dirty map[string]struct{}
	// held, after its watch restarted, is what the reader holds: a
	// key's revision, or 0 when unknown. The new watch's initial values
	// carry no marker for a key deleted meanwhile whose marker the stream
	// no longer has, so the catch-up compares the whole view with it.
	held map[string]uint64

	wake chan struct{} // one token: something to Take
	once sync.Once
	// closed: Close was called. Each then returns nil, since its reader
	// (or the reader's owner) asked for the end.
	closed atomic.Bool
}

// FeedItem is one item of a Feed: a change (Entry), or a marker.
type FeedItem struct {
	Entry
	// Synced: every matched key's current value has been handed out
	// before this item (at the start, and at the end of each catch-up).
	Synced bool
	// Resync: the feed lagged; the items up to the next Synced bring the
	// reader's copy to the current state.
	Resync bool
	// Resumed: the hub's watch was replaced after its connection came
	// back, resuming after the last change it delivered (hub_reconnect.go).
	// A key that expired while the connection was away, and whose expiry
	// marker the stream no longer holds (it lives the bucket's
	// LimitMarkerTTL), reaches no feed: a reader that must not miss an
	// expiry reads the keys it holds live again (from the stream leader).
	// Changes after this item are delivered as usual.
	Resumed bool
}

// ErrFeedEnded is returned by Take when the hub's watch ended by itself
// (connection closed, consumer lost); a closed hub's feeds return
// ErrHubClosed.
var ErrFeedEnded = fmt.Errorf("kvx: feed ended")

// Feed starts an ordered subscription to the keys under prefix (one the
// hub keeps a view of: KeepView) that match (nil: all of them), each
// queueing at most limit changes (at least 1). It starts the watch if it
// is not running; the first Take returns the current values once the view
// holds them.
func (h *Hub) Feed(ctx context.Context, prefix string, match func(string) bool, limit int) (*Feed, error) {
	return h.feed(ctx, prefix, match, nil, limit)
}

// FeedKeys is Feed for the given keys only. On a hub that may filter
// (FilterUpTo), a watch that only such feeds use reads their keys only,
// not every key of its patterns: a feed whose keys the running watch does
// not cover restarts it with the union of every feed's keys (the other
// feeds catch up, which costs them nothing they hold already), and a
// feed of all keys, or more keys than the hub filters, restarts it with
// its patterns, which it then keeps until it stops.
func (h *Hub) FeedKeys(ctx context.Context, prefix string, keys []string, limit int) (*Feed, error) {
	set := make(map[string]bool, len(keys))
	uniq := make([]string, 0, len(keys)) // not nil: nil would mean every key
	for _, k := range keys {
		if !set[k] {
			set[k] = true
			uniq = append(uniq, k)
		}
	}
	return h.feed(ctx, prefix, func(k string) bool { return set[k] }, uniq, limit)
}

// FilterUpTo lets the hub watch only the keys its feeds name while they
// all name keys (FeedKeys), up to n keys; beyond that it watches its
// patterns. Such a hub serves feeds only: Subscribe and SyncTo return
// errFiltering, and its watch keeps no latest change per key for Subs
// (Sub.Known). Call it before the first Subscribe.
func (h *Hub) FilterUpTo(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.maxFilter = n
}

func (h *Hub) feed(ctx context.Context, prefix string, match func(string) bool, keys []string, limit int) (*Feed, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if h.closed {
			return nil, ErrHubClosed
		}
		if h.view == nil || !slices.Contains(h.view.prefixes, viewPrefix(prefix)) {
			return nil, fmt.Errorf("kvx: feed of %q: %w", prefix, errNoView)
		}
		want := h.wantFilterLocked(keys)
		if !h.running {
			// A failed start ends the feeds waiting for it (start).
			if err := h.awaitStartLocked(ctx, want); err != nil {
				return nil, err
			}
			continue
		}
		if h.viewCoveredLocked() && covers(h.filter, want) {
			break
		}
		// Watching without the view's current values, or not the new
		// feed's keys: restart.
		stop := h.stopLocked()
		h.mu.Unlock()
		stop()
		h.mu.Lock()
	}
	f := &Feed{h: h, prefix: viewPrefix(prefix), match: match, keys: keys, max: max(limit, 1), lagged: true,
		wake: make(chan struct{}, 1)}
	h.feeds[f] = struct{}{}
	f.wakeLocked()
	return f, nil
}

// wantFilterLocked is the filter a watch needs for the current feeds
// and a new one of keys (nil keys: all): the union of their keys, or nil
// (the patterns) when the hub does not filter, a feed wants all keys, a
// Sub may be waiting, or there are more keys than it filters.
func (h *Hub) wantFilterLocked(keys []string) []string {
	if h.maxFilter == 0 || keys == nil {
		return nil
	}
	set := make(map[string]bool)
	for _, k := range keys {
		set[k] = true
	}
	for f := range h.feeds {
		if f.keys == nil {
			return nil // a feed of every key
		}
		for _, k := range f.keys {
			set[k] = true
		}
	}
	if h.running {
		if h.filter == nil {
			return nil // keep the wider watch until it stops
		}
		for _, k := range h.filter {
			set[k] = true
		}
	}
	if len(set) > h.maxFilter {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}

// covers reports whether a watch filtered by cur (nil: everything) sees
// every key of want (nil: everything).
func covers(cur, want []string) bool {
	if cur == nil {
		return true
	}
	if want == nil {
		return false
	}
	for _, k := range want {
		if _, ok := slices.BinarySearch(cur, k); !ok {
			return false
		}
	}
	return true
}

func viewPrefix(prefix string) string {
	if prefix == "" {
		return ""
	}
	return prefix + "."
}

func (f *Feed) matches(key string) bool {
	return strings.HasPrefix(key, f.prefix) && (f.match == nil || f.match(key))
}

// Ready receives when Take has something to return (items, or the end,
// Close's included).
func (f *Feed) Ready() <-chan struct{} { return f.wake }

// Each is the one loop a reader of a feed runs: it hands every item to
// fn in order until the feed's Close or stop's closing (nil), fn
// returning false (nil), or the feed's end (Take's error). Close, from
// any goroutine, wakes a reader waiting for items and ends Each before
// it hands fn another item, so an owner that ends its reader needs no
// stop channel of its own: stop may be nil, and is for a reader whose
// lifetime is a context's (ctx.Done()).
//
// Its two queues take turns: the hub fills one while fn reads the
// other, so a feed that keeps up allocates no queue per change.
func (f *Feed) Each(stop <-chan struct{}, fn func(FeedItem) bool) error {
	var spare []FeedItem
	for {
		select {
		case <-stop:
			return nil
		case <-f.Ready():
		}
		items, err := f.take(spare)
		for _, it := range items {
			if f.closed.Load() || !fn(it) {
				return nil
			}
		}
		spare = items
		if err != nil {
			if f.closed.Load() {
				return nil // Close ended the feed: the end was asked for
			}
			select {
			case <-stop:
				return nil
			default:
				return err
			}
		}
	}
}

// Take returns the items queued since the last Take, in order; a lagged
// feed returns its catch-up once the view is whole (until then, nothing).
// After the watch ended it returns ErrFeedEnded, after the feed's Close or
// the hub's ErrHubClosed.
func (f *Feed) Take() ([]FeedItem, error) { return f.take(nil) }

// take is Take; the feed queues what comes next in spare's storage (a
// slice an earlier take returned, whose items the caller is done with).
func (f *Feed) take(spare []FeedItem) ([]FeedItem, error) {
	h := f.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if f.ended {
		return nil, f.err
	}
	if f.lagged {
		if !h.running || !h.viewWatch || !h.view.ready {
			return nil, nil // the view refills: markReady wakes the feed
		}
		f.catchUpLocked()
	}
	out := f.q
	clear(spare) // drop the values it holds for the collector
	f.q, f.changes = spare[:0], 0
	return out, nil
}

// catchUpLocked queues the difference between what the feed's reader
// holds and the view: every matched key at the start; after a restart,
// the view against held; after a lag, the dirty keys.
func (f *Feed) catchUpLocked() {
	v := f.h.view
	var q []FeedItem
	if f.started {
		q = append(q, FeedItem{Resync: true})
	}
	var cur []FeedItem
	gone := func(k string) {
		cur = append(cur, FeedItem{Entry: Entry{Key: k, Revision: v.applied, Op: OpDelete}})
	}
	switch {
	case !f.started:
		f.eachLocked(v, func(e Entry) { cur = append(cur, FeedItem{Entry: e}) })
	case f.held != nil:
		f.eachLocked(v, func(e Entry) {
			if rev, ok := f.held[e.Key]; !ok || rev != e.Revision {
				cur = append(cur, FeedItem{Entry: e})
			}
			delete(f.held, e.Key) // what is left went
		})
		for k := range f.held {
			gone(k)
		}
	default:
		for k := range f.dirty {
			if e, ok := v.lookup(k); ok {
				cur = append(cur, FeedItem{Entry: e})
			} else {
				gone(k)
			}
		}
	}
	f.held, f.dirty = nil, nil
	slices.SortFunc(cur, func(a, b FeedItem) int { return cmp.Compare(a.Revision, b.Revision) })
	q = append(q, cur...)
	f.q = append(q, FeedItem{Synced: true})
	if f.resumed {
		f.q = append(f.q, FeedItem{Resumed: true})
	}
	f.changes, f.lagged, f.started, f.resumed = 0, false, true, false
}

// eachLocked calls fn with the view's entry of every key the feed
// matches. A feed of named keys (Election.Observe's, WaitFinal's) looks
// them up rather than scanning every key under the hub's lock.
func (f *Feed) eachLocked(v *view, fn func(Entry)) {
	if f.keys != nil {
		for _, k := range f.keys {
			if e, ok := v.lookup(k); ok && f.matches(k) {
				fn(e)
			}
		}
		return
	}
	for _, m := range v.live {
		for k, e := range m {
			if f.matches(k) {
				fn(e)
			}
		}
	}
}

// pushLocked queues one change the view applied.
func (f *Feed) pushLocked(e Entry) {
	if f.ended || !f.matches(e.Key) {
		return
	}
	if f.lagged {
		// It catches up from the view: a key changed now is one its
		// reader lacks (a feed that has not started, or whose watch
		// restarted, catches up from the whole view).
		if f.dirty != nil {
			f.dirty[e.Key] = struct{}{}
		}
		return
	}
	if f.changes >= f.max {
		f.lagLocked()
		f.dirty[e.Key] = struct{}{}
		return
	}
	f.q = append(f.q, FeedItem{Entry: e})
	f.changes++
	f.wakeLocked()
}

// lagLocked voids the queue of a feed that fell behind a watch that
// goes on: the next Take catches up with the keys of the changes not
// handed out.
func (f *Feed) lagLocked() {
	f.dirty = make(map[string]struct{}, len(f.q))
	for _, it := range f.q {
		f.dirty[it.Key] = struct{}{}
	}
	f.q, f.changes, f.lagged = nil, 0, true
	f.wakeLocked()
}

// restartLocked voids the queue of a feed whose watch is being replaced,
// before the view is emptied: its reader holds the view less the keys of
// the changes it was not handed, which held records (an earlier
// restart's held stays: nothing was handed out since).
func (f *Feed) restartLocked(v *view) {
	if f.ended {
		return
	}
	if f.started && f.held == nil {
		held := make(map[string]uint64)
		f.eachLocked(v, func(e Entry) { held[e.Key] = e.Revision })
		for _, it := range f.q {
			held[it.Key] = 0
		}
		for k := range f.dirty {
			held[k] = 0
		}
		f.held = held
	}
	f.dirty = nil
	f.q, f.changes, f.lagged = nil, 0, true
	f.wakeLocked()
}

// resumedLocked queues a Resumed item: the hub's watch was replaced,
// resuming, after its connection came back. A lagged feed says it at the
// end of its catch-up, which comes from a view that missed the same
// expiries.
func (f *Feed) resumedLocked() {
	switch {
	case f.ended:
	case f.lagged:
		f.resumed = true
	default:
		f.q = append(f.q, FeedItem{Resumed: true})
		f.wakeLocked()
	}
}

func (f *Feed) endLocked() { f.endCausedLocked(nil) }

// endCausedLocked ends the feed with ErrFeedEnded, carrying cause (why
// the watch behind it could not go on) when it is not nil.
func (f *Feed) endCausedLocked(cause error) {
	f.ended, f.err, f.q = true, ErrFeedEnded, nil
	switch {
	case f.h.closed:
		f.err = ErrHubClosed
	case cause != nil:
		f.err = fmt.Errorf("%w: %w", ErrFeedEnded, cause)
	}
	f.wakeLocked()
}

func (f *Feed) wakeLocked() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Close ends the feed. It is idempotent and may be called from any
// goroutine: a reader waiting in Each (or on Ready) is woken, Each
// returns nil and Take returns ErrHubClosed. A hub that stops when idle
// (StopWhenIdle) stops its watch when its last subscriber closes, and
// Close then waits for the watch's goroutine.
func (f *Feed) Close() {
	f.once.Do(func() {
		h := f.h
		h.mu.Lock()
		f.closed.Store(true)
		delete(h.feeds, f)
		if !f.ended {
			f.ended, f.err, f.q = true, ErrHubClosed, nil
		}
		f.wakeLocked()
		stop := h.idleStopLocked()
		h.mu.Unlock()
		if stop != nil {
			stop()
		}
	})
}

// Feeds returns how many feeds the hub serves.
func (h *Hub) Feeds() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.feeds)
}

// errFiltering: Subscribe or SyncTo on a hub that serves feeds only.
var errFiltering = fmt.Errorf("kvx: a hub that filters (FilterUpTo) serves feeds only")
