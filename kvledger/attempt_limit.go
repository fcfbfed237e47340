package kvledger

import (
	"time"
)

// The attempt limit and the retry-or-fail decision, each stated once:
// claimLeasedFrom (a claim that finds the last attempt used), the
// runtime's outcome of a failed attempt (package worker) and its
// Task.MaxAttempts read them here.

// DefaultMaxAttempts is the attempts of a task whose record leaves
// MaxAttempts at 0 when its runtime states no default either (package
// worker's Config.MaxAttempts defaults to it).
const DefaultMaxAttempts = 3

// AttemptLimit returns the attempts rec is allowed: its own MaxAttempts,
// else def (the runtime's default). 0 means no bound.
func AttemptLimit(rec TaskState, def int) int {
	if rec.MaxAttempts > 0 {
		return rec.MaxAttempts
	}
	return max(def, 0)
}

// attemptsUsed reports whether rec has used every attempt AttemptLimit
// allows it (Attempts counts the claims made, the current one included,
// less those given back before their handler started: Outcome.Uncount):
// it must not be claimed to run again, and a failure of its current
// attempt is final.
func attemptsUsed(rec TaskState, def int) bool {
	limit := AttemptLimit(rec, def)
	return limit > 0 && rec.Attempts >= limit
}

// retryOrFail is the outcome of an attempt of rec (as claimed: Attempts
// counts this attempt) that failed with msg: failed when the error is
// permanent or rec used its last attempt (attemptsUsed with def), else
// pending again from now plus backoff(rec.Attempts) (a negative pause is
// none; backoff is called only for a retry).
func retryOrFail(rec TaskState, def int, msg string, permanent bool, backoff func(attempts int) time.Duration, now time.Time) Outcome {
	if permanent || attemptsUsed(rec, def) {
		return Outcome{Status: StatusFailed, Error: msg}
	}
	return Outcome{Status: StatusPending, Error: msg, RunAt: now.Add(max(backoff(rec.Attempts), 0))}
}
