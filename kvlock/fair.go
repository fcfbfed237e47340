package kvlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// Fair waiting.
//
// A waiter that finds someone queued (or the lock held) draws a ticket:
// an empty, one-second-TTL message published to the lock's ticket key
// ("<queue>.t"), whose revision is unique and increases in arrival order
// (the stream is the sequencer, as etcd's revision is). The publish is
// unconditional on purpose: only the revision matters, and a
// compare-and-set would make concurrent arrivals fail and retry.
//
// It then creates its queue entry "<queue>.<ticket>" as a kvlease lease
// (create-if-absent with the lock's TTL, renewed by kvlease's scheduler),
// so a crashed waiter leaves the queue by the server's expiry. The ticket
// is in the key because a NATS KV revision changes on every renewal:
// unlike etcd's create revision it cannot order entries that renew.
//
// Looking costs no consumer and no wildcard read: the Locker's view
// (kvlease.Manager.View) keeps its live keys (locks, queue entries,
// tickets) in memory from the manager's own watch of the bucket, applied
// in stream order without gaps.
// Two facts make the view complete enough without asking the server:
//
//   - Is anyone queued? The newest ticket's revision R is read from the
//     ticket key (one key, so its cost does not grow with the queue's
//     history), and the view is waited for until it has applied R. Every
//     waiter draws its ticket before it creates its entry, so the view then
//     holds the entry of every ticket below R whose owner created it; the
//     newest ticket's entry may still be on its way, so a live ticket
//     without its entry in the view counts as queued too.
//   - Who is before me? A waiter's first look waits until the view has
//     applied its own entry's revision: every entry created before it is
//     then in the view.
//
// An entry created after the look began is not waited for even if its
// ticket is lower (two concurrent arrivals): both may then take themselves
// for first in line, and kvlease's compare-and-set on the lock decides
// between them, so mutual exclusion never depends on the queue.
//
// A release hands the lock to the longest waiter in the releaser's view
// (releaseLease): one compare-and-set writes that waiter's entry value
// into the lock, and the waiter, seeing its own value there, adopts the
// lock without writing (waitTurn). With nobody in the view the release is
// a plain delete and the first in line takes the lock with one publish.
// The new holder deletes its entry while it holds the lock and its release
// waits for that delete. Meanwhile the holder's entry, and every entry
// before it, counts as served: the next in line, which watches its
// predecessor's entry and the lock, is first in line as soon as its
// predecessor holds the lock. Other waiters are woken only by their
// predecessor's entry, so a release wakes one waiter. Renewals reach
// watchers as events but cost no I/O. If a waiter's own entry vanishes
// (force-released, or not renewed in time) and the lock was not handed to
// it, it stops with ErrQueueEntryLost.

