package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// Task is one attempt of a task of argument type T, as its handler sees
// it: the decoded arguments and the claim it runs under.
type Task[T Args] struct {
	// Args are the submitted arguments, decoded.
	Args T
	// Key is the task's idempotency key.
	Key kvledger.IdempotencyKey
	// Fence is the claim's fencing token: pass it with side effects that
	// a later attempt must be able to refuse.
	Fence kvledger.FenceToken
	// Attempt is this attempt's number, from 1, of MaxAttempts.
	Attempt, MaxAttempts int

	t *worker.Task
}

// SetResult stores v's JSON as the task's result when the handler returns
// nil (64 KiB at most by default); tasks that need this one read it with
// NeedResult.
func (t *Task[T]) SetResult(v any) error { return t.t.SetResult(v) }

// NeedResult decodes the result of need, one of this task's needs, into
// v; false when it stored none.
func (t *Task[T]) NeedResult(ctx context.Context, need kvledger.IdempotencyKey, v any) (bool, error) {
	return t.t.NeedResult(ctx, need, v)
}

// Record returns the task's record as this attempt's claim wrote it.
func (t *Task[T]) Record() kvledger.TaskState { return t.t.Record() }

// WorkFunc runs one attempt. nil completes the task; an error retries it
// with backoff until its attempts are used up, unless wrapped with
// Permanent, which fails it at once, or GiveBack, which hands it back
// uncounted. A panic is a failed attempt. ctx ends
// when the claim is lost, the task is cancelled or a drain runs out of
// time, or the attempt's Timeout passed (context.Cause says which:
// ErrTimeout for the last). Returning Snooze(d) runs the task again
// after d, uncounted.
type WorkFunc[T Args] func(ctx context.Context, t *Task[T]) error

// Permanent marks err as not worth retrying: the task fails at once.
func Permanent(err error) error { return worker.Permanent(err) }

// GiveBack marks err as the worker's, not the task's (a local resource is
// missing): the task is pending again after the first retry's pause, this
// attempt not counted, "given back: " and err its last error; a GiveBack
// anywhere in the error (under Permanent, in errors.Join) wins. The attempt limit does not
// bound a task given back again and again; stop the client if the cause
// will not pass.
func GiveBack(err error) error { return worker.GiveBack(err) }

// Snooze is what a handler returns to run its task again after d: the
// attempt is not counted, the task's last error is kept, and the record
// counts the snooze. A task snoozed Config.MaxSnoozes times (100 by
// default) fails at its next snooze (worker.ErrSnoozeLimit): the bound
// that stops a task from snoozing forever.
func Snooze(d time.Duration) error { return worker.Snooze(d) }

// ErrTimeout is the cause of a handler's ctx when its attempt ran out of
// time (SubmitOpts.Timeout, Config.Timeout); the attempt fails with it.
var ErrTimeout = worker.ErrTimeout

// AddWorker makes c run fn for tasks of T's kind. Call it before Start;
// a kind has one worker function per client.
func AddWorker[T Args](c *Client, fn WorkFunc[T]) error {
	if fn == nil {
		return fmt.Errorf("%w: nil WorkFunc", ErrInvalidConfig)
	}
	var zero T
	kind := zero.Kind()
	if kind == "" {
		return fmt.Errorf("%w: %T has an empty Kind", ErrInvalidArgs, zero)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.started || c.closed:
		return ErrStarted
	case c.kinds[kind]:
		return fmt.Errorf("%w: %q", ErrDuplicateKind, kind)
	}
	err := c.worker.Handle(kind, func(ctx context.Context, wt *worker.Task) error {
		t := &Task[T]{Key: wt.Key(), Fence: wt.Fence(), Attempt: wt.Attempt(), MaxAttempts: wt.MaxAttempts(), t: wt}
		if err := wt.Decode(&t.Args); err != nil {
			// Arguments that do not decode never will: retrying cannot help.
			return worker.Permanent(err)
		}
		return fn(ctx, t)
	})
	if err != nil {
		return err
	}
	c.kinds[kind] = true
	return nil
}
