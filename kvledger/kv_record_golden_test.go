package kvledger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// TestGoldenRecords: records as the ledger stored them before the codec
// was derived from the tags (testdata/golden_records.jsonl, written by
// encoding/json at f9c436a: every field, escapes, unicode, nested
// payloads, big numbers, times in other locations, inserts) decode to the
// records they were, and encode back to the same bytes; a snapshot
// (testdata/golden_snapshot.json) decodes and encodes back the same.
func TestGoldenRecords(t *testing.T) {
	f, err := os.Open("testdata/golden_records.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var l struct{ Stored, State json.RawMessage }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		var want TaskState
		if err := json.Unmarshal(l.State, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(want.Key, l.Stored, 0)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		if state, err := json.Marshal(got); err != nil || !bytes.Equal(state, l.State) {
			t.Fatalf("line %d: %s decodes to\n%s (%v), want\n%s", n, l.Stored, state, err, l.State)
		}
		enc, err := encodeRecord(got, bytes.HasSuffix(l.Stored, []byte(`,"ins":true}`)))
		if err != nil || !bytes.Equal(enc, l.Stored) {
			t.Fatalf("line %d: encodes to\n%s (%v), stored\n%s", n, enc, err, l.Stored)
		}
	}
	if err := sc.Err(); err != nil || n < 10 {
		t.Fatalf("%d golden records (%v)", n, err)
	}

	snap, err := os.ReadFile("testdata/golden_snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(snap)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := Encode(s)
	if err != nil || !bytes.Equal(append(enc, '\n'), snap) {
		t.Fatalf("snapshot encodes to\n%s (%v), was\n%s", enc, err, snap)
	}
}

// TestDecodeRecordSharesKey: the decoder takes the key string the caller
// already holds (from the bucket key) instead of copying it from the
// value: a record under a long key costs no more allocations than one
// under a one-byte key, which Go never allocates.
func TestDecodeRecordSharesKey(t *testing.T) {
	allocs := func(key IdempotencyKey) float64 {
		s := decodeSamples()[1]
		s.Key = key
		b, err := encodeRecord(s, false)
		if err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(50, func() {
			if _, err := decodeRecord(key, b, 9); err != nil {
				t.Fatal(err)
			}
		})
	}
	if short, long := allocs("k"), allocs("orders/2026-12-02/img-000042.png"); long != short {
		t.Fatalf("%v allocations under a long key, %v under a one-byte key", long, short)
	}
}
