package kvledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/internal/jsonx"
)

// The stored record's encoder is appendRecordFields (kv_record_codec.go,
// generated from the tags). It appends what json.Marshal of the kvRecord
// writes, byte for byte (FuzzAppendRecord holds it to that, and
// TestGoldenRecords to the bytes already stored), without reflection:
// the write path, where encoding/json was most of the client's CPU time
// in Admit of a new key (map key sorting, reflection on every field, time
// marshalers, one allocation per step). Its errors are json.Marshal's for
// the same record: a time outside years 0-9999, a Task JSON refuses (NaN,
// a channel, a cycle), a Result that is not valid JSON. The functions
// below write the values it does not write inline.

// timeText remembers the last time written: an insert's created_at and
// updated_at are the same instant, and the same instant in the same
// location formats the same.
type timeText struct {
	t    time.Time
	text []byte
}

// appendTime appends key and t as time.Time.MarshalJSON writes it.
func (last *timeText) appendTime(b []byte, key string, t time.Time) ([]byte, error) {
	b = append(b, key...)
	if last.text != nil && t == last.t {
		return append(b, last.text...), nil
	}
	n := len(b)
	b, ok := jsonx.AppendTime(b, t)
	if !ok {
		_, err := t.MarshalJSON()
		return b, notEncodable(err)
	}
	last.t, last.text = t, b[n:]
	return b, nil
}

// appendKeys appends v as encoding/json writes a []IdempotencyKey.
func appendKeys(b []byte, v []IdempotencyKey) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, k := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonx.AppendString(b, string(k))
	}
	return append(b, ']')
}

// appendPayload appends a Task as encoding/json writes it in an `any`
// field: jsonx writes the types a decoded payload and common Go payloads
// are made of, encoding/json the rest (a caller's struct).
func appendPayload(b []byte, v any) ([]byte, error) {
	b, ok := jsonx.AppendValue(b, v, 0)
	if !ok {
		_, err := json.Marshal(v)
		return b, notEncodable(err)
	}
	return b, nil
}

// appendRaw appends a json.RawMessage as encoding/json writes it:
// validated and compacted (and < > & escaped).
func appendRaw(b []byte, v json.RawMessage) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	b, ok := jsonx.AppendMarshaled(b, v)
	if !ok {
		_, err := json.Marshal(v)
		return b, notEncodable(err)
	}
	return b, nil
}

// notEncodable is the error of a value jsonx refused: encoding/json's.
func notEncodable(err error) error {
	if err == nil { // jsonx refused what encoding/json takes: never seen, still an error
		err = errors.New("value not encodable")
	}
	return err
}

// fieldError names the field whose value JSON refused.
func fieldError(name string, err error) error {
	return fmt.Errorf("%s: %w", name, err)
}

// recordSizeHint is a capacity for appendRecordFields' buffer that a
// record with a small task payload fits in, so it is allocated once.
func recordSizeHint(s *TaskState) int {
	n := 320 + len(s.Key) + len(s.Owner) + len(s.BlockedBy) + len(s.CreatedBy) + len(s.UpdatedBy)
	for _, k := range s.Needs {
		n += len(k) + 3
	}
	return n
}
