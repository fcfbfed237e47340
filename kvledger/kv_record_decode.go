package kvledger

import (
	"encoding/json"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/jsonx"
)

// decodeRecordFast fills r from value without reflection when value has
// the shape appendRecordFields writes, and reports whether it did. The
// worker's bucket watch decodes every record write (three per task),
// where json.Unmarshal into kvRecord was a large share of the runtime's
// CPU. Each field's value is read by recordField (kv_record_codec.go,
// generated from the tags).
//
// The result is exactly what jsonx.Unmarshal (encoding/json with
// json.Number) into a zero kvRecord gives (FuzzDecodeRecordFast checks
// it): the same strings, times parsed by time.Time.UnmarshalJSON from the
// same bytes, Task as the generic JSON value (map[string]any, []any,
// json.Number, string, bool, nil), Result as a copy of the same raw
// bytes. ok is false for anything it does not reproduce exactly, and the
// caller then runs jsonx.Unmarshal on a fresh kvRecord, so what decodes,
// and how, never depends on this file. It declines: whitespace anywhere,
// a key that is not exactly one of the record's field names (encoding/json
// would also match keys case-insensitively and skip unknown ones), a
// repeated key, null as a field value, a value of the wrong JSON type,
// integers with a fraction, an exponent or out of range, strings with
// invalid UTF-8 or a \u escape of a surrogate half, an empty needs array,
// values nested deeper than jsonx's depth bound, and trailing bytes.
//
// Strings equal to share (the key the caller expects) are shared, not
// copied.
func decodeRecordFast(value []byte, r *kvRecord, share string) bool {
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
		bit, ok := recordField(&d, name, r, share)
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

// decodeString reads a string field. Most are the key, the owner or the
// creator (an updater is usually one of them): those are shared, not
// copied.
func decodeString(d *jsonx.Scanner, p *string, share string, r *kvRecord) bool {
	return d.StringInto(p, share, string(r.Owner), string(r.CreatedBy))
}

// decodeStatus and decodeEvent share the constant for the common values,
// which saves an allocation per record; any other text is copied.
func decodeStatus(d *jsonx.Scanner, p *Status) bool {
	raw, ok := d.Plain()
	if ok {
		*p = statusOf(raw)
	}
	return ok
}

func decodeEvent(d *jsonx.Scanner, p *events.Name) bool {
	raw, ok := d.Plain()
	if ok {
		*p = eventOf(raw)
	}
	return ok
}

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

// decodeNeeds reads a non-empty array of keys.
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

// decodePayload reads a Task as jsonx.Unmarshal does into an `any`.
func decodePayload(d *jsonx.Scanner, p *any) bool {
	if d.Next() == 'n' {
		return false // null clears the value; leave it to encoding/json
	}
	var ok bool
	*p, ok = d.Value()
	return ok
}

// decodeRaw reads a json.RawMessage: a copy of the value's bytes.
func decodeRaw(d *jsonx.Scanner, p *json.RawMessage) bool {
	if d.Next() == 'n' {
		return false // encoding/json stores "null"; leave it to it
	}
	raw, ok := d.RawValue()
	if ok {
		*p = append(json.RawMessage(nil), raw...)
	}
	return ok
}
