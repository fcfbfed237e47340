package kvledger

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// decodeSamples are records as the ledger and the runtime write them,
// plus the corners of the stored format: escapes, unicode, every field,
// nested payloads, times in other locations.
func decodeSamples() []TaskState {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)
	east := t0.In(time.FixedZone("", 5*3600+30*60))
	return []TaskState{
		{Key: "k", Status: StatusPending, Sequence: 1, Kind: "resize", Task: map[string]any{"image": "img-000042.png", "width": 640.0},
			CreatedBy: "svc", CreatedAt: t0, UpdatedBy: "svc", UpdatedAt: t0, LastEvent: AdmittedEvent},
		{Key: "k", Status: StatusClaimed, Sequence: 1, Owner: "worker-1", Fence: 7, LeaseUntil: t0.Add(30 * time.Second),
			Lease: "kvledger.tasks.worker-1.k", Kind: "resize", Attempts: 1, MaxAttempts: 5, Task: map[string]any{"w": 640.0},
			CreatedAt: t0, UpdatedBy: "worker-1", UpdatedAt: t0.Add(time.Second), LastEvent: ClaimedEvent},
		{Key: "k", Status: StatusCompleted, Sequence: 3, Fence: 9, Kind: "resize", Attempts: 2, Result: json.RawMessage(`{"url":"s3://b/k","ok":true}`),
			CreatedAt: t0, UpdatedAt: east, LastEvent: CompletedEvent},
		{Key: "k", Status: StatusFailed, Fence: 1 << 62, LastError: "boom: <nil> & \"quoted\"\n\ttab \x01 \u2028 \xff", Cancelled: true,
			RunAt: east, LastEvent: CancelledEvent},
		{Key: "ключ ü 日本", Status: StatusBlocked, BlockedBy: "a.b c", Needs: []IdempotencyKey{"a.b c", "\u00e9", "x\\y/z"},
			Task:      []any{1.5, "two", nil, true, false, map[string]any{}, []any{}, math.Copysign(0, -1), 1e21, 1e-7, map[string]any{"deep": []any{[]any{"x"}}}},
			LastEvent: BlockedEvent},
		{Key: "k", Status: StatusPending, Task: "just a string", RunAt: t0.Add(time.Hour), Attempts: 3, LastError: "retry"},
		{Key: "k", Status: StatusPending, Task: 42.0, LastEvent: "custom.event"},
		{Key: "k", Status: StatusPending, Task: false, Sequence: 1<<64 - 1, Fence: MaxFence, MaxAttempts: 1<<63 - 1},
		{Key: "k", Status: StatusCompleted, Result: json.RawMessage(`[1,-2.5e+3,"\u003c\n",null,{"a":{}}]`), Task: map[string]any{"a": map[string]any{"b": nil}}},
		{Key: "k", Status: StatusCompleted, Result: json.RawMessage(`"done"`)},
		{Key: "k", Status: StatusPending, CreatedAt: time.Unix(0, 0).In(time.FixedZone("z", -3*3600)), UpdatedAt: time.Unix(1, 5).UTC()},
		{Key: "k", Status: StatusPending, Kind: "mail", Group: "tenant/42 ü", Priority: 7},
		{Key: "k", Status: StatusClaimed, Owner: "w", LeaseUntil: t0, Group: "g\"\u2028", Priority: -(1 << 63), MaxAttempts: 2},
	}
}

// TestDecodeRecordFastTakesWrittenRecords: what encodeRecord writes is
// taken by the fast path (it does not quietly fall back) and decodes to
// what encoding/json gives.
func TestDecodeRecordFastTakesWrittenRecords(t *testing.T) {
	for i, s := range decodeSamples() {
		for _, insert := range []bool{false, true} {
			b, err := encodeRecord(s, insert)
			if err != nil {
				t.Fatalf("sample %d: %v", i, err)
			}
			fast, ok := fastDecodeRecord(b)
			if !ok {
				t.Fatalf("sample %d: fast path declined %s", i, b)
			}
			want, err := refUnmarshalRecord(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fast, want) {
				t.Fatalf("sample %d: %s\nfast %#v\njson %#v", i, b, fast, want)
			}
		}
	}
}

