package kvledger

import (
	"context"

	"github.com/natscoord/natscoord/internal/kvx"
)

// ScheduleChange is one change of a stored schedule delivered by
// WatchRecordsAndSchedules.
type ScheduleChange struct {
	// Name is the schedule's name.
	Name string
	// Schedule is the schedule as written, when Err is nil and Deleted
	// false.
	Schedule Schedule
	// Periods is Schedule's spec parsed in its zone, alongside it: the
	// watch parses it once per change, and its readers compute periods
	// from it without parsing again.
	Periods SchedulePeriods
	// Deleted reports that the schedule was removed.
	Deleted bool
	// Rev is the revision of the change.
	Rev uint64
	// Err is set (matching ErrCorruptRecord) when the stored value is not
	// a valid schedule; the schedule should then be treated as removed.
	Err error
}

// ScheduleWatcher is an optional Store capability: a record watch that
// also delivers the stored schedules. The KVStore implements it.
type ScheduleWatcher interface {
	// WatchRecordsAndSchedules is WatchRecords on every record that also
	// calls onSchedule, from the same goroutine and in store order, with
	// every stored schedule before the Synced marker and every later
	// change of one after it: one ordered consumer for both. A catch-up
	// after Resync covers the schedules too (a removed one as Deleted).
	WatchRecordsAndSchedules(ctx context.Context, fn func(Change), onSchedule func(ScheduleChange)) (*RecordWatch, error)
	// WatchRecordsAndControls is WatchRecordsAndSchedules that also calls
	// onPause with every paused kind before the Synced marker and every
	// later pause or resume after it (pause.go); either of onSchedule and
	// onPause may be nil.
	WatchRecordsAndControls(ctx context.Context, fn func(Change), onSchedule func(ScheduleChange), onPause func(PauseChange)) (*RecordWatch, error)
}

var _ ScheduleWatcher = (*KVStore)(nil)

// WatchRecordsAndSchedules implements ScheduleWatcher.
func (s *KVStore) WatchRecordsAndSchedules(ctx context.Context, fn func(Change), onSchedule func(ScheduleChange)) (*RecordWatch, error) {
	return s.watchRecords(ctx, fn, onSchedule, nil)
}

// WatchRecordsAndControls implements ScheduleWatcher.
func (s *KVStore) WatchRecordsAndControls(ctx context.Context, fn func(Change), onSchedule func(ScheduleChange), onPause func(PauseChange)) (*RecordWatch, error) {
	return s.watchRecords(ctx, fn, onSchedule, onPause)
}

// scheduleChangeOf decodes one entry of a schedule key.
func scheduleChangeOf(e kvx.Entry) ScheduleChange {
	name, err := nameOfSchedule(e.Key)
	if err != nil {
		return ScheduleChange{Rev: e.Revision, Err: err}
	}
	c := ScheduleChange{Name: name, Rev: e.Revision}
	if !e.Live() {
		c.Deleted = true
		return c
	}
	c.Schedule, c.Periods, c.Err = decodeSchedule(name, e.Value, e.Revision)
	return c
}
