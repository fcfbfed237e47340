package kvledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/jsonx"
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
	f.Add([]byte("{\"key\":\"k\xff\",\"status\":\"pending\"}"), uint64(3)) // raw invalid UTF-8 decodes as U+FFFD: another key
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
	f.Add("task.a=FFb") // a key that is not valid UTF-8
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

// FuzzAppendRecord: the generated encoder writes exactly the bytes
// json.Marshal writes for the same record (the same tags, read by
// encoding/json: so the stored format does not depend on which one ran),
// and fails exactly when json.Marshal fails; encodeRecord also refuses a
// key that is not valid UTF-8.
// Task payloads come from the fuzzed JSON (the types a KVStore reads back)
// and from typed Go values built from the other inputs.
func FuzzAppendRecord(f *testing.F) {
	f.Add("k", "pending", uint64(1), "w", uint64(2), int64(1796083200000000000), int32(0), "a", "bench", `{"job":"resize","image":"img-000042.png","width":640}`, 1.5, true)
	f.Add("a.b c", "claimed", uint64(0), "", uint64(0), int64(0), int32(3600), "", "", `[1,"x",null,true,{"z":{}}]`, 1e21, false)
	f.Add("<&>\"\\\n\t\x01", "blocked", uint64(1<<63), "ü\u2028\xff", uint64(9), int64(math.MinInt64), int32(-5400), "\u2029", "\x7f", `"\u003c\ud800"`, 1e-7, true)
	f.Add("k", "pending", uint64(1), "w", uint64(2), int64(math.MaxInt64), int32(86400), "n", "x", `1e400`, math.Copysign(0, -1), false)
	f.Add("k", "pending", uint64(1), "w", uint64(2), int64(7), int32(0), "n", "x", `{"id":9007199254740993,"big":12345678901234567890}`, 0.1, false)
	f.Add("a\xffb\xc3", "pending", uint64(1), "w\xfe", uint64(2), int64(7), int32(0), "\x80n", "\xed\xa0\x80", "\"\xff\"", 2.5, true) // invalid UTF-8 everywhere
	f.Fuzz(func(t *testing.T, key, status string, seq uint64, owner string, fence uint64, nanos int64, offset int32, need, actor, taskJSON string, num float64, insert bool) {
		var decoded, numbers any
		if json.Unmarshal([]byte(taskJSON), &decoded) != nil {
			decoded = taskJSON
		}
		if jsonx.Unmarshal([]byte(taskJSON), &numbers) != nil {
			numbers = taskJSON
		}
		at := time.Unix(0, nanos).In(time.FixedZone("z", int(offset)))
		type payload struct {
			A string  `json:"a"`
			N float64 `json:"n,omitempty"`
		}
		tasks := []any{decoded, nil, num, float32(num), int(seq), int64(nanos), uint(fence), uint32(offset), int32(offset),
			map[string]string{key: owner, need: actor}, []string{need, actor}, []any{num, decoded},
			map[string]any{"n": num, "t": decoded, key: []any{}}, map[string]any(nil), []any(nil),
			payload{A: owner, N: num}, []byte(taskJSON), json.RawMessage(taskJSON), json.Number(taskJSON), numbers,
			map[string]any{"n": numbers}}
		for _, task := range tasks {
			s := TaskState{Key: IdempotencyKey(key), Status: Status(status), Sequence: Sequence(seq), Owner: OwnerID(owner),
				Fence: FenceToken(fence), LeaseUntil: at, Needs: []IdempotencyKey{IdempotencyKey(need)}, BlockedBy: IdempotencyKey(need),
				Task: task, CreatedBy: Actor(actor), CreatedAt: at, UpdatedBy: Actor(owner), UpdatedAt: at.Add(time.Duration(seq)),
				LastEvent: events.Name(status)}
			if nanos%3 == 0 {
				s.LeaseUntil, s.Needs, s.CreatedAt = time.Time{}, nil, time.Time{}
			}
			if nanos%2 == 0 {
				s.Lease = need + actor
			}
			want, werr := refMarshalRecord(s, insert)
			// The generated encoder itself, also for keys encodeRecord
			// refuses (not valid UTF-8).
			got, err := appendRecordFields(nil, &kvRecord{TaskState: s, Ins: insert})
			if werr != nil {
				if err == nil {
					t.Fatalf("task %#v: json.Marshal failed (%v), appendRecordFields wrote %s", task, werr, got)
				}
				if _, err := encodeRecord(s, insert); !isEncodeError(err) && utf8.ValidString(key) {
					t.Fatalf("task %#v: %v is not an encodeError", task, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("task %#v: appendRecordFields (%v)\n%s\njson.Marshal\n%s", task, err, got, want)
			}
			if enc, err := encodeRecord(s, insert); utf8.ValidString(key) != (err == nil) || err == nil && !bytes.Equal(enc, want) {
				t.Fatalf("key %q: encodeRecord %s (%v)", key, enc, err)
			}
			checkFastDecode(t, got)
		}
	})
}

// TestEncodeRecordCycle: a payload that contains itself is an encode
// error (from encoding/json's cycle check), not a stack overflow in the
// direct encoder.
func TestEncodeRecordCycle(t *testing.T) {
	m := map[string]any{}
	m["self"] = m
	_, err := encodeRecord(TaskState{Key: "k", Status: StatusPending, Task: m}, true)
	var enc encodeError
	if !errors.As(err, &enc) {
		t.Fatalf("got %v, want an encodeError", err)
	}
	_, err = encodeRecord(TaskState{Key: "k", Status: StatusPending, Task: math.NaN()}, true)
	if !errors.As(err, &enc) {
		t.Fatalf("NaN: got %v, want an encodeError", err)
	}
}

// The keys made of a prefix and one escaped token (task, schedule, a
// claimant's lease) are reversed by one rule, keyToken: the token comes
// back unescaped, and any other key is refused as ErrCorruptRecord naming
// what key it is not.
func TestKeyTokensReverseTheirKeys(t *testing.T) {
	for _, name := range []string{"a", "a.b", "x=y", "é"} {
		k, err := keyOfTask(taskKey(IdempotencyKey(name)))
		if err != nil || string(k) != name {
			t.Fatalf("task %q: %q, %v", name, k, err)
		}
		s, err := nameOfSchedule(scheduleKey(name))
		if err != nil || s != name {
			t.Fatalf("schedule %q: %q, %v", name, s, err)
		}
		o, ok := ClaimLeaseOwner("b.1", NewClaimLeaseKey("b.1", OwnerID(name)))
		if !ok || string(o) != name {
			t.Fatalf("claim lease of %q: %q, %v", name, o, ok)
		}
	}
	for _, bad := range []string{"", "task.", "task.a.b", "sched.a", "task.a=ZZ", "rdep.a.b"} {
		_, err := keyOfTask(bad)
		if !errors.Is(err, ErrCorruptRecord) || (bad != "task.a=ZZ" && !strings.Contains(err.Error(), "not a task key")) {
			t.Fatalf("keyOfTask(%q): %v", bad, err)
		}
	}
	if _, err := nameOfSchedule("task.a"); !errors.Is(err, ErrCorruptRecord) || !strings.Contains(err.Error(), "not a schedule key") {
		t.Fatalf("nameOfSchedule: %v", err)
	}
	for _, bad := range []string{LeasePrefix("b") + "x", LeasePrefix("b") + ClaimLeaseInfix + "a.b", LeasePrefix("b") + ClaimLeaseInfix + "nodot"} {
		if o, ok := ClaimLeaseOwner("b", bad); ok {
			t.Fatalf("ClaimLeaseOwner(%q) = %q", bad, o)
		}
	}
}
