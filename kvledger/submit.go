package kvledger

import (
	"context"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Submission is one task to admit with the runtime's options. Key, Seq,
// Task and Needs mean what they mean for Admit.
type Submission struct {
	Key   IdempotencyKey
	Seq   Sequence
	Task  any
	Needs []IdempotencyKey

	// Kind routes the task to the handlers registered for it (the
	// runtime's worker.Worker.Handle). Default "": only a worker with a
	// handler for the empty kind runs it.
	Kind string
	// RunAt, when set, is the earliest time the task may start. Delay,
	// when positive, sets RunAt to Now+Delay instead (setting both is an
	// error). Runtime workers compare RunAt with their own clock.
	RunAt time.Time
	Delay time.Duration
	// MaxAttempts bounds how often the runtime runs the task before it
	// fails it. Default 0: the worker's Config.MaxAttempts.
	MaxAttempts int
	// Now is the admission time (CreatedAt, UpdatedAt). Default: the
	// clock at the call.
	Now time.Time
}

// runtimeFields are the fields a Submission adds to an admitted record.
type runtimeFields struct {
	kind        string
	runAt       time.Time
	maxAttempts int
}

func (rt runtimeFields) apply(s *TaskState) {
	s.Kind, s.RunAt, s.MaxAttempts = rt.kind, rt.runAt, rt.maxAttempts
}

// resolve checks sub and fills its defaults.
func (sub Submission) resolve() (Submission, runtimeFields, error) {
	if sub.Now.IsZero() {
		sub.Now = time.Now()
	}
	switch {
	case sub.Delay < 0:
		return sub, runtimeFields{}, fmt.Errorf("%w: key %q: negative Delay %v", ErrInvalidState, string(sub.Key), sub.Delay)
	case sub.Delay > 0 && !sub.RunAt.IsZero():
		return sub, runtimeFields{}, fmt.Errorf("%w: key %q: both RunAt and Delay set", ErrInvalidState, string(sub.Key))
	case sub.MaxAttempts < 0:
		return sub, runtimeFields{}, fmt.Errorf("%w: key %q: negative MaxAttempts", ErrInvalidState, string(sub.Key))
	}
	runAt := sub.RunAt
	if sub.Delay > 0 {
		runAt = sub.Now.Add(sub.Delay)
	}
	return sub, runtimeFields{kind: sub.Kind, runAt: runAt, maxAttempts: sub.MaxAttempts}, nil
}

// Submit admits sub exactly as Admit admits a task (idempotency, rebase
// by a higher sequence, blocking by a failed need), with the runtime's
// kind, run-at time and attempt bound stored in the record.
func (l *Ledger) Submit(ctx context.Context, actor Actor, sub Submission) (bool, error) {
	sub, rt, err := sub.resolve()
	if err != nil {
		return false, err
	}
	return l.admit(ctx, actor, sub.Key, sub.Seq, sub.Task, sub.Now, sub.Needs, rt)
}

// AdmitMany submits many tasks at once and reports, per submission in
// order, whether it was admitted. On a KVStore whose server allows
// atomic batch publishes, new keys without needs are inserted in atomic
// batches of up to 1000 (all of a batch or none), one round trip per
// batch; anything else (a duplicate, a task with needs, a server without
// atomic publish) goes through Submit one by one. The first error stops
// the call; the returned slice then says which submissions were
// admitted before it.
func (l *Ledger) AdmitMany(ctx context.Context, actor Actor, subs []Submission) ([]bool, error) {
	out := make([]bool, len(subs))
	bi, batched := l.store.(batchInserter)
	batched = batched && len(subs) > 1 && bi.atomicBatches(ctx)
	for start := 0; start < len(subs); {
		one := 1 // how many to submit one by one from start
		if batched {
			n, refused, err := l.admitBatch(ctx, actor, bi, subs[start:], out[start:])
			if err != nil {
				return out, err
			}
			if n > 0 {
				start += n
				continue
			}
			one = max(one, refused)
		}
		for end := start + one; start < end; start++ {
			ok, err := l.Submit(ctx, actor, subs[start])
			if err != nil {
				return out, err
			}
			out[start] = ok
		}
	}
	return out, nil
}

// admitBatch inserts the longest run at the head of subs (at most
// kvx.MaxBatch) of new tasks without needs as one atomic batch and
// publishes their events. It returns how many it admitted; 0 when the
// head cannot be batched, or when the batch was refused (a key exists:
// refused then says how many submissions the batch held, which the
// caller submits one by one).
func (l *Ledger) admitBatch(ctx context.Context, actor Actor, bi batchInserter, subs []Submission, out []bool) (admitted, refused int, err error) {
	var recs []TaskState
	seen := make(map[IdempotencyKey]bool)
	for _, sub := range subs {
		if len(recs) == kvx.MaxBatch || len(sub.Needs) > 0 || seen[sub.Key] {
			break
		}
		sub, rt, err := sub.resolve()
		if err != nil {
			break
		}
		rec := TaskState{
			Key: sub.Key, Status: StatusPending, Sequence: sub.Seq, Task: sub.Task,
			CreatedBy: actor, CreatedAt: sub.Now, UpdatedBy: actor, UpdatedAt: sub.Now, LastEvent: AdmittedEvent,
		}
		rt.apply(&rec)
		if rec.Validate() != nil || checkNewKeys(rec.Key, nil) != nil {
			break // Submit reports it
		}
		seen[sub.Key] = true
		recs = append(recs, rec)
	}
	if len(recs) < 2 {
		return 0, 0, nil
	}
	stored, ok, err := bi.insertBatch(ctx, recs)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, len(recs), nil
	}
	for i := range stored {
		out[i] = true
	}
	if n, err := l.writtenBatch(ctx, stored); err != nil {
		return n, 0, err
	}
	return len(stored), 0, nil
}
