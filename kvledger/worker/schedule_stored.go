package worker

import (
	"context"

	"github.com/natscoord/natscoord/kvledger"
)

// Stored schedules (kvledger.Schedule: `natscoord ledger schedule add`,
// tasks.Client.Schedule) reach the worker through its record watch, which
// asks for the ledger's schedule keys too: one ordered consumer delivers
// both, so a schedule added or removed takes effect when its change
// arrives, with nothing polled. Each becomes a schedule of the same loop
// as those registered with Worker.Schedule (scheduleLoop), admitting its
// periods under the same PeriodKey.

// watchRecords starts the record watch, with the paused kinds (pause.go)
// and the stored schedules unless Config.IgnoreStoredSchedules is set,
// when the store can watch them.
func (w *Worker) watchRecords(ctx context.Context, fn func(kvledger.Change)) (*kvledger.RecordWatch, error) {
	sw, ok := w.watcher.(kvledger.ScheduleWatcher)
	if !ok {
		return w.watcher.WatchRecords(ctx, fn)
	}
	var onSchedule func(kvledger.ScheduleChange)
	if !w.cfg.IgnoreStoredSchedules {
		w.storedOn = true
		onSchedule = w.onSchedule
	}
	return sw.WatchRecordsAndControls(ctx, fn, onSchedule, w.onPause)
}

// onSchedule applies one change of a stored schedule (the record watch's
// goroutine). The worker runs a stored schedule when it has a handler for
// the schedule's kind, so periods are admitted only where something runs
// them; a schedule named like one registered in code is left to that one.
func (w *Worker) onSchedule(c kvledger.ScheduleChange) {
	if c.Name == "" {
		return // not a key the ledger writes
	}
	var run *schedule
	switch {
	case c.Err != nil:
		w.cfg.Logger.Warn("worker: stored schedule does not decode; not running it", "schedule", c.Name, "err", c.Err)
	case !c.Deleted:
		run = w.storedSchedule(c)
	}
	w.schedMu.Lock()
	if run != nil {
		w.stored[c.Name] = run
	} else {
		delete(w.stored, c.Name)
	}
	w.schedMu.Unlock()
	select {
	case w.schedWake <- struct{}{}:
	default:
	}
}

// storedSchedule is the loop's schedule of the stored schedule c
// delivers, or nil when this worker does not run it. Its periods are
// those c carries: the watch parsed the spec when it decoded the value.
func (w *Worker) storedSchedule(c kvledger.ScheduleChange) *schedule {
	sc := c.Schedule
	// handlers and schedules do not change after Start.
	if _, ok := w.handlers[sc.Task.Kind]; !ok {
		return nil
	}
	for _, o := range w.schedules {
		if o.s.Name == sc.Name {
			w.cfg.Logger.Warn("worker: a stored schedule has the name of one registered in code; running the registered one", "schedule", sc.Name)
			return nil
		}
	}
	return &schedule{
		s:    Schedule{Name: sc.Name, Spec: sc.Spec, Task: sc.Task.Submission("", w.now())},
		spec: c.Periods,
	}
}
