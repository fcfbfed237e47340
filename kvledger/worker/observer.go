package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/natscoord/natscoord/kvledger"
)

// Result says how one attempt ended.
type Result string

// The results an Observer sees.
const (
	// ResultCompleted: the handler returned nil; the task is completed.
	ResultCompleted Result = "completed"
	// ResultRetried: the handler failed; the task will run again at
	// Event.RunAt.
	ResultRetried Result = "retried"
	// ResultFailed: the handler failed permanently or for the last
	// allowed attempt; the task is failed and its dependents blocked.
	ResultFailed Result = "failed"
	// ResultReleased: the claim was given back, the attempt not counted:
	// its handler never started (a claim ahead ended by a drain or the
	// loss of the worker's lease; Err says which), the worker drained
	// a running handler, or the handler returned GiveBack.
	ResultReleased Result = "released"
	// ResultSnoozed: the handler returned Snooze; the task will run
	// again at Event.RunAt, the attempt not counted.
	ResultSnoozed Result = "snoozed"
	// ResultCancelled: an operator cancelled the task while it ran.
	ResultCancelled Result = "cancelled"
	// ResultLost: the claim could not be confirmed (lease lost, or the
	// record moved on) and nothing was written: the record shows the
	// attempt lost (taken over), counted.
	ResultLost Result = "lost"
)

// Event describes one attempt.
type Event struct {
	Key     kvledger.IdempotencyKey
	Kind    string
	Owner   kvledger.OwnerID
	Fence   kvledger.FenceToken
	Attempt int
	// Result and Err are set on finish; Err is the handler's error.
	Result Result
	Err    error
	// RunAt is the next attempt's time (ResultRetried).
	RunAt time.Time
	// Duration is the handler's run time (finish only).
	Duration time.Duration
	// Due is when the task became due as far as the record its claim
	// replaced dates it: the later of its RunAt and that record's last
	// write (its admission, a retry's, a release's), by the clock of the
	// process that wrote it. Zero when the record does not date it: a
	// takeover (the claim it replaced had started the task already) or
	// a task with needs (it became due when its last need completed,
	// which its own record does not say).
	Due time.Time
	// Pickup is from Due to the claim that started this attempt, by the
	// worker's Config.Clock (0 when Due is zero).
	Pickup time.Duration
}

// Outcome is the attempt's Result, or "started" for OnStart's event
// (no Result yet): the outcome label of RecorderObserver, for any adapter
// to use, as kvlease's, kvlock's and kvledger's payloads have theirs.
func (e Event) Outcome() string {
	if e.Result == "" {
		return "started"
	}
	return string(e.Result)
}

// Observer receives one call when a handler starts and one when its
// attempt has been recorded, on the goroutine that ran it:
// implementations must be quick and safe for concurrent use. It has
// natscoord's one observer shape (see opstats.Hooks): joined by
// Observers, recorded by RecorderObserver, as kvlease's, kvlock's and
// kvledger's are.
type Observer interface {
	OnStart(ctx context.Context, e Event)
	OnFinish(ctx context.Context, e Event)
}

// SlogObserver logs every attempt to Logger (default slog.Default()),
// with the shape of kvlock.SlogObserver: starts at Debug, finishes at
// Level (default Info), and failures, retries, losses and give-backs at
// Warn. Its zero value is ready to use.
type SlogObserver struct {
	Logger *slog.Logger
	Level  slog.Level
}

func (o SlogObserver) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// OnStart logs e at Debug.
func (o SlogObserver) OnStart(ctx context.Context, e Event) {
	o.logger().LogAttrs(ctx, slog.LevelDebug, "worker: task started",
		slog.String("key", string(e.Key)), slog.String("kind", e.Kind), slog.Int("attempt", e.Attempt), slog.Uint64("fence", uint64(e.Fence)))
}

// OnFinish logs e at Level, or at Warn when the attempt went wrong.
func (o SlogObserver) OnFinish(ctx context.Context, e Event) {
	lvl := o.Level
	if e.Result != ResultCompleted && e.Result != ResultReleased && e.Result != ResultSnoozed || isGiveBack(e.Err) {
		lvl = slog.LevelWarn // a give-back is a fault of this worker's
	}
	attrs := []slog.Attr{
		slog.String("key", string(e.Key)), slog.String("kind", e.Kind), slog.Int("attempt", e.Attempt), slog.Uint64("fence", uint64(e.Fence)),
		slog.String("result", string(e.Result)), slog.Duration("took", e.Duration),
	}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("err", e.Err))
	}
	if !e.RunAt.IsZero() {
		attrs = append(attrs, slog.Time("run_at", e.RunAt))
	}
	o.logger().LogAttrs(ctx, lvl, "worker: task finished", attrs...)
}

// logAttempt writes Config.Logger's line for an attempt that did not
// complete, as the Logger's doc promises: a failure at Error, a retry,
// a give-back or a loss at Warn, a cancellation or a drain's release at
// Info. Every end of an attempt passes here (Worker.observe).
func (w *Worker) logAttempt(ctx context.Context, e Event) {
	lvl := slog.LevelWarn
	switch {
	case e.Result == ResultCompleted:
		return
	case e.Result == ResultFailed:
		lvl = slog.LevelError
	case e.Result == ResultCancelled, e.Result == ResultSnoozed, e.Result == ResultReleased && !isGiveBack(e.Err):
		lvl = slog.LevelInfo
	}
	l := w.cfg.Logger
	if !l.Enabled(ctx, lvl) {
		return
	}
	attrs := []slog.Attr{slog.String("key", string(e.Key)), slog.String("kind", e.Kind),
		slog.Int("attempt", e.Attempt), slog.Uint64("fence", uint64(e.Fence))}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("err", e.Err))
	}
	if !e.RunAt.IsZero() {
		attrs = append(attrs, slog.Time("run_at", e.RunAt))
	}
	l.LogAttrs(ctx, lvl, "worker: attempt "+string(e.Result), attrs...)
}
