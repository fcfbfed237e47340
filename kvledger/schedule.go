package kvledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/natscoord/natscoord/internal/cronspec"
)

// Schedule is a periodic task stored in the ledger bucket (key
// "sched.<name>", see schedule_codec.go): every worker of the ledger that
// handles its Task.Kind admits one task per period of Spec
// (kvledger/worker), under the period's idempotency key, so one task per
// period is admitted however many workers run it. Periods missed while no
// worker ran it, or while the server could not be reached, run at most
// once: the latest of them, not one per missed period.
//
// A KVStore writes schedules with CreateSchedule, UpdateSchedule and
// DeleteSchedule, each a compare-and-set on the schedule's revision
// (PutSchedule and RemoveSchedule read that revision first).
type Schedule struct {
	// Name identifies the schedule: 1 to MaxScheduleNameBytes of printable
	// UTF-8. It is part of every period's key.
	Name string
	// Spec is "@every <duration>" (at least 1s; periods aligned to the
	// Unix epoch, so every process computes the same ones), a predefined
	// name (@hourly, @daily, @weekly, @monthly, @yearly) or a five-field
	// cron pattern "minute hour day-of-month month day-of-week". A spec
	// that no date matches ("0 0 31 2 *") is refused.
	Spec string
	// TimeZone is the IANA name of the zone of cron patterns ("Europe/Paris").
	// Default "": UTC. "Local" is refused: every worker must compute the
	// same periods. A pattern names wall times of the zone: one that a
	// change of offset skips (02:30 the night clocks go forward in Paris)
	// fires once at the first instant after the gap (03:00 CEST), as cron
	// runs a daily job that day; one that a change repeats (02:30 the
	// night they go back) fires once, at its first occurrence. Each next
	// period is later than the one before, found within eight years
	// (under a millisecond).
	TimeZone string
	// Task is the template of each period's task.
	Task ScheduleTask
	// Actor wrote the schedule; UpdatedAt is when (set by the writes).
	Actor     Actor
	UpdatedAt time.Time
	// Rev is the schedule's revision in the bucket (not stored): the
	// revision an update or delete must present.
	Rev uint64
}

// ScheduleTask is the template of a schedule's periodic task. Each
// period's task gets the key the worker's PeriodKey makes, sequence 0
// and, with Delay, a run-at of its admission plus Delay.
type ScheduleTask struct {
	// Kind routes the task to its handlers (required).
	Kind string
	// Task is the payload's JSON, stored and admitted exactly as given
	// (numbers keep their digits, integers beyond 2^53 too); empty for
	// none. Insignificant white space is dropped.
	Task json.RawMessage
	// Needs, MaxAttempts, Priority, Group, Delay and Timeout mean what
	// they mean in a Submission.
	Needs       []IdempotencyKey
	MaxAttempts int
	Priority    int
	Group       string
	Delay       time.Duration
	Timeout     time.Duration
}

// MaxScheduleNameBytes bounds Schedule.Name.
const MaxScheduleNameBytes = 128

// Schedule errors. Match them with errors.Is.
var (
	// ErrInvalidSchedule: a schedule breaks a rule (its name, a spec
	// that does not parse or never runs, an unknown time zone, a payload
	// that is not JSON...). Nothing was written.
	ErrInvalidSchedule = errors.New("kvledger: invalid schedule")
	// ErrScheduleExists: CreateSchedule found a schedule of that name.
	ErrScheduleExists = errors.New("kvledger: schedule already exists")
	// ErrNoSchedule: no schedule of that name is stored.
	ErrNoSchedule = errors.New("kvledger: no such schedule")
	// ErrScheduleChanged: UpdateSchedule or DeleteSchedule presented a
	// revision that is no longer the schedule's, or RemoveSchedule's
	// read was (someone changed or removed it meanwhile). Nothing was
	// written.
	ErrScheduleChanged = errors.New("kvledger: schedule changed since it was read")
)

func parseScheduleSpec(spec, zone string) (cronspec.Spec, error) {
	loc, err := scheduleLocation(zone)
	if err != nil {
		return cronspec.Spec{}, err
	}
	sp, err := cronspec.Parse(spec, loc)
	if err != nil {
		return cronspec.Spec{}, fmt.Errorf("%w: %w", ErrInvalidSchedule, err)
	}
	return sp, nil
}

func scheduleLocation(zone string) (*time.Location, error) {
	switch zone {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, fmt.Errorf("%w: time zone \"Local\" differs between processes; name the zone (\"Europe/Paris\")", ErrInvalidSchedule)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("%w: time zone %q: %w", ErrInvalidSchedule, zone, err)
	}
	return loc, nil
}

