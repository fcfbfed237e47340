package kvledger

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/natscoord/natscoord/internal/jsonx"
	"github.com/natscoord/natscoord/internal/kvx"
)

// Bucket key layout. Idempotency keys are escaped with kvx.EncodeToken
// into one key token, so every key fits one token and two keys never
// collide (the escaping keeps any bytes; the record's JSON does not, which
// is why keys must be valid UTF-8):
//
//	task.<key>          the record of <key> (JSON, below)
//	rdep.<need>.<key>   <key> names <need> in its Needs (value "1")
//	sync                empty; written to confirm a missing record (absence.go)
//	sched.<name>        a stored Schedule (schedule_codec.go)
const (
	taskPrefix = "task."
	rdepPrefix = "rdep."
	syncKey    = "sync"
)

func taskKey(k IdempotencyKey) string { return taskPrefix + kvx.EncodeToken(string(k)) }

func rdepKey(need, dep IdempotencyKey) string {
	return rdepPrefix + kvx.EncodeToken(string(need)) + "." + kvx.EncodeToken(string(dep))
}

// keyOfTask reverses taskKey.
func keyOfTask(bucketKey string) (IdempotencyKey, error) {
	k, err := keyToken(bucketKey, taskPrefix, "task")
	return IdempotencyKey(k), err
}

// keyToken reverses a key of the bucket made of prefix and one escaped
// token (taskKey, scheduleKey, NewClaimLeaseKey): the token, unescaped.
// A key that is not one is ErrCorruptRecord, naming what key it is not.
func keyToken(bucketKey, prefix, what string) (string, error) {
	tok, ok := strings.CutPrefix(bucketKey, prefix)
	if !ok || tok == "" || strings.Contains(tok, ".") {
		return "", fmt.Errorf("%w: %q is not a %s key", ErrCorruptRecord, bucketKey, what)
	}
	s, err := kvx.DecodeToken(tok)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrCorruptRecord, err)
	}
	return s, nil
}

// The record's JSON format is defined once, by the json tags of TaskState
// and kvRecord: each field's name, whether it is left out when empty
// (omitempty) or zero (omitzero), and its place (the struct order; the
// embedded TaskState's fields, then kvRecord's own; kvRecord.Rev hides
// TaskState.Rev). encoding/json reads the tags for TaskState's JSON
// (snapshots, the CLI's --json, the dashboard, a caller's json.Marshal)
// and for the stored records the fast decoder declines; the stored
// record's encoder and fast decoder (kv_record_codec.go) are generated
// from the same tags by TestRecordCodecGenerated, which fails when the
// tags and the generated code differ (go test -run
// TestRecordCodecGenerated -update ./kvledger/ rewrites it). So adding a
// field to the record is adding it, with its tag, to TaskState, and
// regenerating. A new field must be omitted when zero, so that records
// and snapshots written before it keep their bytes.

// kvRecord is the stored form of a TaskState: its JSON fields, with Rev
// left out (the KV revision is the Rev) and one more field:
//
//	"ins": true   this message is the record's insert.
//
// The insert cannot know its own revision R, but every fence handed out
// for the key before R was at most the revision of an earlier write of
// that key, so below R. A record read back from its insert message
// therefore reports Fence = max(stored fence, R); the writes after it
// store that raised fence. This keeps fences rising across deletion,
// expiry and re-admission without reading the old marker, and without
// relying on the marker still being there (markers expire too).
type kvRecord struct {
	TaskState
	// Rev hides TaskState.Rev, which the KV revision supplies: records are
	// stored without it (records written before carry "rev":0, read into
	// this field and ignored).
	Rev uint64 `json:"rev,omitempty"`
	Ins bool   `json:"ins,omitempty"`
}

