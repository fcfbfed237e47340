package kvledger

import (
	"fmt"
	"strings"
	"time"
)

// Phase is what a person asks about a task: the record's Status, told
// apart where one status covers different situations. A pending record
// is "scheduled" while its first run is ahead and "retrying" while it
// waits out a backoff; a failed record that an operator cancelled is
// "cancelled". The stored Status is unchanged: Phase is derived from the
// record and the caller's clock, so every view (the CLI, the dashboard,
// filters) reads it through TaskState.Phase and none spells the rule again.
type Phase string

// The phases. A record has exactly one.
const (
	// PhasePending: pending and due (it runs once its needs are completed).
	PhasePending Phase = "pending"
	// PhaseScheduled: pending, its first attempt not due before RunAt.
	PhaseScheduled Phase = "scheduled"
	// PhaseRetrying: pending after a failed attempt, not due before RunAt.
	PhaseRetrying Phase = "retrying"
	// PhaseRunning: claimed by a worker or an owner.
	PhaseRunning Phase = "running"
	// PhaseCancelling: claimed, and an operator cancelled it
	// (CancelRequested): its handler is being stopped, and the task
	// ends cancelled once it returned (or once its claimant's lease
	// ended). It cannot be reopened before.
	PhaseCancelling Phase = "cancelling"
	// PhaseCompleted: the task succeeded.
	PhaseCompleted Phase = "completed"
	// PhaseFailed: the task failed (attempts used up, a permanent error,
	// or an owner completed it as failed).
	PhaseFailed Phase = "failed"
	// PhaseCancelled: an operator cancelled it (stored as failed with
	// Cancelled set, so its dependents are blocked as by a failure).
	PhaseCancelled Phase = "cancelled"
	// PhaseBlocked: a need failed, was cancelled or is itself blocked.
	PhaseBlocked Phase = "blocked"
)

// Phases lists every phase in life-cycle order, for help texts and
// tables that show a count per phase.
var Phases = []Phase{PhasePending, PhaseScheduled, PhaseRetrying, PhaseRunning, PhaseCancelling,
	PhaseCompleted, PhaseFailed, PhaseCancelled, PhaseBlocked}

// Phase is t's phase at now (the caller's clock decides only whether a
// RunAt is still ahead, as it does for readiness).
func (t TaskState) Phase(now time.Time) Phase {
	switch t.Status {
	case StatusPending:
		if !t.RunAt.After(now) {
			return PhasePending
		}
		if t.Attempts > 0 {
			return PhaseRetrying
		}
		return PhaseScheduled
	case StatusClaimed:
		if t.CancelRequested {
			return PhaseCancelling
		}
		return PhaseRunning
	case StatusCompleted:
		return PhaseCompleted
	case StatusFailed:
		if t.Cancelled {
			return PhaseCancelled
		}
		return PhaseFailed
	case StatusBlocked:
		return PhaseBlocked
	}
	return Phase(t.Status)
}

// Final reports whether a record in phase p never changes again by
// itself (only an operator's Reopen or Delete moves it).
func (p Phase) Final() bool {
	switch p {
	case PhaseCompleted, PhaseFailed, PhaseCancelled, PhaseBlocked:
		return true
	}
	return false
}

// Reopenable reports whether Ledger.Reopen applies to a record in phase p
// (a failed or cancelled task runs again).
func (p Phase) Reopenable() bool { return p == PhaseFailed || p == PhaseCancelled }

// Cancellable reports whether Ledger.Cancel applies to a record in phase
// p: one that has not ended and is not cancelling already (Cancel leaves
// that one as it is). Ledger.Delete applies to the Final ones.
func (p Phase) Cancellable() bool { return !p.Final() && p != PhaseCancelling }

// Delayed reports whether a task in phase p waits for its RunAt
// (scheduled, or retrying after a backoff): the tasks Ledger.RunNow
// makes ready at once.
func (p Phase) Delayed() bool { return p == PhaseScheduled || p == PhaseRetrying }

// ParsePhase reads a phase name; "claimed" is accepted for running, as
// the stored status names it.
func ParsePhase(s string) (Phase, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == string(StatusClaimed) {
		return PhaseRunning, nil
	}
	for _, p := range Phases {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %q (one of %s; %q is accepted for %s)", ErrInvalidPhase, s, joinNames(Phases), StatusClaimed, PhaseRunning)
}

// joinNames lists names for an error message: "a, b, c".
func joinNames[T ~string](names []T) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(n))
	}
	return b.String()
}
