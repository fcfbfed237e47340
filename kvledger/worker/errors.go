package worker

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with errors.Is; the text may carry detail.
var (
	// ErrInvalidConfig: New refused a Config field, or Handle/Schedule
	// got bad input.
	ErrInvalidConfig = errors.New("worker: invalid configuration")
	// ErrClosed: the worker is draining or closed.
	ErrClosed = errors.New("worker: closed")
	// ErrStarted: Handle or Schedule was called after Start.
	ErrStarted = errors.New("worker: already started")
	// ErrPanic wraps the value of a handler panic; the attempt counts as
	// failed and is retried like an error.
	ErrPanic = errors.New("worker: handler panicked")
	// ErrCancelled is the cause of a handler's context when an operator
	// cancelled its task (kvledger.Ledger.Cancel).
	ErrCancelled = errors.New("worker: task cancelled")
	// ErrClaimLost is the cause of a handler's context when its claim can
	// no longer be confirmed: the lease's validity window ended, or the
	// record moved to another claim (a takeover fenced this one).
	ErrClaimLost = errors.New("worker: claim lost")
	// ErrDraining is the cause of a handler's context when Close's drain
	// timeout ran out; the claim is given back, not failed, once the
	// handler returned (with nil, the task is completed).
	ErrDraining = errors.New("worker: draining")
	// ErrResultTooLarge: Task.SetResult got a value whose JSON exceeds
	// Config.MaxResultBytes.
	ErrResultTooLarge = errors.New("worker: result too large")
)

// PermanentError marks a handler error that must not be retried: the
// task fails at once, whatever attempts remain.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so that the worker fails the task at once instead
// of retrying it. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err (or an error it wraps) came from
// Permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// GiveBackError marks a handler error that is not the task's: the
// handler could not run the task at all. See GiveBack.
type GiveBackError struct{ Err error }

func (e *GiveBackError) Error() string { return "given back: " + e.Err.Error() }
func (e *GiveBackError) Unwrap() error { return e.Err }

// GiveBack wraps err so that the worker gives the task back instead of
// counting a failed attempt: the record is pending again
// (ledger.released), ready after the first retry's pause (Config.Backoff(1):
// by default between BackoffBase/2 and BackoffBase), this attempt not
// counted, "given back: " and err its last error. A GiveBack anywhere in
// a handler's error (under Permanent, inside errors.Join) makes the whole
// error a give-back. It is for a cause that lies with the worker, not the
// task (its command is missing, a local resource is gone). The attempt
// limit does not bound a task given back again and again (the pause
// does: one released write per pause, and the bucket keeps the last 64
// writes of a key), so a handler that gives back should also stop its
// worker when the cause will not pass, as `natscoord work` does.
// GiveBack(nil) is nil.
func GiveBack(err error) error {
	if err == nil {
		return nil
	}
	return &GiveBackError{Err: err}
}

func isGiveBack(err error) bool {
	var g *GiveBackError
	return errors.As(err, &g)
}

// panicError is the error a recovered panic becomes.
func panicError(v any) error {
	if err, ok := v.(error); ok {
		return fmt.Errorf("%w: %w", ErrPanic, err)
	}
	return fmt.Errorf("%w: %v", ErrPanic, v)
}
