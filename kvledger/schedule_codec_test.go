package kvledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// A schedule encodes and decodes to itself; its payload keeps every digit
// (an integer beyond 2^53) and its HTML-looking text.
func TestScheduleCodecRoundTrip(t *testing.T) {
	s := Schedule{
		Name: "nightly/report é", Spec: "0 2 * * 1-5", TimeZone: "Europe/Paris",
		Task: ScheduleTask{Kind: "report", Task: json.RawMessage(`{"id": 9007199254740993, "f": 1.000000000000000000001, "s": "<a&b>"}`),
			Needs: []IdempotencyKey{"setup"}, MaxAttempts: 2, Priority: -3, Group: "g", Delay: 1500 * time.Millisecond,
			Timeout: 90 * time.Second},
		Actor: "me", UpdatedAt: time.Date(2026, 12, 2, 1, 2, 3, 4, time.UTC),
	}
	b, err := encodeSchedule(s)
	if err != nil {
		t.Fatal(err)
	}
	got, periods, err := decodeSchedule(s.Name, b, 7)
	if err != nil {
		t.Fatal(err)
	}
	// The periods parsed while decoding are the schedule's: its readers
	// (ScheduleChange.Periods) do not parse the spec again.
	at := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC) // a Friday
	if next, want := periods.Next(at), s.Next(at); next.IsZero() || !next.Equal(want) {
		t.Fatalf("decoded periods: next after %v is %v, the spec's is %v", at, next, want)
	}
	if want := `{"id":9007199254740993,"f":1.000000000000000000001,"s":"<a&b>"}`; string(got.Task.Task) != want {
		t.Fatalf("payload %s, want %s", got.Task.Task, want)
	}
	if got.Rev != 7 || got.Task.Delay != s.Task.Delay || got.Task.Timeout != s.Task.Timeout || got.Task.Submission("k", at).Timeout != s.Task.Timeout || !got.UpdatedAt.Equal(s.UpdatedAt) || got.TimeZone != s.TimeZone ||
		got.Task.Priority != -3 || got.Task.MaxAttempts != 2 || got.Task.Needs[0] != "setup" || got.Task.Group != "g" || got.Actor != "me" {
		t.Fatalf("decoded %+v", got)
	}
	if _, _, err := decodeSchedule("other", b, 7); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("another key's value: %v", err)
	}
}

// Impossible and malformed specs, unknown zones and bad payloads are
// refused before anything is written.
func TestScheduleValidate(t *testing.T) {
	ok := Schedule{Name: "n", Spec: "@every 1m", Task: ScheduleTask{Kind: "k"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]Schedule{
		"impossible": {Name: "n", Spec: "0 0 31 2 *", Task: ScheduleTask{Kind: "k"}},
		"malformed":  {Name: "n", Spec: "* * *", Task: ScheduleTask{Kind: "k"}},
		"fast":       {Name: "n", Spec: "@every 10ms", Task: ScheduleTask{Kind: "k"}},
		"zone":       {Name: "n", Spec: "@daily", TimeZone: "Mars/Olympus", Task: ScheduleTask{Kind: "k"}},
		"local":      {Name: "n", Spec: "@daily", TimeZone: "Local", Task: ScheduleTask{Kind: "k"}},
		"no name":    {Spec: "@daily", Task: ScheduleTask{Kind: "k"}},
		"control":    {Name: "a\nb", Spec: "@daily", Task: ScheduleTask{Kind: "k"}},
		"no kind":    {Name: "n", Spec: "@daily"},
		"payload":    {Name: "n", Spec: "@daily", Task: ScheduleTask{Kind: "k", Task: json.RawMessage(`{`)}},
		"delay":      {Name: "n", Spec: "@daily", Task: ScheduleTask{Kind: "k", Delay: -1}},
		"timeout":    {Name: "n", Spec: "@daily", Task: ScheduleTask{Kind: "k", Timeout: -1}},
	} {
		if err := s.Validate(); !errors.Is(err, ErrInvalidSchedule) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := encodeSchedule(s); !errors.Is(err, ErrInvalidSchedule) {
			t.Errorf("%s: encode: %v", name, err)
		}
	}
}

// FuzzDecodeSchedule: any value decodes or is ErrCorruptRecord, nothing
// panics, and what decodes encodes to a value that decodes to the same
// bytes again.
func FuzzDecodeSchedule(f *testing.F) {
	seed, _ := encodeSchedule(Schedule{Name: "n", Spec: "*/5 * * * *", TimeZone: "UTC",
		Task: ScheduleTask{Kind: "k", Task: json.RawMessage(`[1, 2e400, "x"]`), Delay: time.Second}})
	f.Add(seed)
	f.Add([]byte(`{"v":1,"name":"n","spec":"@every 1s","kind":"k","task":{"a":18446744073709551617}}`))
	f.Add([]byte(`{"v":2,"name":"n"}`))
	f.Add([]byte(`{"v":1,"name":"n","spec":"0 0 31 2 *","kind":"k"}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		s, periods, err := decodeSchedule("n", value, 1)
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("error %v does not match ErrCorruptRecord", err)
			}
			return
		}
		at := time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC)
		if got, want := periods.Next(at), s.Next(at); !got.Equal(want) {
			t.Fatalf("decoded periods: next %v, the spec's %v", got, want)
		}
		b1, err := encodeSchedule(s)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", s, err)
		}
		s2, _, err := decodeSchedule("n", b1, 1)
		if err != nil {
			t.Fatalf("encoded %s does not decode: %v", b1, err)
		}
		b2, err := encodeSchedule(s2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("not stable: %s then %s (%v)", b1, b2, err)
		}
	})
}
