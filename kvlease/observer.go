package kvlease

import (
	"context"
	"errors"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/opstats"
)

// Op names what an Event reports.
type Op string

// The operations an Observer sees (the same four as kvlock's).
const (
	OpAcquire Op = "acquire"
	OpRenew   Op = "renew"
	OpRelease Op = "release"
	OpLost    Op = "lost"
)

// Event describes one finished lease operation.
type Event struct {
	Op Op
	// Bucket is the manager's bucket; Keys the lease keys tried (one, or
	// a semaphore's slots) for an acquisition.
	Bucket string
	Keys   []string
	// Guard is the lease concerned (nil for an acquisition that got
	// none).
	Guard *Guard
	// Duration is how long the operation took, waiting included (0 for
	// OpLost).
	Duration time.Duration
	// Err is the operation's error, or for OpLost the loss cause.
	Err error
}

// Observer receives one call per finished operation, on the goroutine
// that did it (renewals: a renewal worker): be quick, and safe for
// concurrent use. It is opstats.Hooks of Event, as kvlock.Observer is of
// kvlock's: natscoord's one observer shape (see opstats.Hooks).
type Observer interface {
	OnAcquire(ctx context.Context, e Event)
	OnRenew(ctx context.Context, e Event)
	OnRelease(ctx context.Context, e Event)
	OnLost(ctx context.Context, e Event)
}

// clock is clock.Start: the time now when an observer will see durations, else zero.
func (m *Manager) clock() time.Time { return clock.Start(m.cfg.Observer != nil) }

// since is clock.Since: the duration since a time from clock.
func since(t time.Time) time.Duration { return clock.Since(t) }

func (m *Manager) observe(ctx context.Context, e Event) {
	o := m.cfg.Observer
	if o == nil {
		return
	}
	e.Bucket = m.cfg.Bucket
	opstats.Call[Event](ctx, o, string(e.Op), e)
}

// acquire is acquireKeys, reported to the observer.
func (m *Manager) acquire(ctx context.Context, r request, wait time.Duration) (*Guard, bool, error) {
	start := m.clock()
	g, ok, err := m.acquireKeys(ctx, r, wait)
	m.observe(ctx, Event{Op: OpAcquire, Keys: r.keys, Guard: g, Duration: since(start), Err: err})
	return g, ok, err
}

// renew is renewOnce, reported to the observer. It returns how long the
// renewal took, measured once for the observer and, when timed is set,
// for a renewal hook (0 when neither needs it: no clock is read).
func (g *Guard) renew(ctx context.Context, timed bool) (time.Duration, error) {
	start := clock.Start(timed || g.m.cfg.Observer != nil)
	err := g.renewOnce(ctx)
	took := since(start)
	g.m.observe(ctx, Event{Op: OpRenew, Guard: g, Duration: took, Err: err})
	return took, err
}

// Observers returns an Observer that hands every event to each of obs in
// order (nil entries skipped); nil when none is left.
func Observers(obs ...Observer) Observer {
	hs := make([]opstats.Hooks[Event], len(obs))
	for i, o := range obs {
		hs[i] = o // a nil Observer stays nil, and Join skips it
	}
	return opstats.Join(hs...)
}

// RecorderObserver returns an Observer that records every event in r:
// component "kvlease", name the bucket, op the event's Op, outcome "ok",
// "contended" (an acquisition that found every key held), "timeout",
// "lost" or "error".
func RecorderObserver(r *opstats.Recorder) Observer {
	return opstats.Each(func(_ context.Context, e Event) {
		r.Record(opstats.Labels{Component: "kvlease", Name: e.Bucket, Op: string(e.Op), Outcome: e.Outcome()}, e.Duration)
	})
}

// Outcome classifies how the operation ended, in a small bounded set:
// "ok", "contended" (an acquisition that found every key held),
// "timeout" (the caller's context ended), "lost" or "error": the outcome
// label of RecorderObserver, for any adapter to use.
func (e Event) Outcome() string {
	switch {
	case e.Op == OpLost, errors.Is(e.Err, ErrLost):
		return "lost"
	case e.Err == nil && e.Op == OpAcquire && e.Guard == nil:
		return "contended"
	case e.Err == nil:
		return "ok"
	case errors.Is(e.Err, context.DeadlineExceeded), errors.Is(e.Err, context.Canceled):
		return "timeout"
	}
	return "error"
}
