package kvx

import (
	"context"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A hub's watch is an ordered consumer of the server it was made on.
// When the connection comes back after a disconnect (the server
// restarted, or the network dropped), that consumer may be gone, and
// nats.go notices only by missed idle heartbeats (one every 5 s, checked
// every two: 10–20 s) before it makes a new one: every user of the hub
// (the worker's record index, kvlease's waiters, kvlock's fair waits,
// the dashboards) would wait that long for the first change made after
// the reconnect. So each running watch listens for its connection's
// CONNECTED status (registered before the watch's request, so that a
// watch made while the connection went away is replaced too), and the
// hub replaces the watch at once:
//
//   - resuming, when it knows the revision of the last change it
//     delivered: the new watch starts at the revision after it
//     (ResumeFromRevision: every change of the watched keys from there,
//     in stream order, then an end-of-initial-values marker, which a view
//     that is whole already ignores). The view, the feeds and the Subs go
//     on as if nothing happened: nothing is read again, missed, or
//     delivered twice. A watch whose consumer survived (a short blip)
//     delivers until it is replaced; the new one drops the revisions its
//     predecessor delivered meanwhile (run). Like nats.go's own reset, it
//     resumes at the revision, so a server that lost its store delivers
//     nothing until its stream reaches it again.
//   - restarting (stopLocked and a start, as SyncTo's restart does) when
//     it does not: no change delivered since the watch started, or a view
//     still taking its initial values (those come one per key, not every
//     change), or a resume that could not be made. Subs are released and
//     subscribe again; feeds catch up from the view once it has refilled.
//
// The replaced watch is ended (endWatch: its consumer deleted, bounded)
// outside the hub's lock by the goroutine that replaced it, which Close
// waits for.

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
	done chan struct{} // closed once the replaced watch has been ended
	// abort cancels the replacement's request; nil once its watch is
	// the hub's (its context is then the watch's lifetime).
	abort context.CancelFunc
}

// reconnected is run's report that the connection of the watch of
// generation gen came back: unless the watch was replaced or stopped
// since, or is being replaced, it starts the replacement.
func (h *Hub) reconnected(gen uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.gen != gen || !h.running || h.replacingGen == gen {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	rp := &hubReplace{done: make(chan struct{}), abort: cancel}
	if h.replacing == nil {
		h.replacing = make(map[*hubReplace]struct{})
	}
	h.replacing[rp] = struct{}{}
	h.replacingGen = gen
	resume := h.last != math.MaxUint64 && !(h.viewWatch && !h.view.ready)
	go h.replace(rp, ctx, cancel, gen, resume, h.last+1, h.filter)
}

// replace replaces the watch of generation gen: by one that resumes at
// revision from, or else by a restart.
func (h *Hub) replace(rp *hubReplace, ctx context.Context, cancel context.CancelFunc, gen uint64, resume bool, from uint64, filter []string) {
	defer h.replaced(rp)
	d := OpTimeoutOf(h.b.js)
	var (
		w       jetstream.KeyWatcher
		err     error
		overran bool
		rc      reconnects
	)
	if resume {
		t := time.AfterFunc(d, cancel)
		rc = h.listenReconnects()
		w, err = h.watchOpen(ctx, filter, jetstream.ResumeFromRevision(from))
		overran = !t.Stop()
	}
	h.mu.Lock()
	current := !h.closed && h.gen == gen && h.running
	if current && resume && err == nil && !overran {
		old, oldCancel, oldDone := h.w, h.cancel, h.done
		h.w, h.cancel, h.done = w, cancel, make(chan struct{})
		rp.abort = nil
		h.gen++
		go h.run(w, h.done, cancel, h.gen, rc, true)
		h.mu.Unlock()
		_ = endWatch(old, oldCancel, oldDone, d)
		return
	}
	var stop func()
	if current && h.starting == nil {
		stop = h.stopLocked()
		h.beginStartLocked(filter) // the feeds wait for it; an idle hub drops it
	}
	rp.abort = nil
	h.mu.Unlock()
	if resume {
		rc.remove()
		if err == nil {
			discardWatch(w, cancel, d)
		}
	}
	cancel()
	if stop != nil {
		stop()
	}
}

// replaced forgets a replacement that has ended.
func (h *Hub) replaced(rp *hubReplace) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.replacing, rp)
	close(rp.done)
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