// encodeRecord returns the stored form of s (kvRecord, written by the
// generated appendRecordFields; Rev is left out, the KV revision supplies
// it). A key
// that is not valid UTF-8 is refused here too, for writers that use the
// store without a Ledger: JSON would store another key than the bucket
// key, a record no read accepts. A value JSON refuses (a Task with NaN or
// a channel, a time outside years 0-9999) is an encodeError.
func encodeRecord(s TaskState, insert bool) ([]byte, error) {
	if !utf8.ValidString(string(s.Key)) {
		return nil, fmt.Errorf("%w: key %q is not valid UTF-8", ErrInvalidState, string(s.Key))
	}
	r := kvRecord{TaskState: s, Ins: insert}
	buf := encodeBufs.Get().(*[]byte)
	defer encodeBufs.Put(buf)
	b, err := appendRecordFields((*buf)[:0], &r)
	if err != nil {
		return nil, encodeError{fmt.Errorf("kvledger: encode record %q (is Task JSON-encodable?): %w", string(s.Key), err)}
	}
	if cap(b) <= maxEncodeBuf {
		*buf = b // grown for a large record: kept for the next
	}
	// The value leaves as a copy of exactly its length: it is kept until
	// its write is settled (resent, read back), while the scratch buffer
	// serves the next encode at once. A guessed capacity was either too
	// small (the append grew it, twice the bytes) or too large.
	return append([]byte(nil), b...), nil
}

// encodeBufs are encodeRecord's scratch buffers; one that grew past
// maxEncodeBuf (a record with a large Task or Result) is not kept.
var encodeBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, 1024)
	return &b
}}

const maxEncodeBuf = 64 << 10

// decodeRecord parses the value stored under key at revision rev. Any
// value that does not decode, names another key, or breaks a Validate
// rule is ErrCorruptRecord: it was not written by a kvledger and is
// never overwritten by one.
func decodeRecord(key IdempotencyKey, value []byte, rev uint64) (TaskState, error) {
	var r kvRecord
	if decodeRecordFast(value, &r, string(key)) {
		return recordState(key, &r, rev)
	}
	return decodeRecordSlow(key, value, rev)
}

// decodeRecordSlow is decodeRecord for the values decodeRecordFast declines:
// encoding/json reads the same tags. The record is its own: the fast path
// may have filled some of decodeRecord's, and decoding into that one would
// move it to the heap on every call. Numbers in the Task stay
// json.Number, as on the fast path, so a write of the record stores the
// digits it read.
func decodeRecordSlow(key IdempotencyKey, value []byte, rev uint64) (TaskState, error) {
	r := new(kvRecord)
	if err := jsonx.Unmarshal(value, r); err != nil {
		return TaskState{}, fmt.Errorf("%w: key %q revision %d: %w", ErrCorruptRecord, string(key), rev, err)
	}
	return recordState(key, r, rev)
}

// recordState checks a decoded record against its key and the Validate
// rules and gives it its revision.
func recordState(key IdempotencyKey, r *kvRecord, rev uint64) (TaskState, error) {
	s := &r.TaskState
	if s.Key != key {
		return TaskState{}, fmt.Errorf("%w: key %q revision %d holds a record for %q", ErrCorruptRecord, string(key), rev, string(s.Key))
	}
	if err := s.Validate(); err != nil {
		return TaskState{}, fmt.Errorf("%w: revision %d: %w", ErrCorruptRecord, rev, err)
	}
	s.Rev = rev
	s.LastEvent = currentEvent(s.LastEvent) // a write of an earlier version
	if r.Ins {
		s.Fence = max(s.Fence, FenceToken(rev))
	}
	return *s, nil
}

// encodeError marks a record that cannot be encoded (a Task that JSON
// rejects): a property of the caller's value, not a store fault, so Admit
// falls back to reading the key first (a duplicate then returns false, as
// it would without the insert-first fast path).
type encodeError struct{ error }

func (e encodeError) Unwrap() error { return e.error }

// isEncodeError reports whether err is an encodeError. It is a function
// of its own so that the target errors.As needs is allocated only when
// there is an error to inspect, not on every Admit.
func isEncodeError(err error) bool {
	var enc encodeError
	return errors.As(err, &enc)
}
