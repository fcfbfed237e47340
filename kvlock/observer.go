package kvlock

import (
	"context"
	"log/slog"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/opstats"
)

// Op names what an Event reports: the same names as kvlease's.
type Op = kvlease.Op

// The operations an Observer sees.
const (
	OpAcquire = kvlease.OpAcquire
	OpRenew   = kvlease.OpRenew
	OpRelease = kvlease.OpRelease
	OpLost    = kvlease.OpLost
)

// Event describes one finished operation.
type Event struct {
	// Op is what happened; Name is Config.Name; Key the lock key (or
	// election name).
	Op   Op
	Name string
	Key  string
	// Token is the lock's fencing token (0 when nothing was acquired).
	Token uint64
	// Duration is how long the operation took, waiting included (for
	// OpLost: how long the lock had been held).
	Duration time.Duration
	// Acquired is false for an acquisition that found the lock held
	// (TryAcquire) or gave up; Fair is whether it queued.
	Acquired bool
	Fair     bool
	// Err is the operation's error, or for OpLost the loss cause.
	Err error
}

// Observer receives one call per finished operation, on the goroutine
// that did it: implementations must be quick and safe for concurrent use.
// Hooks are called after the fact with durations, so a metrics adapter
// records histograms and counters, and a tracing adapter starts each span
// with a start time of time.Now().Add(-e.Duration) and ends it at once.
//
// The OpenTelemetry adapter is the module
// github.com/natscoord/natscoord/kvlock/otelobserver (a module of its own,
// so kvlock does not import OTel): a duration histogram per operation, a
// loss counter, and one backdated span per operation. Observer is
// opstats.Hooks of Event, natscoord's one observer shape (see
// opstats.Hooks), as kvlease's, kvledger's and the task runtime's are.
type Observer interface {
	OnAcquire(ctx context.Context, e Event)
	OnRenew(ctx context.Context, e Event)
	OnRelease(ctx context.Context, e Event)
	OnLost(ctx context.Context, e Event)
}

// SlogObserver logs every event to Logger (nil: slog.Default()):
// acquisitions, renewals and releases at Level (default Info, the zero
// Level) and losses and failed operations at Warn.
type SlogObserver struct {
	Logger *slog.Logger
	Level  slog.Level
}

func (o SlogObserver) log(ctx context.Context, e Event) {
	l := o.Logger
	if l == nil {
		l = slog.Default()
	}
	lvl := o.Level
	if e.Err != nil {
		lvl = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("lock", e.Name), slog.String("key", e.Key), slog.Uint64("token", e.Token),
		slog.Duration("took", e.Duration),
	}
	if e.Op == OpAcquire {
		attrs = append(attrs, slog.Bool("acquired", e.Acquired), slog.Bool("fair", e.Fair))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("err", e.Err))
	}
	l.LogAttrs(ctx, lvl, "kvlock: "+string(e.Op), attrs...)
}

// OnAcquire logs e.
func (o SlogObserver) OnAcquire(ctx context.Context, e Event) { o.log(ctx, e) }

// OnRenew logs e.
func (o SlogObserver) OnRenew(ctx context.Context, e Event) { o.log(ctx, e) }

// OnRelease logs e.
func (o SlogObserver) OnRelease(ctx context.Context, e Event) { o.log(ctx, e) }

// OnLost logs e at Warn.
func (o SlogObserver) OnLost(ctx context.Context, e Event) { o.log(ctx, e) }

// clock is clock.Start: the time now when an observer will see
// durations, else the zero time: a lock cycle reads the clock several
// times only to report them.
func (l *Locker) clock() time.Time { return clock.Start(l.cfg.Observer != nil) }

// since is clock.Since: the duration since a time from clock.
func since(t time.Time) time.Duration { return clock.Since(t) }

// observe dispatches e to the configured observer, if any.
func (l *Locker) observe(ctx context.Context, e Event) { dispatch(ctx, l.cfg, e) }

// dispatch hands e to cfg.Observer's hook for e.Op, if there is an
// observer; both backends report through it.
func dispatch(ctx context.Context, cfg Config, e Event) {
	o := cfg.Observer
	if o == nil {
		return
	}
	e.Name = cfg.Name
	opstats.Call[Event](ctx, o, string(e.Op), e)
}
