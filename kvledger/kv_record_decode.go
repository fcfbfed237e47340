package kvledger

import (
	"encoding/json"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/jsonx"
)

// decodeRecordFast fills r from value without reflection when value has
// the shape appendRecord writes, and reports whether it did. The worker's
// bucket watch decodes every record write (three per task), where
// json.Unmarshal into kvRecord was a large share of the runtime's CPU.
//
// The result is exactly what jsonx.Unmarshal (encoding/json with
// json.Number) into a zero kvRecord gives (FuzzDecodeRecordFast checks
// it): the same strings, times parsed by time.Time.UnmarshalJSON from the
// same bytes, Task as the generic JSON value (map[string]any, []any,
// json.Number, string, bool, nil), Result as a copy of the same raw
// bytes. ok is false for anything it does not reproduce exactly, and the
// caller then runs jsonx.Unmarshal on a fresh
// kvRecord, so what decodes, and how, never depends on this file. It
// declines: whitespace anywhere, a key that is not exactly one of the
// record's lowercase field names (encoding/json would also match keys
// case-insensitively and skip unknown ones), a repeated key, null as a
// field value, a value of the wrong JSON type, integers with a fraction,
// an exponent or out of range, strings with invalid UTF-8 or a \u escape
// of a surrogate half, an empty needs array, values nested deeper than jsonx's depth bound, and trailing
// bytes.
func decodeRecordFast(value []byte, r *kvRecord) bool {
	d := jsonx.NewScanner(value)
	if !d.Eat('{') {
		return false
	}
	if d.Eat('}') {
		return d.Done()
	}
	var seen uint32
	for {
		name, esc, ok := d.Str()
		if !ok || esc || !d.Eat(':') {
			return false
		}
		bit, ok := recordField(&d, name, r)
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if d.Eat(',') {
			continue
		}
		return d.Eat('}') && d.Done()
	}
}

// field decodes the value of the field called name into r and returns
// the field's bit (to refuse repeats).
func recordField(d *jsonx.Scanner, name []byte, r *kvRecord) (uint32, bool) {
	s := &r.TaskState
	switch string(name) {
	case "key":
		return 1 << 0, d.StringInto((*string)(&s.Key))
	case "status":
		raw, ok := d.Plain()
		if ok {
			s.Status = statusOf(raw)
		}
		return 1 << 1, ok
	case "sequence":
		return 1 << 2, d.UintInto((*uint64)(&s.Sequence))
	case "owner":
		return 1 << 3, d.StringInto((*string)(&s.Owner))
	case "fence":
		return 1 << 4, d.UintInto((*uint64)(&s.Fence))
	case "lease_until":
		return 1 << 5, d.TimeInto(&s.LeaseUntil)
	case "needs":
		return 1 << 6, decodeNeeds(d, &s.Needs)
	case "blocked_by":
		return 1 << 7, d.StringInto((*string)(&s.BlockedBy))
	case "task":
		if d.Next() == 'n' {
			return 0, false // null clears Task; leave it to encoding/json
		}
		var ok bool
		s.Task, ok = d.Value()
		return 1 << 8, ok
	case "created_by":
		return 1 << 9, d.StringInto((*string)(&s.CreatedBy))
	case "created_at":
		return 1 << 10, d.TimeInto(&s.CreatedAt)
	case "updated_by":
		// Usually the creator or the owner: share their string.
		return 1 << 11, d.StringInto((*string)(&s.UpdatedBy), string(s.Owner), string(s.CreatedBy))
	case "updated_at":
		return 1 << 12, d.TimeInto(&s.UpdatedAt)
	case "last_event":
		raw, ok := d.Plain()
		if ok {
			s.LastEvent = eventOf(raw)
		}
		return 1 << 13, ok
	case "kind":
		return 1 << 14, d.StringInto(&s.Kind)
	case "run_at":
		return 1 << 15, d.TimeInto(&s.RunAt)
	case "attempts":
		return 1 << 16, d.IntInto(&s.Attempts)
	case "lease":
		return 1 << 17, d.StringInto(&s.Lease)
	case "max_attempts":
		return 1 << 18, d.IntInto(&s.MaxAttempts)
	case "last_error":
		return 1 << 19, d.StringInto(&s.LastError)
	case "cancelled":
		return 1 << 20, d.BoolInto(&s.Cancelled)
	case "result":
		if d.Next() == 'n' {
			return 0, false
		}
		raw, ok := d.RawValue()
		if !ok {
			return 0, false
		}
		s.Result = append(json.RawMessage(nil), raw...)
		return 1 << 21, true
	case "rev":
		return 1 << 22, d.UintInto(&r.Rev)
	case "ins":
		return 1 << 23, d.BoolInto(&r.Ins)
	case "group":
		return 1 << 24, d.StringInto(&s.Group)
	case "priority":
		return 1 << 25, d.IntInto(&s.Priority)
	}
	return 0, false
}

// statusOf and eventOf return the constant for the common values, which
// saves an allocation per record; any other text is copied.
func statusOf(raw []byte) Status {
	for _, s := range [...]Status{StatusPending, StatusClaimed, StatusCompleted, StatusFailed, StatusBlocked} {
		if string(raw) == string(s) {
			return s
		}
	}
	return Status(raw)
}

func eventOf(raw []byte) events.Name {
	for _, e := range &EventNames { // the array, not a copy of it
		if string(raw) == string(e) {
			return e
		}
	}
	return events.Name(raw)
}

func decodeNeeds(d *jsonx.Scanner, p *[]IdempotencyKey) bool {
	if !d.Eat('[') || d.Eat(']') {
		return false // encoding/json makes [] an empty non-nil slice
	}
	for {
		k, ok := d.Text()
		if !ok {
			return false
		}
		*p = append(*p, IdempotencyKey(k))
		if !d.Eat(',') {
			return d.Eat(']')
		}
	}
}
