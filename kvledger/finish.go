package kvledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Outcome is how the runtime ends one claim. Only package worker writes
// one (through the protocol in kvledger/internal/ledgerrt, runtime_hooks.go);
// it is exported because that protocol's signatures name it. A user that
// claims without the runtime ends a claim with Complete or Release.
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
	// Uncount, with StatusPending, takes this claim's attempt back, in
	// the write that gives the claim back: a claim whose handler never
	// started (the runtime's rule: an attempt counts only when its handler
	// ran), a drain that stopped the handler, a handler's GiveBack.
	Uncount bool
	// Snooze, with StatusPending and Uncount, is a handler's snooze: the
	// record counts it (Snoozes), keeps its LastError and names the
	// write SnoozedEvent.
	Snooze bool
}

// finish ends the caller's claim with o, checked like Complete
// (ErrNoKey, ErrFenced, ErrNotClaimed). StatusCompleted and StatusFailed
// finish the record as Complete does, with o.Result and o.Error stored,
// named CompletedEvent as Complete's write; a failure blocks its
// dependents. StatusPending writes the record
// pending again with no owner, keeping its fence (the next claim
// outbids this one), with RunAt = o.RunAt and LastError = o.Error, named
// RetriedEvent (ReleasedEvent when the attempt is uncounted, or when
// o.Error is empty and RunAt is zero).
//
// A finish sent again after an earlier send whose answer was lost (the
// server went away) finds the record no longer claimed. When the record
// is what o makes of the claim at fence (landed), that earlier send
// landed: finish returns the record as stored (and runs what follows a
// failure), not ErrNotClaimed, so the runtime reports the outcome the
// record holds.
func (l *Ledger) finish(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, fence FenceToken, o Outcome, now time.Time) (TaskState, error) {
	if err := checkOutcome(key, o); err != nil {
		return TaskState{}, err
	}
	rec, err := l.endClaim(ctx, key, owner, fence, func(cur TaskState) TaskState {
		return finishNext(cur, actor, o, now)
	}, finishLabel, l.finishAfter(ctx, actor, key, o, now))
	if !errors.Is(err, ErrNotClaimed) {
		return rec, err
	}
	cur, lerr := l.load(ctx, key)
	if lerr != nil || !landed(cur, owner, fence, o) {
		return rec, err
	}
	return cur, l.ended(ctx, cur, 0, finishLabel, l.finishAfter(ctx, actor, key, o, now))
}

// landed reports whether cur, a record that is no longer claimed, is the
// one the outcome o of owner's claim at fence wrote: the outcome keeps
// the claim's fence (a takeover raises it), and nobody else writes the
// same status, event and error at that fence.
func landed(cur TaskState, owner OwnerID, fence FenceToken, o Outcome) bool {
	if cur.Fence != fence || cur.Status != o.Status {
		return false
	}
	if (o.Error != "" || o.Status != StatusCompleted) && cur.LastError != TruncateError(o.Error) {
		return false
	}
	want := finishNext(TaskState{}, "", o, time.Time{}).LastEvent
	if o.Status != StatusPending {
		return cur.Owner == owner && cur.LastEvent == want
	}
	return cur.Owner == "" && cur.LastEvent == want
}

// finishLabel names the dependency walk of a failed outcome in its error.
const finishLabel = "failed, blocking its dependents"

// checkOutcome refuses an outcome finish cannot write.
func checkOutcome(key IdempotencyKey, o Outcome) error {
	switch o.Status {
	case StatusCompleted, StatusFailed, StatusPending:
	default:
		return fmt.Errorf("%w: %q", ErrUnknownStatus, string(o.Status))
	}
	if len(o.Result) > 0 && o.Status != StatusCompleted {
		return fmt.Errorf("%w: key %q: a result needs StatusCompleted", ErrInvalidState, string(key))
	}
	if o.Snooze && (o.Status != StatusPending || !o.Uncount) {
		return fmt.Errorf("%w: key %q: a snooze is pending and uncounted", ErrInvalidState, string(key))
	}
	return nil
}

// finishNext is the record o makes of the claimed record cur: the one
// transition of an outcome, for finish and finishAsync.
func finishNext(cur TaskState, actor Actor, o Outcome, now time.Time) TaskState {
	next := cur.clone()
	next.LeaseUntil, next.Lease, next.UpdatedBy, next.UpdatedAt = time.Time{}, "", actor, now
	if (o.Error != "" || o.Status != StatusCompleted) && !o.Snooze {
		next.LastError = TruncateError(o.Error)
	}
	switch o.Status {
	case StatusPending:
		next.Status, next.Owner, next.RunAt = StatusPending, "", o.RunAt
		next.LastEvent = RetriedEvent
		if o.Uncount || (o.Error == "" && o.RunAt.IsZero()) {
			next.LastEvent = ReleasedEvent
		}
		if o.Uncount && next.Attempts > 0 {
			next.Attempts--
		}
		if o.Snooze {
			next.Snoozes++
			next.LastEvent = SnoozedEvent
		}
	default:
		next.Status, next.Result, next.LastEvent = o.Status, o.Result, CompletedEvent
	}
	return next
}

// finishAfter is what runs once an outcome landed: a failure blocks the
// task's dependents; nil otherwise.
func (l *Ledger) finishAfter(ctx context.Context, actor Actor, key IdempotencyKey, o Outcome, now time.Time) func() error {
	if o.Status != StatusFailed {
		return nil
	}
	return func() error { return l.blockDependents(ctx, actor, key, now) }
}

// commit validates next and writes it over cur; when the write lands,
// ended runs its tail (see ended): a claim cur held loses its lease, if
// this Ledger took it, whoever ends it (its owner's Complete or Release,
// an operator's Cancel, an exhausted takeover), then after (a dependency
// walk) runs, its error returned with the written record, labelled with
// what the walk was doing. ok false means the compare-and-swap lost and
// nothing ran.
func (l *Ledger) commit(ctx context.Context, cur, next TaskState, label string, after func() error) (TaskState, bool, error) {
	if err := next.Validate(); err != nil {
		return TaskState{}, false, err
	}
	rec, ok, err := l.write(ctx, cur, true, next)
	if err != nil || !ok {
		return TaskState{}, false, err
	}
	var ends FenceToken
	if cur.Status == StatusClaimed {
		ends = cur.Fence
	}
	return rec, true, l.ended(ctx, rec, ends, label, after)
}

// ended is what follows a write of rec that landed. When the write ended
// the caller's claim at fence ends (not zero), the claim's lease, if this
// Ledger took it, is deleted first (dropHeld): from the write on no
// record names it, so it must not stay live for the dependency walk that
// follows. Then after (nil: none) runs, its error labelled with label.
func (l *Ledger) ended(ctx context.Context, rec TaskState, ends FenceToken, label string, after func() error) error {
	if ends != 0 {
		l.dropHeld(ctx, rec.Key, ends)
	}
	if after == nil {
		return nil
	}
	if err := after(); err != nil {
		return fmt.Errorf("kvledger: %q %s: %w", string(rec.Key), label, err)
	}
	return nil
}

// Results returns the results of key's completed needs, by need. A need
// that is not completed, or left no result, is absent.
func (l *Ledger) Results(ctx context.Context, key IdempotencyKey) (map[IdempotencyKey]json.RawMessage, error) {
	rec, found, err := l.store.Load(ctx, key)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: %q", ErrNoKey, string(key))
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
