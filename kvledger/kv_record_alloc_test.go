package kvledger

import (
	"strings"
	"testing"
	"time"
)

// TestDecodeRecordSharesRepeatedStrings: the runtime's record watch
// decodes every record three times per task, and a record's kind, lease
// key and payload keys and short values repeat from record to record:
// decoded again, they come from jsonx's intern table instead of a new
// copy each. A record with long such strings then costs no more
// allocations than one whose strings are one byte long.
func TestDecodeRecordSharesRepeatedStrings(t *testing.T) {
	allocs := func(kind, lease, field, value string) float64 {
		t.Helper()
		s := decodeSamples()[1]
		s.Kind, s.Lease, s.Task = kind, lease, map[string]any{field: value}
		b, err := encodeRecord(s, false)
		if err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(50, func() {
			if _, err := decodeRecord(s.Key, b, 9); err != nil {
				t.Fatal(err)
			}
		})
	}
	short := allocs("r", "l", "j", "n")
	long := allocs("image-resize", "natscoord.ledger.tasks.w.worker-host-1234-abcdef", "job", "thumbnail")
	if long != short {
		t.Fatalf("%v allocations with repeated long strings, %v with one-byte ones", long, short)
	}
}

// TestEncodeRecordOneAllocation: encodeRecord allocates only the value it
// returns, of its exact length, however long the record (its scratch
// buffer is pooled); a guessed capacity grew, so a record with a long
// error cost two allocations and twice the bytes. (A Result is checked
// by encoding/json, which allocates on its own.)
func TestEncodeRecordOneAllocation(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	for _, s := range []TaskState{
		decodeSamples()[1],
		{Key: "k", Status: StatusFailed, Fence: 3, Kind: "resize", Task: map[string]any{"job": "noop"},
			LastError: strings.Repeat("e", 600),
			CreatedAt: t0, UpdatedAt: t0, LastEvent: CompletedEvent},
	} {
		var n int
		allocs := testing.AllocsPerRun(50, func() {
			b, err := encodeRecord(s, false)
			if err != nil {
				t.Fatal(err)
			}
			n = len(b)
		})
		if allocs != 1 {
			t.Errorf("encoding a %d-byte record: %v allocations, want 1", n, allocs)
		}
	}
}
