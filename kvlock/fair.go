package kvlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// Fair waiting.
//
// A waiter first draws a ticket: an empty, one-second-TTL message
// published to the lock's ticket key, whose stream sequence is unique and
// increases in arrival order (the stream is the sequencer, as etcd's
// revision is). The publish is unconditional on purpose: the ticket key
// holds no state anyone reads, only the sequence number matters, and a
// compare-and-set would make concurrent arrivals fail and retry.
//
// It then creates its queue entry "<queue>.<ticket>" as a kvlease lease
// (create-if-absent with the lock's TTL, renewed every RenewInterval), so
// a crashed waiter leaves the queue by the server's expiry. The ticket is
// in the key because a NATS KV revision changes on every renewal: unlike
// etcd's create revision it cannot order entries that renew.
//
// The waiter looks at the queue, finds its predecessor (the greatest
// ticket below its own) and watches only that entry; when it goes (its
// owner got the lock and released it, gave up, or crashed) the waiter
// looks again.
//
// Looking costs no consumer: the Locker's queue hub keeps the live queue
// entries in memory from its one shared watch (kvx.NewViewHub). A waiter's
// first look is one leader read plus a map lookup; later looks (after its
// predecessor has gone) are the map lookup alone, see waitHead. The read (Hub.Sync) asks the
// stream leader for the last revision R among the lock's queue keys and
// waits until the view has applied R. Why a lagging replica cannot make a
// waiter skip a live predecessor: every queue write acknowledged before
// the look began (a predecessor's create, renewal or delete) has a
// revision <= R, and the hub's consumer delivers the bucket's messages in
// stream order without gaps, so once the view has applied R it contains
// all of them. A consumer on a follower that is behind only delays the
// answer. The view may be newer than R, never older; an entry it still
// shows but which has vanished since only costs a wasted watch: the
// waiter finds it gone in the view, or by its event, and looks again. As
// before, an entry created after the look began is not waited for even if
// its ticket is lower (two concurrent arrivals): both may then take
// themselves for the head, and kvlease's compare-and-set on the lock
// decides between them, so mutual exclusion never depends on the queue.
// With no predecessor it is the head and takes the lock through kvlease;
// a holder deletes the lock BEFORE its queue entry, so the head normally
// finds the lock free at its first publish. A release therefore wakes one
// waiter. Renewals of the predecessor's entry reach the watcher as events
// but cost no I/O. If the waiter's own entry vanishes (force-released, or
// not renewed in time) it stops with ErrQueueEntryLost.

// ticket draws a queue ticket for s.
func (l *Locker) ticket(ctx context.Context, s spec) (uint64, error) {
	var seq uint64
	err := l.retry(ctx, transientAcquire, func() error {
		octx, cancel := l.opCtx(ctx)
		defer cancel()
		ack, err := l.b.JetStream().PublishMsg(octx, &nats.Msg{Subject: l.b.Subject(s.ticket)}, jetstream.WithMsgTTL(time.Second))
		if err != nil {
			return err
		}
		seq = ack.Sequence
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("kvlock: queue ticket for %q: %w", s.key, err)
	}
	return seq, nil
}

func (l *Locker) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, l.cfg.OpTimeout)
}

// tryFair is TryAcquire in fair mode: it does not take the lock while
// anyone is queued for it.
func (l *Locker) tryFair(ctx context.Context, s spec, hub *kvx.Hub) (*Lock, error) {
	queued := false
	err := l.queueView(ctx, s, hub, func(e kvx.Entry) bool {
		_, queued = s.ticketOf(e.Key)
		return !queued
	})
	if err != nil {
		return nil, err
	}
	if queued {
		return nil, nil
	}
	g, release, err := l.acquireLease(ctx, s.lease, false)
	if g == nil {
		return nil, err
	}
	return l.newLock(s, g, release, nil), nil
}

// queueView calls fn with the live entries of s's queue, from hub's
// in-memory view once it is as new as the stream leader (see fair.go's
// header on why that is enough).
func (l *Locker) queueView(ctx context.Context, s spec, hub *kvx.Hub, fn func(kvx.Entry) bool) error {
	octx, cancel := l.opCtx(ctx)
	err := hub.Sync(octx, s.queue+".*")
	cancel()
	if err != nil {
		return l.viewErr(ctx, s, err)
	}
	return hub.Children(s.queue, fn)
}

func (l *Locker) viewErr(ctx context.Context, s spec, err error) error {
	switch {
	case errors.Is(err, kvx.ErrHubClosed):
		return ErrClosed
	case err != nil && ctx.Err() != nil:
		return context.Cause(ctx)
	case err != nil:
		return fmt.Errorf("kvlock: queue of %q: %w", s.key, err)
	}
	return nil
}

