package kvledger

import "errors"

// Sentinel errors of the task runtime's ledger operations.
var (
	// ErrNotReady: ClaimIfReady or ClaimLeased found a pending record
	// that may not start yet: its RunAt is after now, or a need is not
	// completed (a need that failed or is blocked gives ErrNotClaimed,
	// as for Claim, after blocking the record).
	ErrNotReady = errors.New("kvledger: task is not ready")
	// ErrNoReady: ClaimNext found no ready task it could claim.
	ErrNoReady = errors.New("kvledger: no task is ready")
	// ErrNoLease: ClaimLeased got a nil lease or one that has ended.
	ErrNoLease = errors.New("kvledger: claim needs a held lease")
	// ErrAttemptsExhausted: the runtime's claim (claimLeased) found a record that used
	// its last allowed attempt and wrote it failed instead of claiming
	// it.
	ErrAttemptsExhausted = errors.New("kvledger: task used its last attempt")
	// ErrNotFinal: Delete found a pending or claimed record.
	ErrNotFinal = errors.New("kvledger: record is not final")
	// ErrNotFailed: Reopen found a record that is not failed.
	ErrNotFailed = errors.New("kvledger: record is not failed")
	// ErrNotCancellable: Cancel found a completed, failed or blocked
	// record.
	ErrNotCancellable = errors.New("kvledger: record is not pending or claimed")
	// ErrNotDelayed: RunNow found a record that is neither pending and
	// due nor waiting for its RunAt (scheduled or retrying).
	ErrNotDelayed = errors.New("kvledger: record is not scheduled or retrying")
	// ErrNoWatch: the store cannot push changes (it does not implement
	// RecordWatcher): WaitFinal and the runtime need one.
	ErrNoWatch = errors.New("kvledger: store has no record watch")
	// ErrNoDelete: the store cannot delete records (no RecordDeleter).
	ErrNoDelete = errors.New("kvledger: store cannot delete records")
	// ErrInvalidPhase: ParsePhase got a name that is not a Phase.
	ErrInvalidPhase = errors.New("kvledger: unknown phase")
	// ErrInvalidStatus: ParseStatus got a name that is not a Status.
	ErrInvalidStatus = errors.New("kvledger: unknown status")
)
