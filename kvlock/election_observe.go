package kvlock

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

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
// The channel is closed when ctx ends, the Locker closes, or the watch
// fails (connection closed): call Observe again to resume. Events are
// delivered in order; a slow reader delays later ones, never drops them.
func (e *Election) Observe(ctx context.Context) <-chan LeaderEvent {
	ch := make(chan LeaderEvent)
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(e.l.ctx, cancel)
	w, err := e.l.b.KV().WatchFiltered(wctx, []string{e.s.lease, e.value})
	if err != nil {
		e.l.log.Debug("kvlock: observe", "election", e.name, "err", err)
	}
	if err != nil || !e.l.goOwned(func() {
		defer close(ch)
		defer cancel()
		defer stop()
		defer func() { _ = w.Stop() }()
		e.observe(wctx, w.Updates(), ch)
	}) {
		stop()
		cancel()
		if err == nil {
			_ = w.Stop()
		}
		close(ch)
	}
	return ch
}

func (e *Election) observe(ctx context.Context, updates <-chan jetstream.KeyValueEntry, ch chan<- LeaderEvent) {
	var lease, value kvx.Entry
	var last *LeaderEvent
	initial := true
	for {
		var u jetstream.KeyValueEntry
		select {
		case <-ctx.Done():
			return
		case x, ok := <-updates:
			if !ok {
				return
			}
			u = x
		}
		if u == nil {
			initial = false
		} else {
			ent := kvx.FromWatch(u)
			switch ent.Key {
			case e.s.lease:
				// A new holder can only have created the key after it was
				// vacant, but with History 1 the marker of that vacancy is
				// gone from the stream once the new holder writes, so a
				// watch that was a little behind never sees it. Report the
				// vacancy anyway.
				if !initial && present(lease) && present(ent) && newHolder(lease, ent) &&
					!emit(ctx, ch, LeaderEvent{Vacant: true}, &last) {
					return
				}
				lease = ent
			case e.value:
				value = ent
			}
		}
		if initial {
			continue
		}
		var ev LeaderEvent
		if info, ok := current(lease, value); ok {
			ev.Info = info
		} else if !present(lease) {
			ev.Vacant = true
		} else {
			continue // a winner that has not published yet
		}
		if !emit(ctx, ch, ev, &last) {
			return
		}
	}
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