// ticket draws a queue ticket for s (kvlease.Manager.Ticket: the bucket
// is the sequencer).
func (l *Locker) ticket(ctx context.Context, s spec) (uint64, error) {
	var t uint64
	err := l.retry(ctx, notSent, func() error {
		var err error
		t, err = l.m.Ticket(ctx, s.ticket)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("kvlock: queue ticket for %q: %w", s.key, mapErr(err))
	}
	return t, nil
}

// queued reports whether anyone is in s's queue, or is joining it. It
// reads one key, the queue's ticket key, and waits until the Locker's
// view has applied that revision: every waiter draws its ticket before it
// creates its entry, so the view then holds every entry whose ticket was
// drawn before the look, except one still being created, which only the
// newest ticket can belong to unless arrivals were concurrent. A ticket
// drawn within its one-second TTL whose entry the view does not hold
// therefore counts as queued (it may also have been served already: the
// caller then queues behind nobody, which costs a ticket and an entry, not
// fairness).
func (l *Locker) queued(ctx context.Context, s spec) (bool, error) {
	// A live entry already in the view settles it without a read: someone
	// is queued (or was served a moment ago and is leaving, which costs
	// this caller a ticket and an entry, not fairness).
	if l.view.Ready() {
		if queued, err := l.inQueue(s); err == nil && queued {
			return true, nil
		}
	}
	var (
		last uint64
		live bool
	)
	err := l.retry(ctx, notSent, func() error {
		var err error
		last, live, err = l.m.LastTicket(ctx, s.ticket)
		return err
	})
	if err != nil {
		return false, l.viewErr(ctx, s, err)
	}
	if err := l.syncView(ctx, last); err != nil {
		return false, l.viewErr(ctx, s, err)
	}
	queued, err := l.inQueue(s)
	if err != nil {
		return false, l.viewErr(ctx, s, err)
	}
	if !queued && live {
		ok, err := l.view.Live(s.entryKey(last))
		if err != nil {
			return false, l.viewErr(ctx, s, err)
		}
		queued = !ok
	}
	return queued, nil
}

// inQueue reports whether the view holds a queue entry of s (Children
// yields live entries only). It stops at the first one.
func (l *Locker) inQueue(s spec) (bool, error) {
	queued := false
	err := l.view.Children(s.queue, func(e kvlease.Change) bool {
		_, queued = s.ticketOf(e.Key)
		return !queued
	})
	return queued, err
}

// tryFair is TryAcquire in fair mode: it does not take the lock while
// anyone is queued for it.
func (l *Locker) tryFair(ctx context.Context, s spec) (*Lock, error) {
	queued, err := l.queued(ctx, s)
	if err != nil || queued {
		return nil, err
	}
	g, err := l.acquireLease(ctx, s.lease, false)
	if g == nil {
		return nil, err
	}
	return l.newLock(s, g, true), nil
}

// syncView syncs the queue's view to rev, each try bounded by OpTimeout
// and tried again on the Retry policy, within ctx, when it timed out. A
// sync's first try starts the manager's watch: on a loaded replicated
// bucket creating its consumer can take longer than one try's bound,
// which is transient, not a failure of the acquisition
// (TestClusterR3CASPaths met it once in 90 runs at load 9). A sync only
// reads, so trying again cannot change the bucket; a try whose bound
// ends leaves the start going on (the hub starts its watch in a
// goroutine of its own, bounded by the JetStream handle's timeout), and
// the next try waits for that same start. The breaker neither gates nor
// counts the tries (retryRead): they are reads, steps of an acquisition
// it has already let through.
func (l *Locker) syncView(ctx context.Context, rev uint64) error {
	return l.retryRead(ctx, transientAcquire, func() error {
		octx, cancel := l.opt.Bound(ctx)
		defer cancel()
		return l.view.SyncTo(octx, rev)
	})
}

func (l *Locker) viewErr(ctx context.Context, s spec, err error) error {
	switch {
	case errors.Is(err, kvlease.ErrClosed):
		return ErrClosed
	case err != nil && ctx.Err() != nil:
		return context.Cause(ctx)
	case err != nil:
		return fmt.Errorf("kvlock: queue of %q: %w", s.key, err)
	}
	return nil
}

// acquireFair takes s's lock in arrival order.
//
// Nobody queued: the lock is tried at once, as in barging mode (one leader
// read more than barging, no queue entry). Otherwise, or when that try
// finds the lock held, the caller queues: a ticket, then its entry, then
// it waits to be first in line and takes the lock through kvlease, woken
// by the lock's release. On taking the lock it leaves the queue at once
// (in the background), so its successor is first in line while the lock
// is still held and waits for the lock itself: the handover is the
// release, the successor's wake-up and its one publish.
func (l *Locker) acquireFair(ctx context.Context, s spec) (*Lock, error) {
	queued, err := l.queued(ctx, s)
	if err != nil {
		return nil, err
	}
	if !queued {
		g, err := l.acquireLease(ctx, s.lease, false)
		if g != nil || err != nil {
			if g == nil {
				return nil, err
			}
			return l.newLock(s, g, true), nil
		}
	}
	t, err := l.ticket(ctx, s)
	if err != nil {
		return nil, err
	}
	var entry *kvlease.Guard
	err = l.retry(ctx, transientAcquire, func() error {
		var err error
		entry, _, err = l.m.TryAcquireKeyDetached(ctx, s.entryKey(t), l.cfg.TTL)
		return err
	})
	if err == nil && entry == nil {
		err = fmt.Errorf("kvlock: queue entry %q exists already", s.entryKey(t))
	}
	if err == nil {
		err = entry.StartRenewing(l.cfg.RenewInterval)
	}
	if err != nil {
		if entry != nil {
			l.leave(entry)
		}
		return nil, mapErr(err)
	}
	g, err := l.waitTurn(ctx, s, t, entry)
	if err != nil {
		l.quit(s, t, entry)
		return nil, err
	}
	// Leave the queue while the lock is held: waiters count our entry
	// (and every one before it) as served meanwhile, and our release waits
	// for the delete, so that it is in the stream before the lock changes
	// hands again and no later releaser can mistake our entry for a waiter.
	left := make(chan struct{})
	if !l.goOwned(func() { defer close(left); l.leave(entry) }) {
		l.leave(entry)
		close(left)
	}
	k := l.newLock(s, g, true)
	k.ticket, k.left = t, left
	return k, nil
}

// waitTurn waits until the lock is ours: handed to us by its releaser
// (the lock key then carries our entry's value, and we adopt it without a
// write), or, once we are first in line, free for us to take with one
// publish (a releaser whose view lacked our entry released it instead).
func (l *Locker) waitTurn(ctx context.Context, s spec, t uint64, entry *kvlease.Guard) (*kvlease.Guard, error) {
	sync := true
	for {
		lock, ok := l.view.Lookup(s.lease)
		if !ok {
			lock = kvx.Entry{Op: kvx.OpDelete} // free; revision 0
		}
		if g, err := l.adoptHanded(ctx, s, entry, lock); g != nil || err != nil {
			return g, err
		}
		pred, ahead, err := l.predecessor(ctx, s, t, entry, sync || !l.view.Ready())
		if err != nil {
			return nil, err
		}
		if pred == "" && !lock.Live() {
			g, err := l.acquireLease(ctx, s.lease, false)
			if err != nil {
				return nil, err
			}
			if g != nil {
				return g, nil
			}
		}
		woken, err := l.waitChange(ctx, pred, ahead == 1, s.lease, lock.Revision, entry)
		if err != nil {
			if errors.Is(err, ErrQueueEntryLost) {
				// A hand-over deletes our entry: a renewal of it that
				// comes after fails. Ask the server whether the lock is ours.
				if g, herr := l.adoptFromServer(ctx, s, entry); g != nil || herr != nil {
					return g, herr
				}
			}
			return nil, err
		}
		// Not woken: the view had lost the entry or the watch restarted;
		// sync again.
		sync = !woken
	}
}

// adoptHanded adopts the lock when lock (its entry in the view) carries
// our entry's owner: its releaser handed it to us.
func (l *Locker) adoptHanded(ctx context.Context, s spec, entry *kvlease.Guard, lock kvx.Entry) (*kvlease.Guard, error) {
	// HandedTo reads the owner from the value's tail (a decode only to
	// confirm a yes): every waiter looks at every new holder's value.
	if !lock.Live() || !kvlease.HandedTo(lock.Value, entry) {
		return nil, nil
	}
	g, err := l.m.Adopt(ctx, entry, s.lease, lock.Revision)
	if err != nil {
		return nil, mapErr(err)
	}
	return g, nil
}

// adoptFromServer reads the lock from the server and adopts it if it
// was handed to entry's owner.
func (l *Locker) adoptFromServer(ctx context.Context, s spec, entry *kvlease.Guard) (*kvlease.Guard, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.OpTimeout)
	defer cancel()
	h, ok, err := l.m.HolderOfKey(rctx, s.lease)
	if err != nil || !ok || !entry.Owns(h) {
		return nil, nil
	}
	g, err := l.m.Adopt(ctx, entry, s.lease, h.Revision)
	if err != nil {
		return nil, mapErr(err)
	}
	return g, nil
}

