package kvx

import (
	"context"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/retry"
)

// A hub's watch is an ordered consumer of the server it was made on.
// When the connection comes back after a disconnect (the server
// restarted, or the network dropped), that consumer may be gone, and
// nats.go notices by missed idle heartbeats (one every 5 s, checked
// every two: 10–20 s) before it makes a new one, unless a gap in the
// sequences it receives tells it sooner: every user of the hub
// (the worker's record index, kvlease's waiters, kvlock's fair waits,
// the dashboards) would wait that long for the first change made after
// the reconnect. So each running watch listens for its connection's
// CONNECTED status (registered before the watch's request, so that a
// watch made while the connection went away is replaced too), and the
// hub makes a new watch at once and swaps it for the old one:
//
//   - resuming, when it knows the revision of the last change it
//     delivered: the new watch starts at the revision after it
//     (ResumeFromRevision: every change of the watched keys still in the
//     stream from there, in stream order, then an end-of-initial-values
//     marker, which a view that is whole already ignores). The view, the
//     feeds and the Subs go on as if nothing happened: nothing is read
//     again, missed, or delivered twice. A watch whose consumer survived
//     (a short blip) delivers until it is swapped out; the new one drops
//     the revisions its predecessor delivered meanwhile (deliver). Like
//     nats.go's own reset, it resumes at the revision, so a server that
//     lost its store delivers nothing until its stream reaches it again,
//     and a client cut off for longer than a key's TTL and its delete
//     marker's lifetime does not learn of that expiry (the marker is
//     gone from the stream; nats.go's reset misses it the same way).
//     So every feed gets a Resumed item once the new watch is in: a
//     reader that must not miss an expiry (the worker's lease index)
//     reads the keys it holds live again.
//   - When the watch being replaced ends by itself meanwhile (nats.go
//     drains an ordered consumer whose own new consumer could not be
//     made), its goroutine leaves the hub's state to the replacement
//     (hubReplace.orphaned), which ends it as run would if it cannot
//     swap.
//   - afresh, as a start would, when it does not know where to resume
//     (no change delivered since the watch started, or a view still
//     taking its initial values, which come one per key, not every
//     change): the old watch is stopped as SyncTo's restart does (Subs are
//     released and subscribe again; feeds catch up from the view once the
//     new watch has refilled it).
//
// The new watch is made before the old one is let go: a replacement that
// cannot be made (the restarted server's JetStream not answering yet) is
// tried again on replaceRetry, the old watch serving meanwhile, and once
// its tries run out the old watch stays, for nats.go's own reset to mend.
// The replaced watch is ended (endWatch: its consumer deleted, bounded)
// outside the hub's lock by the goroutine that replaced it, which Close
// stops and waits for.

// reconnects is a watch's listener for its connection coming back; its
// run removes it when the watch ends.
type reconnects struct {
	nc *nats.Conn
	ch chan nats.Status
}

func (h *Hub) listenReconnects() reconnects {
	nc := h.b.js.Conn()
	return reconnects{nc: nc, ch: nc.StatusChanged(nats.CONNECTED)}
}

func (r reconnects) remove() { r.nc.RemoveStatusListener(r.ch) }

// hubReplace is one replacement of the watch in progress.
type hubReplace struct {
	gen uint64 // the generation of the watch it replaces
	// orphaned: that watch ended by itself while this was being made,
	// and left the hub's state to it (guarded by the hub's mu).
	orphaned bool
	done     chan struct{} // closed once it ended (and the watch it replaced)
	abort    context.CancelFunc
}

// replacePlan is what a replacement makes: a watch of filter (nil: the
// patterns) with opts, resuming the old one's deliveries (resume), or
// afresh (withView and covered as for a start).
type replacePlan struct {
	filter   []string
	opts     []jetstream.WatchOpt
	resume   bool
	withView bool
	covered  int
}

// replaceRetry is a replacement's retry policy: a restarted server may
// accept connections a moment before its JetStream answers. Its ceiling
// (ten tries over some 11 s of pauses) reaches into nats.go's own
// heartbeat-based reset, which mends a watch whose replacement could not
// be made.
var replaceRetry = retry.Policy{Tries: 10, Pause: 100 * time.Millisecond, MaxPause: 2 * time.Second}

