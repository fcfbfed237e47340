package worker

import (
	"fmt"
	"time"

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
	// Location is the time zone of cron patterns. Default UTC.
	Location *time.Location
	// Task is the template of each period's task: Kind, Task, Needs,
	// MaxAttempts and Delay are used; Key and Seq are set per period.
	Task kvledger.Submission
}

type schedule struct {
	s    Schedule
	spec spec
	next time.Time
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
	sp, err := parseSpec(s.Spec, s.Location)
	if err != nil {
		return err
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
// between.
func (w *Worker) scheduleLoop() {
	defer w.wg.Done()
	now := w.now()
	for _, s := range w.schedules {
		s.next = s.spec.next(now)
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		var first *schedule
		for _, s := range w.schedules {
			if !s.next.IsZero() && (first == nil || s.next.Before(first.next)) {
				first = s
			}
		}
		if first == nil {
			return
		}
		t.Reset(max(first.next.Sub(w.now()), 0))
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
		now := w.now()
		for _, s := range w.schedules {
			if s.next.IsZero() || s.next.After(now) {
				continue
			}
			// Periods that went by while this process was paused, or
			// while the server could not be reached, run once: the
			// latest of them is admitted and the others are skipped.
			w.admitPeriod(s, s.spec.latest(s.next, now))
			s.next = s.spec.next(now)
		}
	}
}

func (w *Worker) admitPeriod(s *schedule, start time.Time) {
	sub := s.s.Task
	sub.Key, sub.Seq, sub.Now, sub.RunAt = PeriodKey(s.s.Name, start), 0, w.now(), time.Time{}
	ctx, cancel := w.opCtx()
	defer cancel()
	ok, err := w.l.Submit(ctx, w.cfg.Actor, sub)
	if err != nil {
		w.cfg.Logger.Warn("worker: admitting a scheduled task", "schedule", s.s.Name, "period", start, "err", err)
		return
	}
	if ok {
		w.stats.scheduled.Add(1)
	}
}