// quit leaves the queue for a waiter that gives up. A hand-over is not
// conditional on the successor's entry, so a holder that saw the entry a
// moment before it went may still hand the lock to us: for one TTL after
// leaving (a holder's write lands within its own validity window) the
// Locker watches the lock and passes on one that arrives, so it does not
// sit with nobody until its TTL.
func (l *Locker) quit(s spec, t uint64, entry *kvlease.Guard) {
	l.leave(entry)
	if !l.view.Running() {
		return
	}
	l.goOwned(func() {
		ctx, cancel := context.WithTimeout(l.ctx, l.cfg.TTL)
		defer cancel()
		sub, err := l.view.Subscribe(ctx, s.lease)
		if err != nil {
			return
		}
		defer sub.Close()
		if e, ok := l.view.Lookup(s.lease); ok && e.Live() && kvlease.HandedTo(e.Value, entry) {
			l.passOn(s, t, entry, e.Revision)
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-sub.C():
				if !ok {
					return
				}
				if e.Live() && kvlease.HandedTo(e.Value, entry) {
					l.passOn(s, t, entry, e.Revision)
					return
				}
			}
		}
	})
}

// passOn takes a lock handed to a waiter that has left and releases it
// at once (to the next in line, if any).
func (l *Locker) passOn(s spec, t uint64, entry *kvlease.Guard, rev uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.OpTimeout)
	defer cancel()
	g, err := l.m.Adopt(ctx, entry, s.lease, rev)
	if err == nil {
		err = l.releaseLease(ctx, s, g, t, nil)
	}
	if err != nil {
		l.log.Debug("kvlock: passing on a lock handed to a waiter that left", "key", s.key, "err", err)
	}
}

