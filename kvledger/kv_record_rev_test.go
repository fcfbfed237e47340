package kvledger

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The stored form has no "rev": the KV revision is the record's Rev, so a
// stored number would only ever say 0. Records written with "rev":0 still
// decode, with the revision they were read at. TaskState's own JSON
// (snapshots) always carries "rev", after "task".
func TestStoredRecordHasNoRev(t *testing.T) {
	s := TaskState{Key: "k", Status: StatusPending, Sequence: 1, Fence: 1, Rev: 42, Task: map[string]any{"a": 1.0},
		CreatedAt: time.Unix(1, 0).UTC(), UpdatedAt: time.Unix(1, 0).UTC()}
	for _, ins := range []bool{false, true} {
		b, err := encodeRecord(s, ins)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"rev"`) {
			t.Fatalf("stored %s", b)
		}
		// As encoding/json wrote it.
		if m, err := refMarshalRecord(s, ins); err != nil || string(m) != string(b) {
			t.Fatalf("json.Marshal: %s %v", m, err)
		}
	}
	j, err := json.Marshal(s)
	if want := `{"key":"k","status":"pending","sequence":1,"fence":1,"task":{"a":1},"rev":42,"created_at":"1970-01-01T00:00:01Z","updated_at":"1970-01-01T00:00:01Z"}`; err != nil || string(j) != want {
		t.Fatalf("json.Marshal(TaskState) = %s %v, want %s", j, err, want)
	}
	old := `{"key":"k","status":"pending","sequence":1,"fence":1,"rev":0}`
	got, err := decodeRecord("k", []byte(old), 9)
	if err != nil || got.Rev != 9 {
		t.Fatalf("old record: %+v %v", got, err)
	}
}
