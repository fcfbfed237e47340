package kvledger

import (
	"fmt"
	"strings"
)

// Status is where a record stands in its life cycle. The zero value is
// not a valid status.
type Status string

// The five statuses. Pending and claimed records still move; completed,
// failed and blocked records never change again (a higher-sequence Admit
// does not rebase them).
const (
	// StatusPending: admitted, waiting for a worker.
	StatusPending Status = "pending"
	// StatusClaimed: held by an owner under a lease (live or expired).
	StatusClaimed Status = "claimed"
	// StatusCompleted: the task succeeded.
	StatusCompleted Status = "completed"
	// StatusFailed: the task failed; records that need it get blocked.
	StatusFailed Status = "failed"
	// StatusBlocked: a record this one needs failed or is itself blocked.
	StatusBlocked Status = "blocked"
)

// Statuses lists the five statuses in life-cycle order, for help texts,
// filters and tables that show a count per status.
var Statuses = []Status{StatusPending, StatusClaimed, StatusCompleted, StatusFailed, StatusBlocked}

// ParseStatus reads a stored status name (case and surrounding spaces
// aside). A name that is not a status is ErrInvalidStatus, naming the
// five; the phases that are not statuses (scheduled, retrying, running,
// cancelled) are ParsePhase's.
func ParseStatus(s string) (Status, error) {
	st := Status(strings.ToLower(strings.TrimSpace(s)))
	if st.Valid() {
		return st, nil
	}
	return "", fmt.Errorf("%w: %q (one of %s)", ErrInvalidStatus, s, joinNames(Statuses))
}

// Valid reports whether s is one of the five statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusClaimed, StatusCompleted, StatusFailed, StatusBlocked:
		return true
	}
	return false
}

// Terminal reports whether s is completed or failed.
func (s Status) Terminal() bool { return s == StatusCompleted || s == StatusFailed }

// final reports whether a record with status s never changes again.
func (s Status) final() bool { return s.Terminal() || s == StatusBlocked }

// blocks reports whether a need in status s blocks its dependents.
func (s Status) blocks() bool { return s == StatusFailed || s == StatusBlocked }

func (s Status) String() string { return string(s) }