// Location returns the zone of the schedule's cron patterns.
func (s Schedule) Location() (*time.Location, error) { return scheduleLocation(s.TimeZone) }

// SchedulePeriods is a schedule's Spec parsed in its TimeZone: the
// starts of its periods. Parsing costs a time zone load and, for a cron
// pattern, a search for a date it matches, so a reader that computes
// periods again and again keeps this (ScheduleChange.Periods, which the
// watch parses once per change) rather than calling Schedule.Next. The
// zero value has no period.
type SchedulePeriods struct{ sp cronspec.Spec }

// Next returns the first period start strictly after t: the zero time
// for the zero SchedulePeriods, which has none (nor has the zero
// cronspec.Spec it holds).
func (p SchedulePeriods) Next(t time.Time) time.Time {
	return p.sp.Next(t)
}

// Latest returns the last period start in [from, now], or the zero time
// when no period starts in it: when from is after now, when from is no
// period start and the next one starts after now, and always for the
// zero SchedulePeriods, which has no period. For a from that is a period
// start (a time Next returned) not after now, it is from or a later start.
func (p SchedulePeriods) Latest(from, now time.Time) time.Time {
	return p.sp.Latest(from, now)
}

// Periods parses the schedule's Spec in its TimeZone (ErrInvalidSchedule
// when either does not).
func (s Schedule) Periods() (SchedulePeriods, error) {
	sp, err := parseScheduleSpec(s.Spec, s.TimeZone)
	return SchedulePeriods{sp}, err
}

// Next returns the first period start after t, or the zero time when the
// schedule does not validate. It parses the spec on every call.
func (s Schedule) Next(t time.Time) time.Time {
	p, err := s.Periods()
	if err != nil {
		return time.Time{}
	}
	return p.Next(t)
}

// Validate reports the first rule s breaks (ErrInvalidSchedule).
func (s Schedule) Validate() error {
	_, err := s.check()
	return err
}

// check is Validate that also returns the periods it parsed, so that a
// reader that validates a stored schedule (decodeSchedule) parses its
// spec once.
func (s Schedule) check() (SchedulePeriods, error) {
	bad := func(format string, args ...any) (SchedulePeriods, error) {
		return SchedulePeriods{}, fmt.Errorf("%w: schedule %q: %s", ErrInvalidSchedule, s.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case s.Name == "":
		return SchedulePeriods{}, fmt.Errorf("%w: empty name", ErrInvalidSchedule)
	case len(s.Name) > MaxScheduleNameBytes:
		return bad("name is %d bytes, above %d", len(s.Name), MaxScheduleNameBytes)
	case !utf8.ValidString(s.Name):
		return bad("name is not valid UTF-8")
	}
	if err := checkKeyChars("schedule name", IdempotencyKey(s.Name)); err != nil {
		return SchedulePeriods{}, fmt.Errorf("%w: %w", ErrInvalidSchedule, err)
	}
	p, err := s.Periods()
	if err != nil {
		return SchedulePeriods{}, err
	}
	t := s.Task
	switch {
	case t.Kind == "":
		return bad("no task kind")
	case len(t.Task) > 0 && !json.Valid(t.Task):
		return bad("task payload is not valid JSON")
	case t.MaxAttempts < 0:
		return bad("negative max attempts %d", t.MaxAttempts)
	case t.Delay < 0:
		return bad("negative delay %v", t.Delay)
	case t.Timeout < 0 || t.Timeout > MaxTimeout:
		return bad("timeout %v outside 0..%v", t.Timeout, MaxTimeout)
	case len(t.Group) > MaxGroupBytes || !utf8.ValidString(t.Group):
		return bad("group is not valid UTF-8 of at most %d bytes", MaxGroupBytes)
	case !utf8.ValidString(t.Kind) || len(t.Kind) > MaxKindBytes:
		return bad("kind is not valid UTF-8 of at most %d bytes", MaxKindBytes)
	}
	for _, n := range t.Needs {
		if n == "" || !utf8.ValidString(string(n)) {
			return bad("need %q is empty or not valid UTF-8", string(n))
		}
		if err := checkKeyChars("need", n); err != nil {
			return SchedulePeriods{}, fmt.Errorf("%w: %w", ErrInvalidSchedule, err)
		}
	}
	return p, nil
}

// Submission returns the submission of one period's task under key,
// admitted at now.
func (t ScheduleTask) Submission(key IdempotencyKey, now time.Time) Submission {
	sub := Submission{
		Key: key, Needs: t.Needs, Kind: t.Kind, MaxAttempts: t.MaxAttempts,
		Priority: t.Priority, Group: t.Group, Delay: t.Delay, Timeout: t.Timeout, Now: now,
	}
	if len(t.Task) > 0 {
		sub.Task = t.Task
	}
	return sub
}
