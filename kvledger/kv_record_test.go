package kvledger

import (
	"errors"
	"testing"
	"time"
)

// FuzzDecodeRecord: whatever bytes sit under a task key, decoding returns
// a valid record or ErrCorruptRecord, never panics, and a decoded record
// re-encodes to one that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	good, _ := encodeRecord(TaskState{Key: "k", Status: StatusClaimed, Owner: "w", Fence: 2,
		LeaseUntil: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), Needs: []IdempotencyKey{"a"}, Task: map[string]any{"x": 1.0}, LastEvent: ClaimedEvent}, false)
	ins, _ := encodeRecord(TaskState{Key: "k", Status: StatusPending}, true)
	f.Add(good, uint64(5))
	f.Add(ins, uint64(9))
	f.Add([]byte(`{"key":"k","status":"blocked"}`), uint64(1))
	f.Add([]byte(`{"key":"other","status":"pending"}`), uint64(1))
	f.Add([]byte(`not json`), uint64(1))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, rev uint64) {
		s, err := decodeRecord("k", data, rev)
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("error %v does not wrap ErrCorruptRecord", err)
			}
			return
		}
		if s.Rev != rev || s.Key != "k" {
			t.Fatalf("decoded %+v at rev %d", s, rev)
		}
		b, err := encodeRecord(s, false)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := decodeRecord("k", b, rev)
		if err != nil {
			t.Fatal(err)
		}
		if s2.Fence != s.Fence || s2.Status != s.Status {
			t.Fatalf("round trip changed %+v to %+v", s, s2)
		}
	})
}

func FuzzKeyOfTask(f *testing.F) {
	f.Add("task.abc")
	f.Add("task.a=2Eb")
	f.Add("task.")
	f.Add("rdep.a.b")
	f.Fuzz(func(t *testing.T, bucketKey string) {
		k, err := keyOfTask(bucketKey)
		if err != nil {
			return
		}
		if taskKey(k) != bucketKey {
			t.Fatalf("%q -> %q -> %q", bucketKey, k, taskKey(k))
		}
	})
}
