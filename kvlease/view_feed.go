package kvlease

import (
	"context"
	"errors"
	"fmt"

	"github.com/natscoord/natscoord/internal/kvx"
)

// ViewAll returns the view of every key of the bucket, for a reader that
// shows the whole bucket (the dashboard's lease pages). Like View it does
// no I/O; it costs the memory of every live value of the bucket.
func (m *Manager) ViewAll() *View {
	m.hub.KeepView("")
	return &View{m: m}
}

// FeedItem is one item of a Feed: a change of a key (Change), or one of
// the markers Synced, Resync and Resumed (see Feed).
type FeedItem = kvx.FeedItem

// Feed is an ordered subscription to a View's keys, fed by the manager's
// one watch of the bucket: every change, in the bucket's order, starting
// with the current values and a Synced item. It is for a layer that keeps
// its own copy of its part of the bucket (the runtime's lease index, the
// dashboard) rather than waking on one key as Subscribe does.
//
// The manager's watch never waits for a feed. A feed queues at most the
// limit it was given; a reader that falls further behind (or whose watch
// restarted) is caught up instead: a Resync item, the current value of
// each key that changed since it last took it, a delete marker for each
// such key that is gone (one that came and went meanwhile may get one
// too, though the reader never took it), and Synced. It then holds each
// key's latest state, never an older one after a newer, but not every
// state between.
//
// When the connection comes back after an outage, the watch resumes after
// the last change it delivered and the feed gets a Resumed item: a lease
// that expired while the connection was away is not delivered if the
// server's expiry marker (kept a minute) went meanwhile, so a reader that
// must not miss an end reads the leases it holds live again (HolderOfKey).
type Feed struct {
	f      *kvx.Feed
	prefix string
}

// Feed starts an ordered subscription to the view's keys that match (nil:
// all of them), queueing at most limit changes. It starts the watch if it
// is not running. Close it when done.
func (v *View) Feed(ctx context.Context, match func(key string) bool, limit int) (*Feed, error) {
	f, err := v.m.hub.Feed(ctx, v.prefix, match, limit)
	if err != nil {
		return nil, v.err("feed", err)
	}
	return &Feed{f: f, prefix: v.prefix}, nil
}

// FeedKeys is Feed of the named keys of the view alone: its catch-ups
// look those keys up instead of scanning every key of the view.
func (v *View) FeedKeys(ctx context.Context, keys []string, limit int) (*Feed, error) {
	f, err := v.m.hub.FeedKeys(ctx, v.prefix, keys, limit)
	if err != nil {
		return nil, v.err("feed", err)
	}
	return &Feed{f: f, prefix: v.prefix}, nil
}

// Ready receives when Take has something to return.
func (f *Feed) Ready() <-chan struct{} { return f.f.Ready() }

// Take returns the items queued since the last Take, in order. It returns
// ErrFeedEnded once the watch ended by itself (the connection or its
// consumer went away: start another feed), ErrClosed after the manager's
// Close or the feed's own.
func (f *Feed) Take() ([]FeedItem, error) {
	items, err := f.f.Take()
	return items, f.feedErr(err)
}

// Each hands every item to fn in order until the feed's Close or stop's
// closing (nil; stop may be nil), fn returning false (nil), or the
// feed's end (Take's errors): the one loop of a feed's reader
// (kvx.Feed.Each). Close, from any goroutine, wakes a reader waiting
// in Each and ends it.
func (f *Feed) Each(stop <-chan struct{}, fn func(FeedItem) bool) error {
	return f.feedErr(f.f.Each(stop, fn))
}

// feedErr names an error of the feed's hub as Take documents it.
func (f *Feed) feedErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kvx.ErrHubClosed):
		return fmt.Errorf("%w: feed %q: %w", ErrClosed, f.prefix, err)
	}
	return fmt.Errorf("%w: feed %q", ErrFeedEnded, f.prefix)
}

// ErrFeedEnded: a Feed's watch ended by itself; start another feed.
var ErrFeedEnded = errors.New("kvlease: feed ended")

// Close ends the feed, and a reader's Each (nil). It is idempotent.
func (f *Feed) Close() { f.f.Close() }
