package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/kvledger"
)

// The controls a task or its handler puts on one attempt: a timeout
// (the record's TimeoutMS, else Config.Timeout) and a snooze (the
// handler's Snooze). Each is decided here and reaches the attempt at
// two points only: the timeout is armed around the handler (attempt),
// and both shape the outcome (record). A task that uses neither costs
// nothing more.

// ErrTimeout is the cause of a handler's context when its attempt ran
// out of time (the task's Timeout, else Config.Timeout): the attempt
// fails with it (wrapping what the handler returned) and is retried by
// the usual rule.
var ErrTimeout = errors.New("worker: task timed out")

// ErrSnoozeLimit is the error a task fails with when its handler snoozes
// it once more after Config.MaxSnoozes snoozes.
var ErrSnoozeLimit = errors.New("worker: task snoozed too often")

// snoozeError is a handler's request to run the task again after After,
// without counting the attempt. See Snooze.
type snoozeError struct{ After time.Duration }

func (e *snoozeError) Error() string { return "snoozed for " + e.After.String() }

// Snooze returns the error a handler returns to run its task again after
// d (a negative d is 0): the record goes back to pending with RunAt now
// plus d, this attempt not counted, the task's LastError kept, and the
// record's Snoozes count one more (event ledger.snoozed). A task snoozed
// Config.MaxSnoozes times fails at its next snooze (ErrSnoozeLimit), so a
// handler cannot snooze a task forever; Reopen starts the count again.
// A Snooze wrapped in another error is still a snooze; GiveBack wins
// over it.
func Snooze(d time.Duration) error { return &snoozeError{After: max(d, 0)} }

func isSnooze(err error) bool {
	var s *snoozeError
	return errors.As(err, &s)
}

// timeoutOf is the bound of an attempt of rec: its own, else def.
func timeoutOf(rec kvledger.TaskState, def time.Duration) time.Duration {
	if d := rec.Timeout(); d > 0 {
		return d
	}
	return def
}

// armTimeout ends the handler's context (cancel) with ErrTimeout once
// rec's timeout has passed from now, on the worker's clock; the returned
// stop disarms it when the handler returned first.
func (w *Worker) armTimeout(rec kvledger.TaskState, cancel context.CancelCauseFunc) (stop func() bool) {
	d := timeoutOf(rec, w.cfg.Timeout)
	if d <= 0 {
		return func() bool { return false }
	}
	return w.cfg.Clock.AfterFunc(d, func() { cancel(fmt.Errorf("%w after %v", ErrTimeout, d)) })
}

// timedOut is the handler's error as the attempt records it: when the
// handler's context ended by its timeout and the handler failed, the
// error says so first (what a handler returns is most often just
// ctx.Err()). A handler that returned nil completed its task.
func timedOut(hctx context.Context, herr error) error {
	cause := context.Cause(hctx)
	if herr == nil || !errors.Is(cause, ErrTimeout) || errors.Is(herr, ErrTimeout) {
		return herr
	}
	return fmt.Errorf("%w: %w", cause, herr)
}

// snoozeOutcome is the outcome of a snooze of rec: pending again after
// s.After, uncounted; failed with ErrSnoozeLimit past Config.MaxSnoozes.
func (w *Worker) snoozeOutcome(rec kvledger.TaskState, err error) (kvledger.Outcome, Result) {
	var s *snoozeError
	errors.As(err, &s)
	if rec.Snoozes >= w.cfg.MaxSnoozes {
		msg := fmt.Sprintf("%v: %d snoozes, the limit (Config.MaxSnoozes)", ErrSnoozeLimit, rec.Snoozes)
		return kvledger.Outcome{Status: kvledger.StatusFailed, Error: msg}, ResultFailed
	}
	return kvledger.Outcome{Status: kvledger.StatusPending, Uncount: true, Snooze: true,
		RunAt: w.now().Add(s.After)}, ResultSnoozed
}
