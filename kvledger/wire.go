package kvledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Encode returns the JSON form of s: {"tasks": [record, ...]} with the
// field names of TaskState's json tags and times in RFC 3339. It refuses
// a snapshot that does not validate.
func Encode(s Snapshot) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("kvledger: encode snapshot: %w", err)
	}
	return b, nil
}

// Decode parses Encode's output and validates it. Malformed JSON,
// trailing data and a wrong shape return ErrMalformed; a record with an
// unknown status or another broken rule returns ErrInvalidState. Task
// values come back as encoding/json decodes them into an `any`, with
// numbers as json.Number: a restored task keeps every digit.
func Decode(data []byte) (Snapshot, error) {
	var s Snapshot
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Snapshot{}, fmt.Errorf("%w: trailing data after the snapshot", ErrMalformed)
	}
	if err := s.Validate(); err != nil {
		return Snapshot{}, err
	}
	return s, nil
}
