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
	// ResultReleased: the worker drained and gave the claim back.
	ResultReleased Result = "released"
	// ResultCancelled: an operator cancelled the task while it ran.
	ResultCancelled Result = "cancelled"
	// ResultLost: the claim could not be confirmed (lease lost, or the
	// record moved on); nothing was written.
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
}

// Observer receives one call when a handler starts and one when its
// attempt has been recorded, on the goroutine that ran it:
// implementations must be quick and safe for concurrent use.
type Observer interface {
	OnStart(ctx context.Context, e Event)
	OnFinish(ctx context.Context, e Event)
}

// SlogObserver logs every attempt's finish at Info (Warn for failures,
// losses and retries) and starts at Debug.
func SlogObserver(l *slog.Logger) Observer { return slogObserver{l} }

type slogObserver struct{ l *slog.Logger }

func (o slogObserver) OnStart(ctx context.Context, e Event) {
	o.l.DebugContext(ctx, "task started", "key", string(e.Key), "kind", e.Kind, "attempt", e.Attempt, "fence", uint64(e.Fence))
}

func (o slogObserver) OnFinish(ctx context.Context, e Event) {
	level := slog.LevelInfo
	if e.Result != ResultCompleted && e.Result != ResultReleased {
		level = slog.LevelWarn
	}
	attrs := []any{"key", string(e.Key), "kind", e.Kind, "attempt", e.Attempt, "fence", uint64(e.Fence),
		"result", string(e.Result), "duration", e.Duration}
	if e.Err != nil {
		attrs = append(attrs, "err", e.Err.Error())
	}
	if !e.RunAt.IsZero() {
		attrs = append(attrs, "run_at", e.RunAt)
	}
	o.l.Log(ctx, level, "task finished", attrs...)
}
