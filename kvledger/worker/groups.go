package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

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

// group is what a worker knows of one limited group, or of one rate
// limit (the same bookkeeping over tokens), guarded by Worker.mu. Whether a slot is held is the lease watch's view (index
// leases, by slot key), plus the slots this worker is acquiring now.
type group struct {
	name string
	keys []string // slot i's lease key
	// period is a rate limit's (ratelimit.go): its keys are tokens,
	// taken for period and never released. 0 for a group's slots.
	period time.Duration
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
		g, err := newLimit(name, prefix+groupInfix+kvx.EncodeToken(name)+".", n, 0, fmt.Sprintf("GroupLimits: group %q", name))
		if err != nil {
			return nil, err
		}
		gs[name] = g
	}
	return gs, nil
}

// newLimit returns a limit of n keys, base followed by 0..n-1: a group's
// slots (period 0) or a rate limit's tokens. what names it in an error.
func newLimit(name, base string, n int, period time.Duration, what string) (*group, error) {
	g := &group{name: name, keys: make([]string, n), period: period, stale: ^uint64(0),
		parked: heapx.New(func(a, b parkedItem) bool { return readyBefore(a.it, b.it) }, nil)}
	for i := range g.keys {
		g.keys[i] = base + strconv.Itoa(i)
	}
	if k := g.keys[n-1]; len(k) > kvlease.DefaultMaxKeyBytes {
		return nil, fmt.Errorf("%w: %s: its keys (%d bytes) exceed kvlease.DefaultMaxKeyBytes %d",
			ErrInvalidConfig, what, len(k), kvlease.DefaultMaxKeyBytes)
	}
	return g, nil
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
	unpark := func(g *group) {
		for n := min(w.ix.room(g), g.parked.Len()); n > 0; n-- {
			p := g.parked.Pop()
			w.ix.requeue(p.kind, p.it)
			moved = true
		}
	}
	for _, g := range w.ix.groups {
		unpark(g)
	}
	for _, g := range w.ix.rates {
		unpark(g)
	}
	return moved
}

// onSlot applies one change of a group's slot key from the lease watch;
// rest is the key after the "g." infix.
func (w *Worker) onSlot(key, rest string, live bool, rev uint64) {
	name, ok := limitName(rest)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.limitKeyLocked(w.ix.groups[name], key, live, rev)
}

// limitName reads the name of a limit from the rest of its key,
// "<token of the name>.<i>".
func limitName(rest string) (string, bool) {
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return "", false
	}
	name, err := kvx.DecodeToken(rest[:i])
	return name, err == nil
}

// limitKeyLocked applies one change of a key of g (a slot or a token;
// nil: not a limit this worker states). A key that frees up (or any
// change after a try found g full) wakes the dispatcher to start a
// parked task.
func (w *Worker) limitKeyLocked(g *group, key string, live bool, rev uint64) {
	if g == nil || !w.ix.seeLease(key, live, rev) {
		return
	}
	wasStale := g.stale == g.gen
	g.gen++
	if g.parked.Len() > 0 && (!live || wasStale) {
		w.poke()
	}
}

// fullLimitLocked returns the limit that keeps the ready task it, of
// kind, from starting now: its group's (Config.GroupLimits) or a rate
// limit over it with no room; nil when none does.
func (w *Worker) fullLimitLocked(kind string, it readyItem) *group {
	e := w.ix.recs[it.key]
	if e == nil || w.running[it.key] != nil {
		return nil
	}
	if e.group != "" {
		if g := w.ix.groups[e.group]; g != nil && w.ix.room(g) <= 0 {
			return g
		}
	}
	for _, g := range w.ix.ratesOf(kind, e.group) {
		if g != nil && w.ix.room(g) <= 0 {
			return g
		}
	}
	return nil
}

// take acquires a free key of g for r's attempt, before its claim: a
// group's slot, whose lease renews on the manager's scheduler until
// releaseSlot, or a rate limit's token, left to the server to expire
// after g.period (its guard is abandoned: nil). It returns false when
// every key is held (the task is filed again and waits, parked, for one
// to free up: no attempt is counted) or on an error (the task is looked
// at again later).
func (w *Worker) take(r *run, g *group) (*kvlease.Guard, bool) {
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
	ttl := cmp.Or(g.period, w.cfg.ClaimTTL)
	rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	for _, key := range free {
		// The slot's context must outlive this call: cancelling it
		// would release the slot. kvlease bounds the acquisition.
		sg, ok, err := w.leases.TryAcquireKey(context.WithoutCancel(w.values), key, ttl)
		if errors.Is(err, kvlease.ErrInvalidKey) {
			w.cfg.Logger.Error("worker: the lease manager refuses a limit's keys; its tasks wait", "limit", g.name, "err", err)
			w.mu.Lock()
			g.taking--
			g.err = err
			w.mu.Unlock()
			return nil, false
		}
		if err != nil {
			untake()
			if !errors.Is(err, kvlease.ErrClosed) {
				w.cfg.Logger.Warn("worker: acquiring a limit's key", "key", string(r.key), "limit", g.name, "err", err)
				w.retryLater(r.key)
			}
			return nil, false
		}
		if !ok {
			continue // taken since the watch last reported it
		}
		if g.period > 0 {
			// A token: spent, never released; the server expires it.
			_ = sg.Abandon()
		} else if err := sg.StartRenewing(0); err != nil {
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
		if g.period > 0 {
			return nil, true
		}
		return sg, true
	}
	w.mu.Lock()
	g.taking--
	if g.gen == gen {
		g.stale = gen
	}
	w.mu.Unlock()
	if g.period == 0 {
		w.stats.groupFull.Add(1)
	}
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
