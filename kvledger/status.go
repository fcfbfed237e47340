package kvledger

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
