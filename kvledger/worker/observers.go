package worker

import (
	"context"
	"time"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/opstats"
)

// Observers returns an Observer that hands every call to each of obs in
// order (nil entries are skipped): nil when none is left, the only one
// unwrapped.
func Observers(obs ...Observer) Observer {
	return opstats.Fan(obs, func(f []Observer) Observer { return fanout(f) })
}

type fanout []Observer

func (f fanout) OnStart(ctx context.Context, e Event) {
	for _, o := range f {
		o.OnStart(ctx, e)
	}
}

func (f fanout) OnFinish(ctx context.Context, e Event) {
	for _, o := range f {
		o.OnFinish(ctx, e)
	}
}

// RecorderObserver returns an Observer that records attempts in r, as
// kvlock.RecorderObserver and kvlease.RecorderObserver record theirs:
// component "worker", name the task's kind (kinds are few: one per
// handler; keys are never labels), and
//
//   - op "attempt", outcome the Result ("completed", "retried",
//     "failed", "released", "cancelled", "lost", "snoozed"), with the handler's run
//     time: one per finished attempt, so its counts are the tasks that
//     ended each way (an attempt whose task failed at its claim, its
//     last allowed attempt having been lost, is "failed" with no run
//     time);
//   - op "pickup", outcome "started", with Event.Pickup: one per
//     started attempt whose record dates when it became due.
//
// Claim renewals and losses are the lease manager's: give the worker a
// manager (Config.Leases) whose kvlease.Config.Observer is
// kvlease.RecorderObserver on the same Recorder.
func RecorderObserver(r *opstats.Recorder) Observer { return recorder{r} }

type recorder struct{ r *opstats.Recorder }

func (o recorder) OnStart(_ context.Context, e Event) {
	if !e.Due.IsZero() {
		o.r.Record(opstats.Labels{Component: "worker", Name: e.Kind, Op: "pickup", Outcome: e.Outcome()}, e.Pickup)
	}
}

func (o recorder) OnFinish(_ context.Context, e Event) {
	o.r.Record(opstats.Labels{Component: "worker", Name: e.Kind, Op: "attempt", Outcome: e.Outcome()}, e.Duration)
}

// setPickup sets e.Due and e.Pickup from seen, the record the attempt's
// claim replaced, at now (the worker's Clock): see Event.Due.
func (e *Event) setPickup(seen kvledger.TaskState, now time.Time) {
	if seen.Rev == 0 || seen.Status != kvledger.StatusPending || len(seen.Needs) > 0 {
		return
	}
	due := seen.UpdatedAt
	if seen.RunAt.After(due) {
		due = seen.RunAt
	}
	if due.IsZero() {
		return
	}
	e.Due, e.Pickup = due, max(0, now.Sub(due))
}