// acquireFair queues for s and takes the lock when first in line.
func (l *Locker) acquireFair(ctx context.Context, s spec, hub *kvx.Hub) (*Lock, error) {
	t, err := l.ticket(ctx, s)
	if err != nil {
		return nil, err
	}
	ectx, ecancel := context.WithCancel(context.WithoutCancel(ctx))
	var entry *kvlease.Guard
	err = l.retry(ctx, transientAcquire, func() error {
		var err error
		entry, _, err = l.m.TryAcquireKey(ectx, s.entryKey(t), l.cfg.TTL)
		return err
	})
	if err == nil && entry == nil {
		err = fmt.Errorf("kvlock: queue entry %q exists already", s.entryKey(t))
	}
	if err == nil {
		err = entry.StartRenewing(l.cfg.RenewInterval)
	}
	if err != nil {
		ecancel() // releases an entry acquired before the failure
		return nil, mapErr(err)
	}
	fail := func(err error) (*Lock, error) {
		ecancel()
		rctx, cancel := context.WithTimeout(context.Background(), l.cfg.OpTimeout)
		defer cancel()
		_ = entry.Release(rctx)
		return nil, err
	}
	if err := l.waitHead(ctx, s, t, entry, hub); err != nil {
		return fail(err)
	}
	// Head of the queue: take the lock; give up if our entry goes meanwhile.
	hctx, hcancel := context.WithCancelCause(ctx)
	defer hcancel(nil)
	stop := context.AfterFunc(entry.Context(), func() { hcancel(ErrQueueEntryLost) })
	defer stop()
	g, release, err := l.acquireLease(hctx, s.lease, true)
	if err != nil {
		if errors.Is(context.Cause(hctx), ErrQueueEntryLost) && ctx.Err() == nil {
			err = entryErr(entry)
		}
		return fail(err)
	}
	k := l.newLock(s, g, func() { release(); ecancel() }, entry)
	return k, nil
}

// entryErr explains why a waiter's queue entry ended.
func entryErr(entry *kvlease.Guard) error {
	c := context.Cause(entry.Context())
	if errors.Is(c, kvlease.ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("%w: %q: %w", ErrQueueEntryLost, entry.Key(), c)
}

// waitHead returns once ticket t has no predecessor in s's queue.
//
// Only the first look is synced with the stream leader. Every entry it
// could see is in the view from then on (the view only moves forward), so
// after a predecessor has gone the view alone answers the next look: what
// it may lack is an entry created after the first look began, which the
// protocol does not wait for anyway (see above). That takes a leader read
// off every handover.
func (l *Locker) waitHead(ctx context.Context, s spec, t uint64, entry *kvlease.Guard, hub *kvx.Hub) error {
	sync := true
	for {
		pred, err := l.predecessor(ctx, s, t, hub, sync || !hub.Ready())
		if err != nil {
			return err
		}
		if pred == "" {
			return nil
		}
		gone, err := l.waitGone(ctx, pred, entry, hub)
		if err != nil {
			return err
		}
		// Not gone: the view had lost the entry or the watch restarted;
		// look with the leader again.
		sync = !gone
		if gone {
			l.wakeups.Add(1)
		}
	}
}

// predecessor returns the key of the entry just before ticket t ("" when t
// is first in line).
func (l *Locker) predecessor(ctx context.Context, s spec, t uint64, hub *kvx.Hub, sync bool) (string, error) {
	var best uint64
	pred := ""
	fn := func(e kvx.Entry) bool {
		if x, ok := s.ticketOf(e.Key); ok && x < t && x > best {
			best, pred = x, e.Key
		}
		return true
	}
	var err error
	if sync {
		err = l.queueView(ctx, s, hub, fn)
	} else if err = hub.Children(s.queue, fn); err != nil {
		err = l.viewErr(ctx, s, err)
	}
	return pred, err
}

// waitGone waits until key has no live value. It subscribes before
// checking the view, so a deletion between the check and the wait is not
// missed.
// gone is false when the hub's watch restarted and the caller should
// simply look again.
func (l *Locker) waitGone(ctx context.Context, key string, entry *kvlease.Guard, hub *kvx.Hub) (gone bool, err error) {
	sub, err := hub.Subscribe(ctx, key)
	if err != nil {
		if errors.Is(err, kvx.ErrHubClosed) {
			return false, ErrClosed
		}
		return false, fmt.Errorf("kvlock: watch %q: %w", key, err)
	}
	defer sub.Close()
	// The view said key was live after a Sync; if it has gone since (or
	// the watch restarted and the view is refilling), look again.
	if live, err := hub.Live(key); err != nil || !live {
		return false, err
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
			if !ok {
				return false, nil
			}
			if e.Live() {
				continue // the predecessor renewed its entry
			}
			return true, nil
		}
	}
}
