package kvledger

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
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
	// Timeout bounds each attempt's handler (TaskState.TimeoutMS, stored
	// in whole milliseconds, rounded up). Default 0: the worker's
	// Config.Timeout.
	Timeout time.Duration
	// Group names the concurrency group the task counts against (see
	// TaskState.Group; at most MaxGroupBytes of UTF-8). Default "": none.
	Group string
	// Priority orders the ready tasks of one kind, higher first (see
	// TaskState.Priority). Default 0.
	Priority int
	// Now is the admission time (CreatedAt, UpdatedAt), on the caller's
	// clock (the worker's and the tasks client's Config.Clock). Default:
	// the system clock at the call.
	Now time.Time
}

// MaxTimeout bounds Submission.Timeout (a week: a handler meant to run
// longer should not hold a claim that long).
const MaxTimeout = 7 * 24 * time.Hour

// Timeout is the per-attempt bound the record states (TimeoutMS), 0
// when it states none.
func (t TaskState) Timeout() time.Duration { return time.Duration(t.TimeoutMS) * time.Millisecond }

// runtimeFields are the fields a Submission adds to an admitted record.
type runtimeFields struct {
	kind        string
	runAt       time.Time
	maxAttempts int
	group       string
	priority    int
	timeoutMS   int
}

func (rt runtimeFields) apply(s *TaskState) {
	s.Kind, s.RunAt, s.MaxAttempts = rt.kind, rt.runAt, rt.maxAttempts
	s.Group, s.Priority, s.TimeoutMS = rt.group, rt.priority, rt.timeoutMS
}

// Validate checks sub as its admission would before any write: every
// option on its own (a valid key and needs, none the key itself, no
// control character, a kind and group within their bounds, no negative
// Delay or MaxAttempts) and together (RunAt and Delay not both). Its
// errors are ErrInvalidState. Admission checks the same, so a caller
// that validates first (the tasks package) refuses exactly what
// admission would.
func (sub Submission) Validate() error {
	sub, rt, err := sub.resolve()
	if err != nil {
		return err
	}
	return checkAdmission(sub.Key, sub.Seq, sub.Needs, rt)
}

// resolve checks sub's timing and attempt options and fills its defaults.
func (sub Submission) resolve() (Submission, runtimeFields, error) {
	if sub.Now.IsZero() {
		sub.Now = clock.Real().Now()
	}
	switch {
	case sub.Delay < 0:
		return sub, runtimeFields{}, fmt.Errorf("%w: key %q: negative Delay %v", ErrInvalidState, string(sub.Key), sub.Delay)
	case sub.Delay > 0 && !sub.RunAt.IsZero():
		return sub, runtimeFields{}, fmt.Errorf("%w: key %q: both RunAt and Delay set", ErrInvalidState, string(sub.Key))
	case sub.MaxAttempts < 0:
		return sub, runtimeFields{}, fmt.Errorf("%w: key %q: negative MaxAttempts", ErrInvalidState, string(sub.Key))
	case sub.Timeout < 0 || sub.Timeout > MaxTimeout:
		return sub, runtimeFields{}, fmt.Errorf("%w: key %q: Timeout %v outside 0..%v", ErrInvalidState, string(sub.Key), sub.Timeout, MaxTimeout)
	}
	runAt := sub.RunAt
	if sub.Delay > 0 {
		runAt = sub.Now.Add(sub.Delay)
	}
	return sub, runtimeFields{kind: sub.Kind, runAt: runAt, maxAttempts: sub.MaxAttempts,
		group: sub.Group, priority: sub.Priority, timeoutMS: int((sub.Timeout + time.Millisecond - 1) / time.Millisecond)}, nil
}

// Submit admits sub exactly as Admit admits a task (idempotency, rebase
// by a higher sequence, blocking by a failed need), with the runtime's
// kind, run-at time and attempt bound stored in the record.
func (l *Ledger) Submit(ctx context.Context, actor Actor, sub Submission) (bool, error) {
	a, err := l.SubmitResult(ctx, actor, sub)
	return a.Admitted, err
}

// Admission is what SubmitResult returns: whether the submission was
// admitted, and the record the admission decided on.
type Admission struct {
	// Record is the record as the admission saw it, never read again
	// after it (a worker may claim the task the moment it is written):
	// when admitted, the record it wrote (pending, or blocked by a need,
	// also when its recheck of the needs blocked it); when not, the
	// stored record that made the submission a no-op (a Sequence at or
	// above the submission's, or a completed, failed or blocked record).
	Record TaskState
	// Admitted reports whether this submission wrote the record (a new
	// task or a rebase); false for an idempotent hit.
	Admitted bool
}

