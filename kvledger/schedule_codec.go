package kvledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Schedules live in the ledger bucket beside the records (kv_record.go):
//
//	sched.<name>   a Schedule (JSON, below); <name> escaped with kvx.EncodeToken
//
// Range and WatchRecords read "task." keys only, so a schedule is
// invisible to them; the store's one watch covers these keys too, and
// WatchRecordsAndSchedules hands them to the worker and the dashboard.
const schedPrefix = "sched."

// scheduleFormat is the version a stored schedule carries in "v". A
// reader refuses a later one rather than run a schedule whose meaning it
// does not know.
const scheduleFormat = 1

func scheduleKey(name string) string { return schedPrefix + kvx.EncodeToken(name) }

// nameOfSchedule reverses scheduleKey.
func nameOfSchedule(bucketKey string) (string, error) {
	return keyToken(bucketKey, schedPrefix, "schedule")
}

// scheduleWire is the stored form of a Schedule. The payload is kept as
// raw JSON, so its numbers keep their digits.
type scheduleWire struct {
	V           int              `json:"v"`
	Name        string           `json:"name"`
	Spec        string           `json:"spec"`
	TimeZone    string           `json:"tz,omitempty"`
	Kind        string           `json:"kind"`
	Task        json.RawMessage  `json:"task,omitempty"`
	Needs       []IdempotencyKey `json:"needs,omitempty"`
	MaxAttempts int              `json:"max_attempts,omitempty"`
	Priority    int              `json:"priority,omitempty"`
	Group       string           `json:"group,omitempty"`
	Delay       string           `json:"delay,omitempty"`   // time.Duration.String, exact
	Timeout     string           `json:"timeout,omitempty"` // the same
	Actor       Actor            `json:"actor,omitempty"`
	UpdatedAt   time.Time        `json:"updated_at,omitzero"`
}

// encodeSchedule returns the stored form of s, which must validate. The
// payload is compacted and written without HTML escaping, so decoding and
// encoding again gives the same bytes.
func encodeSchedule(s Schedule) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	w := scheduleWire{
		V: scheduleFormat, Name: s.Name, Spec: s.Spec, TimeZone: s.TimeZone,
		Kind: s.Task.Kind, Needs: s.Task.Needs, MaxAttempts: s.Task.MaxAttempts,
		Priority: s.Task.Priority, Group: s.Task.Group, Actor: s.Actor, UpdatedAt: s.UpdatedAt,
	}
	if s.Task.Delay != 0 {
		w.Delay = s.Task.Delay.String()
	}
	if s.Task.Timeout != 0 {
		w.Timeout = s.Task.Timeout.String()
	}
	if len(s.Task.Task) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, s.Task.Task); err != nil {
			return nil, fmt.Errorf("%w: schedule %q: payload: %w", ErrInvalidSchedule, s.Name, err)
		}
		w.Task = c.Bytes()
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("%w: schedule %q: %w", ErrInvalidSchedule, s.Name, err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// decodeSchedule parses the value stored under the schedule key of name
// at revision rev, and returns it with its periods (parsed by the
// validation, which a stored value goes through like a written one). A
// value that does not decode, names another schedule, carries a later
// format or breaks a Validate rule is ErrCorruptRecord.
func decodeSchedule(name string, value []byte, rev uint64) (Schedule, SchedulePeriods, error) {
	var w scheduleWire
	corrupt := func(format string, args ...any) (Schedule, SchedulePeriods, error) {
		return Schedule{}, SchedulePeriods{}, fmt.Errorf("%w: schedule %q revision %d: %s", ErrCorruptRecord, name, rev, fmt.Sprintf(format, args...))
	}
	if err := json.Unmarshal(value, &w); err != nil {
		return corrupt("%v", err)
	}
	switch {
	case w.V != scheduleFormat:
		return corrupt("format %d, this reader knows %d", w.V, scheduleFormat)
	case w.Name != name:
		return corrupt("holds the schedule %q", w.Name)
	}
	s := Schedule{
		Name: w.Name, Spec: w.Spec, TimeZone: w.TimeZone, Actor: w.Actor, UpdatedAt: w.UpdatedAt, Rev: rev,
		Task: ScheduleTask{Kind: w.Kind, Task: w.Task, Needs: w.Needs, MaxAttempts: w.MaxAttempts,
			Priority: w.Priority, Group: w.Group},
	}
	if w.Delay != "" {
		d, err := time.ParseDuration(w.Delay)
		if err != nil {
			return corrupt("delay: %v", err)
		}
		s.Task.Delay = d
	}
	if w.Timeout != "" {
		d, err := time.ParseDuration(w.Timeout)
		if err != nil {
			return corrupt("timeout: %v", err)
		}
		s.Task.Timeout = d
	}
	p, err := s.check()
	if err != nil {
		return corrupt("%v", err)
	}
	return s, p, nil
}