// TestDecodeRecordFastTakesOlderAndHandWritten: shapes encodeRecord
// does not write today but the fast path reads as encoding/json does:
// the "rev" of older records (into kvRecord.Rev, not TaskState.Rev), an
// explicit false, repeated keys inside the payload, escapes in payload
// keys, times with offsets.
func TestDecodeRecordFastTakesOlderAndHandWritten(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"key":"k","status":"pending","rev":5,"ins":false,"cancelled":false}`,
		`{"key":"k","task":{"a":1,"a":[2,{"b":null}],"\u00e9\n":-0.5e-3}}`,
		`{"key":"k","task":[],"attempts":-0,"max_attempts":-9223372036854775808}`,
		`{"key":"k","lease_until":"2026-11-29T10:00:00.5+01:00","run_at":"2026-11-29T10:00:00-00:00","created_at":"2026-11-29T10:00:00Z"}`,
		`{"key":"k","status":"completed","result":{"x":[1,2,{"y":"\u003c"}]}}`,
		`{"key":"k","last_event":"ledger.claimed","updated_by":"w","owner":"w"}`,
	} {
		fast, ok := fastDecodeRecord([]byte(in))
		if !ok {
			t.Fatalf("fast path declined %s", in)
		}
		want, err := refUnmarshalRecord([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%s\nfast %#v\njson %#v", in, fast, want)
		}
	}
}

// TestDecodeRecordFastDeclines: the inputs encoding/json would read
// differently from a literal reading (or reject) go to encoding/json.
func TestDecodeRecordFastDeclines(t *testing.T) {
	for _, in := range []string{
		`{"key":"k","status":"pending","KEY":"x"}`,     // case-insensitive match
		`{"key":"k","status":"pending","key":"j"}`,     // repeat: the last wins
		`{"key":"k","status":"pending","other":1}`,     // unknown, skipped
		`{"key":"k","status":"pending","owner":null}`,  // null leaves the field
		`{"key":"k","status":"pending","task":null}`,   // null clears Task
		`{"key":"k","status":"pending","result":null}`, // null RawMessage
		`{"key":"k","status":"pending","needs":[]}`,    // empty, not nil
		`{"key":"k", "status":"pending"}`,              // whitespace
		`{"key":"k","status":"pending"} `,
		`{"key":"k","sequence":1.0}`,
		`{"key":"k","sequence":-1}`,
		`{"key":"k","sequence":18446744073709551616}`,
		`{"key":"k","sequence":01}`,
		`{"key":"k","attempts":9223372036854775808}`,
		`{"key":"k","task":01}`,
		`{"key":"k","task":-}`,
		`{"key":"\ud83d\ude00"}`, // surrogate pair
		"{\"key\":\"k\xff\"}",    // invalid UTF-8
		"{\"key\":\"k\x01\"}",    // control byte
		`{"key":"k","status":"pending"}x`,
		`{"key":"k","lease_until":"not a time"}`,
		`{"key":"k","lease_until":5}`,
		`{"key":"k","cancelled":1}`,
		`{"key":"k","ins":"true"}`,
	} {
		if _, ok := fastDecodeRecord([]byte(in)); ok {
			t.Errorf("fast path took %s", in)
		}
	}
}

// checkFastDecode fails t if the fast path decodes b, a record
// encodeRecord wrote, to anything but what encoding/json gives. (That it
// takes the usual records is TestDecodeRecordFastTakesWrittenRecords.)
func checkFastDecode(t *testing.T, b []byte) {
	t.Helper()
	want, err := refUnmarshalRecord(b)
	if err != nil {
		return // a written record that does not decode: FuzzDecodeRecord's concern
	}
	fast, ok := fastDecodeRecord(b)
	if !ok {
		return
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("%s\nfast %#v\njson %#v", b, fast, want)
	}
}

// FuzzDecodeRecordFast: for any bytes, the fast path declines or decodes
// exactly what encoding/json decodes, and decodeRecord agrees with
// encoding/json followed by the same checks (value and error-ness). The
// bytes are also tried inside a record, as one field's value (raw or in
// a string), so that mutations reach each value decoder in an envelope
// that still parses.
func FuzzDecodeRecordFast(f *testing.F) {
	for _, s := range decodeSamples() {
		for _, insert := range []bool{false, true} {
			b, _ := encodeRecord(s, insert)
			f.Add(b, uint64(5))
		}
	}
	f.Add([]byte(`{"key":"k","status":"pending","rev":0,"ins":false,"task":{"a":1,"a":[2]}}`), uint64(3))
	f.Add([]byte(`{"key":"k","status":"claimed","owner":"w","lease_until":"2026-11-29T10:00:00.5+01:00","attempts":-0}`), uint64(2))
	f.Add([]byte(`{"key":"k","status":"pending","task":"\u00e9\/\b\f\n\r\t\\\"","kind":"\u0000"}`), uint64(1))
	f.Add([]byte(`{}`), uint64(0))
	f.Add([]byte(`{"a":[1.5e-3,-0,true,null,"x"]}`), uint64(1))
	f.Add([]byte(`2026-11-29T10:00:00.123456789-07:00`), uint64(1))
	f.Add([]byte(`-9223372036854775808`), uint64(1))
	f.Add([]byte(`{"id":9007199254740993,"big":12345678901234567890,"f":[1.50,-0,1E+2]}`), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, rev uint64) {
		compareDecoders(t, data, rev)
		str := strconv.Quote(string(data))
		for _, field := range []string{"task", "result", "needs", "attempts", "fence", "cancelled", "priority"} {
			compareDecoders(t, []byte(`{"key":"k","status":"completed","`+field+`":`+string(data)+`}`), rev)
		}
		for _, field := range []string{"key", "owner", "lease_until", "kind", "group"} {
			compareDecoders(t, []byte(`{"key":"k","status":"pending","`+field+`":"`+string(data)+`"}`), rev)
			compareDecoders(t, []byte(`{"key":"k","status":"pending","`+field+`":`+str+`}`), rev)
		}
	})
}

// compareDecoders fails t unless the fast path declines data or decodes
// what encoding/json decodes, and decodeRecord agrees with encoding/json
// followed by recordState.
func compareDecoders(t *testing.T, data []byte, rev uint64) {
	t.Helper()
	want, werr := refUnmarshalRecord(data)
	if fast, ok := fastDecodeRecord(data); ok {
		if werr != nil {
			t.Fatalf("fast path took %q, encoding/json fails: %v", data, werr)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%q\nfast %#v\njson %#v", data, fast, want)
		}
	}
	key := IdempotencyKey("k")
	if werr == nil && want.Key != "" {
		key = want.Key
	}
	got, err := decodeRecord(key, data, rev)
	var ref TaskState
	rerr := werr
	if werr == nil {
		ref, rerr = recordState(key, &want, rev)
	}
	if (err == nil) != (rerr == nil) {
		t.Fatalf("%q: decodeRecord error %v, encoding/json path %v", data, err, rerr)
	}
	if !reflect.DeepEqual(got, ref) {
		t.Fatalf("%q\ndecodeRecord %#v\nencoding/json %#v", data, got, ref)
	}
	if err != nil {
		return
	}
	// decode(encode(x)) == x: a record written back after a read (every
	// claim and completion does that) keeps its payload's numbers, as
	// json.Number with the same text, and everything else.
	enc, eerr := encodeRecord(got, false)
	if eerr != nil {
		t.Fatalf("%q: decoded %#v, encodeRecord: %v", data, got, eerr)
	}
	again, aerr := decodeRecord(key, enc, rev)
	// Result is stored as encoding/json writes a json.RawMessage
	// (compacted, < > & escaped): the same text once written.
	result, _ := json.Marshal(got.Result)
	if len(got.Result) == 0 {
		result = nil
	}
	if aerr != nil || !reflect.DeepEqual(again.Task, got.Task) || !bytes.Equal(again.Result, result) {
		t.Fatalf("%q: re-encoded %s\ndecoded again %#v (%v)\nfirst %#v", data, enc, again, aerr, got)
	}
	// Times may come back in another *Location with the same offset:
	// compare what is stored.
	if enc2, _ := encodeRecord(again, false); !bytes.Equal(enc2, enc) {
		t.Fatalf("%q: encoded %s, then %s", data, enc, enc2)
	}
}

// BenchmarkDecodeRecord compares decodeRecord (fast path) with
// encoding/json and the same checks, on the three records the runtime
// writes per task.
func BenchmarkDecodeRecord(b *testing.B) {
	samples := decodeSamples()
	for _, tc := range []struct {
		name string
		s    TaskState
	}{{"pending", samples[0]}, {"claimed", samples[1]}, {"completed", samples[2]}} {
		data, err := encodeRecord(tc.s, tc.name == "pending")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeRecord("k", data, 9); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var r kvRecord
				if err := json.Unmarshal(data, &r); err != nil {
					b.Fatal(err)
				}
				if _, err := recordState("k", &r, 9); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
