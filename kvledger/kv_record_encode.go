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
// a channel, a cycle), a Result that is not valid JSON. A Task is written
// by jsonx.AppendValue, which writes the types a decoded payload and
// common Go payloads are made of and hands the rest (a caller's struct)
// to encoding/json; a Result by jsonx.AppendMarshaled (encoding/json
// validates and compacts it). The functions below write the values it
// does not write inline.

// timeError is time.Time.MarshalJSON's error for a time jsonx refused (a
// year outside 0-9999).
func timeError(t time.Time) error {
	_, err := t.MarshalJSON()
	return notEncodable(err)
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

// jsonError is encoding/json's error for a value jsonx refused (a Task
// with NaN or a channel, a cycle; a Result that is not valid JSON).
func jsonError(v any) error {
	_, err := json.Marshal(v)
	return notEncodable(err)
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
