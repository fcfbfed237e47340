package kvx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ScanLatest is Scan with read-your-writes on replicated buckets. Scan's
// ordered consumer may be placed on a follower that has not applied the
// newest writes yet; ScanLatest first asks the stream leader for the last
// revision among the keys matching pattern, and only calls fn once the
// consumer has delivered at least that revision (waiting for the replica
// up to catchUp; 0 means 5 s, after which it fails rather than return a
// stale view). It buffers the live entries meanwhile and then calls fn
// with them in revision order; markers are never passed to fn. When the
// leader has no message on any matching key it returns at once. Starting
// its watch is bounded by the op timeout per try, tried again when a try
// ran out (startRetry), all within ctx.
func (b *Bucket) ScanLatest(ctx context.Context, pattern string, catchUp time.Duration, fn func(Entry) bool) error {
	if catchUp <= 0 {
		catchUp = 5 * time.Second
	}
	var target uint64
	last, err := b.lastBySubject(ctx, b.Subject(pattern), pattern)
	switch {
	case errors.Is(err, ErrNotFound):
		// The leader holds no message on any matching key: nothing to
		// scan, and no consumer to make (a dependency index lookup of a
		// key nothing needs, say).
		return nil
	case err != nil:
		return fmt.Errorf("kvx: scan %q: %w", pattern, err)
	default:
		target = last.Revision
	}
	w, cancel, err := b.scanWatch(ctx, pattern)
	if err != nil {
		return fmt.Errorf("kvx: scan %q: %w", pattern, err)
	}
	defer cancel()
	defer func() { _ = w.Stop() }()
	live := make(map[string]Entry)
	var seen uint64
	initial := true
	var timeout <-chan time.Time
	for initial || seen < target {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			return fmt.Errorf("kvx: scan %q: the consumer's replica is behind the leader (at %d, leader at %d)", pattern, seen, target)
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("kvx: scan %q: watcher closed", pattern)
			}
			if e == nil {
				initial = false
				timeout = time.After(catchUp)
				continue
			}
			ent := fromWatch(e)
			seen = max(seen, ent.Revision)
			if ent.Live() {
				live[ent.Key] = ent
			} else {
				delete(live, ent.Key)
			}
		}
	}
	out := make([]Entry, 0, len(live))
	for _, e := range live {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		switch {
		case a.Revision < b.Revision:
			return -1
		case a.Revision > b.Revision:
			return 1
		}
		return 0
	})
	for _, e := range out {
		if !fn(e) {
			return nil
		}
	}
	return nil
}

// scanWatch starts ScanLatest's watch of pattern within ctx, each try
// bounded by the op timeout and tried again on startRetry when it ran
// out (a consumer creation a loaded cluster left unanswered held a scan
// for its caller's whole ctx). cancel ends the watch's context.
func (b *Bucket) scanWatch(ctx context.Context, pattern string) (jetstream.KeyWatcher, context.CancelFunc, error) {
	d := OpTimeoutOf(b.js)
	for l := startRetry.Start(ctx); l.Next(); {
		wctx, cancel := context.WithCancel(ctx)
		w, overran, err := watchWithin(d, cancel, func() (jetstream.KeyWatcher, error) { return b.kv.Watch(wctx, pattern) })
		switch {
		case !overran && err == nil:
			return w, cancel, nil
		case !overran:
			cancel()
			return nil, nil, err
		case err == nil:
			discardWatch(w, cancel, d) // made after its try ran out
		}
		cancel()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
	}
	return nil, nil, overrunErr(d)
}
