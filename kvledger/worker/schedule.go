package worker

import (
	"fmt"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/cronspec"
	"github.com/natscoord/natscoord/kvledger"
)

// Schedule admits a task once per period of Spec. Any number of workers
// may run the same schedule: each admits the period's task under the
// key PeriodKey(Name, period start), so the ledger's idempotency makes
// exactly one admission per period count, whichever process is first.
// Periods missed while a worker was paused or could not reach the server
// run at most once: the worker admits the latest period that has started
// and skips the earlier ones.
type Schedule struct {
	// Name identifies the schedule; it is part of every period's key.
	Name string
	// Spec is "@every <duration>" (periods aligned to the Unix epoch, so
	// every process computes the same ones), a predefined name (@hourly,
	// @daily, @weekly, @monthly, @yearly) or a five-field cron pattern
	// "minute hour day-of-month month day-of-week".
	Spec string
	// Location is the time zone of cron patterns. Default UTC. A wall
	// time that a change of offset skips fires once, at the first
	// instant after the gap; one that it repeats fires once, at its
	// first occurrence (see kvledger.Schedule.TimeZone).
	Location *time.Location
	// Task is the template of each period's task: Kind, Task, Needs,
	// MaxAttempts and Delay are used; Key and Seq are set per period.
	Task kvledger.Submission
}

// schedule is one schedule the loop runs: registered in code, or stored
// in the ledger (schedule_stored.go). next is its next period start, zero
// until the loop first sees it.
type schedule struct {
	s    Schedule
	spec periods
	next time.Time
}

// periods computes a schedule's period starts from its spec, parsed
// once: a cronspec.Spec for a schedule registered in code, the
// kvledger.SchedulePeriods its watch change carries for a stored one.
type periods interface {
	Next(t time.Time) time.Time
	Latest(from, now time.Time) time.Time
}

// PeriodKey is the idempotency key of schedule name's task for the
// period starting at start.
func PeriodKey(name string, start time.Time) kvledger.IdempotencyKey {
	return kvledger.IdempotencyKey(periodKeyPrefix + name + "/" + start.UTC().Format(time.RFC3339))
}

// Schedule registers s; it must be called before Start. The first
// period admitted is the first to start after Start.
func (w *Worker) Schedule(s Schedule) error {
	if s.Name == "" {
		return fmt.Errorf("%w: schedule without a name", ErrInvalidConfig)
	}
	sp, err := cronspec.Parse(s.Spec, s.Location)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return ErrStarted
	}
	for _, o := range w.schedules {
		if o.s.Name == s.Name {
			return fmt.Errorf("%w: schedule %q registered twice", ErrInvalidConfig, s.Name)
		}
	}
	w.schedules = append(w.schedules, &schedule{s: s, spec: sp})
	return nil
}

// scheduleLoop sleeps on one timer until the next period of any
// schedule starts, then admits that period's task. It sends nothing in
// between. Stored schedules come and go while it runs: each change wakes
// it (schedWake) to look at the schedules again; without any schedule it
// waits with no timer.
func (w *Worker) scheduleLoop() {
	defer w.wg.Done()
	t := clock.NewTimer(w.cfg.Clock) // periods start on the worker's Clock
	defer t.Stop()
	for {
		due, first := w.duePeriods(w.now())
		for _, d := range due {
			w.admitPeriod(d.name, d.task, d.start)
		}
		if first.IsZero() {
			t.Stop()
		} else {
			t.Reset(max(first.Sub(w.now()), 0))
		}
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		case <-w.schedWake:
		}
	}
}

// duePeriod is one period to admit.
type duePeriod struct {
	name  string
	task  kvledger.Submission
	start time.Time
}

// duePeriods returns the periods of every schedule that have started by
// now, moves each schedule on to its next period, and returns the
// earliest next period start (zero without schedules).
func (w *Worker) duePeriods(now time.Time) (due []duePeriod, first time.Time) {
	w.schedMu.Lock()
	defer w.schedMu.Unlock()
	each := func(s *schedule) {
		switch {
		case s.next.IsZero():
			// First seen: its first period is the first to start
			// from now on.
			s.next = s.spec.Next(now)
		case !s.next.After(now):
			// Periods that went by while this process was paused, or
			// while the server could not be reached, run once: the
			// latest of them is admitted and the others are skipped.
			due = append(due, duePeriod{name: s.s.Name, task: s.s.Task, start: s.spec.Latest(s.next, now)})
			s.next = s.spec.Next(now)
		}
		if !s.next.IsZero() && (first.IsZero() || s.next.Before(first)) {
			first = s.next
		}
	}
	for _, s := range w.schedules {
		each(s)
	}
	for _, s := range w.stored {
		each(s)
	}
	return due, first
}

func (w *Worker) admitPeriod(name string, sub kvledger.Submission, start time.Time) {
	if w.schedulesPaused(sub.Kind) {
		return // the period is skipped (kvledger.Pause.Schedules)
	}
	sub.Key, sub.Seq, sub.Now, sub.RunAt = PeriodKey(name, start), 0, w.now(), time.Time{}
	ctx, cancel := w.opCtx()
	defer cancel()
	ok, err := w.l.Submit(ctx, w.cfg.Actor, sub)
	if err != nil {
		w.cfg.Logger.Warn("worker: admitting a scheduled task", "schedule", name, "period", start, "err", err)
		return
	}
	if ok {
		w.stats.scheduled.Add(1)
	}
}
