package kvledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Outcome is how the runtime ends one claim (Finish).
type Outcome struct {
	// Status is StatusCompleted, StatusFailed, or StatusPending to give
	// the claim back: a retry (RunAt set, the attempt counts) or a
	// release (the attempt does not count when Uncount is set).
	Status Status
	// Result is the completed task's JSON result (at most
	// MaxResultBytes), readable by the tasks that need it.
	Result json.RawMessage
	// Error is stored as LastError (cut by TruncateError).
	Error string
	// RunAt, with StatusPending, is the earliest time of the next
	// attempt.
	RunAt time.Time
	// Uncount, with StatusPending, takes this claim's attempt back (a
	// drain that stopped the handler is not a failed attempt).
	Uncount bool
}

// Finish ends the caller's claim with o, checked like Complete
// (ErrNoKey, ErrFenced, ErrNotClaimed). StatusCompleted and StatusFailed
// finish the record as Complete does, with o.Result and o.Error stored;
// a failure blocks its dependents. StatusPending writes the record
// pending again with no owner, keeping its fence (the next claim
// outbids this one), with RunAt = o.RunAt and LastError = o.Error, and
// publishes RetriedEvent (ReleasedEvent when o.Error is empty and RunAt
// is zero).
func (l *Ledger) Finish(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, fence FenceToken, o Outcome, now time.Time) (TaskState, error) {
	switch o.Status {
	case StatusCompleted, StatusFailed, StatusPending:
	default:
		return TaskState{}, fmt.Errorf("%w: %q", ErrUnknownStatus, string(o.Status))
	}
	if len(o.Result) > 0 && o.Status != StatusCompleted {
		return TaskState{}, fmt.Errorf("%w: key %q: a result needs StatusCompleted", ErrInvalidState, string(key))
	}
	for {
		cur, err := l.loadClaim(ctx, key, owner, fence)
		if err != nil {
			return TaskState{}, err
		}
		next := cur.clone()
		next.LeaseUntil, next.UpdatedBy, next.UpdatedAt = time.Time{}, actor, now
		if o.Error != "" || o.Status != StatusCompleted {
			next.LastError = TruncateError(o.Error)
		}
		switch o.Status {
		case StatusPending:
			next.Status, next.Owner, next.RunAt = StatusPending, "", o.RunAt
			next.LastEvent = RetriedEvent
			if o.Error == "" && o.RunAt.IsZero() {
				next.LastEvent = ReleasedEvent
			}
			if o.Uncount && next.Attempts > 0 {
				next.Attempts--
			}
		default:
			next.Status, next.Result, next.LastEvent = o.Status, o.Result, CompletedEvent
		}
		if err := next.Validate(); err != nil {
			return TaskState{}, err
		}
		rec, ok, err := l.write(ctx, cur, true, next)
		if err != nil {
			return TaskState{}, err
		}
		if !ok {
			continue
		}
		if o.Status == StatusFailed {
			if err := l.blockDependents(ctx, actor, key, now); err != nil {
				return rec, fmt.Errorf("kvledger: %q failed, blocking its dependents: %w", string(key), err)
			}
		}
		return rec, nil
	}
}

// Results returns the results of key's completed needs, by need. A need
// that is not completed, or left no result, is absent.
func (l *Ledger) Results(ctx context.Context, key IdempotencyKey) (map[IdempotencyKey]json.RawMessage, error) {
	rec, err := l.load(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make(map[IdempotencyKey]json.RawMessage, len(rec.Needs))
	for _, n := range rec.Needs {
		s, found, err := l.store.Load(ctx, n)
		if err != nil {
			return nil, err
		}
		if found && s.Status == StatusCompleted && len(s.Result) > 0 {
			out[n] = s.Result
		}
	}
	return out, nil
}