// releaseLease releases g, a lock's lease. In fair mode it hands the lock
// straight to the longest waiter that this Locker's view holds
// (kvlease.Guard.HandOver): one compare-and-set writes the waiter's entry
// value into the lock, so the handover costs the releaser one round trip
// and the successor a watch event, and the successor writes nothing.
// With nobody queued in the view it is a plain release, and the first in
// line takes the lock itself. ticket is the holder's own place in line (0
// for none) and left is closed once its entry is deleted: the release
// waits for it, and for the view to have applied the lock's acquisition,
// so that no entry of a waiter already served (each deleted its entry
// before releasing) is taken for a waiter.
func (l *Locker) releaseLease(ctx context.Context, s spec, g *kvlease.Guard, ticket uint64, left <-chan struct{}) error {
	if !l.cfg.Fair || !l.view.Ready() {
		return g.Release(ctx)
	}
	if left != nil {
		select {
		case <-left:
		case <-ctx.Done():
			return g.Release(ctx)
		}
	}
	if ticket != 0 {
		// A holder that queued may have taken a free lock itself, ahead of
		// its view: let the view reach that acquisition, and with it every
		// earlier holder's entry delete. (One that never queued found the
		// queue empty in a synced view, so no served entry was left.)
		octx, cancel := l.opt.Bound(ctx)
		err := l.view.SyncTo(octx, g.Fence())
		cancel()
		if err != nil {
			return g.Release(ctx)
		}
	}
	var (
		head  kvx.Entry
		headT uint64
	)
	err := l.view.Children(s.queue, func(e kvlease.Change) bool {
		x, ok := s.ticketOf(e.Key)
		if ok && x != ticket && e.Live() && !kvlease.HandedTo(e.Value, g) && (head.Key == "" || x < headT) {
			head, headT = e, x
		}
		return true
	})
	if err != nil || head.Key == "" {
		return g.Release(ctx)
	}
	_, err = g.HandOver(ctx, head.Value)
	return err
}

// leave deletes a queue entry (owner-conditionally), bounded by OpTimeout.
// gone reports that the entry was no longer ours to delete.
func (l *Locker) leave(entry *kvlease.Guard) (gone bool) {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.OpTimeout)
	defer cancel()
	err := entry.Release(ctx)
	if err != nil && !errors.Is(err, kvlease.ErrLost) {
		l.log.Debug("kvlock: leaving the queue", "key", entry.Key(), "err", err)
	}
	return errors.Is(err, kvlease.ErrLost)
}

