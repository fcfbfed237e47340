package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/natscoord/natscoord/kvledger"
)

// Handler runs one attempt of a task. Returning nil completes the task;
// an error retries it (up to its MaxAttempts, with backoff) unless it is
// Permanent, which fails it at once. A panic counts as a failed attempt.
//
// ctx carries the claim (FenceFrom, TaskFrom) and is cancelled as soon as
// the claim can no longer be confirmed (cause ErrClaimLost), when an
// operator cancels the task (ErrCancelled) or when a drain runs out of
// time (ErrDraining); context.Cause tells which. Side effects outside
// the ledger should carry the fence.
type Handler func(ctx context.Context, t *Task) error

// Task is the claim a handler runs under: the record as claimed, and a
// place for its result.
type Task struct {
	w   *Worker
	rec kvledger.TaskState

	mu     sync.Mutex
	result json.RawMessage
}

// Key returns the task's idempotency key.
func (t *Task) Key() kvledger.IdempotencyKey { return t.rec.Key }

// Kind returns the task's kind.
func (t *Task) Kind() string { return t.rec.Kind }

// Group returns the task's concurrency group ("" for none).
func (t *Task) Group() string { return t.rec.Group }

// Priority returns the task's priority.
func (t *Task) Priority() int { return t.rec.Priority }

// Fence returns the claim's fence token.
func (t *Task) Fence() kvledger.FenceToken { return t.rec.Fence }

// Attempt returns this attempt's number, from 1.
func (t *Task) Attempt() int { return t.rec.Attempts }

// MaxAttempts returns the attempts the task is allowed (the record's, or
// the worker's default).
func (t *Task) MaxAttempts() int { return kvledger.AttemptLimit(t.rec, t.w.cfg.MaxAttempts) }

// Payload returns the task's payload as stored (see kvledger.TaskState).
func (t *Task) Payload() any { return t.rec.Task }

// Decode converts the payload into v (a pointer) by a JSON round trip.
func (t *Task) Decode(v any) error {
	b, err := json.Marshal(t.rec.Task)
	if err != nil {
		return fmt.Errorf("worker: payload of %q: %w", string(t.rec.Key), err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("worker: payload of %q: %w", string(t.rec.Key), err)
	}
	return nil
}

// Record returns the record as this claim wrote it.
func (t *Task) Record() kvledger.TaskState { return t.rec }

// SetResult stores v's JSON as the task's result when the handler
// returns nil (ignored otherwise). The tasks that need this one read it
// with Task.NeedResult. It returns ErrResultTooLarge above
// Config.MaxResultBytes.
func (t *Task) SetResult(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("worker: result of %q: %w", string(t.rec.Key), err)
	}
	return t.SetRawResult(b)
}

// SetRawResult is SetResult for JSON that is already encoded.
func (t *Task) SetRawResult(b json.RawMessage) error {
	if len(b) > t.w.cfg.MaxResultBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(b), t.w.cfg.MaxResultBytes)
	}
	if !json.Valid(b) {
		return fmt.Errorf("%w: result of %q is not valid JSON", ErrInvalidConfig, string(t.rec.Key))
	}
	t.mu.Lock()
	t.result = append(json.RawMessage(nil), b...)
	t.mu.Unlock()
	return nil
}

func (t *Task) resultBytes() json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.result
}

// NeedResult decodes the result of need (one of the task's needs, which
// is completed since the task is running) into v. It returns false when
// the need left no result.
func (t *Task) NeedResult(ctx context.Context, need kvledger.IdempotencyKey, v any) (bool, error) {
	rec, found, err := t.w.l.State(ctx, need)
	if err != nil {
		return false, err
	}
	if !found || len(rec.Result) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(rec.Result, v); err != nil {
		return false, fmt.Errorf("worker: result of %q: %w", string(need), err)
	}
	return true, nil
}

// HandleJSON registers fn for kind with the payload decoded into a T.
// A payload that does not decode fails the task permanently.
func HandleJSON[T any](w *Worker, kind string, fn func(ctx context.Context, t *Task, payload T) error) error {
	return w.Handle(kind, func(ctx context.Context, t *Task) error {
		var p T
		if err := t.Decode(&p); err != nil {
			return Permanent(err)
		}
		return fn(ctx, t, p)
	})
}

type ctxKey struct{}

// taskCtx is a handler's context below its cancellation: the worker's
// values with the attempt's Task under ctxKey (what context.WithValue
// makes), kept in the attempt's run rather than allocated per attempt.
type taskCtx struct {
	context.Context
	t *Task
}

func (c *taskCtx) Value(key any) any {
	if _, ok := key.(ctxKey); ok {
		return c.t
	}
	return c.Context.Value(key)
}

// TaskFrom returns the task a handler's ctx belongs to.
func TaskFrom(ctx context.Context) (*Task, bool) {
	t, ok := ctx.Value(ctxKey{}).(*Task)
	return t, ok
}

// FenceFrom returns the fence token of the claim a handler's ctx belongs
// to.
func FenceFrom(ctx context.Context) (kvledger.FenceToken, bool) {
	t, ok := TaskFrom(ctx)
	if !ok {
		return 0, false
	}
	return t.Fence(), true
}