// SubmitResult is Submit that also returns the record the admission
// decided on (Admission). On an error the Admission is the zero value,
// except for an error of the recheck after the write, which comes with
// the record written and Admitted true, as Submit reports it.
func (l *Ledger) SubmitResult(ctx context.Context, actor Actor, sub Submission) (Admission, error) {
	sub, rt, err := sub.resolve()
	if err != nil {
		return Admission{}, err
	}
	rec, ok, err := l.admit(ctx, actor, sub.Key, sub.Seq, sub.Task, sub.Now, sub.Needs, rt)
	return Admission{Record: rec, Admitted: ok}, err
}

// AdmitMany submits many tasks at once and reports, per submission in
// order, whether it was admitted. On a KVStore (whose buckets allow
// atomic batch publishes from NewKVStore on, or from the first AdmitMany
// on an older bucket) new keys without needs are inserted in atomic
// batches of up to 1000 (all of a batch or none), one round trip per
// batch. A batch refused because some of its keys already have a record
// is sent again without them, and those keys go through Submit (false for
// a duplicate, as Submit says): one existing key costs the rest of its
// batch one more round trip, not one each. Anything else (a task with
// needs, a server without atomic publish: before nats-server 2.12, or a
// stream the caller may not update) goes through Submit one by one. The
// first error stops the call; the returned slice then says which
// submissions were admitted before it.
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

// admitBatch admits the longest run at the head of subs (at most
// kvx.MaxBatch) of new tasks without needs: as one atomic batch, and
// when the store names keys of the batch that already have a record, as
// a batch of the others while those keys go through Submit. It returns
// how many submissions it decided; 0 when the head cannot be batched, or
// when a batch was refused for another reason (refused then says how
// many submissions the batch held, which the caller submits one by one).
func (l *Ledger) admitBatch(ctx context.Context, actor Actor, bi batchInserter, subs []Submission, out []bool) (decided, refused int, err error) {
	// The run without needs bounds the batch; counted before allocating,
	// since AdmitMany calls this for each submission with needs (which
	// gets 0) and a batch of MaxBatch records is large.
	run := 0
	for run < min(len(subs), kvx.MaxBatch) && len(subs[run].Needs) == 0 {
		run++
	}
	if run < 2 {
		return 0, 0, nil
	}
	// Sized once: a TaskState is large, and growing the slice by
	// appending copied every record admitted so far several times.
	recs := make([]TaskState, 0, run)
	seen := make(map[IdempotencyKey]bool, run)
	for _, sub := range subs[:run] { // run has bounded the batch's length and its needs
		if seen[sub.Key] {
			break
		}
		sub, rt, err := sub.resolve()
		if err != nil {
			break
		}
		rec := TaskState{
			Key: sub.Key, Status: StatusPending, Sequence: sub.Seq, Task: sub.Task,
			CreatedBy: actor, CreatedAt: sub.Now, UpdatedBy: actor, UpdatedAt: sub.Now,
		}
		rt.apply(&rec)
		rec.LastEvent = admissionEvent(rec)
		if rec.Validate() != nil || checkNewKeys(rec.Key, nil) != nil {
			break // Submit reports it
		}
		seen[sub.Key] = true
		recs = append(recs, rec)
	}
	if len(recs) < 2 {
		return 0, 0, nil
	}
	// at[i] is the position in subs of batch[i]; one is what Submit
	// decides (keys that had a record when a batch was refused).
	batch, at := recs, make([]int, len(recs))
	for i := range at {
		at[i] = i
	}
	var one []int
	for len(batch) > 1 {
		stored, taken, ok, err := bi.insertBatch(ctx, batch)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			for i := range stored {
				out[at[i]] = true
			}
			if _, err := l.wroteBatch(stored); err != nil {
				return 0, 0, err
			}
			batch = nil
			break
		}
		if len(taken) == 0 {
			if len(one) == 0 {
				return 0, len(recs), nil
			}
			break // the rest go one by one too
		}
		// Keep what is not taken: each refusal removes at least one key,
		// so this ends.
		keep := batch[:0:0]
		var keepAt []int
		t := 0
		for i := range batch {
			if t < len(taken) && taken[t] == i {
				one = append(one, at[i])
				t++
				continue
			}
			keep, keepAt = append(keep, batch[i]), append(keepAt, at[i])
		}
		batch, at = keep, keepAt
	}
	one = append(one, at[:len(batch)]...) // a batch of one, or one refused for another cause
	slices.Sort(one)
	for _, i := range one {
		ok, err := l.Submit(ctx, actor, subs[i])
		if err != nil {
			return 0, 0, err
		}
		out[i] = ok
	}
	return len(recs), 0, nil
}
