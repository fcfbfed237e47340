package kvx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// KeepView makes h, besides waking subscribers, keep the live entries of
// the keys under prefix (whose name starts with prefix + "."; every key for
// ""), in memory:
// its watch then starts with the keys' current values instead of updates
// only, and applies every change in stream order. Questions such as
// "which keys live under this prefix?" are then answered without I/O
// (Children, Live, Lookup) after SyncTo, instead of creating an ordered
// consumer per question as Scan does; the view costs memory for the live
// entries only (markers are dropped). The one watch of a bucket so serves
// both the waiters of a layer that needs updates only and a layer above
// it that asks questions of a part of the bucket, instead of each opening
// a watch of its own. Calling it again adds a prefix. It does no I/O and
// leaves a running watch alone: the first SyncTo afterwards restarts a
// watch that was started without the keys' current values (or before
// prefix was added), and its subscribers see their channels closed and
// subscribe again, as after any restart. Until then Ready is false.
func (h *Hub) KeepView(prefix string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.view == nil {
		h.view = newView()
	}
	if p := viewPrefix(prefix); !slices.Contains(h.view.prefixes, p) {
		h.view.prefixes = append(h.view.prefixes, p)
	}
}

// view is a hub's in-memory copy of the live keys it watches, guarded by
// the hub's mutex.
type view struct {
	// prefixes are the kept key prefixes, each ending in ".", or "" for
	// every key (viewPrefix).
	prefixes []string
	// covered is how many of prefixes the current watch's initial values
	// included: a prefix added later needs a new watch.
	covered int
	// live maps the parent of a key (all but its last token) to the live
	// entries under it.
	live map[string]map[string]Entry
	// applied is the highest revision the current watch delivered.
	applied uint64
	// ready is set once the current watch delivered its initial values.
	ready bool
	// changed, when not nil, is closed at the next change of the view.
	changed chan struct{}
}

func newView() *view { return &view{live: make(map[string]map[string]Entry)} }

// keeps reports whether key belongs to the view.
func (v *view) keeps(key string) bool {
	for _, p := range v.prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// apply records e, in stream order. Every delivered revision counts for
// applied, kept or not: the view is complete up to it for its keys.
func (v *view) apply(e Entry) {
	v.applied = max(v.applied, e.Revision)
	if !v.keeps(e.Key) {
		v.notify()
		return
	}
	parent, _ := splitLast(e.Key)
	m := v.live[parent]
	if e.Live() {
		if m == nil {
			m = make(map[string]Entry)
			v.live[parent] = m
		}
		m[e.Key] = e
	} else if m != nil {
		delete(m, e.Key)
		if len(m) == 0 {
			delete(v.live, parent)
		}
	}
	v.notify()
}

func (v *view) markReady() {
	v.ready = true
	v.notify()
}

func (v *view) reset() {
	clear(v.live)
	v.applied, v.ready = 0, false
	v.notify()
}

func (v *view) notify() {
	if v.changed != nil {
		close(v.changed)
		v.changed = nil
	}
}

// lookup returns the live entry of key.
func (v *view) lookup(key string) (Entry, bool) {
	parent, _ := splitLast(key)
	e, ok := v.live[parent][key]
	return e, ok
}

func splitLast(key string) (parent, last string) {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return "", key
	}
	return key[:i], key[i+1:]
}

// errNoView is returned by the view methods of a hub before KeepView.
var errNoView = errors.New("kvx: hub keeps no view (use KeepView)")

// SyncTo returns once the hub's view has applied every change of its keys
// up to revision rev (the revision of a write the caller knows was
// acknowledged: its own, say), with no read: waiting for a known
// revision costs the server nothing. It starts the watch if it is not
// running.
//
// So a view read after SyncTo sees every write acknowledged up to rev,
// even when the hub's consumer runs on a lagging replica of a replicated
// bucket. After Close it returns ErrHubClosed. It fails only through ctx
// or starting the watch: bound it with a deadline.
func (h *Hub) SyncTo(ctx context.Context, rev uint64) error {
	if !h.hasView() {
		return errNoView
	}
	if h.filtering() {
		return errFiltering
	}
	pattern := h.patterns
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return ErrHubClosed
		}
		if h.running && !h.viewCoveredLocked() {
			// The watch was started without the view's keys: restart it
			// with their current values.
			// Stopping it deletes its consumer, a request bounded by
			// the bucket's op timeout (endWatch).
			stop := h.stopLocked()
			h.mu.Unlock()
			stop()
			continue
		}
		if !h.running {
			err := h.awaitStartLocked(ctx, nil)
			h.mu.Unlock()
			if err != nil {
				return err
			}
			continue
		}
		v := h.view
		if v.ready && v.applied >= rev {
			h.mu.Unlock()
			return nil
		}
		if v.changed == nil {
			v.changed = make(chan struct{})
		}
		changed := v.changed
		h.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("kvx: sync %q: view at revision %d, waiting for %d: %w", pattern, v.appliedNow(h), rev, ctx.Err())
		case <-changed:
		}
	}
}

func (h *Hub) filtering() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.maxFilter > 0
}

func (h *Hub) hasView() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.view != nil
}

// viewCoveredLocked reports whether the running watch feeds the whole
// view: it was started with the current values of every kept key.
func (h *Hub) viewCoveredLocked() bool {
	return h.viewWatch && h.view.covered == len(h.view.prefixes)
}

func (v *view) appliedNow(h *Hub) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return v.applied
}

// Ready reports whether the view holds the whole current state of the
// running watch (its initial values have been applied). After a watch
// restart it is false until the view has refilled; a caller relying on an
// earlier SyncTo must sync again then.
func (h *Hub) Ready() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.view != nil && h.running && h.viewCoveredLocked() && h.view.ready
}

// Children calls fn with the live entry of every key directly under
// parent (parent + "." + one token), in no particular order, from the
// view; fn returns false to stop. It does no I/O: call SyncTo first for an
// answer that holds a write known to be acknowledged. fn must not call
// the hub.
func (h *Hub) Children(parent string, fn func(Entry) bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.view == nil {
		return errNoView
	}
	for _, e := range h.view.live[parent] {
		if !fn(e) {
			break
		}
	}
	return nil
}

// Live reports whether the view holds a live value for key (no I/O).
// While the watch restarts the view may lack keys that are live; a caller
// that finds a key missing should SyncTo before concluding it is gone.
func (h *Hub) Live(key string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.view == nil {
		return false, errNoView
	}
	parent, _ := splitLast(key)
	_, ok := h.view.live[parent][key]
	return ok, nil
}

// Lookup returns the view's live entry for key, if it holds one (no I/O).
func (h *Hub) Lookup(key string) (Entry, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.view == nil {
		return Entry{}, false
	}
	parent, _ := splitLast(key)
	e, ok := h.view.live[parent][key]
	return e, ok
}
