package kvlock

import (
	"context"
	"errors"

	"github.com/natscoord/natscoord/opstats"
)

// Observers returns an Observer that hands every event to each of obs in
// order (nil entries are skipped), breaker changes included for those
// that implement BreakerObserver. With no observers left it returns nil.
func Observers(obs ...Observer) Observer {
	hs := make([]opstats.Hooks[Event], len(obs))
	for i, o := range obs {
		hs[i] = o // a nil Observer stays nil, and Join skips it
	}
	switch h := opstats.Join(hs...).(type) {
	case nil:
		return nil
	case opstats.Fanout[Event]:
		return fanout{h} // carries OnBreaker to the observers that have it
	default:
		return h
	}
}

type fanout struct{ opstats.Fanout[Event] }

func (f fanout) OnBreaker(ctx context.Context, e BreakerEvent) {
	for _, o := range f.Fanout {
		if b, ok := o.(BreakerObserver); ok {
			b.OnBreaker(ctx, e)
		}
	}
}

// RecorderObserver returns an Observer that records every event in r:
// component "kvlock", name Config.Name, op the event's Op ("acquire",
// "renew", "release", "lost", and "breaker" for breaker changes), and
// outcome "ok", "contended" (TryAcquire found the lock held), "timeout"
// (the caller's context ended), "circuit_open", "lost", "error", or for
// breaker changes the new state ("open", "half-open", "closed"). Share
// one opstats.Recorder between packages to serve all their series from one
// /metrics handler.
func RecorderObserver(r *opstats.Recorder) Observer {
	return recorder{
		Hooks: opstats.Each(func(_ context.Context, e Event) {
			r.Record(opstats.Labels{Component: "kvlock", Name: e.Name, Op: string(e.Op), Outcome: e.Outcome()}, e.Duration)
		}),
		r: r,
	}
}

type recorder struct {
	opstats.Hooks[Event]
	r *opstats.Recorder
}

func (r recorder) OnBreaker(_ context.Context, e BreakerEvent) {
	r.r.Record(opstats.Labels{Component: "kvlock", Name: e.Name, Op: "breaker", Outcome: e.To.String()}, 0)
}

// Outcome classifies how the operation ended, in a small bounded set:
// "ok", "contended" (TryAcquire found the lock held), "circuit_open",
// "lost", "timeout" (the caller's context ended) or "error". It is the
// one classification of kvlock's operations: RecorderObserver's outcome
// label and otelobserver's kvlock.outcome attribute.
func (e Event) Outcome() string {
	switch {
	case e.Op == OpLost:
		return "lost"
	case e.Err == nil && e.Op == OpAcquire && !e.Acquired:
		return "contended"
	case e.Err == nil:
		return "ok"
	case errors.Is(e.Err, ErrCircuitOpen):
		return "circuit_open"
	case errors.Is(e.Err, ErrLost):
		return "lost"
	case errors.Is(e.Err, context.DeadlineExceeded), errors.Is(e.Err, context.Canceled):
		return "timeout"
	}
	return "error"
}
