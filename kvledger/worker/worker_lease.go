package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// workerLease returns the worker's live lease, acquiring a fresh one
// when there is none (the first claim after Start, or the last one
// ended). Every claim of the worker names it, so one lease create and
// one renewal schedule serve all of them. Its key is new on every
// acquisition (owner and a nuid), so a lease that ended never comes back
// under the same key: a record naming an ended lease stays free for
// takeover. Concurrent callers share one acquisition.
func (w *Worker) workerLease() (*kvlease.Guard, error) {
	for {
		w.mu.Lock()
		if g := w.wlease; g != nil && g.Err() == nil {
			w.mu.Unlock()
			return g, nil
		}
		if w.closed {
			w.mu.Unlock()
			return nil, ErrClosed
		}
		if ch := w.wleaseWait; ch != nil {
			w.mu.Unlock()
			<-ch // kvlease bounds the acquisition
			continue
		}
		ch := make(chan struct{})
		w.wlease, w.wleaseWait = nil, ch
		w.mu.Unlock()

		g, err := w.acquireWorkerLease()

		w.mu.Lock()
		w.wleaseWait = nil
		close(ch)
		if err == nil && w.closed {
			// Close released the lease it knew of before this one
			// landed: release this one too.
			w.mu.Unlock()
			w.releaseWorkerLease(g)
			return nil, ErrClosed
		}
		if err == nil {
			w.wlease = g
			// Known live at once: this worker's own claims are
			// never judged by a watch event still on its way.
			w.ix.seeLease(g.Key(), true, g.Revision())
		}
		w.mu.Unlock()
		return g, err
	}
}

func (w *Worker) acquireWorkerLease() (*kvlease.Guard, error) {
	key := kvledger.NewClaimLeaseKey(w.bucket, w.cfg.Owner)
	// The lease's context must outlive this call: cancelling it would
	// release the lease. kvlease bounds the acquisition itself.
	g, ok, err := w.leases.TryAcquireKeyInfo(context.WithoutCancel(w.values), key, w.cfg.ClaimTTL, w.leaseInfo())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("worker: lease key %q is taken", key) // a fresh nuid: nobody else writes it
	}
	if err := g.StartRenewing(0); err != nil {
		w.releaseWorkerLease(g)
		return nil, fmt.Errorf("worker: renewing the worker's lease: %w", err)
	}
	g.AfterEnd(func() { w.workerLeaseEnded(g) })
	return g, nil
}

// workerLeaseEnded runs once g has ended (lost, expired while the
// process was paused, released): every handler running under a claim
// that names g is cancelled with ErrClaimLost, since any other worker
// may take those claims over now; the next claim acquires a new lease.
func (w *Worker) workerLeaseEnded(g *kvlease.Guard) {
	cause := fmt.Errorf("%w: %w", ErrClaimLost, g.Err())
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wlease == g {
		w.wlease = nil
	}
	for _, r := range w.running {
		if r.g != g {
			continue
		}
		if r.cause == nil {
			r.cause = cause
		}
		if r.cancel != nil {
			r.cancel(cause)
		}
	}
}

// idleLocked arms the release of the worker's lease when no attempt is
// running: an idle worker sends nothing but its presence (keepPresence,
// once a minute), not even the claim lease's renewals. The lease
// stays for ClaimTTL, so tasks that arrive in bursts share one lease.
func (w *Worker) idleLocked() {
	if len(w.running) > 0 || w.wlease == nil || w.closed {
		return
	}
	if w.idle != nil {
		w.idle()
	}
	// Real time, as the lease's TTL on the server.
	w.idle = clock.Real().AfterFunc(w.cfg.ClaimTTL, w.releaseIdle)
}

// releaseIdle releases the worker's lease if the worker is still idle;
// the next claim acquires a new one.
func (w *Worker) releaseIdle() {
	w.mu.Lock()
	g := w.wlease
	if len(w.running) > 0 || g == nil || w.closed {
		w.mu.Unlock()
		return
	}
	w.wlease = nil
	w.idleWG.Add(1) // before Close sees closed: Close waits for it
	w.mu.Unlock()
	defer w.idleWG.Done()
	w.releaseWorkerLease(g)
}

