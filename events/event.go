package events

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Event is one ledger transition: one stored write of one record, read
// back from the bucket's stream (kvledger/doc.go, "Events"). Its JSON form
// is what `natscoord events tail --json` prints:
//
//	{
//	  "name":          "ledger.claimed",          // the transition (required)
//	  "source":        "tasks",                   // the ledger's bucket (required)
//	  "key":           "build-42",                // the task's idempotency key (required)
//	  "revision":      1187,                      // the write's stream sequence = KV revision
//	  "prev_revision": 1102,                      // the key's revision the write replaced (0: none)
//	  "status":        "claimed",                 // record status after the write
//	  "actor":         "scheduler-1",             // who performed the write
//	  "owner":         "worker-3",                // lease owner after the write, if any
//	  "fence":         1186,                      // fencing token after the write
//	  "blocked_by":    "",                        // the blocking key for a blocked record
//	  "time":          "2026-11-29T10:00:00Z",    // the writer's "now" for the transition (RFC 3339)
//	  "kind":          "build",                   // the task's kind (task runtime)
//	  "attempts":      2,                         // attempts started so far (task runtime)
//	  "max_attempts":  5,                         // the task's own attempt limit, 0: the worker's (task runtime)
//	  "last_error":    "exit status 1",           // the last handler error (task runtime)
//	  "run_at":        "2026-11-29T10:00:05Z",    // not run before this time (task runtime)
//	  "cancelled":     true                       // an operator cancelled it (status failed)
//	}
//
// Fields left empty are omitted, except name, source, key, revision, fence
// and time.
//
// (Source, Key, Revision) identifies the write: the server gives every
// stored message its own sequence, so no two writes share it, and a key's
// revisions increase in write order. PrevRevision links a key's writes: a
// consumer that delivered a key at revision r and then sees a write of it
// whose PrevRevision is not r missed writes in between (a Gap).
type Event struct {
	Name         Name      `json:"name"`
	Source       string    `json:"source"`
	Key          string    `json:"key"`
	Revision     uint64    `json:"revision"`
	PrevRevision uint64    `json:"prev_revision,omitempty"`
	Status       string    `json:"status,omitempty"`
	Actor        string    `json:"actor,omitempty"`
	Owner        string    `json:"owner,omitempty"`
	Fence        uint64    `json:"fence"`
	BlockedBy    string    `json:"blocked_by,omitempty"`
	Time         time.Time `json:"time"`

	// Task runtime fields: the task's kind, the attempts started so far,
	// its own attempt limit (0: the worker's default), the last handler
	// error, the time before which it will not run (set on a retry and on
	// a delayed admission) and whether an operator cancelled it. Empty for
	// ledgers that do not use them. With them a key's events say what its
	// records say of its attempts (kvledger.AttemptsOf).
	Kind        string    `json:"kind,omitempty"`
	Attempts    int       `json:"attempts,omitempty"`
	MaxAttempts int       `json:"max_attempts,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	RunAt       time.Time `json:"run_at,omitzero"`
	Cancelled   bool      `json:"cancelled,omitempty"`
}

// Validate reports a missing or malformed required field. Source, Key
// and BlockedBy must be valid UTF-8: the JSON form would print other
// bytes (U+FFFD) than were stored, so the event would name another task.
func (e Event) Validate() error {
	switch {
	case !e.Name.Valid():
		return fmt.Errorf("%w: %q", ErrInvalidName, string(e.Name))
	case e.Source == "":
		return fmt.Errorf("%w: empty source", ErrInvalidEvent)
	case e.Key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidEvent)
	case !utf8.ValidString(e.Source) || !utf8.ValidString(e.Key) || !utf8.ValidString(e.BlockedBy):
		return fmt.Errorf("%w: source %q, key %q or blocked_by %q is not valid UTF-8", ErrInvalidEvent, e.Source, e.Key, e.BlockedBy)
	}
	return nil
}

// Marshal encodes e as its JSON wire form after validating it.
func Marshal(e Event) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(e)
}

// Unmarshal decodes and validates an event's JSON wire form. Malformed
// input returns an error wrapping ErrInvalidEvent (or ErrInvalidName).
func Unmarshal(data []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	if err := e.Validate(); err != nil {
		return Event{}, err
	}
	return e, nil
}
