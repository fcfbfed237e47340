package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/natscoord/natscoord/internal/heapx"
	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// A group limit (Config.GroupLimits) is a counting semaphore in the lease
// bucket, the way kvlease's semaphores are: slot i of group g is the
// ordinary lease "<prefix>g.<token of g>.<i>", so each holder has its own
// fence, renewal on the lease manager's one scheduler, and expiry by the
// server when its worker dies. The slot keys live under the ledger's
// lease prefix rather than in a kvlease.SemaphoreDeclaration's family:
// the worker's lease watch (watch.go) already delivers every key under
// that prefix, so it learns by push which slots are held and when one
// frees up, with no watch or re-check timer per waiting task, and a
// family binds one slot count per name, where each group has its own.
// Per-record lease tokens contain no dot (kvx.EncodeToken escapes it),
// so "g." keys never meet them, as "w." keys (kvledger.ClaimLeaseInfix)
// do not.
const groupInfix = "g."

// group is what a worker knows of one limited group, guarded by
// Worker.mu. Whether a slot is held is the lease watch's view (index
// leases, by slot key), plus the slots this worker is acquiring now.
type group struct {
	name string
	keys []string // slot i's lease key
	// taking counts this worker's attempts acquiring a slot now: they
	// hold one the watch has not reported yet.
	taking int
	// gen counts the changes of the group's slot keys the watch
	// reported. A try that found every slot held sets stale = gen: the
	// group counts as full until the next change, however stale the
	// watch's view was (the holder's write is on its way).
	gen, stale uint64
	// parked holds the ready tasks that found the group full, highest
	// priority first, then first ready first, whatever their kind. They
	// stay queued (index.queued) and go back to their ready queue,
	// keeping their place, when a slot frees up; one that finds the
	// group full again (another worker took the slot) is parked again
	// in the same place.
	parked *heapx.Heap[parkedItem]
	// err is set when the lease manager refuses the group's slot keys
	// (a caller's manager with a MaxKeyBytes below them): the group's
	// tasks then wait, and Stats.Ready shows them, rather than trying
	// again in a loop.
	err error
}

type parkedItem struct {
	kind string
	it   readyItem
}

// newGroups returns the groups of limits, or ErrInvalidConfig when a
// slot key is longer than kvlease.DefaultMaxKeyBytes (a long group on a
// ledger with a long bucket name).
func newGroups(prefix string, limits map[string]int) (map[string]*group, error) {
	gs := make(map[string]*group, len(limits))
	for name, n := range limits {
		g := &group{name: name, keys: make([]string, n), stale: ^uint64(0),
			parked: heapx.New(func(a, b parkedItem) bool { return readyBefore(a.it, b.it) }, nil)}
		for i := range g.keys {
			g.keys[i] = prefix + groupInfix + kvx.EncodeToken(name) + "." + strconv.Itoa(i)
		}
		if k := g.keys[n-1]; len(k) > kvlease.DefaultMaxKeyBytes {
			return nil, fmt.Errorf("%w: GroupLimits: group %q: its slot keys (%d bytes) exceed kvlease.DefaultMaxKeyBytes %d",
				ErrInvalidConfig, name, len(k), kvlease.DefaultMaxKeyBytes)
		}
		gs[name] = g
	}
	return gs, nil
}

// freeSlots returns the keys of g's slots the watch last saw free.
func (ix *index) freeSlots(g *group) []string {
	var free []string
	for _, k := range g.keys {
		if !ix.leases[k].live {
			free = append(free, k)
		}
	}
	return free
}

// room says how many more of g's tasks this worker may start now.
func (ix *index) room(g *group) int {
	if g.stale == g.gen || g.err != nil {
		return 0
	}
	free := 0
	for _, k := range g.keys {
		if !ix.leases[k].live {
			free++
		}
	}
	return free - g.taking
}

// unparkLocked puts back in their ready queues as many parked tasks of
// each group as it has room for, and reports whether it moved any. A task
// that is no longer ready is dropped when taken again, and the next round
// moves another one.
func (w *Worker) unparkLocked() bool {
	moved := false
	for _, g := range w.ix.groups {
		if g.parked.Len() == 0 {
			continue
		}
		for n := min(w.ix.room(g), g.parked.Len()); n > 0; n-- {
			p := g.parked.Pop()
			w.ix.requeue(p.kind, p.it)
			moved = true
		}
	}
	return moved
}

