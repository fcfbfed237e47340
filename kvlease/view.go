package kvlease

import (
	"context"
	"errors"
	"fmt"

	"github.com/natscoord/natscoord/internal/kvx"
)

// This file lends a layer on kvlease the manager's own watch of the bucket.
//
// A Manager already watches its bucket to wake its waiters. A layer that
// asks questions of its part of the bucket (kvlock: who is queued for a
// lock, who leads an election) would otherwise open a second watch of the
// same stream, one more consumer per process for the server to feed with
// every change. A View is that layer's window on the one watch instead:
// it keeps the live keys under a prefix in memory and wakes subscribers,
// so a process costs the server one consumer per bucket however many
// layers look at it. A layer that keeps its own copy of its keys (the
// runtime's lease index, the dashboard, an election's observer) takes
// every change in order from the view's Feed (view_feed.go) instead of
// watching the bucket itself.

// Change is one change of a key as the manager's watch delivered it: a
// live value (Live reports true), or a delete, purge or expiry marker.
// Revision is the bucket's revision of the change.
type Change = kvx.Entry

// View is a Manager's in-memory view of the live keys under one prefix,
// fed by the watch the manager uses for its own waiters. Its reads do no
// I/O; SyncTo makes it as new as a revision the caller knows of. It is
// safe for concurrent use and ends with the manager (after Close, SyncTo
// and Subscribe return ErrClosed).
type View struct {
	m      *Manager
	prefix string
}

// View returns the view of the keys under prefix (whose name starts with
// prefix + "."). It does no I/O: the manager's watch starts, or restarts
// once with the keys' current values if it was watching updates only,
// at the first SyncTo. The manager's waiters see that restart as any
// other and lose nothing by it.
func (m *Manager) View(prefix string) (*View, error) {
	if !kvx.ValidKey(prefix) {
		return nil, fmt.Errorf("%w: view prefix %q is not a valid KV key", ErrInvalidKey, prefix)
	}
	m.hub.KeepView(prefix)
	return &View{m: m, prefix: prefix}, nil
}

// Prefix returns the view's prefix.
func (v *View) Prefix() string { return v.prefix }

// SyncTo returns once the view has applied every change of the bucket up
// to revision rev (one the caller knows was acknowledged: its own write,
// a ticket it read), with no read of its own. It starts the watch if it is
// not running. It fails only through ctx or the manager's Close.
func (v *View) SyncTo(ctx context.Context, rev uint64) error {
	return v.err("sync", v.m.hub.SyncTo(ctx, rev))
}

// Ready reports whether the view holds the whole current state of the
// running watch. After a restart of the watch it is false until the view
// has refilled: a caller relying on an earlier SyncTo must sync again.
func (v *View) Ready() bool { return v.m.hub.Ready() }

// Running reports whether the watch is live, so that Subscribe costs no
// I/O.
func (v *View) Running() bool { return v.m.hub.Running() }

// Children calls fn with the live entry of every key directly under
// parent (parent + "." + one token), in no particular order; fn returns
// false to stop and must not call the view.
func (v *View) Children(parent string, fn func(Change) bool) error {
	return v.err("children", v.m.hub.Children(parent, fn))
}

// Live reports whether the view holds a live value for key. A key missing
// while the watch refills may still be live: sync before concluding.
func (v *View) Live(key string) (bool, error) {
	ok, err := v.m.hub.Live(key)
	return ok, v.err("live", err)
}

// Lookup returns the view's live entry for key, if it holds one.
func (v *View) Lookup(key string) (Change, bool) { return v.m.hub.Lookup(key) }

// Subscribe registers interest in keys and returns once the watch is live:
// every later change of them reaches the subscription. Subscribe before
// looking at the view, so a change between the look and the wait is not
// missed.
func (v *View) Subscribe(ctx context.Context, keys ...string) (*ViewSub, error) {
	s, err := v.m.hub.Subscribe(ctx, keys...)
	if err != nil {
		return nil, v.err("subscribe", err)
	}
	return &ViewSub{s: s}, nil
}

func (v *View) err(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kvx.ErrHubClosed):
		return fmt.Errorf("%w: view %q: %w", ErrClosed, v.prefix, err)
	}
	return fmt.Errorf("kvlease: view %q: %s: %w", v.prefix, op, err)
}

// ViewSub receives the changes of a set of keys of a View.
type ViewSub struct{ s *kvx.Sub }

// C delivers the latest change of any subscribed key. It holds at most
// one: a newer change replaces an unread one, so a subscriber looks at the
// view (or the key) again rather than count on seeing every change. It is
// closed when the watch ends (the manager's Close, a lost connection, a
// restart): look again and subscribe again.
func (s *ViewSub) C() <-chan Change { return s.s.C() }

// Missed reports, once, that an unread change of one key was replaced by
// a change of another subscribed key: look at all of them again.
func (s *ViewSub) Missed() bool { return s.s.Missed() }

// Close unsubscribes. It is idempotent.
func (s *ViewSub) Close() { s.s.Close() }
