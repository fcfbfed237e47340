package kvlock

import (
	"context"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// observeFeedLimit is how many changes of its election an observer's
// feed queues while its reader is slow, before the reader is caught up
// with the current state instead (kvlease.Feed).
const observeFeedLimit = 256

// Observe reports the election's leadership as it changes: first the
// current state (a leader, or a vacancy), then every new leader, every new
// value of the same leader (Proclaim), and every vacancy (resignation,
// expiry of a crashed leader's lease, force release), which etcd's Observe
// does not report; a vacancy is reported even when the next leader took
// over before the watch saw it. Consecutive equal states are reported once; a winner
// that has not yet published its value is not reported until it has.
//
// The channel is closed when ctx ends, the Locker closes, or the watch
// fails (connection closed): call Observe again to resume. Events are
// delivered in order. Observe reads the manager's one watch of the bucket
// through an ordered feed of the Locker's view, so observers cost the
// server no consumer of their own; the watch never waits for a reader:
// one that falls more than observeFeedLimit changes of its election
// behind is caught up with the current state (a new leader after a
// missed vacancy is still reported as a vacancy, then the leader).
func (e *Election) Observe(ctx context.Context) <-chan LeaderEvent {
	ch := make(chan LeaderEvent)
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(e.l.ctx, cancel)
	f, err := e.l.view.FeedKeys(wctx, []string{e.s.lease, e.value}, observeFeedLimit)
	if err != nil {
		e.l.log.Debug("kvlock: observe", "election", e.name, "err", err)
	}
	if err != nil || !e.l.goOwned(func() {
		defer close(ch)
		defer cancel()
		defer stop()
		defer f.Close()
		e.observe(wctx, f, ch)
	}) {
		stop()
		cancel()
		if err == nil {
			f.Close()
		}
		close(ch)
	}
	return ch
}

func (e *Election) observe(ctx context.Context, f *kvlease.Feed, ch chan<- LeaderEvent) {
	var lease, value kvx.Entry
	var last *LeaderEvent
	initial := true
	// The feed's end (an error) ends the observation, as ctx does.
	_ = f.Each(ctx.Done(), func(it kvlease.FeedItem) bool {
		return e.observeItem(ctx, it, &lease, &value, &initial, &last, ch)
	})
}

// observeItem applies one item of the feed and reports the state it
// leads to; false when ctx ended first.
func (e *Election) observeItem(ctx context.Context, it kvlease.FeedItem, lease, value *kvx.Entry, initial *bool, last **LeaderEvent, ch chan<- LeaderEvent) bool {
	switch {
	case it.Resync, it.Resumed:
		return true
	case it.Synced:
		*initial = false
	default:
		switch it.Key {
		case e.s.lease:
			// A new holder can only have created the key after it was
			// vacant, but with History 1 the marker of that vacancy is
			// gone from the stream once the new holder writes, so a
			// watch that was a little behind (or a caught-up feed) never
			// sees it. Report the vacancy anyway.
			if !*initial && present(*lease) && present(it.Entry) && newHolder(*lease, it.Entry) &&
				!emit(ctx, ch, LeaderEvent{Vacant: true}, last) {
				return false
			}
			*lease = it.Entry
		case e.value:
			*value = it.Entry
		}
	}
	if *initial {
		return true
	}
	var ev LeaderEvent
	if info, ok := current(*lease, *value); ok {
		ev.Info = info
	} else if !present(*lease) {
		ev.Vacant = true
	} else {
		return true // a winner that has not published yet
	}
	return emit(ctx, ch, ev, last)
}

// emit sends ev unless it equals the last event sent; false when ctx
// ended first.
func emit(ctx context.Context, ch chan<- LeaderEvent, ev LeaderEvent, last **LeaderEvent) bool {
	if *last != nil && **last == ev {
		return true
	}
	select {
	case ch <- ev:
		*last = &ev
		return true
	case <-ctx.Done():
		return false
	}
}

// newHolder reports whether two live values of a lease name different
// owners (false when either cannot be read).
func newHolder(prev, next kvx.Entry) bool {
	a, err1 := kvlease.DecodeHolder(prev.Value)
	b, err2 := kvlease.DecodeHolder(next.Value)
	if err1 != nil || err2 != nil {
		return false
	}
	return a.OwnerHash != "" && b.OwnerHash != "" && a.OwnerHash != b.OwnerHash
}