// reconnected is run's report that the connection of the watch of
// generation gen came back: unless that watch was replaced or stopped
// since, or is being replaced, it starts its replacement.
func (h *Hub) reconnected(gen uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.gen != gen || !h.running || h.replacingLocked(gen) != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	rp := &hubReplace{gen: gen, done: make(chan struct{}), abort: cancel}
	if h.replacing == nil {
		h.replacing = make(map[*hubReplace]struct{})
	}
	h.replacing[rp] = struct{}{}
	p := replacePlan{filter: h.filter}
	if h.last != math.MaxUint64 && (!h.viewWatch || h.view.ready) {
		p.resume, p.opts = true, []jetstream.WatchOpt{jetstream.ResumeFromRevision(h.last + 1)}
	} else {
		p.withView, p.covered, p.opts = h.watchOptsLocked()
	}
	go h.replace(ctx, rp, p)
}

// replace makes the new watch and swaps it for the hub's watch, unless
// that was stopped or replaced meanwhile, or the hub closed (ctx ends).
func (h *Hub) replace(ctx context.Context, rp *hubReplace, p replacePlan) {
	defer h.replaced(rp)
	defer rp.abort()
	d := OpTimeoutOf(h.b.js)
	l := replaceRetry.Start(ctx)
	for l.Next() {
		// The watch's context is its lifetime: the op timeout ends
		// only its request. Close (ctx) lets a request in flight finish,
		// so that a consumer it made is deleted (discardWatch), not left
		// for the server to remove once it finds no subscriber.
		wctx, wcancel := context.WithCancel(context.Background())
		t := time.AfterFunc(d, wcancel)
		rc := h.listenReconnects()
		w, err := h.watchOpen(wctx, p.filter, p.opts...)
		overran := !t.Stop()
		aborted := ctx.Err() != nil
		h.mu.Lock()
		current := !h.closed && h.gen == rp.gen && h.running
		if current && err == nil && !overran && !aborted {
			stop := h.swapLocked(w, wcancel, rc, p)
			h.mu.Unlock()
			stop()
			return
		}
		h.mu.Unlock()
		rc.remove()
		if err == nil {
			discardWatch(w, wcancel, d)
		}
		wcancel()
		if !current || aborted {
			return
		}
	}
}

// swapLocked makes w the hub's watch in place of the running one, and
// returns the end of the old one, to run after unlocking.
func (h *Hub) swapLocked(w jetstream.KeyWatcher, cancel context.CancelFunc, rc reconnects, p replacePlan) (stop func()) {
	if !p.resume {
		stop = h.stopLocked()
		h.installLocked(w, cancel, p.filter, p.withView, p.covered, rc)
		return stop
	}
	old, oldCancel, oldDone := h.w, h.cancel, h.done
	h.w, h.cancel, h.done = w, cancel, make(chan struct{})
	h.gen++ // the old watch's goroutine drains
	go h.run(w, h.done, cancel, h.gen, rc, true)
	for f := range h.feeds {
		f.resumedLocked()
	}
	d := OpTimeoutOf(h.b.js)
	return func() { _ = endWatch(old, oldCancel, oldDone, d) }
}

// replaced forgets a replacement that has ended. If it could not swap
// and the watch it was to replace has ended by itself meanwhile (run left
// the hub's state to it), it ends that state as run would have.
func (h *Hub) replaced(rp *hubReplace) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.replacing, rp)
	if rp.orphaned && !h.closed && h.gen == rp.gen && h.running {
		h.endRunLocked()
	}
	close(rp.done)
}

// replacingLocked returns the replacement of the watch of generation gen
// being made, nil when none is.
func (h *Hub) replacingLocked(gen uint64) *hubReplace {
	for rp := range h.replacing {
		if rp.gen == gen {
			return rp
		}
	}
	return nil
}

// discardWatch ends a watch the hub did not take: its updates are
// drained until nats.go closes them, so that its delivery is not left
// blocked on a full channel.
func discardWatch(w jetstream.KeyWatcher, cancel context.CancelFunc, d time.Duration) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range w.Updates() { //nolint:revive // drained
		}
	}()
	_ = endWatch(w, cancel, done, d)
}
