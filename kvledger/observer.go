package kvledger

import (
	"context"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/opstats"
)

// WriteEvent describes one compare-and-swap write of a task record, as an
// Observer sees it. It is not a ledger event (events.Event, named by
// EventNames), which every write is, stored in the bucket's stream for
// every reader: a WriteEvent goes to this process's Observer only.
type WriteEvent struct {
	// Source is the ledger's event source (the bucket for a KVStore).
	Source string
	Key    IdempotencyKey
	// Status is the status written (empty when nothing was written).
	Status Status
	// Swapped is false when the record had changed (a lost race, which
	// the Ledger resolves itself) or Err is set.
	Swapped  bool
	Duration time.Duration
	Err      error
}

// Observer receives one call per compare-and-swap write of a record
// (claims, renewals, releases, completions, rebases, blocking; the first
// admission of a key, which a store may do by insert-if-absent, is not
// included), on the goroutine that wrote: be quick and safe for
// concurrent use. It has natscoord's one observer shape (see opstats):
// one On<Op> method per operation, called after the fact with a payload
// that carries its Duration and Err, joined by Observers and recorded by
// RecorderObserver, as kvlease, kvlock and the runtime's are.
type Observer interface {
	OnWrite(ctx context.Context, e WriteEvent)
}

// WithObserver makes the Ledger report its writes to o (see Observer).
// The store must implement Swapper, as both stores of this package do.
// A nil o adds nothing, as in every other package's configuration: that
// is what Observers returns when it is given no observer.
func WithObserver(o Observer) Option {
	return func(l *Ledger) error {
		switch {
		case o == nil:
			return nil
		case l.swap == nil:
			return fmt.Errorf("%w: WithObserver needs a store that implements Swapper", ErrInvalidConfig)
		}
		l.swap = observedSwap{inner: l.swap, o: o, l: l}
		return nil
	}
}

type observedSwap struct {
	inner Swapper
	o     Observer
	l     *Ledger
}

func (s observedSwap) Swap(ctx context.Context, key IdempotencyKey, old, new TaskState) (TaskState, bool, error) {
	start := clock.Start(true)
	rec, ok, err := s.inner.Swap(ctx, key, old, new)
	e := WriteEvent{Source: s.l.source, Key: key, Swapped: ok, Duration: clock.Since(start), Err: err}
	if ok {
		e.Status = rec.Status
	}
	s.o.OnWrite(ctx, e)
	return rec, ok, err
}

// Observers returns an Observer that hands every event to each of obs in
// order (nil entries are skipped): nil when none is left, the only one
// unwrapped (opstats.Fan, as every package's Observers).
func Observers(obs ...Observer) Observer {
	return opstats.Fan(obs, func(f []Observer) Observer { return fanout(f) })
}

type fanout []Observer

func (f fanout) OnWrite(ctx context.Context, e WriteEvent) {
	for _, o := range f {
		o.OnWrite(ctx, e)
	}
}

// RecorderObserver returns an Observer that records every write in r:
// component "kvledger", name the event source, op "write", outcome the
// status written, "conflict" (the record had changed) or "error".
func RecorderObserver(r *opstats.Recorder) Observer { return recorder{r} }

type recorder struct{ r *opstats.Recorder }

func (r recorder) OnWrite(_ context.Context, e WriteEvent) {
	r.r.Record(opstats.Labels{Component: "kvledger", Name: e.Source, Op: "write", Outcome: e.Outcome()}, e.Duration)
}

// Outcome classifies the write: the status written, "conflict" (the
// record had changed) or "error": the outcome label of RecorderObserver,
// for any adapter to use.
func (e WriteEvent) Outcome() string {
	switch {
	case e.Err != nil:
		return "error"
	case !e.Swapped:
		return "conflict"
	}
	return string(e.Status)
}
