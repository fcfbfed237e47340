package kvledger

import (
	"bytes"
	"encoding/json"
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
		want, werr := json.Marshal(kvRecord{TaskState: s, Ins: insert})
		got, ok := appendRecord(nil, s, insert)
		if werr != nil {
			if ok {
				t.Fatalf("json.Marshal failed (%v), appendRecord wrote %s", werr, got)
			}
			return
		}
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("appendRecord (ok %v)\n%s\njson.Marshal\n%s", ok, got, want)
		}
		checkFastDecode(t, got)
		if s.Validate() != nil {
			return // never written: the ledger validates before encoding
		}
		back, err := decodeRecord("k", got, 9)
		if err != nil {
			t.Fatalf("decode %s: %v", got, err)
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
