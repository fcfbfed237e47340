package kvledger

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/natscoord/natscoord/events"
)

// IdempotencyKey is the caller's name for a task. Submitting the same key
// twice admits the task once. Any non-empty valid UTF-8 string without
// control characters works (spaces, dots, any script); the KVStore
// escapes it into a bucket key. Admission refuses control characters
// (U+0000-U+001F, U+007F-U+009F) with ErrInvalidState: the task runtime
// passes the key in an environment variable, which cannot hold NUL.
// A key that is not valid UTF-8 is refused (ErrInvalidState) before
// anything is written: records, snapshots and events carry the key as a
// JSON string, which would store such a key as another one (invalid bytes
// replaced by U+FFFD) that no longer matches its bucket key.
type IdempotencyKey string

// OwnerID names the worker holding a claim.
type OwnerID string

// Sequence orders submissions of one key: Admit replaces a pending or
// claimed record only with a strictly higher Sequence.
type Sequence uint64

// FenceToken is returned by Claim and Takeover and must be presented to
// Renew, Release and Complete. Each claim of a key gets a larger token
// than every earlier claim of that key, also across deletion and
// re-admission, so a worker that lost its claim cannot write any more.
type FenceToken uint64

// MaxFence is the largest fence token a record may hold. A record at
// MaxFence has no room left: the next claim could only wrap to zero and
// hand out a token an earlier claim already had, so Claim and Takeover
// refuse it with ErrFenceExhausted, and Validate refuses any record
// above it wherever records enter (Load, Decode, Restore).
const MaxFence FenceToken = math.MaxUint64 - 1

// nextFence is the fence the next claim (or reopen) of s gets, or
// ErrFenceExhausted when s has no room left: fences never wrap.
func (s TaskState) nextFence() (FenceToken, error) {
	if s.Fence >= MaxFence {
		return 0, fmt.Errorf("%w: %q is at fence %d", ErrFenceExhausted, string(s.Key), s.Fence)
	}
	return s.Fence + 1, nil
}

// Actor is whoever performs a write (a user, service or agent id). The
// ledger records it and puts it on the event; it never interprets it.
type Actor string

