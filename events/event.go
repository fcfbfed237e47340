package events

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Event is the envelope of one ledger transition. Its JSON form is the
// message body on the wire:
//
//	{
//	  "name":       "ledger.claimed",          // Name, also the subject (required)
//	  "source":     "tasks",                   // writer's store: bucket name for a KV ledger (required)
//	  "key":        "build-42",                // the task's idempotency key (required)
//	  "revision":   1187,                      // store revision of the write (KV revision)
//	  "status":     "claimed",                 // record status after the write
//	  "actor":      "scheduler-1",             // who performed the write
//	  "owner":      "worker-3",                // lease owner after the write, if any
//	  "fence":      1186,                      // fencing token after the write
//	  "blocked_by": "",                        // the blocking key for a blocked record
//	  "time":       "2026-11-29T10:00:00Z",    // the writer's "now" for the transition (RFC 3339)
//	  "kind":       "build",                   // the task's kind (task runtime)
//	  "attempts":   2,                         // attempts started so far (task runtime)
//	  "last_error": "exit status 1",           // the last handler error (task runtime)
//	  "run_at":     "2026-11-29T10:00:05Z"     // not run before this time (task runtime)
//	}
//
// Fields left empty are omitted, except name, source, key, revision, fence
// and time.
//
// (Source, Key, Revision) identifies the write that caused the event: it
// is unique per ledger, increases per key in write order, and is what
// MsgID turns into the JetStream de-duplication id. A consumer that may
// see a message twice (a core subscription, or a redelivery after the
// stream's duplicate window) drops any event whose Revision is not above
// the last one it saw for (Source, Key).
type Event struct {
	Name      Name      `json:"name"`
	Source    string    `json:"source"`
	Key       string    `json:"key"`
	Revision  uint64    `json:"revision"`
	Status    string    `json:"status,omitempty"`
	Actor     string    `json:"actor,omitempty"`
	Owner     string    `json:"owner,omitempty"`
	Fence     uint64    `json:"fence"`
	BlockedBy string    `json:"blocked_by,omitempty"`
	Time      time.Time `json:"time"`

	// Task runtime fields: the task's kind, the attempts started so far,
	// the last handler error and the time before which it will not run
	// (set on a retry and on a delayed admission). Empty for ledgers
	// that do not use them.
	Kind      string    `json:"kind,omitempty"`
	Attempts  int       `json:"attempts,omitempty"`
	LastError string    `json:"last_error,omitempty"`
	RunAt     time.Time `json:"run_at,omitzero"`
}

// Validate reports a missing or malformed required field. Source, Key
// and BlockedBy must be valid UTF-8: the wire form is JSON, which would
// deliver other bytes (U+FFFD) than were published, so the event would
// name another task and de-duplicate under another MsgID.
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

// MsgID is the JetStream de-duplication id of e (header Nats-Msg-Id):
// source, key and revision, so every publish of the same write, from the
// writer or from a relay, carries the same id. The key is quoted, which
// keeps distinct (source, key) pairs distinct whatever bytes they hold.
func MsgID(e Event) string {
	var b strings.Builder
	b.Grow(len(e.Source) + len(e.Key) + 24)
	b.WriteString(strconv.Quote(e.Source))
	b.WriteByte('/')
	b.WriteString(strconv.Quote(e.Key))
	b.WriteByte('/')
	b.WriteString(strconv.FormatUint(e.Revision, 10))
	return b.String()
}

// Marshal encodes e as its JSON wire form after validating it.
func Marshal(e Event) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if b, ok := appendEvent(make([]byte, 0, eventSizeHint(e)), e); ok {
		return b, nil
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