// entryErr explains why a waiter's queue entry ended.
func entryErr(entry *kvlease.Guard) error {
	c := context.Cause(entry.Context())
	if errors.Is(c, kvlease.ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("%w: %q: %w", ErrQueueEntryLost, entry.Key(), c)
}

// Who is first in line: no entry before ours is left but the one of the
// lock's current holder.
//
// Only the first look is synced (to our own entry's revision: every entry
// created before ours is in the view once it has applied that). Every
// entry it could see is in the view from then on (the view only moves
// forward), so later looks are answered by the view alone: what it may
// lack is an entry created after the first look began, which the protocol
// does not wait for anyway (see above).
//
// A waiter that takes the lock leaves the queue right after, so for a
// moment its entry is still there while it holds the lock. Its successor
// does not wait for that entry to go: the entry of the lock's holder (its
// lowest, when the holder's Locker has several waiters on the key) counts
// as served, and so does every entry before it (the holder was first in
// line when it took the lock). So a waiter whose only predecessor is first in line also
// watches the lock, and is first in line itself as soon as the
// predecessor takes it: it is then waiting for the lock when the
// predecessor releases it, and a handover costs the release and one
// publish.
//
// predecessor returns the key of the entry just before ticket t ("" when t
// is first in line) and how many entries are ahead of t, not counting the
// lock holder's and those before it (see above): 0, 1, or 2 for two or
// more (a waiter only needs to know whether its predecessor is first in
// line).
func (l *Locker) predecessor(ctx context.Context, s spec, t uint64, entry *kvlease.Guard, sync bool) (pred string, ahead int, err error) {
	if sync {
		// Every entry created before ours has a smaller revision: once the
		// view has applied our entry's, it holds them all.
		if err := l.syncView(ctx, entry.Revision()); err != nil {
			return "", 0, l.viewErr(ctx, s, err)
		}
	}
	holder := ""
	if e, ok := l.view.Lookup(s.lease); ok {
		if id, err := kvlease.HolderID(e.Value); err == nil {
			holder = id
		}
	}
	// One scan: the two highest tickets before t, and the holder's lowest
	// entry, are all the answer needs (entries up to the holder's count as
	// served, so what is ahead is what lies between it and t).
	var (
		// The two highest tickets before t, 0 for none (tickets are
		// revisions, so never 0), and best's entry.
		best, second uint64
		bestKey      string
		served       string // the holder's lowest entry
		servedT      uint64
	)
	fn := func(e kvlease.Change) bool {
		x, ok := s.ticketOf(e.Key)
		if !ok || x >= t {
			return true
		}
		switch {
		case x > best:
			second = best
			best, bestKey = x, e.Key
		case x > second:
			second = x
		}
		if holder != "" && (served == "" || x < servedT) {
			if id, err := kvlease.HolderID(e.Value); err == nil && id == holder {
				served, servedT = e.Key, x
			}
		}
		return true
	}
	if err := l.view.Children(s.queue, fn); err != nil {
		return "", 0, l.viewErr(ctx, s, err)
	}
	switch {
	case best == 0, served != "" && best <= servedT:
		// Nobody before t, or only the holder's entry and those of waiters
		// served before it (the holder was first in line, so everyone
		// before it has been served or has left).
		return "", 0, nil
	case second != 0 && (served == "" || second > servedT):
		return bestKey, 2, nil
	}
	return bestKey, 1, nil
}

// waitChange waits until pred (a queue entry; "" for none) has gone, or
// the lock changes past revision seen in a way that concerns us: handed
// to us, released while we are first in line (pred ""), or taken by a new
// holder while we are right behind the first in line (next: that holder
// is our predecessor, whose entry then counts as served). It then reports woken: the caller looks again. It
// subscribes before checking the view, so a change between the check and
// the wait is not missed. woken is false when the view's watch restarted
// (or a change was coalesced), and the caller should sync before looking
// again.
func (l *Locker) waitChange(ctx context.Context, pred string, next bool, lock string, seen uint64, entry *kvlease.Guard) (woken bool, err error) {
	keys := []string{lock}
	if pred != "" {
		keys = append(keys, pred)
	}
	sub, err := l.view.Subscribe(ctx, keys...)
	if err != nil {
		if errors.Is(err, kvlease.ErrClosed) {
			return false, ErrClosed
		}
		return false, fmt.Errorf("kvlock: watch %q: %w", lock, err)
	}
	defer sub.Close()
	// The view said pred was live and the lock at seen; if either has
	// moved since (or the watch restarted and the view is refilling),
	// look again.
	if pred != "" {
		if live, err := l.view.Live(pred); err != nil || !live {
			return false, err
		}
	}
	cur, ok := l.view.Lookup(lock)
	if !ok {
		cur = kvx.Entry{Op: kvx.OpDelete}
	}
	if cur.Revision != seen {
		return true, nil // moved between the look and the subscription: look again
	}
	var holder []byte // the lock's value when subscribed
	if cur.Live() {
		holder = cur.Value
	}
	for {
		select {
		case <-ctx.Done():
			return false, context.Cause(ctx)
		case <-l.ctx.Done():
			return false, ErrClosed
		case <-entry.Context().Done():
			return false, entryErr(entry)
		case e, ok := <-sub.C():
			switch {
			case !ok, sub.Missed():
				return false, nil
			case e.Key == lock && e.Revision <= seen:
				continue
			case e.Key == lock && e.Live() && bytes.Equal(e.Value, holder):
				continue // the holder renewed the lock
			case e.Key == lock && e.Live() && kvlease.HandedTo(e.Value, entry):
				return true, nil // handed to us: the lock's own event, not a look at the queue
			case e.Key == lock && !e.Live():
				holder = nil
				if pred != "" {
					continue // released: the one first in line takes it next
				}
				return true, nil // free, and we are first in line: the lock's own event
			case e.Key == lock:
				holder = e.Value
				if !next {
					continue // a new holder further ahead
				}
				l.wakeups.Add(1) // taken by our predecessor
				return true, nil
			case e.Live():
				continue // the predecessor renewed its entry
			}
			l.wakeups.Add(1)
			return true, nil
		}
	}
}
