package opstats

import (
	"context"
)

// Hooks is the observer of kvlock and kvlease: one call per finished
// acquisition, renewal, release and loss, with the package's own
// payload. kvlock.Observer and kvlease.Observer have exactly these
// methods, so the helpers below serve both.
//
// The observer shape. Every package of natscoord that reports what it
// does has one Observer interface of the same shape, so that a user who
// has written one knows how to write the others:
//
//   - one method per operation, On<Op>(ctx context.Context, e P), where
//     P is the package's one payload type: it names what happened (Op,
//     Status or Result), how long it took (Duration) and how it failed
//     (Err), and its Outcome method is the one classification every
//     adapter labels with (RecorderObserver's outcome label);
//   - called after the fact, on the goroutine that did the operation:
//     an implementation is quick and safe for concurrent use;
//   - Observers(obs...) joins several (nil entries skipped, nil when
//     none is left, the only one unwrapped: Fan), and
//     RecorderObserver(r) records every call in a Recorder under the
//     package's component.
//
// The four are kvlease.Observer and kvlock.Observer (Hooks of
// kvlease.Event and kvlock.Event; kvlock.BreakerObserver adds OnBreaker),
// kvledger.Observer (OnWrite of a kvledger.WriteEvent: a record's
// compare-and-swap) and the task runtime's worker.Observer (OnStart and
// OnFinish of a worker.Event: one attempt). OpenTelemetry adapters of
// them live in the nested modules kvlock/otelobserver and
// kvledger/worker/otelworker.
type Hooks[E any] interface {
	OnAcquire(ctx context.Context, e E)
	OnRenew(ctx context.Context, e E)
	OnRelease(ctx context.Context, e E)
	OnLost(ctx context.Context, e E)
}

// Fanout hands every call to each of its hooks in order.
type Fanout[E any] []Hooks[E]

// Join returns the non-nil hooks as a Fanout, the only one unwrapped, or
// nil when none is left.
func Join[E any](hs ...Hooks[E]) Hooks[E] {
	return Fan(hs, func(f []Hooks[E]) Hooks[E] { return Fanout[E](f) })
}

// Fan is how every observer of natscoord joins: the non-nil items, the
// zero value when none is left, the only one unwrapped, or else all of
// them wrapped by wrap (a fan-out that calls each in order). T is an
// observer interface.
func Fan[T comparable](items []T, wrap func([]T) T) T {
	var zero T
	f := make([]T, 0, len(items))
	for _, it := range items {
		if it != zero {
			f = append(f, it)
		}
	}
	switch len(f) {
	case 0:
		return zero
	case 1:
		return f[0]
	}
	return wrap(f)
}

func (f Fanout[E]) OnAcquire(ctx context.Context, e E) {
	for _, h := range f {
		h.OnAcquire(ctx, e)
	}
}

func (f Fanout[E]) OnRenew(ctx context.Context, e E) {
	for _, h := range f {
		h.OnRenew(ctx, e)
	}
}

func (f Fanout[E]) OnRelease(ctx context.Context, e E) {
	for _, h := range f {
		h.OnRelease(ctx, e)
	}
}

func (f Fanout[E]) OnLost(ctx context.Context, e E) {
	for _, h := range f {
		h.OnLost(ctx, e)
	}
}

// Each returns Hooks that call f for every event, whichever the hook (the
// event says which operation it was).
func Each[E any](f func(ctx context.Context, e E)) Hooks[E] { return each[E](f) }

type each[E any] func(ctx context.Context, e E)

func (f each[E]) OnAcquire(ctx context.Context, e E) { f(ctx, e) }
func (f each[E]) OnRenew(ctx context.Context, e E)   { f(ctx, e) }
func (f each[E]) OnRelease(ctx context.Context, e E) { f(ctx, e) }
func (f each[E]) OnLost(ctx context.Context, e E)    { f(ctx, e) }

// Call invokes the hook of h that op names ("acquire", "renew",
// "release", "lost"); other names call nothing. It is how kvlock and
// kvlease hand an event to their observer.
func Call[E any](ctx context.Context, h Hooks[E], op string, e E) {
	switch op {
	case "acquire":
		h.OnAcquire(ctx, e)
	case "renew":
		h.OnRenew(ctx, e)
	case "release":
		h.OnRelease(ctx, e)
	case "lost":
		h.OnLost(ctx, e)
	}
}
