package tasks

import (
	"cmp"
	"context"
	"time"

	"github.com/natscoord/natscoord/kvledger"
)

// ScheduleOpts are a schedule's options. The zero value (or nil) is
// valid: every field states its default.
type ScheduleOpts struct {
	// TimeZone is the IANA name of the zone of cron patterns
	// ("Europe/Paris"). Default "": UTC.
	TimeZone string
	// Needs, MaxAttempts, Priority, Group, Delay and Timeout are each
	// period's task's, as in SubmitOpts. Defaults: none, the client's
	// Config.MaxAttempts (stored in the schedule), 0, none, none, the
	// client's Config.Timeout (stored too).
	Needs       []kvledger.IdempotencyKey
	MaxAttempts int
	Priority    int
	Group       string
	Delay       time.Duration
	Timeout     time.Duration
	// Replace replaces a schedule stored under the same name (by a
	// compare-and-set on its revision). Default false: such a schedule is
	// kvledger.ErrScheduleExists.
	Replace bool
}

// Schedule stores a periodic task in the ledger: once per period of spec,
// a task with args is admitted under the period's key (worker.PeriodKey),
// once however many workers run. Every worker of the ledger that handles
// args' kind runs the schedule (unless its Config says otherwise), from
// the moment its watch delivers it; its first period is the first to
// start after that. spec is "@every <duration>" (at least 1s), @hourly,
// @daily, @weekly, @monthly, @yearly or a five-field cron pattern; one
// that does not parse or never runs ("0 0 31 2 *") is
// kvledger.ErrInvalidSchedule, before anything is written. Periods missed
// while no worker ran, or while the server could not be reached, run at
// most once: the latest of them, not one per missed period.
func (c *Client) Schedule(ctx context.Context, name, spec string, args Args, opts *ScheduleOpts) (kvledger.Schedule, error) {
	kind, payload, err := payloadOf(args)
	if err != nil {
		return kvledger.Schedule{}, err
	}
	var o ScheduleOpts
	if opts != nil {
		o = *opts
	}
	o.MaxAttempts = cmp.Or(o.MaxAttempts, c.cfg.MaxAttempts)
	o.Timeout = cmp.Or(o.Timeout, c.cfg.Timeout)
	sc := kvledger.Schedule{
		Name: name, Spec: spec, TimeZone: o.TimeZone, Actor: c.cfg.Actor, UpdatedAt: c.cfg.Clock.Now().UTC(),
		Task: kvledger.ScheduleTask{Kind: kind, Task: payload, Needs: o.Needs, MaxAttempts: o.MaxAttempts,
			Priority: o.Priority, Group: o.Group, Delay: o.Delay, Timeout: o.Timeout},
	}
	if err := c.writing(); err != nil {
		return kvledger.Schedule{}, err
	}
	stored, err := c.store.PutSchedule(ctx, sc, o.Replace)
	return stored, closedErr(err)
}

// Unschedule removes the schedule name (kvledger.ErrNoSchedule when there
// is none). Workers stop admitting its periods as their watch delivers
// the removal; tasks already admitted stay.
func (c *Client) Unschedule(ctx context.Context, name string) error {
	if err := c.writing(); err != nil {
		return err
	}
	_, err := c.store.RemoveSchedule(ctx, name)
	return closedErr(err)
}

// Schedules returns the schedules stored in the ledger, by name; each
// one's Next gives its next period.
func (c *Client) Schedules(ctx context.Context) ([]kvledger.Schedule, error) {
	return c.store.Schedules(ctx)
}
