package kvx

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
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
// current value of each matched key whose revision differs from the one
// the feed last handed out, a delete marker (OpDelete, at the view's
// revision) for each key it handed out live that is gone, and a Synced
// item. Nothing is lost, only coalesced: the reader sees each key's latest
// state, never an older one after a newer, but not every state between.
type Feed struct {
	h      *Hub
	prefix string // a kept view prefix ("" for every key)
	match  func(key string) bool
	max    int

	// Guarded by the hub's mutex.
	q       []FeedItem
	changes int  // changes in q (markers and catch-ups not counted)
	lagged  bool // q is void: the next Take catches up from the view
	started bool // a snapshot has been handed out (a catch-up says Resync)
	ended   bool
	err     error
	// known is the revision of every key the feed handed out live: what
	// its reader holds, against which a catch-up is computed.
	known map[string]uint64

	wake chan struct{} // one token: something to Take
	once sync.Once
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
}

// ErrFeedEnded is returned by Take when the hub's watch ended by itself
// (connection closed, consumer lost) or the hub was closed.
var ErrFeedEnded = fmt.Errorf("kvx: feed ended")

// Feed starts an ordered subscription to the keys under prefix (one the
// hub keeps a view of: KeepView) that match (nil: all of them), each
// queueing at most limit changes (at least 1). It starts the watch if it is
// not running; the first Take returns the current values once the view
// holds them.
func (h *Hub) Feed(ctx context.Context, prefix string, match func(string) bool, limit int) (*Feed, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if h.closed {
			return nil, ErrHubClosed
		}
		if h.view == nil || !slices.Contains(h.view.prefixes, viewPrefix(prefix)) {
			return nil, fmt.Errorf("kvx: feed of %q: %w", prefix, errNoView)
		}
		if !h.running || h.viewCoveredLocked() {
			break
		}
		// Watching without the view's current values: restart.
		stop := h.stopLocked()
		h.mu.Unlock()
		stop()
		h.mu.Lock()
	}
	if !h.running {
		if err := h.startLocked(ctx); err != nil {
			return nil, err
		}
	}
	f := &Feed{h: h, prefix: viewPrefix(prefix), match: match, max: max(limit, 1), lagged: true,
		known: make(map[string]uint64), wake: make(chan struct{}, 1)}
	h.feeds[f] = struct{}{}
	f.wakeLocked()
	return f, nil
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

// Ready receives when Take has something to return (items, or the end).
func (f *Feed) Ready() <-chan struct{} { return f.wake }

// Take returns the items queued since the last Take, in order; a lagged
// feed returns its catch-up once the view is whole (until then, nothing).
// After the watch ended it returns ErrFeedEnded, after Close ErrHubClosed.
func (f *Feed) Take() ([]FeedItem, error) {
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
	f.q, f.changes = nil, 0
	for _, it := range out {
		switch {
		case it.Synced || it.Resync:
		case it.Live():
			f.known[it.Key] = it.Revision
		default:
			delete(f.known, it.Key)
		}
	}
	return out, nil
}

// catchUpLocked queues the difference between what the feed handed out
// and the view.
func (f *Feed) catchUpLocked() {
	v := f.h.view
	var q []FeedItem
	if f.started {
		q = append(q, FeedItem{Resync: true})
	}
	var cur []FeedItem
	present := make(map[string]bool, len(f.known))
	for _, m := range v.live {
		for k, e := range m {
			if !f.matches(k) {
				continue
			}
			present[k] = true
			if rev, ok := f.known[k]; ok && rev == e.Revision {
				continue
			}
			cur = append(cur, FeedItem{Entry: e})
		}
	}
	for k := range f.known {
		if !present[k] {
			cur = append(cur, FeedItem{Entry: Entry{Key: k, Revision: v.applied, Op: OpDelete}})
		}
	}
	slices.SortFunc(cur, func(a, b FeedItem) int { return compareRev(a.Revision, b.Revision) })
	q = append(q, cur...)
	f.q = append(q, FeedItem{Synced: true})
	f.changes, f.lagged, f.started = 0, false, true
}

func compareRev(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pushLocked queues one change the view applied.
func (f *Feed) pushLocked(e Entry) {
	if f.lagged || f.ended || !f.matches(e.Key) {
		return // a lagged feed catches up from the view
	}
	if f.changes >= f.max {
		f.lagLocked()
		return
	}
	f.q = append(f.q, FeedItem{Entry: e})
	f.changes++
	f.wakeLocked()
}

// lagLocked voids the queue: the next Take catches up from the view.
func (f *Feed) lagLocked() {
	f.q, f.changes, f.lagged = nil, 0, true
	f.wakeLocked()
}

func (f *Feed) endLocked() {
	f.ended, f.err, f.q = true, ErrFeedEnded, nil
	if f.h.closed {
		f.err = ErrHubClosed
	}
	f.wakeLocked()
}

func (f *Feed) wakeLocked() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Close ends the feed. It is idempotent; a hub that stops when idle
// (StopWhenIdle) stops its watch when its last subscriber closes, and
// Close then waits for the watch's goroutine.
func (f *Feed) Close() {
	f.once.Do(func() {
		h := f.h
		h.mu.Lock()
		delete(h.feeds, f)
		if !f.ended {
			f.ended, f.err = true, ErrHubClosed
		}
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