// releaseWorkerLease deletes g, so other workers take over at once
// whatever is still claimed under it.
func (w *Worker) releaseWorkerLease(g *kvlease.Guard) {
	octx, cancel := w.opCtx()
	defer cancel()
	if err := g.Release(octx); err != nil && !errors.Is(err, kvlease.ErrLost) {
		w.cfg.Logger.Debug("worker: releasing the worker's lease", "key", g.Key(), "err", err)
	}
}

// readLeaseEnded reads lease, which the claimed record k names and the lease
// watch has not reported (it ended before the watch started, or its
// creation is still on its way), from the lease bucket's stream leader
// before k is taken over. It reports whether lease has ended; when it is
// live, the index learns so and the watch reports its end later.
func (w *Worker) readLeaseEnded(k kvledger.IdempotencyKey, lease string) bool {
	octx, cancel := w.opCtx()
	ended, h, err := kvledger.LeaseEnded(octx, w.leases, lease)
	cancel()
	if err != nil {
		w.cfg.Logger.Warn("worker: reading a claim's lease", "key", string(k), "lease", lease, "err", err)
		w.retryLater(k)
		return false
	}
	if ended {
		return true
	}
	w.stats.contended.Add(1)
	// Unless the watch reported a newer state already (its end), k waits
	// for the watch to report the end (endRun files k again).
	w.mu.Lock()
	w.ix.seeLease(lease, true, h.Revision)
	w.mu.Unlock()
	return false
}

// leaseInfo is what the worker's leases (its claim lease and its
// presence) say of it: the kinds it handles (workerInfo, sorted), as many
// as fit kvlease.MaxInfoBytes, with the number left out. Handlers are
// registered before Start, so it is the same for the worker's life.
func (w *Worker) leaseInfo() string {
	w.mu.Lock()
	kinds := slices.Sorted(maps.Keys(w.handlers))
	w.mu.Unlock()
	encode := func(n int) []byte {
		b, _ := json.Marshal(workerInfo{Kinds: kinds[:n], More: len(kinds) - n}) // strings and ints: cannot fail
		return b
	}
	// The most kinds that fit: a search over n, so a worker with
	// thousands of kinds encodes a few times, not once per kind.
	n := sort.Search(len(kinds)+1, func(n int) bool { return len(encode(n)) > kvlease.MaxInfoBytes }) - 1
	if n < 0 {
		return ""
	}
	return string(encode(n))
}

// presenceEvery is how often a worker writes its presence lease; the
// lease lives presenceTTL, so a worker that died leaves the list within
// that. The presence lease is an idle worker's one write a minute.
const (
	presenceEvery = time.Minute
	presenceTTL   = 3 * presenceEvery
)

// keepPresence holds the worker's presence lease (presenceKey) from
// Start to Close, renewed every presenceEvery: it lists the worker, with
// the kinds it handles, to LiveWorkers while it claims nothing (its claim
// lease is released ClaimTTL after its last claim ends). A presence lost
// (a partition longer than its TTL) is taken again after presenceEvery.
// Close (w.ctx) ends it and releases the lease.
func (w *Worker) keepPresence() {
	defer w.wg.Done()
	info := w.leaseInfo()
	for {
		g, ok, err := w.leases.TryAcquireKeyInfo(context.WithoutCancel(w.values), presenceKey(w.bucket, w.cfg.Owner), presenceTTL, info)
		if err == nil && ok {
			if err = g.StartRenewing(presenceEvery); err != nil {
				w.releaseWorkerLease(g)
			}
		}
		if err != nil || !ok {
			w.cfg.Logger.Debug("worker: taking the presence lease", "taken", ok, "err", err)
			g = nil
		}
		if g != nil {
			select {
			case <-w.ctx.Done():
				w.releaseWorkerLease(g)
				return
			case <-g.Done():
			}
		}
		t := clock.NewTimer(clock.Real()) // a pause before trying the server again
		t.Reset(presenceEvery)
		select {
		case <-w.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
