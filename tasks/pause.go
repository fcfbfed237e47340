package tasks

import (
	"context"

	"github.com/natscoord/natscoord/kvledger"
)

// PauseOpts are a pause's options. The zero value (or nil) is valid.
type PauseOpts struct {
	// Schedules pauses the kind's schedules too: no period of a schedule
	// of the kind is admitted while the kind is paused (a period that
	// passes is skipped). Default false: schedules keep admitting, and
	// their tasks wait with the others.
	Schedules bool
}

// Pause pauses a task kind in the ledger, for every worker of it: ready
// tasks of the kind wait, in their places, claimed by nobody and using no
// attempt, until Resume; tasks of the kind already running finish, and
// Submit still admits the kind's tasks. Each worker obeys as its record
// watch delivers the pause. A kind paused already is
// kvledger.ErrPaused.
func (c *Client) Pause(ctx context.Context, kind string, opts *PauseOpts) (kvledger.Pause, error) {
	var o PauseOpts
	if opts != nil {
		o = *opts
	}
	if err := c.writing(); err != nil {
		return kvledger.Pause{}, err
	}
	p, err := c.store.PauseKind(ctx, kvledger.Pause{Kind: kind, Schedules: o.Schedules, Actor: c.cfg.Actor, At: c.cfg.Clock.Now()})
	return p, closedErr(err)
}

// Resume resumes a paused kind: every worker starts its ready tasks as
// soon as its watch delivers the resume, by push. A kind not paused is
// kvledger.ErrNotPaused.
func (c *Client) Resume(ctx context.Context, kind string) error {
	if err := c.writing(); err != nil {
		return err
	}
	return closedErr(c.store.ResumeKind(ctx, kind, 0))
}

// Paused returns the paused kinds, by kind.
func (c *Client) Paused(ctx context.Context) ([]kvledger.Pause, error) {
	return c.store.Pauses(ctx)
}