// onSlot applies one change of a group's slot key from the lease watch;
// rest is the key after the "g." infix. A slot that frees up (or any
// change after a try found the group full) wakes the dispatcher to start
// a parked task.
func (w *Worker) onSlot(key, rest string, live bool, rev uint64) {
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return
	}
	name, err := kvx.DecodeToken(rest[:i])
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	g := w.ix.groups[name]
	if g == nil || !w.ix.seeLease(key, live, rev) {
		return
	}
	wasStale := g.stale == g.gen
	g.gen++
	if g.parked.Len() > 0 && (!live || wasStale) {
		w.poke()
	}
}

// takeSlot acquires a free slot of r's group for r's attempt, before its
// claim; the lease renews on the manager's scheduler until releaseSlot.
// It returns false when every slot is held (the task is filed again and
// waits, parked, for a slot to free up: no attempt is counted) or on an
// error (the task is looked at again later).
func (w *Worker) takeSlot(r *run) (*kvlease.Guard, bool) {
	g := r.grp
	w.mu.Lock()
	free, gen, closed := w.ix.freeSlots(g), g.gen, w.closed
	w.mu.Unlock()
	untake := func() {
		w.mu.Lock()
		g.taking--
		w.mu.Unlock()
	}
	if closed {
		untake()
		return nil, false
	}
	rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	for _, key := range free {
		// The slot's context must outlive this call: cancelling it
		// would release the slot. kvlease bounds the acquisition.
		sg, ok, err := w.leases.TryAcquireKey(context.WithoutCancel(w.values), key, w.cfg.ClaimTTL)
		if errors.Is(err, kvlease.ErrInvalidKey) {
			w.cfg.Logger.Error("worker: the lease manager refuses a group's slot keys; its tasks wait", "group", g.name, "err", err)
			w.mu.Lock()
			g.taking--
			g.err = err
			w.mu.Unlock()
			return nil, false
		}
		if err != nil {
			untake()
			if !errors.Is(err, kvlease.ErrClosed) {
				w.cfg.Logger.Warn("worker: acquiring a group slot", "key", string(r.key), "group", g.name, "err", err)
				w.retryLater(r.key)
			}
			return nil, false
		}
		if !ok {
			continue // taken since the watch last reported it
		}
		if err := sg.StartRenewing(0); err != nil {
			untake()
			w.releaseSlot(g, sg)
			w.cfg.Logger.Warn("worker: renewing a group slot", "key", string(r.key), "group", g.name, "err", err)
			w.retryLater(r.key)
			return nil, false
		}
		w.mu.Lock()
		g.taking--
		w.ix.seeLease(key, true, sg.Revision())
		w.mu.Unlock()
		return sg, true
	}
	w.mu.Lock()
	g.taking--
	if g.gen == gen {
		g.stale = gen
	}
	w.mu.Unlock()
	w.stats.groupFull.Add(1)
	return nil, false
}

// releaseSlot gives sg back once r's handler returned and its outcome
// was recorded (or its claim failed). The worker's view marks the slot
// free at once, so its own parked tasks do not wait for the watch to
// report the delete.
func (w *Worker) releaseSlot(g *group, sg *kvlease.Guard) {
	if err := sg.Err(); err != nil && !errors.Is(err, kvlease.ErrReleased) {
		// Renewals failed for a whole TTL: the worker was cut off from
		// the server, which also ended its worker lease (same TTL, same
		// scheduler) and so cancelled the handler. Meanwhile another
		// worker may have taken the slot.
		w.cfg.Logger.Warn("worker: a group slot was lost while its task ran", "group", g.name, "slot", sg.Key(), "err", err)
	}
	octx, cancel := w.opCtx()
	err := sg.Release(octx)
	cancel()
	if err != nil {
		if !errors.Is(err, kvlease.ErrLost) {
			w.cfg.Logger.Debug("worker: releasing a group slot", "group", g.name, "slot", sg.Key(), "err", err)
		}
		return // the watch reports the slot's end (or its expiry)
	}
	w.mu.Lock()
	// Every write of this holder is at or below its revision; the next
	// write of the key (the delete, or a later holder) is above it.
	w.ix.seeLease(sg.Key(), false, sg.Revision()+1)
	g.gen++
	w.mu.Unlock()
	w.poke()
}
