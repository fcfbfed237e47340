package kvledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// The runtime fields go through the direct encoder byte for byte as
// encoding/json writes them, and decode back.
func FuzzAppendRuntimeFields(f *testing.F) {
	f.Add("resize", int64(1796083200000000000), 2, 5, "boom <&>", true, `{"w":640}`, true)
	f.Add("", int64(0), 0, 0, "", false, ``, false)
	f.Add("ü\u2028", int64(-1), -1, 3, "\xff", false, `[1, 2 ,"\u003c"]`, true)
	f.Add("k", int64(5), 1, 1, "x", false, `not json`, false)
	f.Fuzz(func(t *testing.T, kind string, nanos int64, attempts, maxAttempts int, lastErr string, cancelled bool, result string, insert bool) {
		s := TaskState{Key: "k", Status: StatusCompleted, Fence: 3, Kind: kind, Attempts: attempts, MaxAttempts: maxAttempts,
			LastError: lastErr, Cancelled: cancelled, Result: json.RawMessage(result), LastEvent: CompletedEvent}
		if nanos != 0 {
			s.RunAt = time.Unix(0, nanos).UTC()
		}
		if attempts%2 != 0 {
			s.Lease = "kvledger.b.w." + kind
		}
		back, ok := encodeRoundTrip(t, s, insert)
		if !ok {
			return
		}
		if back.Kind != kind || back.Attempts != attempts || (utf8.ValidString(lastErr) && back.LastError != lastErr) || !back.RunAt.Equal(s.RunAt) {
			t.Fatalf("round trip: %+v", back)
		}
	})
}

func TestTruncateError(t *testing.T) {
	long := bytes.Repeat([]byte("é"), MaxLastErrorBytes)
	got := TruncateError(string(long))
	if len(got) > MaxLastErrorBytes {
		t.Fatalf("len %d", len(got))
	}
	if TruncateError("short") != "short" {
		t.Fatal("short message changed")
	}
}

// The limit fields (Group, Priority) go through the direct encoder byte
// for byte as encoding/json writes them, and decode back; a record from
// before they existed decodes with both zero.
func FuzzAppendLimitFields(f *testing.F) {
	f.Add("tenant-42", 5, false)
	f.Add("", 0, true)
	f.Add("ü\u2028<&>\"\\", -1<<63, false)
	f.Add("\xff", 1<<63-1, true)
	f.Fuzz(func(t *testing.T, group string, priority int, insert bool) {
		s := TaskState{Key: "k", Status: StatusPending, Kind: "mail", Group: group, Priority: priority, LastEvent: AdmittedEvent}
		back, ok := encodeRoundTrip(t, s, insert)
		if !ok {
			return
		}
		if back.Group != group || back.Priority != priority {
			t.Fatalf("round trip: %+v", back)
		}
	})
}

// A record written before Group and Priority existed decodes with both
// zero, through the fast path and encoding/json alike.
func TestRecordWithoutLimitFields(t *testing.T) {
	old := []byte(`{"key":"k","status":"pending","sequence":1,"fence":0,"kind":"mail","rev":0}`)
	checkFastDecode(t, old)
	back, err := decodeRecord("k", old, 3)
	if err != nil || back.Group != "" || back.Priority != 0 || back.Kind != "mail" {
		t.Fatalf("%+v %v", back, err)
	}
}

func TestGroupBounds(t *testing.T) {
	s := TaskState{Key: "k", Status: StatusPending, Group: string(bytes.Repeat([]byte("g"), MaxGroupBytes+1))}
	if err := s.Validate(); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("long group: %v", err)
	}
	s.Group = "\xff"
	if err := s.Validate(); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("invalid UTF-8 group: %v", err)
	}
	s.Group = string(bytes.Repeat([]byte("g"), MaxGroupBytes))
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
}

// encodeRoundTrip checks that encodeRecord writes s byte for byte as
// encoding/json does and that both decoders read it back; it returns the
// decoded record, or false when s is never written (encoding/json refuses
// it, or Validate does: the ledger validates before encoding).
func encodeRoundTrip(t *testing.T, s TaskState, insert bool) (TaskState, bool) {
	t.Helper()
	want, werr := refMarshalRecord(s, insert)
	got, err := encodeRecord(s, insert)
	if werr != nil || !utf8.ValidString(string(s.Key)) {
		if err == nil {
			t.Fatalf("json.Marshal failed (%v), encodeRecord wrote %s", werr, got)
		}
		return TaskState{}, false
	}
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("encodeRecord (%v)\n%s\njson.Marshal\n%s", err, got, want)
	}
	checkFastDecode(t, got)
	if s.Validate() != nil {
		return TaskState{}, false
	}
	back, err := decodeRecord("k", got, 9)
	if err != nil {
		t.Fatalf("decode %s: %v", got, err)
	}
	return back, true
}
