package kvledger

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Bounds of the runtime fields, checked by Validate. They keep a record
// well inside a NATS message (1 MiB by default) whatever a handler
// returns or fails with.
const (
	// MaxKindBytes bounds TaskState.Kind.
	MaxKindBytes = 256
	// MaxLastErrorBytes bounds TaskState.LastError; longer messages are
	// cut (TruncateError) before they are stored.
	MaxLastErrorBytes = 4096
	// MaxResultBytes bounds TaskState.Result, the JSON a handler leaves
	// for the tasks that need it.
	MaxResultBytes = 256 << 10
	// MaxLeaseBytes bounds TaskState.Lease, a lease-bucket key.
	MaxLeaseBytes = 1024
	// MaxGroupBytes bounds TaskState.Group, which the runtime escapes
	// into lease-bucket keys (at most three bytes per byte).
	MaxGroupBytes = 128
)

// validateRuntime checks the runtime fields: a bounded Kind, counts that
// are not negative, a bounded LastError, and a Result that is bounded,
// valid JSON and set only on a completed record.
func (s TaskState) validateRuntime() error {
	bad := func(msg string) error {
		return &stateError{key: s.Key, msg: msg}
	}
	switch {
	case len(s.Kind) > MaxKindBytes:
		return bad("kind is " + strconv.Itoa(len(s.Kind)) + " bytes, above MaxKindBytes")
	case !utf8.ValidString(s.Kind):
		return bad("kind is not valid UTF-8")
	case s.Attempts < 0 || s.MaxAttempts < 0:
		return bad("negative attempts or max_attempts")
	case s.TimeoutMS < 0 || s.Snoozes < 0:
		return bad("negative timeout_ms or snoozes")
	case len(s.LastError) > MaxLastErrorBytes:
		return bad("last_error above MaxLastErrorBytes")
	case len(s.Result) > MaxResultBytes:
		return bad("result is " + strconv.Itoa(len(s.Result)) + " bytes, above MaxResultBytes")
	case len(s.Result) > 0 && s.Status != StatusCompleted:
		return bad("result on a " + string(s.Status) + " record")
	case len(s.Result) > 0 && !json.Valid(s.Result):
		return bad("result is not valid JSON")
	case s.Cancelled && s.Status != StatusFailed:
		return bad("cancelled set on a " + string(s.Status) + " record")
	case s.CancelRequested && s.Status != StatusClaimed:
		return bad("cancel_requested set on a " + string(s.Status) + " record")
	case s.Lease != "" && s.Status != StatusClaimed:
		return bad("lease set on a " + string(s.Status) + " record")
	case len(s.Lease) > MaxLeaseBytes:
		return bad("lease is " + strconv.Itoa(len(s.Lease)) + " bytes, above MaxLeaseBytes")
	case !utf8.ValidString(s.Lease):
		return bad("lease is not valid UTF-8")
	case len(s.Group) > MaxGroupBytes:
		return bad("group is " + strconv.Itoa(len(s.Group)) + " bytes, above MaxGroupBytes")
	case !utf8.ValidString(s.Group):
		return bad("group is not valid UTF-8")
	}
	return nil
}

// stateError is an ErrInvalidState with the key and rule.
type stateError struct {
	key IdempotencyKey
	msg string
}

func (e *stateError) Error() string {
	return ErrInvalidState.Error() + ": key " + strconv.Quote(string(e.key)) + ": " + e.msg
}

func (e *stateError) Unwrap() error { return ErrInvalidState }

// TruncateError cuts msg to at most MaxLastErrorBytes, on a rune
// boundary, so any error text can be stored as LastError.
func TruncateError(msg string) string {
	if len(msg) <= MaxLastErrorBytes {
		return msg
	}
	cut := MaxLastErrorBytes - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}
