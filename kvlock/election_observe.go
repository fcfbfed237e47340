package kvlock

import (
	"context"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// Observe reports the election's leadership as it changes: first the
// current state (a leader, or a vacancy), then every new leader, every new
// value of the same leader (Proclaim), and every vacancy (resignation,
// expiry of a crashed leader's lease, force release), which etcd's Observe
// does not report; a vacancy is reported even when the next leader took
// over before the watch saw it. Consecutive equal states are reported once; a winner
// that has not yet published its value is not reported until it has.
//
// Observing costs no consumer of its own: it looks at the Locker's view of
// its keys, kept by the one watch of the bucket that the Locker's manager
// has, and is woken by it. Changes that follow each other faster than the
// watch delivers them may be seen as one (the newest state wins, as it
// does for a watch that lags behind a bucket keeping one revision per key).
//
// The channel is closed when ctx ends, the Locker closes, or the watch
// fails (connection closed): call Observe again to resume. Events are
// delivered in order; a slow reader delays later ones, never drops them.
func (e *Election) Observe(ctx context.Context) <-chan LeaderEvent {
	ch := make(chan LeaderEvent)
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(e.l.ctx, cancel)
	if !e.l.goOwned(func() {
		defer close(ch)
		defer cancel()
		defer stop()
		if err := e.observe(wctx, ch); err != nil && wctx.Err() == nil {
			e.l.log.Debug("kvlock: observe", "election", e.name, "err", err)
		}
	}) {
		stop()
		cancel()
		close(ch)
	}
	return ch
}

// observe feeds ch until ctx ends or the view fails. Each watch event of
// the lease or the record is a cue to look at both in the view; the
// states found are queued, so that a slow reader never holds up the look
// that follows the next event.
func (e *Election) observe(ctx context.Context, ch chan<- LeaderEvent) error {
	v := e.l.view
	var (
		lease kvx.Entry // the lease as of the last look (zero: not looked yet)
		queue []LeaderEvent
		last  *LeaderEvent // the last state queued
	)
	push := func(ev LeaderEvent) {
		if last == nil || *last != ev {
			queue = append(queue, ev)
			last = &ev
		}
	}
	look := func() {
		cur, _ := v.Lookup(e.s.lease)
		// A new holder can only have created the key after it was
		// vacant, but with History 1 the marker of that vacancy is gone
		// from the stream once the new holder writes, so a watch that was
		// a little behind never sees it. Report the vacancy anyway.
		if present(lease) && present(cur) && newHolder(lease, cur) {
			push(LeaderEvent{Vacant: true})
		}
		lease = cur
		value, _ := v.Lookup(e.value)
		if info, ok := current(cur, value); ok {
			push(LeaderEvent{Info: info})
		} else if !present(cur) {
			push(LeaderEvent{Vacant: true})
		} // else a winner that has not published yet
	}
	for {
		// Synced first, then subscribed: the sync may restart the watch,
		// which would end a subscription made before it. Subscribing
		// before the look misses no change between the two.
		if err := v.SyncTo(ctx, 0); err != nil {
			return err
		}
		sub, err := v.Subscribe(ctx, e.s.lease, e.value)
		if err != nil {
			return err
		}
		look()
		err = e.deliver(ctx, ch, sub, &queue, look)
		sub.Close()
		if err != nil {
			return err
		}
		// The watch ended (restarted, or its connection closed): the next
		// sync starts it again or fails.
	}
}

// deliver sends queued events to ch and looks again at every event of
// sub, until ctx ends (its error) or sub's channel closes (nil).
func (e *Election) deliver(ctx context.Context, ch chan<- LeaderEvent, sub *kvlease.ViewSub, queue *[]LeaderEvent, look func()) error {
	for {
		var (
			out  chan<- LeaderEvent
			next LeaderEvent
		)
		if len(*queue) > 0 {
			out, next = ch, (*queue)[0]
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case out <- next:
			*queue = (*queue)[1:]
		case _, ok := <-sub.C():
			if !ok {
				return nil
			}
			sub.Missed() // every look reads both keys anyway
			look()
		}
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