// TaskState is the stored record of one key.
//
// Task is the caller's payload. The MemStore keeps the value as given;
// the KVStore stores it as JSON, so a value read back is what
// encoding/json decodes into an `any` with UseNumber (map[string]any,
// []any, json.Number, string, bool or nil): numbers keep their exact
// text, so a record rewritten by a claim stores the digits it was
// admitted with (a float64 would round integers above 2^53). Use
// DecodeTask to get a typed value back.
//
// Rev is assigned by the Store on every write (the KV revision for the
// KVStore); the Ledger passes it back unchanged as the compare-and-swap
// expectation and never computes it.
//
// LastEvent names the transition that wrote this version of the record
// (the write's EventHeader names the same); Restore clears it.
//
// The json tags are the record's format, its one definition: snapshots
// and json.Marshal read them, and the KVStore's stored record is written
// and read by code generated from them (kv_record_codec.go). A field added here
// needs a tag that omits it when zero, and the codec regenerated: go test
// -run TestRecordCodecGenerated -update ./kvledger/.
type TaskState struct {
	Key        IdempotencyKey   `json:"key"`
	Status     Status           `json:"status"`
	Sequence   Sequence         `json:"sequence"`
	Owner      OwnerID          `json:"owner,omitempty"`
	Fence      FenceToken       `json:"fence"`
	LeaseUntil time.Time        `json:"lease_until,omitzero"`
	Needs      []IdempotencyKey `json:"needs,omitempty"`
	BlockedBy  IdempotencyKey   `json:"blocked_by,omitempty"`
	Task       any              `json:"task,omitempty"`
	Rev        uint64           `json:"rev"`
	CreatedBy  Actor            `json:"created_by,omitempty"`
	CreatedAt  time.Time        `json:"created_at,omitzero"`
	UpdatedBy  Actor            `json:"updated_by,omitempty"`
	UpdatedAt  time.Time        `json:"updated_at,omitzero"`
	LastEvent  events.Name      `json:"last_event,omitempty"`

	// The task runtime's fields (see runtime_fields.go). All are
	// optional: a record admitted by Admit leaves them zero and is
	// stored exactly as before they existed.
	Kind     string    `json:"kind,omitempty"`
	RunAt    time.Time `json:"run_at,omitzero"`
	Attempts int       `json:"attempts,omitempty"`
	// Lease is, on a claimed record, the key in the lease bucket of the
	// kvlease lease that keeps the claim alive (ClaimLeased, and Claim,
	// Takeover, ClaimIfReady and ClaimNext of a Ledger with a lease
	// taker: WithLeases); a claim that names one ends when the server
	// expires it (LeaseEnded). Empty on every other record, on claims
	// written by a Ledger without a lease taker, and on records from
	// before the field existed.
	Lease       string `json:"lease,omitempty"`
	MaxAttempts int    `json:"max_attempts,omitempty"`
	LastError   string `json:"last_error,omitempty"`
	Cancelled   bool   `json:"cancelled,omitempty"`
	// CancelRequested, on a claimed record only, is an operator's Cancel
	// of the running task (phase cancelling): the claim stays, with its
	// owner, fence and lease, until its handler returned and the owner
	// recorded an outcome, which ends the task cancelled whatever it says
	// (LastError holds the reason). A claimant whose lease ended first is
	// finished cancelled by the next claim, which runs nothing.
	CancelRequested bool            `json:"cancel_requested,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
	// Group names the concurrency group the task counts against: a
	// runtime worker whose Config.GroupLimits bounds the group runs at
	// most that many of its tasks at once across all workers. Empty: no
	// group.
	Group string `json:"group,omitempty"`
	// Priority orders the ready tasks of one kind: a worker starts higher
	// priorities first, equal ones in the order they became ready.
	// Default 0; negative values run after the default.
	Priority int `json:"priority,omitempty"`
	// TimeoutMS bounds each attempt's handler, in milliseconds: a
	// runtime worker ends the handler's context at that time after its
	// start (worker.ErrTimeout) and the attempt fails. 0: the worker's
	// Config.Timeout (none by default).
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// Snoozes counts the times a handler snoozed the task (worker.Snooze):
	// a snooze uses no attempt, and a task snoozed MaxSnoozes times
	// fails at its next snooze. Reopen sets it back to 0.
	Snoozes int `json:"snoozes,omitempty"`
}

// Validate checks the record rules: a non-empty Key, one of the five
// statuses, no Needs entry equal to Key, BlockedBy set exactly when the
// record is blocked, a claimed record with an Owner and a LeaseUntil,
// Key, Needs and Owner valid UTF-8 (they are compared byte for byte, and
// JSON would store other bytes), and a Fence at most MaxFence. Errors
// wrap ErrInvalidState (and
// ErrFenceExhausted for a fence above MaxFence).
func (s TaskState) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: key %q: %s", ErrInvalidState, string(s.Key), fmt.Sprintf(format, args...))
	}
	switch {
	case s.Key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidState)
	case !utf8.ValidString(string(s.Key)):
		return bad("key is not valid UTF-8")
	case !s.Status.Valid():
		return bad("unknown status %q", string(s.Status))
	case slices.Contains(s.Needs, s.Key):
		return bad("a task cannot need itself")
	case s.Status != StatusBlocked && s.BlockedBy != "":
		return bad("blocked_by %q set on a %s record", string(s.BlockedBy), s.Status)
	case s.Status == StatusBlocked && s.BlockedBy == "":
		return bad("blocked record without blocked_by")
	case s.Status == StatusClaimed && s.Owner == "":
		return bad("claimed record without owner")
	case s.Status == StatusClaimed && s.LeaseUntil.IsZero():
		return bad("claimed record without lease_until")
	case !utf8.ValidString(string(s.Owner)):
		return bad("owner %q is not valid UTF-8", string(s.Owner))
	case s.Fence > MaxFence:
		return fmt.Errorf("%w: key %q: %w: fence %d is above %d", ErrInvalidState, string(s.Key), ErrFenceExhausted, s.Fence, MaxFence)
	}
	for _, n := range s.Needs {
		switch {
		case n == "":
			return bad("empty key in needs")
		case !utf8.ValidString(string(n)):
			return bad("need %q is not valid UTF-8", string(n))
		}
	}
	return s.validateRuntime()
}

// clone returns s with its own Needs slice, so a Store never shares
// mutable state with callers. Task is copied as a value (the ledger never
// mutates it).
func (s TaskState) clone() TaskState {
	s.Needs = slices.Clone(s.Needs)
	s.Result = slices.Clone(s.Result)
	return s
}

// DecodeTask converts a record's Task into T by a JSON round trip. It
// is how a caller gets its typed payload back from a KVStore, where Task
// holds the generic JSON-decoded value.
func DecodeTask[T any](s TaskState) (T, error) {
	var v T
	if t, ok := s.Task.(T); ok {
		return t, nil
	}
	b, err := json.Marshal(s.Task)
	if err != nil {
		return v, fmt.Errorf("kvledger: task of %q: %w", string(s.Key), err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("kvledger: task of %q: %w", string(s.Key), err)
	}
	return v, nil
}
